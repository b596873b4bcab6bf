"""Parameter validation helpers: each raises :class:`ParameterError` with one line saying what is allowed."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from numbers import Integral, Real

from shufflesim.errors import ParameterError, ShufflesimError


def _as_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name} must be a real number; got {value!r}")
    try:
        v = float(value)
    except OverflowError:  # an integer beyond the double range (a 400-digit int)
        raise ParameterError(f"{name} must be a finite number within double precision (about 1e308); got an "
                             "integer of " + (f"{len(str(value))} digits" if abs(value) < 10**4000 else
                                              "more than 4000 digits")) from None
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return v


#: integers must fit a signed 64-bit integer (numpy's counts, sizes and sums) unless a caller states a wider range
INT64_MAX = 2**63 - 1


def check_int(name: str, value, *, minimum: int | None = -INT64_MAX, maximum: int | None = INT64_MAX,
              error: type[ShufflesimError] = ParameterError) -> int:
    """An integer within [minimum, maximum]; by default within the int64 range, so no integer a user gives wraps
    around where numpy holds it (a caller may pass ``maximum=None`` for a Python-integer-only quantity)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise error(f"{name} must be an integer; got {value!r}")
    v = int(value)
    shown = v if abs(v) < 10**15 else f"{float(v):.6g}" if abs(v) < 10**308 else "an integer beyond 1e308"
    if minimum is not None and v < minimum:
        raise error(f"{name} must be an integer >= {minimum}; got {shown}")
    if maximum is not None and v > maximum:
        raise error(f"{name} must be an integer <= {maximum}; got {shown}")
    return v


@dataclass(frozen=True)
class Precision:
    """The range of a parameter where the formulas that use it keep double precision, and why outside it they
    do not (``below`` / ``above``: what under- or overflows).  :func:`check_real` refuses a value outside it with
    that reason, e.g. "eps must be >= 1e-100: below it the noise scale 1/eps ... overflow double precision"."""

    low: float | None = None
    high: float | None = None
    below: str = ""
    above: str = ""

    def check(self, name: str, v: float, error: type[ShufflesimError] = ParameterError) -> float:
        if self.low is not None and v < self.low:
            raise error(f"{name} must be >= {self.low:g}: below it {self.below}; got {v!r}")
        if self.high is not None and v > self.high:
            raise error(f"{name} must be <= {self.high:g}: above it {self.above}; got {v!r}")
        return v


#: largest ε (or ε0) any formula is evaluated at: e^ε overflows double precision above log(DBL_MAX) ~ 709.78
MAX_EPS = 700.0
#: the precision range of a privacy parameter ε that enters the formulas as e^ε
EPS_PRECISION = Precision(high=MAX_EPS, above="e^eps overflows double precision (the formulas that use it "
                          "hold only below ~709.78)")

#: the precision range of a significance level alpha that enters as the confidence level 1 - alpha (normal and
#: Student quantiles): below 1e-15, 1 - alpha/2 is within a few ulps of 1 (and is 1 below ~1.1e-16), so the
#: quantile is infinite or not what was asked, and every interval and trial count derived from it overflows
ALPHA_PRECISION = Precision(low=1e-15, below="1 - alpha rounds to 1 in double precision (the interval's quantile "
                            "is infinite)")


def check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    precise: Precision | None = None,
) -> float:
    """A finite real in the interval given by ``low``/``high`` (closed unless ``*_open``) and, with ``precise``,
    in the range where the formulas using it keep double precision (refused with the reason otherwise)."""
    v = _as_real(name, value)
    bad = False
    if low is not None and (v < low or (low_open and v == low)):
        bad = True
    if high is not None and (v > high or (high_open and v == high)):
        bad = True
    if bad:
        lo = "-inf" if low is None else repr(low)
        hi = "inf" if high is None else repr(high)
        interval = ("(" if low_open or low is None else "[") + f"{lo}, {hi}" + (")" if high_open or high is None else "]")
        raise ParameterError(f"{name} must be in {interval}; got {v!r}")
    return v if precise is None else precise.check(name, v)


def check_positive(name: str, value) -> float:
    """A finite real > 0."""
    return check_real(name, value, low=0.0, low_open=True)


