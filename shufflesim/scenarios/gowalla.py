"""The Gowalla check-ins of seed 003 §V-D as grid cells (the small derived files the scenarios use).

Seed 003 discretises a northern part of San Francisco (latitudes 37.7228–37.7946, longitudes
−122.5153 – −122.3789, 12 km × 8 km) with a 24 × 17 grid and Paris (48.8286–48.8798, 2.2855–2.3909,
8 km × 6 km) with a 16 × 12 grid.  Here the first number counts cells along the longitude (the longer side),
the second along the latitude; cell = row × columns + column with row 0 at the southern edge, column 0 at the
western edge, and the northern and eastern edges belong to the last row and column.  :func:`derive` writes
``gowalla_sf_cells.csv.gz`` and ``gowalla_paris_cells.csv.gz`` (one column ``cell``, one row per check-in, in
the source files' order) from ``gowalla_sf.csv`` and ``gowalla_paris.csv`` (header ``lat,lon``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: name -> (source file, (lat_lo, lat_hi), (lon_lo, lon_hi), columns along the longitude, rows along the latitude)
GRIDS = {
    "sf": ("gowalla_sf.csv", (37.7228, 37.7946), (-122.5153, -122.3789), 24, 17),
    "paris": ("gowalla_paris.csv", (48.8286, 48.8798), (2.2855, 2.3909), 16, 12),
}


def cells(lat: np.ndarray, lon: np.ndarray, lat_box, lon_box, cols: int, rows: int) -> np.ndarray:
    """Grid cell of every point (points outside the box are an error)."""
    lat, lon = np.asarray(lat, float), np.asarray(lon, float)
    inside = (lat >= lat_box[0]) & (lat <= lat_box[1]) & (lon >= lon_box[0]) & (lon <= lon_box[1])
    if not inside.all():
        raise ValueError(f"{int((~inside).sum())} points lie outside the box")
    r = np.minimum(((lat - lat_box[0]) / (lat_box[1] - lat_box[0]) * rows).astype(int), rows - 1)
    c = np.minimum(((lon - lon_box[0]) / (lon_box[1] - lon_box[0]) * cols).astype(int), cols - 1)
    return r * cols + c


def derive(source_dir: str | Path, out_dir: str | Path) -> dict[str, Path]:
    """Write the cell files of every grid of :data:`GRIDS`; returns their paths."""
    out = {}
    for name, (src, lat_box, lon_box, cols, rows) in GRIDS.items():
        frame = pd.read_csv(Path(source_dir) / src)
        cell = cells(frame["lat"].to_numpy(), frame["lon"].to_numpy(), lat_box, lon_box, cols, rows)
        path = Path(out_dir) / f"gowalla_{name}_cells.csv.gz"
        pd.DataFrame({"cell": cell}).to_csv(path, index=False, compression={"method": "gzip", "mtime": 0})
        out[name] = path
    return out


if __name__ == "__main__":  # python -m shufflesim.scenarios.gowalla SOURCE_DIR OUT_DIR
    import sys

    for k, v in derive(sys.argv[1], sys.argv[2]).items():
        print(k, v)
