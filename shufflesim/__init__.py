"""shufflesim: simulation, tight accounting and validation for the shuffle model of differential privacy."""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("shufflesim")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from shufflesim.errors import (  # noqa: E402
    AccuracyError,
    DataError,
    InfeasibleError,
    NotApplicableError,
    ParameterError,
    ShufflesimError,
)

__all__ = [
    "__version__",
    "ShufflesimError",
    "ParameterError",
    "DataError",
    "NotApplicableError",
    "AccuracyError",
    "InfeasibleError",
]
