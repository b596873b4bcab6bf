"""Data sets from specification strings, as used on the CLI and in scenario files.

Categorical inputs (values in {0, …, k−1}):

* ``uniform`` — i.i.d. uniform categories;
* ``zipf:s`` — i.i.d. with P(j) ∝ (j+1)^−s;
* ``constant:j`` — every user holds j;
* ``counts:c0,c1,…`` — exactly c_j users hold j (n = Σ c_j, users in random order);
* ``adult-age`` — the embedded UCI Adult training ages (32,561), binned into k equal-width bins over
  [17, 90];
* ``FILE.csv:COLUMN`` — integer categories read from a CSV column.

Real inputs (values in [0, 1]):

* ``uniform``, ``normal:mu,sigma`` (clipped to [0, 1]), ``beta:a,b``, ``constant:x``;
* ``counts:c0,c1,…,cG`` — exactly c_j users hold j/G (G ≥ 1; n = Σ c_j, users in random order);
* ``adult-age`` — the embedded Adult ages divided by 90 (as in seed 004's experiments);
* ``FILE.csv:COLUMN`` — a numeric column scaled by (v − lower)/(upper − lower) with explicit bounds.

Synthetic data are drawn once per study from a dedicated seed stream, so every trial sees the same data.
For the finite data sets, an ``n`` smaller than the number of rows selects a uniformly random subset of n
rows (drawn from the data seed); a larger ``n`` is an error.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from shufflesim.errors import DataError
from shufflesim.core.rng import RngLike, as_generator
from shufflesim.core.checks import check_int

CATEGORICAL_KINDS = ("uniform", "zipf", "constant", "counts", "adult-age")
REAL_KINDS = ("uniform", "normal", "beta", "constant", "adult-age")
ADULT_AGE_RANGE = (17, 90)
#: every form :func:`parse_data_spec` accepts, by kind, with an example of it (``--data`` help, the error for an
#: unknown spec and the README's list are generated from this table; tests/test_cli_help.py parses each example)
SPEC_FORMS: dict[str, tuple[str, str]] = {
    "uniform": ("uniform", "uniform"),
    "zipf": ("zipf:S", "zipf:1.1"),
    "constant": ("constant:V", "constant:3"),
    "counts": ("counts:C0,C1,...", "counts:5,0,2"),
    "normal": ("normal:MU,SIGMA", "normal:0.5,0.1"),
    "beta": ("beta:A,B", "beta:2,5"),
    "adult-age": ("adult-age", "adult-age"),
    "file": ("FILE.csv:COLUMN", "ages.csv:age"),
}


def spec_forms() -> str:
    """The accepted data specifications, one comma-separated line (from :data:`SPEC_FORMS`)."""
    return ", ".join(form for form, _ in SPEC_FORMS.values())


#: largest number of users a multiset holds (int64 counts and their sums)
MAX_COUNTS_N = 2**62
#: most categories (entries) a ``counts:`` spec may list
MAX_COUNTS_K = 10**6


@dataclass(frozen=True)
class DataSpec:
    """A parsed data specification: ``kind`` plus arguments (numbers) or a file and column."""

    text: str
    kind: str
    args: tuple = ()
    path: str | None = None
    column: str | None = None


def _numbers(text: str, spec: str, count: int | None, what: str) -> tuple[float, ...]:
    """The spec's numbers, read by the one bounded parser (:func:`shufflesim.core.checks.parse_list`): the
    number of entries and each token's length are checked before anything is converted."""
    from shufflesim.core.checks import parse_list, parse_real

    if not text.strip() or (count is not None and text.count(",") != count - 1):
        raise DataError(f"data spec {shown_spec(spec)}: expected {what}")
    return parse_list(f"data spec {shown_spec(spec)}: expected {what}; the value", text,
                      lambda name, t: parse_real(name, t, error=DataError), max_items=count or MAX_COUNTS_K,
                      error=DataError)


