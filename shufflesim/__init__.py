"""shufflesim: simulation, tight accounting and validation for the shuffle model of differential privacy."""



def __getattr__(name: str):
    """``__version__`` on first use: importlib.metadata costs ~40 ms that no command needs at start-up."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("shufflesim")
        except PackageNotFoundError:  # running from a source tree that is not installed
            value = "0+unknown"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'shufflesim' has no attribute {name!r}")

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
