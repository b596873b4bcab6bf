"""A local randomiser given by its matrix, or by a sampler with a declared output space (issue 22).

A finite local randomiser on inputs {0..k−1} and outputs {0..m−1} *is* its matrix ``R`` (k × m, row x the
law of the report of a user holding x, rows summing to 1).  From the matrix alone shufflesim derives:

* **ε0**, exactly: ε0 = max_y max_{x,x'} log R[x, y]/R[x', y] (pure LDP; infinite when some output has
  probability 0 under one input and not under another).  A declared ε0 is checked against it, never
  trusted (:func:`matrix_eps0`, :func:`check_declared_eps0`);
* **the exact fast engine**: given the input counts c, the shuffled histogram of the reports is
  N = Σ_x Multinomial(c_x, R[x]), independent over x (users with the same input are exchangeable), drawn
  directly in O(k·m) (:func:`matrix_histogram`, :func:`matrix_histogram_batch`);
* **frequency estimation by channel inversion**: E[N] = Rᵀc, so ĉ = A N with A = (Rᵀ)⁺ (the
  Moore–Penrose pseudo-inverse, least squares).  Its exact MSE is variance plus squared bias,
  E‖ĉ − c‖² = Σ_x c_x (Σ_y R[x,y] ‖A_{·y}‖² − ‖A R[x]ᵀ‖²) + ‖B c‖²,  B = A Rᵀ − I  (:func:`inversion_mse`;
  ĉ − c = A(N − EN) + B c, Cov N = Σ_x c_x (diag R[x] − R[x]ᵀR[x]) and E‖A(N − EN)‖² = tr(A Cov N Aᵀ)).
  **Identifiability**: when R has rank k, A Rᵀ = I and B = 0 (unbiased).  With rank < k — more inputs than
  outputs, or equal (linearly dependent) rows — A Rᵀ is the orthogonal projection onto the range of R, so ĉ
  estimates that projection of c: input x is *not identifiable* when column x of B is not 0
  (:func:`inversion_bias`), and the estimate is biased by B c (two inputs with equal rows, e.g., each get
  half of their joint count).  The worst case over data sets of n users, Σ_x c_x t_x + ‖B c‖² (convex in c), is
  attained at a vertex c = n e_x: max_x n t_x + n² ‖B_{·x}‖²  (:func:`inversion_mse_worst`).

A randomiser known only as code (:class:`SamplerRandomiser`) gets the faithful engine; its ε0 must be
declared (and is reported as declared, not derived).  The accounting of both lives in
:mod:`shufflesim.mechanisms.matrix`; the protocols in ``protocols/matrix_rr.py``; the guide is docs/plugins.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from shufflesim.errors import DataError, ParameterError
from shufflesim.maths.rounding import grid_dtype
from shufflesim.pipeline.randomiser import LocalRandomiser
from shufflesim.pipeline.spaces import IntegerRange

#: a row may miss 1 by this much (decimals typed by hand); rows are then divided by their sum
ROW_SUM_TOL = 1e-9
#: largest number of matrix entries accepted (k·m)
MAX_ENTRIES = 10**7
#: a declared ε0 must agree with the derived one to this relative accuracy
DECLARED_RTOL = 1e-9


def _entry(v: Any, where: str) -> float:
    """A matrix entry: a number or a string such as "1/3" or "0.25", read by the one bounded parser
    (:func:`shufflesim.core.checks.parse_real`: a long token, '1e400' or '1e999999999' is refused before any
    conversion; a fraction's two sides are each checked first, then divided exactly)."""
    from shufflesim.core.checks import check_real, parse_real

    name = f"matrix entry {where}"
    if isinstance(v, bool):
        raise ParameterError(f"{name} must be a number; got {v!r}")
    if isinstance(v, (int, float, np.integer, np.floating)):
        return check_real(name, v)
    if isinstance(v, str):
        top, slash, bottom = v.partition("/")
        try:
            parse_real(name, top)
            zero = bool(slash) and not parse_real(name, bottom)
        except ParameterError:
            shown = repr(v) if len(v) <= 40 else repr(v[:30] + "...") + f" ({len(v)} characters)"
            raise ParameterError(f"{name} must be a number or a fraction like 1/3, within double precision; "
                                 f"got {shown}") from None
        if not slash:
            return float(Fraction(top.strip()))
        if zero:
            raise ParameterError(f"{name}: a fraction with denominator 0; got {v!r}")
        value = Fraction(top.strip()) / Fraction(bottom.strip())
        if value > 1:  # a probability; also keeps float() below the double range
            raise ParameterError(f"{name} must be a probability in [0, 1]; got {v!r}")
        return float(value)
    raise ParameterError(f"{name} must be a number; got {v!r}")


def _numeric_rows(rows: list[list]) -> np.ndarray | None:
    """Rows of plain numbers (Python or numpy ints and floats, no bool) as one float array, converted by numpy
    (a 1000 x 1000 matrix given as lists, as a frozen description keeps it, is checked in milliseconds, not
    entry by entry); None when any entry needs :func:`_entry` (a string, a bool, another type).  Finiteness
    and the ranges are checked on the array by :func:`check_matrix`."""
    plain = (float, int, np.floating, np.integer)
    if not all(type(v) is not bool and isinstance(v, plain) for r in rows for v in r):
        return None
    try:
        R = np.array(rows, dtype=float)
    except (OverflowError, ValueError):  # an int beyond the double range: _entry names it
        return None
    return R if R.ndim == 2 else None


def check_matrix(matrix: Any, *, name: str = "matrix") -> np.ndarray:
    """The randomiser matrix as a float array (k × m, k ≥ 2 inputs, m ≥ 2 outputs, entries ≥ 0, rows
    summing to 1 within :data:`ROW_SUM_TOL`, then divided by their sums); ParameterError otherwise."""
    if isinstance(matrix, np.ndarray):
        R = matrix.astype(float, copy=True)
    else:
        if isinstance(matrix, (str, bytes)) or not hasattr(matrix, "__iter__"):
            raise ParameterError(f"{name} must be a list of rows (one per input) of output probabilities; got {matrix!r}")
        rows = [list(r) if hasattr(r, "__iter__") and not isinstance(r, (str, bytes)) else None for r in matrix]
        if not rows or any(r is None for r in rows):
            raise ParameterError(f"{name} must be a non-empty list of rows (lists of probabilities)")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise ParameterError(f"{name} rows must all have the same number of outputs; got lengths {sorted(widths)}")
        R = _numeric_rows(rows)
        if R is None:  # strings ("1/3"), or anything that is not a plain number: read entry by entry
            R = np.array([[_entry(v, f"[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(rows)],
                         dtype=float)
    if R.ndim != 2:
        raise ParameterError(f"{name} must be 2-D (inputs x outputs); got shape {R.shape}")
    k, m = R.shape
    if k < 2 or m < 2:
        raise ParameterError(f"{name} needs at least 2 inputs (rows) and 2 outputs (columns); got {k} x {m}")
    if k * m > MAX_ENTRIES:
        raise ParameterError(f"{name} has {k * m} entries; at most {MAX_ENTRIES} are supported (use a sampler)")
    if not np.all(np.isfinite(R)):
        raise ParameterError(f"{name} entries must be finite")
    if R.min() < 0.0:
        i, j = np.unravel_index(int(np.argmin(R)), R.shape)
        raise ParameterError(f"{name} entries must be probabilities >= 0; entry [{i}][{j}] is {R[i, j]:g}")
    s = R.sum(axis=1)
    bad = np.flatnonzero(np.abs(s - 1.0) > ROW_SUM_TOL)
    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"every row of {name} must sum to 1 (it is the law of one input's report); row {i} "
                             f"sums to {s[i]:.12g}" + (f" ({bad.size} rows off)" if bad.size > 1 else ""))
    R = R / s[:, None]
    check_ldp(R, name=name)
    return R


def check_ldp(R: np.ndarray, *, name: str = "matrix") -> float:
    """ε0 of R (:func:`matrix_eps0`), or ParameterError naming the witness when R is not ε0-LDP for any finite
    ε0 (a report impossible for one input and possible for another, e.g. the identity).  Every matrix path
    (:func:`check_matrix`: simulate, validate, audit, account, scenario files, the Python API) refuses such a
    matrix: the shuffled accounting needs LDP (docs/plugins.md#what-you-give-what-you-get)."""
    eps0 = matrix_eps0(R)
    if math.isinf(eps0):
        x, x2, y = eps0_witness(R)
        if R[x2, y] > 0.0:  # a ratio beyond double precision (an entry near the subnormal range)
            raise ParameterError(f"{name}: report {y} has probability {R[x, y]:g} for input {x} and {R[x2, y]:g} for "
                                 f"input {x2}, a ratio beyond double precision (eps0 = "
                                 f"{math.log(R[x, y]) - math.log(R[x2, y]):.6g}); entries must keep every column's "
                                 "ratio below 1e308")
        raise ParameterError(f"{name} is not eps0-LDP for any finite eps0: report {y} has probability {R[x, y]:g} "
                             f"for input {x} and 0 for input {x2}; every report must be possible for all inputs or "
                             "for none")
    return eps0


def matrix_eps0(R: np.ndarray) -> float:
    """ε0 of the randomiser: max over outputs y of log(max_x R[x,y] / min_x R[x,y]) (inf if a column mixes 0
    and positive entries; columns of zeros are never reported and do not count).

    Computed as log1p((max − min)/min) so that a small ε0 keeps its relative accuracy (a few ulps); the
    accountant raises it by :func:`shufflesim.maths.rr.eps0_upper` before using it."""
    R = np.asarray(R, dtype=float)
    hi, lo = R.max(axis=0), R.min(axis=0)
    used = hi > 0.0
    if np.any(lo[used] == 0.0):
        return math.inf
    hi, lo = hi[used], lo[used]
    with np.errstate(over="ignore"):  # a ratio beyond double precision is inf (check_ldp says so)
        return float(np.max(np.log1p((hi - lo) / lo)))


def eps0_witness(R: np.ndarray) -> tuple[int, int, int]:
    """(x, x', y) attaining ε0: R[x, y]/R[x', y] is largest."""
    R = np.asarray(R, dtype=float)
    hi, lo = R.max(axis=0), R.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(hi > 0, np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.inf), 0.0)
    y = int(np.argmax(ratio))
    return int(np.argmax(R[:, y])), int(np.argmin(R[:, y])), y


def check_declared_eps0(derived: float, declared: float | None) -> None:
    """A declared ε0 must equal the derived one (relative :data:`DECLARED_RTOL`): ParameterError otherwise."""
    if declared is None:
        return
    if isinstance(declared, bool) or not isinstance(declared, (int, float)) or not declared > 0:
        raise ParameterError(f"declared eps0 must be a number > 0; got {declared!r}")
    if math.isinf(derived) or not math.isclose(derived, float(declared), rel_tol=DECLARED_RTOL):
        raise ParameterError(f"the declared eps0={declared:.12g} does not match the matrix, whose eps0 is {derived:.12g} "
                             "(max over outputs of log max_x R[x,y] / min_x R[x,y]); fix the matrix or the declaration")


#: largest matrix file read: MAX_ENTRIES entries of up to 31 characters and a separator (the file's size is
#: checked before it is read)
MAX_FILE_BYTES = 32 * MAX_ENTRIES


def _rows_until_cap(fh, path: Path):
    """The file's data lines (comments and blanks dropped, ';' read as ','), refused as soon as their entries
    pass :data:`MAX_ENTRIES`."""
    entries = 0
    for i, line in enumerate(fh):
        line = line.split("#", 1)[0].strip().replace(";", ",")
        if not line:
            continue
        entries += line.count(",") + 1
        if entries > MAX_ENTRIES:
            raise ParameterError(f"matrix of {path.name} has more than {MAX_ENTRIES} entries (passed on line {i + 1}); "
                                 f"at most {MAX_ENTRIES} are supported (use a sampler)")
        yield line


#: a fraction of two integers exact in double precision (below 2^53), such as 1/3 or 2/1001
_INT_FRACTION = re.compile(r"\d{1,15}/\d{1,15}")


def integer_fractions(tokens: list[str]) -> np.ndarray | None:
    """A row of fractions of small integers ("2/1001") as floats, divided by numpy at once; the same values as
    :func:`_entry` (both sides are exact doubles, so IEEE division is correctly rounded, as float(Fraction) is).
    None when any token is not such a fraction, has denominator 0 or exceeds 1 (:func:`_entry` reads the row and
    names the entry)."""
    if not all(_INT_FRACTION.fullmatch(t) for t in tokens):
        return None
    top, bottom = np.array([t.split("/") for t in tokens], dtype=float).T
    if not np.all(bottom > 0) or np.any(top > bottom):
        return None
    return top / bottom


def _read_csv(path: Path):
    """The CSV file's rows of tokens, counted before they are split: more than :data:`MAX_ENTRIES` entries is
    refused at the row that passes the cap.  Rows of plain numbers are converted by numpy at once (an array
    back); fractions such as 1/3 keep the row of tokens (read by :func:`_entry`)."""
    rows, numeric = [], True
    with path.open(encoding="utf-8") as fh:  # read a row at a time: refused at the cap, not after reading it all
        lines = list(_rows_until_cap(fh, path))
    for line in lines:
        tokens = [t.strip() for t in line.split(",") if t.strip()]
        if numeric and all(len(t) <= 32 and "/" not in t and "_" not in t for t in tokens):
            try:
                rows.append(np.array(tokens, dtype=float))
                continue
            except ValueError:
                pass
        fractions = integer_fractions(tokens) if numeric else None
        if fractions is not None:
            rows.append(fractions)
            continue
        numeric = False
        rows.append(tokens)
    if numeric and rows and len({r.size for r in rows}) == 1:
        return np.vstack(rows)
    return [list(r) for r in rows]


def read_matrix(source: Any) -> tuple[np.ndarray, float | None]:
    """(matrix, declared ε0 or None) from a CSV file (one row per input, comma-separated probabilities or
    fractions such as 1/3, ``#`` comments), a TOML file (``matrix = [[...], ...]``, optional ``eps0``), or a
    list of rows given directly (a scenario file's inline table).  DataError for an unreadable file,
    ParameterError for a bad matrix."""
    if not isinstance(source, (str, Path)):
        return check_matrix(source), None
    path = Path(source)
    if not path.is_file():
        raise DataError(f"matrix file {str(source)!r} not found (give a .csv or .toml file with one row per input)")
    declared = None
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ParameterError(f"matrix file {str(source)!r} is {size / 1e6:.1f} MB; at most {MAX_FILE_BYTES / 1e6:g} MB "
                                 f"({MAX_ENTRIES} entries) are read (use a sampler)")
        if path.suffix.lower() == ".toml":
            import tomllib

            text = path.read_text(encoding="utf-8")
            if text.count(",") > 2 * MAX_ENTRIES:  # k·m entries need at most k·m + k separators: counted first
                raise ParameterError(f"matrix file {str(source)!r} has more than {MAX_ENTRIES} entries; at most "
                                     f"{MAX_ENTRIES} are supported (use a sampler)")
            doc = tomllib.loads(text)
            if "matrix" not in doc:
                raise DataError(f"matrix file {str(source)!r} has no 'matrix' key (matrix = [[p00, p01, ...], ...])")
            unknown = sorted(set(doc) - {"matrix", "eps0", "name", "description", "inputs", "outputs"})
            if unknown:
                raise DataError(f"matrix file {str(source)!r}: unknown key(s) {', '.join(unknown)}; allowed: matrix, "
                                "eps0, name, description, inputs, outputs")
            rows, declared = doc["matrix"], doc.get("eps0")
        else:
            rows = _read_csv(path)
    except (UnicodeDecodeError, OSError) as exc:
        raise DataError(f"cannot read matrix file {str(source)!r}: {exc}") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        if isinstance(exc, (DataError, ParameterError)):
            raise
        raise DataError(f"matrix file {str(source)!r} is not valid TOML: {str(exc).splitlines()[0]}") from None
    return check_matrix(rows, name=f"matrix of {path.name}"), declared


# --- samplers ---------------------------------------------------------------------------------------------------
def _cdf(R: np.ndarray) -> np.ndarray:
    c = np.cumsum(R, axis=1)
    c[:, -1] = 1.0  # a uniform draw in [0, 1) always lands in the row
    return c


def sample_reports(x: np.ndarray, cdf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One report per user by inversion: u ~ U[0, 1) per user (in user order), y = first j with cdf[x, j] > u.
    Vectorised over users; the loop runs over the distinct input values."""
    x = np.asarray(x)
    u = rng.random(x.shape[0])
    y = np.empty(x.shape[0], dtype=grid_dtype(cdf.shape[1] - 1))
    order = np.argsort(x, kind="stable")
    bounds = np.searchsorted(x[order], np.arange(cdf.shape[0] + 1))
    for v in np.flatnonzero(np.diff(bounds)):
        idx = order[bounds[v]:bounds[v + 1]]
        y[idx] = np.searchsorted(cdf[v], u[idx], side="right")
    return y


def matrix_histogram(counts: np.ndarray, R: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The shuffled histogram of the reports of users with input counts ``counts``: Σ_x Multinomial(c_x, R[x])."""
    counts = np.asarray(counts, dtype=np.int64)
    return rng.multinomial(counts, R[: counts.shape[0]]).sum(axis=0)


def matrix_histogram_batch(counts: np.ndarray, R: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent draws of :func:`matrix_histogram`, one per row: vectorised over trials, one
    Multinomial(c_x, R[x]) block per input value held by some user (memory size × m, whatever k)."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.zeros((size, R.shape[1]), dtype=np.int64)
    for x in np.flatnonzero(counts):
        out += rng.multinomial(counts[x], R[x], size=size)
    return out


# --- channel inversion ------------------------------------------------------------------------------------------
def inversion_operator(R: np.ndarray) -> np.ndarray:
    """A = (Rᵀ)⁺ (k × m): ĉ = A N is the least-squares estimate of the input counts from the histogram N.
    Singular values below :data:`RANK_RTOL` × max(k, m) × the largest count as 0, as in :func:`inversion_bias`'s
    rank."""
    return np.linalg.pinv(R.T, rcond=RANK_RTOL * max(R.shape))


#: relative singular-value cut (× max(k, m)) below which R counts as rank-deficient
RANK_RTOL = 16 * np.finfo(float).eps


def inversion_bias(R: np.ndarray, A: np.ndarray) -> np.ndarray:
    """B = A Rᵀ − I (k × k): E[ĉ] − c = B c (module docstring).  Exactly 0 when R has rank k (every input
    identifiable: needs at least as many outputs as inputs, and linearly independent rows)."""
    k = R.shape[0]
    sv = np.linalg.svd(R, compute_uv=False)
    rank = int(np.sum(sv > sv[0] * RANK_RTOL * max(R.shape)))
    if rank == k:
        return np.zeros((k, k))
    return A @ R.T - np.eye(k)


def unidentifiable_inputs(B: np.ndarray) -> list[int]:
    """The inputs x whose count channel inversion cannot estimate without bias: column x of B is not 0."""
    return [int(x) for x in np.flatnonzero(np.linalg.norm(B, axis=0) > 1e-9)]


def inversion_mse_terms(R: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Per input x: a user holding x adds Σ_y R[x,y]‖A_{·y}‖² − ‖A R[x]ᵀ‖² to the variance part of
    E‖ĉ − c‖² (module docstring)."""
    col = np.sum(A * A, axis=0)  # ‖A_{·y}‖²
    mean = R @ A.T  # row x: (A R[x]ᵀ)ᵀ
    return R @ col - np.sum(mean * mean, axis=1)


def inversion_mse(terms: np.ndarray, B: np.ndarray, counts: np.ndarray) -> float:
    """Exact E‖ĉ − c‖² of channel inversion on data with input counts ``counts``: the variance Σ_x c_x t_x
    (``terms`` = t: :func:`inversion_mse_terms`) plus the squared bias ‖B c‖² (B: :func:`inversion_bias`; 0 when
    every input is identifiable)."""
    c = np.asarray(counts, dtype=float)
    bias = np.asarray(B) @ c
    return float(c @ np.asarray(terms) + bias @ bias)


def inversion_mse_worst(terms: np.ndarray, B: np.ndarray, n: int) -> float:
    """Exact max over data sets of n users of E‖ĉ − c‖² = Σ_x c_x t_x + ‖B c‖² (``terms`` = t:
    :func:`inversion_mse_terms`; B: :func:`inversion_bias`): convex in c, so attained at a vertex c = n e_x,
    max_x n t_x + n² ‖B_{·x}‖² (module docstring)."""
    return float(np.max(n * np.asarray(terms) + float(n) ** 2 * np.sum(B * B, axis=0)))


# --- randomisers ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MatrixRandomiser(LocalRandomiser):
    """The local randomiser with matrix ``matrix`` (k × m); ``declared_eps0`` is checked against the ε0
    derived from the matrix (ParameterError if they differ)."""

    matrix: Any
    declared_eps0: float | None = None
    eps0: float = field(init=False)
    cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        R = check_matrix(self.matrix)
        R.setflags(write=False)
        object.__setattr__(self, "matrix", R)
        eps0 = matrix_eps0(R)
        check_declared_eps0(eps0, self.declared_eps0)
        object.__setattr__(self, "eps0", eps0)
        object.__setattr__(self, "cdf", _cdf(R))
        object.__setattr__(self, "message_space", IntegerRange(0, R.shape[1] - 1))
        object.__setattr__(self, "messages_per_user", 1)

    @property
    def k(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def m(self) -> int:
        return int(self.matrix.shape[1])

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return sample_reports(x, self.cdf, rng)[:, None]


@dataclass(frozen=True, eq=False)
class SamplerRandomiser(LocalRandomiser):
    """A randomiser known only as code: ``sample(x, rng)`` returns one report in {0..m−1} per input of x
    (vectorised over users).  ``eps0`` is *declared* (shufflesim cannot derive it without the matrix)."""

    sample: Callable[[np.ndarray, np.random.Generator], np.ndarray]
    k: int
    m: int
    eps0: float  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not callable(self.sample):
            raise ParameterError("sample must be a function (x, rng) -> one report per user")
        for nm, v in (("k", self.k), ("m", self.m)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
                raise ParameterError(f"{nm} must be an integer >= 2; got {v!r}")
        if isinstance(self.eps0, bool) or not isinstance(self.eps0, (int, float)) or not 0 < self.eps0 < math.inf:
            raise ParameterError(f"a sampler's eps0 must be declared as a finite number > 0; got {self.eps0!r}")
        object.__setattr__(self, "eps0", float(self.eps0))
        object.__setattr__(self, "message_space", IntegerRange(0, int(self.m) - 1))
        object.__setattr__(self, "messages_per_user", 1)

    def randomise(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        y = np.asarray(self.sample(x, rng))
        if y.shape != (x.shape[0],) or y.dtype.kind not in "iu":
            raise DataError(f"the sampler must return one integer report per user (shape ({x.shape[0]},)); got "
                            f"shape {y.shape}, dtype {y.dtype}")
        if y.size and (int(y.min()) < 0 or int(y.max()) >= self.m):
            raise DataError(f"the sampler returned a report outside its declared outputs 0..{self.m - 1}")
        return y.astype(grid_dtype(self.m - 1), copy=False)[:, None]