def check_probability(name: str, value, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """A probability in [0, 1] with optional open ends."""
    return check_real(name, value, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one)


def did_you_mean(word, allowed) -> str:
    """``"; did you mean 'krr'?"`` when ``word`` is close to one of ``allowed`` (difflib's similarity ratio
    ≥ 0.6, the closest first), else ``""``: the one place that suggests a name for a misspelt protocol,
    mechanism, subcommand, flag or key, appended to the error that refuses it."""
    import difflib

    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [str(a) for a in allowed], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- numbers given as text (the CLI, scenario values, data specs, matrix files): one bounded parser ---------------
#: longest numeric token read from text.  A double needs at most 24 characters ("-2.2250738585072014e-308"), an
#: int64 at most 20; a longer token ('1e999999999' is short, but a 400-digit integer or a megabyte string is not) is
#: refused before any conversion, so no conversion is slow (Python's int() of n digits is quadratic) or overflows.
MAX_NUMBER_CHARS = 64
#: most digits of an integer written out in full ('123...'): Python reads it in microseconds, and check_int then
#: refuses it by its range with the parameter's name (a real number's token has at most MAX_NUMBER_CHARS)
MAX_INT_DIGITS = 1000
#: largest decimal exponent a number read from text may carry; beyond it the value is inf or 0 in double precision
#: (DBL_MAX ~ 1.8e308, the smallest subnormal ~ 4.9e-324), so the token is refused as out of range, not rounded
MAX_EXPONENT = 400
#: most numbers one comma-separated list read from text may hold (a counts spec, a grid axis): beyond it the
#: list is refused by its length in characters, before it is split
MAX_LIST_ITEMS = 10**6

_NUMBER = re.compile(r"[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE]([+-]?\d+))?")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def _token(name: str, text, error: type[ShufflesimError]) -> str:
    if isinstance(text, bytes):
        raise error(f"{name} must be a number written as text; got bytes")
    if not isinstance(text, str):
        raise error(f"{name} must be a number; got {text!r}")
    t = text.strip()
    if not t:
        raise error(f"{name} must be a number; got an empty value")
    if len(t) > MAX_NUMBER_CHARS:
        raise error(f"{name} must be a number of at most {MAX_NUMBER_CHARS} characters; got {len(t)} characters "
                    f"({t[:20]}...)")
    return t


def parse_real(name: str, text, *, finite: bool = True, error: type[ShufflesimError] = ParameterError) -> float:
    """A real number written as text ('0.5', '1e-3', '1_000'): length-capped before conversion, its exponent
    within :data:`MAX_EXPONENT` (so '1e400' or '1e999999999' is refused as out of range, never rounded to inf
    or 0), finite unless ``finite=False`` (then 'inf' and 'nan' are returned as such, for the caller's range
    check).  ``error`` is the exception raised (ParameterError; DataError for data specs and files)."""
    t = _token(name, text, error)
    m = _NUMBER.fullmatch(t)
    if m is None:
        if _SPECIAL.fullmatch(t):
            if finite:
                raise error(f"{name} must be a finite number; got {t!r}")
            return float(t)
        raise error(f"{name} must be a number; got {t!r}")
    if m.group(1) is not None and abs(int(m.group(1))) > MAX_EXPONENT:
        raise error(f"{name} must be a finite number within double precision (about 1e-308 to 1e308); got {t!r}")
    try:
        v = float(t)
    except ValueError:
        raise error(f"{name} must be a number; got {t!r}") from None
    if not math.isfinite(v):
        raise error(f"{name} must be a finite number within double precision (about 1e-308 to 1e308); got {t!r}")
    if v == 0.0 and re.search(r"[1-9]", t[:m.start(1)] if m.group(1) is not None else t):
        raise error(f"{name} is below double precision (it would be read as 0; the smallest is about 5e-324); "
                    f"got {t!r}")
    return v


def parse_int(name: str, text, *, minimum: int | None = None, maximum: int | None = None,
              error: type[ShufflesimError] = ParameterError) -> int:
    """An integer written as text ('12', '1_000', '1e6', '2.0'), length-capped before conversion and checked
    against [minimum, maximum] and the int64 range *before* it is used (no wrap-around downstream)."""
    plain = text.strip().replace("_", "") if isinstance(text, str) else text
    if isinstance(plain, str) and len(plain) <= MAX_INT_DIGITS and re.fullmatch(r"[+-]?\d+", plain):
        v = int(plain)  # at most MAX_INT_DIGITS digits: fast and exact; the range check below names it
    else:
        t = _token(name, text, error)
        x = parse_real(name, t, error=error)
        if not x.is_integer():
            raise error(f"{name} must be an integer; got {t!r}")
        v = int(x)
    return check_int(name, v, minimum=minimum, maximum=maximum, error=error)


def parse_list(name: str, text, parse, *, max_items: int = MAX_LIST_ITEMS,
               error: type[ShufflesimError] = ParameterError) -> tuple:
    """A comma-separated list of numbers ('a,b,c'), each read by ``parse(name_i, token)``; its length in
    characters is checked first (at most ``max_items`` tokens of :data:`MAX_NUMBER_CHARS`), so a huge string
    is refused before it is split."""
    if not isinstance(text, str):
        raise error(f"{name} must be a comma-separated list of numbers; got {text!r}")
    if len(text) > max_items * (MAX_NUMBER_CHARS + 1):
        raise error(f"{name} is {len(text)} characters long; at most {max_items} numbers are accepted")
    tokens = [t for t in text.split(",") if t.strip()]
    if len(tokens) > max_items:
        raise error(f"{name} has {len(tokens)} numbers; at most {max_items} are accepted")
    return tuple(parse(f"{name}[{i}]" if len(tokens) > 1 else name, tok) for i, tok in enumerate(tokens))
