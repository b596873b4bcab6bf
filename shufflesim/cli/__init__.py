"""Command-line interface (``shufflesim``)."""
