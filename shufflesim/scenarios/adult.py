"""The UCI Adult ages as the authors of seed 004 fed them to their Table 2 experiment.

Seed 004's text says the ages are "normalized by the maximum age"; the authors' published experiment code
(repository adriagascon/shuffledpsummation, main.ipynb, the Adult cell that prints the Table 2 values) feeds
``(age / 130) ** 2``.  shufflesim ships the squared ages as integers (``adult_age_squared.csv.gz``, column
``age_squared``, one row per training record in the order of ``adult_age.csv``); the scenario scales them with
``lower = 0``, ``upper = 16900`` = 130², which gives (age / 130)² exactly as a real in [0, 1].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: the scaling bound of the squared ages: (age / MAX_AGE)² = age² / MAX_AGE²
MAX_AGE = 130
FILE = "adult_age_squared.csv.gz"


def derive(ages_csv: str | Path, out_dir: str | Path) -> Path:
    """Write ``adult_age_squared.csv.gz`` (column ``age_squared``) from ``adult_age.csv`` (column ``age``)."""
    ages = pd.read_csv(ages_csv)["age"].to_numpy(dtype=np.int64)
    path = Path(out_dir) / FILE
    pd.DataFrame({"age_squared": ages * ages}).to_csv(path, index=False, compression={"method": "gzip", "mtime": 0})
    return path


if __name__ == "__main__":  # python -m shufflesim.scenarios.adult shufflesim/datasets/adult_age.csv OUT_DIR
    import sys

    print(derive(sys.argv[1], sys.argv[2]))