def _counts(text: str, spec: str) -> tuple[int, ...]:
    """``counts:c0,c1,...``: at most :data:`MAX_COUNTS_K` non-negative integers (each token length-capped, read
    exactly, never through float or int64), with a positive total of at most :data:`MAX_COUNTS_N` users."""
    from shufflesim.core.checks import parse_int, parse_list

    what = "counts:c0,c1,... with non-negative integer counts"
    if not text.strip():
        raise DataError(f"data spec {shown_spec(spec)}: expected {what}")
    vals = parse_list(f"data spec {shown_spec(spec)}: counts must be non-negative integers with a positive total "
                      "of at most 2^62; count", text,
                      lambda name, t: parse_int(name, t, minimum=0, maximum=MAX_COUNTS_N, error=DataError),
                      max_items=MAX_COUNTS_K, error=DataError)
    total = sum(vals)  # Python integers: no wrap-around
    if total < 1:
        raise DataError(f"data spec {shown_spec(spec)}: counts must be non-negative integers with a positive total")
    if total > MAX_COUNTS_N:
        raise DataError(f"data spec {shown_spec(spec)}: the counts add up to {float(total):.6g} users; at most 2^62 = "
                        f"{MAX_COUNTS_N} are supported (int64 counts and their sums)")
    return vals


def shown_spec(spec: str) -> str:
    """A data spec quoted for an error line (a long spec shortened: the line stays one readable line)."""
    return repr(spec) if len(spec) <= 80 else repr(spec[:60] + "...") + f" ({len(spec)} characters)"


def parse_data_spec(text: str) -> DataSpec:
    """Parse a data specification string (see module docstring); raises :class:`DataError`."""
    if not isinstance(text, str) or not text.strip():
        raise DataError("data spec must be a non-empty string such as 'uniform', 'zipf:1.1' or 'file.csv:column'")
    text = text.strip()
    head, sep, tail = text.rpartition(":")
    if sep and (head.lower().endswith((".csv", ".csv.gz")) or "/" in head or "\\" in head):
        if not tail:
            raise DataError(f"data spec {text!r}: give the column after the file, as FILE.csv:COLUMN")
        return DataSpec(text, "file", path=head, column=tail)
    if text.lower().endswith((".csv", ".csv.gz")):
        raise DataError(f"data spec {text!r}: give the column after the file, as FILE.csv:COLUMN")
    name, _, arg = text.partition(":")
    name = name.lower()
    if name in ("uniform", "adult-age"):
        if arg:
            raise DataError(f"data spec {text!r}: {name!r} takes no arguments")
        return DataSpec(text, name)
    if name == "zipf":
        (s,) = _numbers(arg, text, 1, "zipf:s with a real exponent s >= 0")
        if s < 0:
            raise DataError(f"data spec {text!r}: the zipf exponent must be >= 0")
        return DataSpec(text, "zipf", (s,))
    if name == "constant":
        return DataSpec(text, "constant", _numbers(arg, text, 1, "constant:value"))
    if name == "counts":
        return DataSpec(text, "counts", _counts(arg, text))
    if name == "normal":
        mu, sigma = _numbers(arg, text, 2, "normal:mu,sigma")
        if sigma <= 0:
            raise DataError(f"data spec {text!r}: sigma must be > 0")
        return DataSpec(text, "normal", (mu, sigma))
    if name == "beta":
        a, b = _numbers(arg, text, 2, "beta:a,b with a, b > 0")
        if a <= 0 or b <= 0:
            raise DataError(f"data spec {text!r}: beta parameters must be > 0")
        return DataSpec(text, "beta", (a, b))
    from shufflesim.core.checks import did_you_mean

    raise DataError(f"unknown data spec {text!r}{did_you_mean(name, SPEC_FORMS)}; allowed: {spec_forms()}")


def csv_read_bytes(p: Path) -> float:
    """Estimated memory of reading the CSV file ``p`` as strings (as :func:`_read_column` does), from its size
    and the cells per byte of its first MiB: each cell is an empty CPython ``str`` (``sys.getsizeof("")`` bytes)
    and a pointer, plus the file's characters once.  Checked before the file is read, so a huge file is refused by its size."""
    import sys

    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(1 << 20)
    cells_per_byte = (head.count(b",") + head.count(b"\n") + 1) / max(len(head), 1)
    return size * cells_per_byte * (sys.getsizeof("") + 8) + size


