"""Writing tidy result tables with their run metadata (Parquet when pyarrow is present, CSV always)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def environment() -> dict:
    """Versions that affect results."""
    from shufflesim import __version__

    return {
        "shufflesim": __version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def write_table(frame: pd.DataFrame, stem: Path, meta: dict) -> list[Path]:
    """Write ``frame`` to ``stem.parquet`` (metadata in ``df.attrs``) and ``stem.csv``, and the metadata
    to ``stem.meta.json``.  Returns the written paths."""
    from shufflesim.core.serialise import jsonable

    meta = jsonable(dict(meta, environment=environment()))
    stem = Path(stem)
    written = []
    frame = frame.copy()
    frame.attrs["shufflesim"] = json.dumps(meta)
    try:
        import pyarrow  # noqa: F401

        frame.to_parquet(stem.with_suffix(".parquet"), index=False)
        written.append(stem.with_suffix(".parquet"))
    except ImportError:
        pass
    frame.to_csv(stem.with_suffix(".csv"), index=False)
    written.append(stem.with_suffix(".csv"))
    meta_path = stem.parent / (stem.name + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    written.append(meta_path)
    return written


def read_metadata(path: Path) -> dict:
    """The run metadata stored with a Parquet table."""
    frame = pd.read_parquet(path)
    return json.loads(frame.attrs.get("shufflesim", "{}"))
