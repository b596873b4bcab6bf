"""Tidy result tables with their run metadata.

``write_table(frame, stem, meta)`` writes ``stem.parquet`` (when pyarrow is installed; the metadata is
embedded in the Parquet schema under the key ``shufflesim``), ``stem.csv`` and ``stem.meta.json`` (the
same metadata, as a convenience for readers without pyarrow).  Every file is written under a temporary
name and renamed into place.  :func:`read_metadata` and :func:`read_table` read a Parquet file back.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from shufflesim.core.serialise import jsonable
from shufflesim.experiments.outdir import atomic_path

#: key of the run metadata in the Parquet schema metadata
META_KEY = b"shufflesim"


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


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def write_parquet(frame: pd.DataFrame, path: Path, meta: dict) -> None:
    """Write ``frame`` to ``path`` with ``meta`` (JSON) in the Parquet schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[META_KEY] = json.dumps(meta).encode()
    table = table.replace_schema_metadata(schema_meta)
    with atomic_path(Path(path)) as tmp:
        pq.write_table(table, tmp)


def write_table(frame: pd.DataFrame, stem: Path, meta: dict) -> list[Path]:
    """Write ``frame`` to ``stem.parquet`` (pyarrow only; metadata in its schema), ``stem.csv`` and the
    metadata to ``stem.meta.json``.  Returns the written paths."""
    meta = jsonable(dict(meta, environment=environment()))
    stem = Path(stem)
    written = []
    # the suffixes are appended to the whole name: a stem "mnist_q0.1" keeps its ".1" (with_suffix would drop it)
    parquet_path, csv_path = stem.parent / (stem.name + ".parquet"), stem.parent / (stem.name + ".csv")
    if _have_pyarrow():
        write_parquet(frame, parquet_path, meta)
        written.append(parquet_path)
    with atomic_path(csv_path) as tmp:
        frame.to_csv(tmp, index=False)
    written.append(csv_path)
    meta_path = stem.parent / (stem.name + ".meta.json")
    with atomic_path(meta_path) as tmp:
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
    written.append(meta_path)
    return written


def read_metadata(path: Path) -> dict:
    """The run metadata embedded in a Parquet file written by :func:`write_table` (``{}`` if none)."""
    import pyarrow.parquet as pq

    schema_meta = pq.read_schema(path).metadata or {}
    raw = schema_meta.get(META_KEY)
    return json.loads(raw) if raw else {}


def read_table(path: Path) -> tuple[pd.DataFrame, dict]:
    """A Parquet table written by :func:`write_table` and its run metadata."""
    return pd.read_parquet(path), read_metadata(path)
