"""Data specifications and the CSV loader."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim import DataError
from shufflesim.experiments.data import load_data, parse_data_spec


def test_categorical_generators():
    x = load_data("uniform", data_kind="categorical", n=1000, k=4, rng=0)
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() < 4
    z = load_data("zipf:2", data_kind="categorical", n=5000, k=4, rng=0)
    assert np.bincount(z)[0] > np.bincount(z)[3]
    assert np.all(load_data("constant:2", data_kind="categorical", n=10, k=4) == 2)
    c = load_data("counts:3,0,2", data_kind="categorical", k=3, rng=0)
    assert np.array_equal(np.bincount(c, minlength=3), [3, 0, 2])


def test_real_generators():
    for spec in ("uniform", "normal:0.5,0.3", "beta:2,5", "constant:0.25"):
        x = load_data(spec, data_kind="real", n=500, rng=1)
        assert x.dtype == np.float64 and x.min() >= 0 and x.max() <= 1
    ages = load_data("adult-age", data_kind="real")
    assert ages.size == 32561 and ages.max() == pytest.approx(1.0)
    assert np.mean(ages * 90) == pytest.approx(38.581647, abs=1e-6)  # README of the data set


def test_adult_age_bins():
    x = load_data("adult-age", data_kind="categorical", k=10)
    assert x.min() == 0 and x.max() == 9 and x.size == 32561


def test_subsample_is_seeded():
    a = load_data("adult-age", data_kind="real", n=100, rng=3)
    b = load_data("adult-age", data_kind="real", n=100, rng=3)
    assert np.array_equal(a, b) and a.size == 100
    with pytest.raises(DataError, match="has 32561 rows"):
        load_data("adult-age", data_kind="real", n=40000)


@pytest.mark.parametrize(
    "spec,msg",
    [
        ("foo", "unknown data spec"),
        ("zipf:x", "zipf:s"),
        ("zipf:-1", ">= 0"),
        ("normal:0.5", "normal:mu,sigma"),
        ("normal:0.5,0", "sigma must be > 0"),
        ("beta:0,1", "> 0"),
        ("counts:1,-2", "non-negative integers"),
        ("data.csv", "give the column"),
        ("", "non-empty"),
        ("constant:nan", "finite"),
    ],
)
def test_malformed_specs(spec, msg):
    with pytest.raises(DataError, match=msg):
        parse_data_spec(spec)


def test_spec_kind_mismatch():
    with pytest.raises(DataError, match="real-valued"):
        load_data("normal:0.5,0.1", data_kind="categorical", n=5, k=3)
    with pytest.raises(DataError, match="categorical"):
        load_data("zipf:1", data_kind="real", n=5)
    with pytest.raises(DataError, match=r"\[0, 3\)"):
        load_data("constant:3", data_kind="categorical", n=5, k=3)
    with pytest.raises(DataError, match="k=3 categories"):
        load_data("counts:1,2", data_kind="categorical", k=3)


def test_csv_loader(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,b\n0,10\n2,20\n1,15\n")
    assert list(load_data(f"{f}:a", data_kind="categorical", k=3)) == [0, 2, 1]
    x = load_data(f"{f}:b", data_kind="real", lower=10, upper=20)
    np.testing.assert_allclose(x, [0.0, 1.0, 0.5])


def test_csv_errors_name_file_row_and_column(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("a,b\n0,10\nx,20\n1.5,15\n")
    with pytest.raises(DataError, match=r"d.csv: row 2 \(line 3\), column 'a': 'x' is not a finite number"):
        load_data(f"{f}:a", data_kind="categorical", k=3)
    g = tmp_path / "e.csv"
    g.write_text("a\n0\n1.5\n")
    with pytest.raises(DataError, match=r"row 2 .*'1.5' is not an integer category"):
        load_data(f"{g}:a", data_kind="categorical", k=3)
    h = tmp_path / "h.csv"
    h.write_text("a\n0\n7\n")
    with pytest.raises(DataError, match=r"row 2 .*outside the categories \[0, 3\)"):
        load_data(f"{h}:a", data_kind="categorical", k=3)
    with pytest.raises(DataError, match="no column 'z'"):
        load_data(f"{f}:z", data_kind="categorical", k=3)
    with pytest.raises(DataError, match="--lower and --upper"):
        load_data(f"{f}:b", data_kind="real")
    with pytest.raises(DataError, match=r"row 2 .*outside \[lower, upper\]"):
        load_data(f"{f}:b", data_kind="real", lower=0, upper=15)
    with pytest.raises(DataError, match="no such file"):
        load_data(f"{tmp_path}/missing.csv:a", data_kind="categorical", k=3)
    b = tmp_path / "bin.csv"
    b.write_bytes(b"\xff\xfe\x00\x01garbage\x00")
    with pytest.raises(DataError):
        load_data(f"{b}:a", data_kind="categorical", k=3)
