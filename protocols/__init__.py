"""Built-in protocols of shufflesim, one module per protocol.

Installed as the sub-package ``shufflesim.protocols`` (the repository keeps them in ``protocols/``).
Every module here is imported by :mod:`shufflesim.pipeline.registry` on first use.
"""