def _read_column(path: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Read one CSV column; returns (values as float with NaN for non-numbers, raw strings)."""
    import pandas as pd

    from shufflesim.core.resources import check_memory

    p = Path(path)
    if not p.is_file():
        if p.is_dir():
            raise DataError(f"{path}: is a directory, not a CSV file")
        if p.exists():
            raise DataError(f"{path}: is not a regular file (a device or pipe); give a CSV file")
        raise DataError(f"{path}: no such file")
    check_memory(csv_read_bytes(p), f"reading {path} ({p.stat().st_size / 1e6:.3g} MB of CSV as text)",
                 "give a file with fewer rows or columns (only the named column is used)")
    try:
        # blank lines are kept (as empty rows) so that row and line numbers stay true; trailing blank lines
        # at the end of the file are ignored, a blank line between data rows is reported below
        frame = pd.read_csv(p, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: cannot be read as CSV ({first})") from None
    if column not in frame.columns:
        raise DataError(f"{path}: no column {column!r}; columns are {', '.join(map(str, frame.columns))}")
    blank = frame.apply(lambda col: col.str.strip() == "").all(axis=1).to_numpy() if len(frame) else np.zeros(0, bool)
    last = len(frame) - int(np.argmin(blank[::-1])) if blank.size and not blank.all() else 0
    frame = frame.iloc[:last]  # trailing blank lines dropped
    inner = np.flatnonzero(blank[:last])
    if inner.size:
        i = int(inner[0])
        raise DataError(f"{path}: line {i + 2} is blank (between data rows); remove it or put a value there")
    raw = frame[column].to_numpy(dtype=str)
    if raw.size == 0:
        raise DataError(f"{path}: column {column!r} has no rows")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return values, raw


def _bad_row(path: str, column: str, idx: int, raw: str, why: str) -> DataError:
    # idx is the 0-based data row; the file line is idx + 2 (header on line 1)
    raw = str(raw)
    shown = repr(raw) if len(raw) <= 40 else repr(raw[:30] + "...") + f" ({len(raw)} characters)"
    return DataError(f"{path}: row {idx + 1} (line {idx + 2}), column {column!r}: {shown} {why}")


def _adult_ages() -> np.ndarray:
    with resources.files("shufflesim").joinpath("datasets/adult_age.csv").open("r") as fh:
        return np.loadtxt(fh, skiprows=1, dtype=np.int64)


def _subset(values: np.ndarray, n: int | None, gen: np.random.Generator, source: str) -> np.ndarray:
    if n is None or n == values.size:
        return values
    if n > values.size:
        raise DataError(f"{source} has {values.size} rows; n={n} is larger (omit n to use all rows)")
    return values[np.sort(gen.choice(values.size, size=n, replace=False))]


def _check_count(name: str, value, minimum: int) -> int:
    """An integer count >= minimum (DataError otherwise; no silent rounding of 2.5 or "10")."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if not (isinstance(value, float) and value.is_integer()):
            raise DataError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return check_int(name, int(value), minimum=minimum, error=DataError)  # and within int64 (no wrap in numpy)


def load_data(
    spec: str | DataSpec,
    *,
    data_kind: str,
    n: int | None = None,
    k: int | None = None,
    rng: RngLike = None,
    lower: float | None = None,
    upper: float | None = None,
) -> np.ndarray:
    """Materialise a data set.

    ``data_kind`` is ``"categorical"`` (needs ``k``; returns int64 in [0, k)) or ``"real"`` (returns float64
    in [0, 1]).  ``n`` is required for the synthetic generators; for finite data sets it may be omitted.
    """
    if not isinstance(spec, (str, DataSpec)):
        raise DataError(f"data spec must be a string such as 'uniform' or 'file.csv:column' (or a DataSpec); "
                        f"got {spec!r}")
    ds = parse_data_spec(spec) if isinstance(spec, str) else spec
    if data_kind not in ("categorical", "real"):
        raise DataError(f"data_kind must be 'categorical' or 'real'; got {data_kind!r}")
    if n is not None:
        n = _check_count("n", n, 1)
    if data_kind == "categorical":
        if k is None:
            raise DataError("categorical data need the number of categories k >= 2 (--k on the command line)")
        k = _check_count("k", k, 2)
    for name, v in (("lower", lower), ("upper", upper)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, Real)):
            raise DataError(f"{name} must be a real number; got {v!r}")
    if data_kind == "categorical" and (lower is not None or upper is not None):
        raise DataError("lower/upper scale a real-valued CSV column to [0, 1]; this protocol takes categorical data "
                        "(integer categories), so they do not apply")
    if (lower is not None or upper is not None) and ds.kind != "file":
        raise DataError(f"lower/upper scale a real-valued CSV column to [0, 1]; they do not apply to {ds.text!r}")
    gen = as_generator(rng)
    from shufflesim.core.resources import check_memory

    users = sum(ds.args) if ds.kind == "counts" else n
    if users is not None:
        check_memory(24.0 * users, f"the data set ({users} users)", "reduce n or the counts")
    if ds.kind == "file":
        return _load_file(ds, data_kind, n, k, gen, lower, upper)
    if ds.kind == "adult-age":
        ages = _subset(_adult_ages(), n, gen, "adult-age")
        lo, hi = ADULT_AGE_RANGE
        if data_kind == "real":
            return ages / 90.0
        return np.minimum((ages - lo) * k // (hi - lo + 1), k - 1).astype(np.int64)
    if ds.kind == "counts":
        if data_kind != "categorical":  # c_j users hold j/G (real_counts), in random order
            summary = real_counts(ds, n=n)
            return gen.permutation(np.repeat(summary.values, summary.counts))
        if len(ds.args) != k:
            raise DataError(f"data spec {ds.text!r} gives {len(ds.args)} counts; the protocol has k={k} categories")
        total = sum(ds.args)
        if n is not None and n != total:
            raise DataError(f"data spec {ds.text!r} has {total} users; n={n} (omit n or make them agree)")
        return gen.permutation(np.repeat(np.arange(k, dtype=np.int64), ds.args))
    if n is None or n < 1:
        raise DataError(f"data spec {ds.text!r} needs the number of users n >= 1")
    if data_kind == "categorical":
        if ds.kind == "uniform":
            return gen.integers(0, k, size=n, dtype=np.int64)
        if ds.kind == "zipf":
            w = (np.arange(1, k + 1, dtype=float)) ** (-ds.args[0])
            return gen.choice(k, size=n, p=w / w.sum()).astype(np.int64)
        if ds.kind == "constant":
            j = ds.args[0]
            if j != int(j) or not 0 <= j < k:
                raise DataError(f"data spec {ds.text!r}: the category must be an integer in [0, {k})")
            return np.full(n, int(j), dtype=np.int64)
        raise DataError(f"data spec {ds.text!r} is real-valued; this protocol takes categories in [0, {k})")
    if ds.kind == "uniform":
        return gen.random(n)
    if ds.kind == "normal":
        mu, sigma = ds.args
        return np.clip(gen.normal(mu, sigma, size=n), 0.0, 1.0)
    if ds.kind == "beta":
        return gen.beta(*ds.args, size=n)
    if ds.kind == "constant":
        x = ds.args[0]
        if not 0.0 <= x <= 1.0:
            raise DataError(f"data spec {ds.text!r}: the constant must lie in [0, 1]")
        return np.full(n, float(x))
    raise DataError(f"data spec {ds.text!r} is categorical; this protocol takes real inputs in [0, 1]")


def _load_file(ds: DataSpec, data_kind: str, n, k, gen, lower, upper) -> np.ndarray:
    values, raw = _read_column(ds.path, ds.column)
    nan = np.flatnonzero(~np.isfinite(values))
    if nan.size:
        i = int(nan[0])
        raise _bad_row(ds.path, ds.column, i, raw[i], "is not a finite number")
    if data_kind == "categorical":
        nonint = np.flatnonzero(values != np.round(values))
        if nonint.size:
            i = int(nonint[0])
            raise _bad_row(ds.path, ds.column, i, raw[i], "is not an integer category")
        out = np.flatnonzero((values < 0) | (values >= k))
        if out.size:
            i = int(out[0])
            raise _bad_row(ds.path, ds.column, i, raw[i], f"is outside the categories [0, {k})")
        return _subset(values.astype(np.int64), n, gen, ds.path)
    if lower is None or upper is None:
        raise DataError(f"{ds.path}: a real-valued column needs explicit --lower and --upper for scaling to [0, 1]")
    if not (math.isfinite(lower) and math.isfinite(upper)) or upper <= lower:
        raise DataError(f"scaling bounds must be finite with lower < upper; got lower={lower}, upper={upper}")
    out = np.flatnonzero((values < lower) | (values > upper))
    if out.size:
        i = int(out[0])
        raise _bad_row(ds.path, ds.column, i, raw[i], f"is outside [lower, upper] = [{lower}, {upper}]")
    return _subset((values - lower) / (upper - lower), n, gen, ds.path)


def data_counts(spec, *, n: int, k: int, rng: RngLike = None):
    """Categorical data as counts, never expanded to n rows (issue 21): a
    :class:`~shufflesim.pipeline.fast.DataSummary` for ``uniform`` and ``zipf:s`` (one multinomial draw of n
    users over k categories), ``constant:j`` and ``counts:c0,...`` (exact).  Other specs (files, data
    sets) are rows by nature: use :func:`load_data`."""
    from shufflesim.pipeline.fast import DataSummary

    ds = parse_data_spec(spec) if isinstance(spec, str) else spec
    k = _check_count("k", k, 2)
    if ds.kind == "counts":
        counts = np.asarray(ds.args, dtype=np.int64)
        if counts.size != k:
            raise DataError(f"data spec {ds.text!r} gives {counts.size} counts; the protocol has k={k} categories")
        if n is not None and int(counts.sum()) != n:
            raise DataError(f"data spec {ds.text!r} has {int(counts.sum())} users; n={n} (omit n or make them agree)")
        return DataSummary(np.arange(k), counts, int(counts.sum()), "categorical")
    n = _check_count("n", n, 1)
    if n > MAX_COUNTS_N:
        raise DataError(f"n={n} users cannot be held as int64 counts (at most 2^62 = {MAX_COUNTS_N})")
    gen = as_generator(rng)
    if ds.kind == "uniform":
        counts = gen.multinomial(n, np.full(k, 1.0 / k))
    elif ds.kind == "zipf":
        w = (np.arange(1, k + 1, dtype=float)) ** (-ds.args[0])
        counts = gen.multinomial(n, w / w.sum())
    elif ds.kind == "constant":
        j = ds.args[0]
        if j != int(j) or not 0 <= j < k:
            raise DataError(f"data spec {ds.text!r}: the category must be an integer in [0, {k})")
        counts = np.zeros(k, dtype=np.int64)
        counts[int(j)] = n
    else:
        raise DataError(f"data spec {ds.text!r} cannot be given as counts (uniform, zipf:s, constant:j, counts:...)")
    return DataSummary(np.arange(k), np.asarray(counts, dtype=np.int64), n, "categorical")


#: points of the grid on which real-valued synthetic data are drawn as counts (issue 21): users hold the
#: midpoints (j + 1/2)/REAL_COUNTS_GRID of the cells of [0, 1] (and the end points 0 and 1 where a clipped
#: normal puts mass there)
REAL_COUNTS_GRID = 4096
def real_counts(spec, *, n: int | None, rng: RngLike = None, grid: int = REAL_COUNTS_GRID):
    """Real-valued data in [0, 1] as a multiset, never expanded to n rows (issue 21): a
    :class:`~shufflesim.pipeline.fast.DataSummary` of the sorted distinct values held by at least one user and
    their counts (zero counts dropped, as :meth:`DataSummary.of` drops them for rows).

    * ``counts:c0,...,cG`` (G >= 1) -- exactly c_j users hold j/G (exact; ``n`` omitted or equal to Σ c_j);
    * ``constant:x`` -- n users hold x (exact);
    * ``uniform``, ``beta:a,b``, ``normal:mu,sigma`` (clipped to [0, 1]) -- n i.i.d. users of the distribution
      *quantised to ``grid`` cells*: the number of users in each cell [j/grid, (j+1)/grid) is one multinomial
      draw with the cell probabilities from the distribution's CDF (exactly the cell counts of n i.i.d.
      draws), and every user of a cell holds its midpoint (j + 1/2)/grid; a normal's mass below 0 and above 1
      sits at 0 and 1, as the clipping of the rows path puts it.  The data set differs from the rows path's
      (continuous values) by at most 1/(2·grid) per user; every protocol then runs on this data set exactly.
    """
    from scipy import stats

    from shufflesim.pipeline.fast import DataSummary

    ds = parse_data_spec(spec) if isinstance(spec, str) else spec
    grid = _check_count("grid", grid, 1)
    if ds.kind == "counts":
        counts = np.asarray(ds.args, dtype=np.int64)
        if counts.size < 2:
            raise DataError(f"data spec {ds.text!r}: real-valued counts need at least two values c0,c1 "
                            "(c_j users hold j/G, G = number of counts - 1)")
        if n is not None and int(counts.sum()) != n:
            raise DataError(f"data spec {ds.text!r} has {int(counts.sum())} users; n={n} (omit n or make them agree)")
        values = np.arange(counts.size, dtype=float) / (counts.size - 1)
    else:
        n = _check_count("n", n, 1)
        if n > MAX_COUNTS_N:
            raise DataError(f"n={n} users cannot be held as int64 counts (at most 2^62 = {MAX_COUNTS_N})")
        gen = as_generator(rng)
        if ds.kind == "constant":
            x = ds.args[0]
            if not 0.0 <= x <= 1.0:
                raise DataError(f"data spec {ds.text!r}: the constant must lie in [0, 1]")
            values, counts = np.array([float(x)]), np.array([n], dtype=np.int64)
        elif ds.kind in ("uniform", "beta", "normal"):
            dist = {"uniform": lambda: stats.uniform(), "beta": lambda: stats.beta(*ds.args),
                    "normal": lambda: stats.norm(*ds.args)}[ds.kind]()
            edges = np.linspace(0.0, 1.0, grid + 1)
            cdf = dist.cdf(edges)
            p = np.concatenate(([cdf[0]], np.diff(cdf), [dist.sf(1.0)]))  # below 0, the cells, above 1
            p = np.maximum(p, 0.0)
            drawn = gen.multinomial(n, p / p.sum())
            values = np.concatenate(([0.0], (np.arange(grid) + 0.5) / grid, [1.0]))
            counts = drawn.astype(np.int64)
        else:
            raise DataError(f"data spec {ds.text!r} cannot be given as counts of real values (uniform, beta:a,b, "
                            "normal:mu,sigma, constant:x, counts:c0,...,cG)")
    keep = counts > 0
    values, counts = values[keep], counts[keep]
    return DataSummary(values, counts, int(counts.sum()), "real")


#: above this n, synthetic data for the fast engine are drawn as counts (one multinomial, or a grid of real values)
#: instead of n rows; below it the rows path is kept, so that results for a seed are unchanged there (issue 21)
COUNTS_MIN_N = 10**7
#: the synthetic specs drawn as counts above :data:`COUNTS_MIN_N`, per data kind (``counts:`` always is)
COUNTABLE = {"categorical": ("uniform", "zipf", "constant"), "real": ("uniform", "beta", "normal", "constant")}


def drawn_as_counts(spec, *, data_kind: str, n: int | None) -> bool:
    """Whether the fast engine reads ``spec`` as a multiset (:func:`population_counts`), never as n rows:
    ``counts:...`` always (the fast engine reads only the multiset, so the numbers are those of the rows path),
    the :data:`COUNTABLE` synthetic specs above :data:`COUNTS_MIN_N` (issue 29: ``--engine auto`` and ``fast``
    answer n = 1e9 in ``simulate``, ``validate`` and ``sweep`` alike)."""
    ds = parse_data_spec(spec) if isinstance(spec, str) else spec
    return ds.kind == "counts" or (n is not None and n > COUNTS_MIN_N and ds.kind in COUNTABLE.get(data_kind, ()))


def population_counts(spec, *, data_kind: str, n: int | None, k: int | None, rng: RngLike = None):
    """The data of :func:`drawn_as_counts` as a DataSummary: :func:`data_counts` (categorical) or
    :func:`real_counts` (real)."""
    if data_kind == "categorical":
        return data_counts(spec, n=n, k=k, rng=rng)
    return real_counts(spec, n=n, rng=rng)
