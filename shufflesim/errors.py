"""Exceptions raised by shufflesim.

Every user error (bad parameter, malformed data or scenario, impossible privacy target) raises a
subclass of :class:`ShufflesimError`, itself a :class:`ValueError`, whose message is one line saying
what is wrong and what is allowed.  The CLI prints that line as ``error: ...`` and exits with code 2.
"""

from __future__ import annotations


class ShufflesimError(ValueError):
    """Base class of every error caused by the user's input."""


class ParameterError(ShufflesimError):
    """A parameter is outside its allowed range or of the wrong type."""


class DataError(ShufflesimError):
    """A data specification or data file is malformed or does not fit the protocol."""


class NotApplicableError(ShufflesimError):
    """A bound or method is asked for outside its validity conditions."""


class AccuracyError(ShufflesimError):
    """A requested numerical accuracy cannot be certified with the allowed resources."""


class ResourceError(ShufflesimError):
    """A request would need more memory or time than is available (the message gives the estimate)."""


class InfeasibleError(ShufflesimError):
    """A privacy or utility target cannot be met by any parameter in the searched range."""


class PluginError(ShufflesimError):
    """A plug-in's own code (a protocol of the entry-point group ``shufflesim.protocols``) failed with an
    exception that is not a :class:`ShufflesimError`; the message names the plug-in, its package, the method
    and the exception (docs/plugins.md, "When a plug-in is broken")."""
