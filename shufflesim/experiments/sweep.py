"""Sweeps: a grid of (protocol, parameters, data, n) points × T trials, streamed to disk, resumable.

A :class:`Sweep` is a list of :class:`SweepPoint` s, the trials per point, the root seed and the engine
(:mod:`shufflesim.pipeline.fast`).  :func:`run_sweep` splits point g's trials into chunks of
``chunk_size`` consecutive trials and runs them on a backend (:mod:`shufflesim.experiments.backends`).

Randomness.  Under the faithful engine trial t of point g draws from ``SeedSequence(root,
spawn_key=(1, g, t))``; under the fast engine from block t // 256 of the point's fast streams
``(2, g, block)`` (:mod:`shufflesim.pipeline.fast`) — in both cases the same streams as
:func:`~shufflesim.experiments.montecarlo.run_trials` at point g.  The data of every point come from
``(0, 0)`` (as :func:`~shufflesim.experiments.study.run_grid`).  A chunk (g, c) is the trials
``[c·size, (c+1)·size)`` and derives its streams from (g, trial) alone, so the records are bit-identical
for any chunk size, worker count and backend (tested) — and point g equals ``simulate`` / ``run_trials``
with the same seed and engine at point g.

On disk (``DIR``)::

    sweep.json                  the sweep's definition, its hash, the chunk size (written first)
    parts/p00000/c0000000.parquet  one file per finished chunk: its records + run metadata in the schema
    summary.parquet, summary.csv   one row per point, written at the end

A part is written under a temporary name, flushed to disk (fsync) and renamed into place, so after
Ctrl-C, ``kill -9`` or a power cut a chunk is on disk completely or not at all.  Its metadata carries the
sweep hash, the point, the chunk, its trial range (the spawn keys ``(1, g, t)`` of its trials), the root
seed's entropy, a SHA-256 checksum of its columns, the engine, the backend, the worker count and the
package versions.  ``resume=True`` reruns only the chunks without a valid part: a part that does not
parse, belongs to another sweep, has the wrong trials or fails its checksum is reported, deleted and
recomputed, never used.  A resume whose sweep differs from the one on disk is refused, naming the
difference.  The driver holds at most ``2 × workers`` chunks in memory; the summary is computed by
streaming the parts (twice: mean, then squared deviations), in fixed blocks of trials, so it too is
independent of the chunking and bounded in memory.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from shufflesim.core.checks import check_int, check_real
from shufflesim.core.rng import as_seed_sequence, data_seed, seed_metadata
from shufflesim.errors import ParameterError
from shufflesim.experiments.outdir import TMP_PREFIX, DirectoryLock, atomic_path, check_dir_name, make_dirs

SPEC_NAME = "sweep.json"
PARTS = "parts"
#: trials per block of the streamed summary (fixed, so the summary does not depend on the chunking)
SUMMARY_BLOCK = 1 << 16
FORMAT_VERSION = 1


class SweepMismatchError(ParameterError):
    """``resume`` was asked for a directory holding a different sweep."""


# --- definition ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPoint:
    """One grid point: a protocol with its parameters, run on a data set of n users."""

    protocol: str
    params: Mapping[str, Any] = field(default_factory=dict)
    data: str = "uniform"
    n: int | None = None
    lower: float | None = None
    upper: float | None = None
    #: a deviating coalition (issue 23): ``dishonest`` (a count or a fraction of n), ``strategy``, ``direction``,
    #: ``target`` (:func:`shufflesim.experiments.population.coalition_of`); None: every user is honest
    attack: Mapping[str, Any] | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["params"] = {k: d["params"][k] for k in sorted(d["params"])}
        if d["attack"] is None:  # honest points keep their definition (and the sweep its hash)
            del d["attack"]
        else:
            d["attack"] = {k: d["attack"][k] for k in sorted(d["attack"])}
        return d


@dataclass(frozen=True)
class Sweep:
    """A grid of points, ``trials`` trials each, from root seed ``seed``, under ``engine``."""

    points: tuple[SweepPoint, ...]
    trials: int
    seed: int = 0
    engine: str = "faithful"

    def to_dict(self) -> dict:
        return {"format": FORMAT_VERSION, "points": [p.to_dict() for p in self.points], "trials": self.trials,
                "seed": self.seed, "engine": self.engine}

    @property
    def hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON of :meth:`to_dict`."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def grid(protocol: str, *, data: str | Sequence[str] = "uniform", n: int | Sequence[int | None] | None = None,
         **params: Any) -> list[SweepPoint]:
    """The Cartesian product of ``data`` × ``n`` × every parameter given as a list (scalars are fixed).

    ``grid("krr", n=[1000, 10000], k=[2, 10], eps0=1.0)`` is four points, n varying slowest.
    """
    datas = [data] if isinstance(data, str) else list(data)
    ns = list(n) if isinstance(n, (list, tuple)) else [n]
    names = sorted(params)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in (params[k] for k in names)]
    from shufflesim.experiments.population import split_attack

    pts = []
    for d, nn in itertools.product(datas, ns):
        for combo in itertools.product(*values):
            prm, attack = split_attack(dict(zip(names, combo)))
            pts.append(SweepPoint(protocol, prm, d, nn, attack=attack))
    return pts


# --- the work: one chunk (a pure function of its task) ------------------------------------------------------
@dataclass(frozen=True)
class ChunkTask:
    """Trials ``[start, stop)`` of point ``point`` of the sweep ``spec`` (a :meth:`Sweep.to_dict`)."""

    spec_json: str
    point: int
    chunk: int
    start: int
    stop: int


_CACHE: dict[tuple[str, int], Any] = {}


def point_coalition(spec: Mapping, g: int, proto):
    """The coalition of point ``g`` (a :class:`~shufflesim.experiments.population.Coalition`), or None for an
    honest point."""
    attack = spec["points"][g].get("attack")
    if attack is None:
        return None
    from shufflesim.experiments.population import coalition_of

    return coalition_of(attack, proto)


def build_point(spec: Mapping, g: int):
    """``(protocol, data, truth, summary or None, engine)`` of point ``g`` (data from stream (0, 0))."""
    from shufflesim.experiments.data import COUNTS_MIN_N, drawn_as_counts, load_data, population_counts
    from shufflesim.experiments.montecarlo import check_summary
    from shufflesim.pipeline import registry
    from shufflesim.pipeline.fast import resolve_engine, summarise_data

    pt = spec["points"][g]
    cls = registry.get(pt["protocol"])
    root = np.random.SeedSequence(int(spec["seed"]))
    if (pt.get("attack") is None and pt["n"] is not None and pt["n"] > COUNTS_MIN_N
            and drawn_as_counts(pt["data"], data_kind=cls.data_kind, n=pt["n"])):
        # issue 29: the fast engine at n = 1e9 reads counts, never n rows (as simulate and validate do)
        proto = cls.create(pt["n"], **pt["params"])
        if resolve_engine(proto, spec["engine"]) == "fast":
            x = check_summary(proto, population_counts(pt["data"], data_kind=cls.data_kind, n=pt["n"],
                                                       k=cls.data_k(pt["params"]), rng=data_seed(root)))
            return proto, x, proto.truth_from_summary(x), x, "fast"
    x = load_data(pt["data"], data_kind=cls.data_kind, n=pt["n"], k=cls.data_k(pt["params"]), rng=data_seed(root),
                  lower=pt["lower"], upper=pt["upper"])
    proto = cls.create(len(x), **pt["params"])
    x = proto.check_data(x)
    engine = resolve_engine(proto, spec["engine"])
    summary = summarise_data(proto, x) if engine == "fast" else None
    return proto, x, proto.truth(x), summary, engine


def check_point(spec: Mapping, g: int):
    """Point ``g`` of a sweep spec checked as its trials will use it: the protocol built from its parameters and
    data, and its coalition (``dishonest`` etc.) checked against that protocol.  Raises the one-line error of
    the first bad value; nothing is written.  Every point is checked so before a sweep writes anything (and a
    scenario's ``run --check`` calls it too).  Returns :func:`build_point`'s tuple."""
    state = build_point(spec, g)
    point_coalition(spec, g, state[0])
    return state


def _point_state(spec_json: str, g: int):
    key = (spec_json, g)
    if key not in _CACHE:
        if len(_CACHE) >= 4:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = build_point(json.loads(spec_json), g)
    return _CACHE[key]


def compute_chunk(task: ChunkTask) -> dict[str, Any]:
    """Run the chunk's trials; returns ``{"columns": {name: array}, "seconds": float, "engine": str}``."""
    from shufflesim.experiments.montecarlo import run_trial
    from shufflesim.pipeline.fast import fast_records

    proto, x, truth, summary, engine = _point_state(task.spec_json, task.point)
    root = np.random.SeedSequence(int(json.loads(task.spec_json)["seed"]))
    t0 = time.perf_counter()
    cols: dict[str, np.ndarray] = {
        "point": np.full(task.stop - task.start, task.point, dtype=np.int64),
        "trial": np.arange(task.start, task.stop, dtype=np.int64),
    }
    coalition = point_coalition(json.loads(task.spec_json), task.point, proto)
    if coalition is not None:  # issue 23: the attacked population's trials (same streams as simulate --dishonest)
        from shufflesim.experiments.population import attack_engine, attack_records

        engine = attack_engine(proto, engine)[0]
        cols.update(attack_records(proto, x, coalition, root, task.point, task.start, task.stop, engine))
    elif summary is not None:
        cols.update(fast_records(proto, summary, truth, root, task.point, task.start, task.stop))
    else:
        recs = [run_trial(proto, x, root, task.point, t, truth) for t in range(task.start, task.stop)]
        for k in recs[0]:
            if k not in ("trial", "seconds"):
                cols[k] = np.array([r[k] for r in recs], dtype=float)
    return {"columns": cols, "seconds": time.perf_counter() - t0, "engine": engine}


# --- parts on disk ---------------------------------------------------------------------------------------------
def columns_checksum(frame: pd.DataFrame) -> str:
    """SHA-256 over the columns' names, dtypes and bytes (in column order)."""
    h = hashlib.sha256()
    for name in frame.columns:
        arr = np.ascontiguousarray(frame[name].to_numpy())
        h.update(f"{name}:{arr.dtype.str}:{arr.shape[0]};".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def part_path(root: Path, g: int, c: int) -> Path:
    return Path(root) / PARTS / f"p{g:05d}" / f"c{c:07d}.parquet"


def write_part(path: Path, frame: pd.DataFrame, meta: dict) -> None:
    """Write ``frame`` with ``meta`` in the Parquet schema, durably and atomically (tmp, fsync, rename,
    fsync of the directory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from shufflesim.experiments.results_io import META_KEY

    path = Path(path)
    make_dirs(path.parent)  # no link followed below the sweep's folder (experiments/outdir.py)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    with atomic_path(path, durable=True) as tmp:
        pq.write_table(table, tmp)


def read_part(path: Path) -> tuple[pd.DataFrame, dict]:
    """A part's records and metadata (raises on a file that does not parse)."""
    import pyarrow.parquet as pq

    from shufflesim.experiments.results_io import META_KEY

    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {})[META_KEY])
    return table.to_pandas(), meta


def check_part(path: Path, sweep_hash: str, g: int, c: int, start: int, stop: int) -> str | None:
    """Why the part at ``path`` cannot be used (``None`` if it is valid)."""
    try:
        frame, meta = read_part(path)
    except Exception as exc:  # noqa: BLE001 - any failure to parse means the part is unusable
        return f"does not parse ({type(exc).__name__}: {str(exc)[:80]})"
    want = {"sweep_hash": sweep_hash, "point": g, "chunk": c, "start": start, "stop": stop}
    for k, v in want.items():
        if meta.get(k) != v:
            return f"metadata {k}={meta.get(k)!r}, expected {v!r}"
    if len(frame) != stop - start or not np.array_equal(frame["trial"].to_numpy(), np.arange(start, stop)):
        return "wrong trials"
    if columns_checksum(frame) != meta.get("checksum"):
        return "checksum mismatch"
    return None


# --- the driver ----------------------------------------------------------------------------------------------
@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the summary (one row per point), where the parts are, and counts."""

    summary: pd.DataFrame
    path: Path
    complete: bool
    chunks_total: int
    chunks_reused: int
    chunks_recomputed: list[str]
    backend: dict

    def records(self) -> pd.DataFrame:
        return read_records(self.path)


def _chunks(sweep: Sweep, size: int) -> list[tuple[int, int, int, int]]:
    out = []
    for g in range(len(sweep.points)):
        for c, s in enumerate(range(0, sweep.trials, size)):
            out.append((g, c, s, min(sweep.trials, s + size)))
    return out


def _diff(old: Any, new: Any, path: str = "") -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            d = _diff(old.get(k), new.get(k), f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return f"{path}: {len(old)} entries on disk, {len(new)} now"
        for i, (a, b) in enumerate(zip(old, new)):
            d = _diff(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if old == new else f"{path}: {old!r} on disk, {new!r} now"


def _prepare_dir(root: Path, sweep: Sweep, chunk_size: int, resume: bool, env: dict) -> None:
    spec_path = root / SPEC_NAME
    record = {"sweep": sweep.to_dict(), "sweep_hash": sweep.hash, "chunk_size": chunk_size,
              "versions": {k: env[k] for k in ("shufflesim", "numpy")}}
    if spec_path.exists():
        if not resume:
            raise ParameterError(f"{root} already holds a sweep; pass --resume to continue it (or choose another "
                                 "directory)")
        try:
            old = json.loads(spec_path.read_text())
        except (OSError, ValueError) as exc:
            raise ParameterError(f"{spec_path} is unreadable ({exc}); it is not a sweep this version can resume")
        d = _diff(old, record)
        if d:
            raise SweepMismatchError(f"cannot resume {root}: the sweep differs from the one on disk ({d})")
        return
    if root.exists() and any(p for p in root.iterdir() if not p.name.startswith(".")):
        raise ParameterError(f"{root} is not empty and holds no sweep; choose an empty or new directory")
    root.mkdir(parents=True, exist_ok=True)
    with atomic_path(spec_path, durable=True) as tmp:
        tmp.write_text(json.dumps(record, indent=2) + "\n")


def run_sweep(
    sweep: Sweep,
    path: str | os.PathLike,
    *,
    backend: str = "processes",
    workers: int = 1,
    scheduler: str | None = None,
    chunk_size: int = 1000,
    resume: bool = False,
    on_progress: Callable[[int], None] | None = None,
    progress: bool | None = False,
    level: float = 0.95,
    max_in_flight: int | None = None,
) -> SweepResult:
    """Run (or, with ``resume``, continue) ``sweep`` into directory ``path``; see the module docstring.

    ``on_progress(k)`` is called with the trials of every finished chunk (and once with the trials found on
    disk); ``progress=None`` draws one bar over the whole sweep on a terminal.  On ``KeyboardInterrupt``
    the finished chunks stay on disk and the result has ``complete=False``.
    """
    from shufflesim.experiments.backends import make_backend
    from shufflesim.experiments.progress import Progress
    from shufflesim.experiments.results_io import environment

    trials = check_int("trials", sweep.trials, minimum=1)
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    if not sweep.points:
        raise ParameterError("a sweep needs at least one point")
    level = check_real("level", level)
    if not 0.0 < level < 1.0:
        raise ParameterError(f"level must be a confidence level in (0, 1); got {level!r}")
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise ParameterError(f"{root} exists and is not a directory; choose another output directory")
    env = environment()
    recomputed: list[str] = []
    spec_json = json.dumps(sweep.to_dict(), sort_keys=True)
    check_dir_name(path, "the sweep directory")
    for g in range(len(sweep.points)):  # fail on bad parameters before anything is written or sent out
        check_point(sweep.to_dict(), g)
    backend_ = make_backend(backend, workers=workers, scheduler=scheduler)  # a cluster is reached before writing
    try:
        root.mkdir(parents=True, exist_ok=True)
    except BaseException:
        backend_.close()
        raise
    with backend_ as be, DirectoryLock(root, f"{root} is in use by another sweep or shufflesim run (locked)"):
        _prepare_dir(root, sweep, chunk_size, resume, env)
        todo, reused = [], 0
        for g, c, s, e in _chunks(sweep, chunk_size):
            pp = part_path(root, g, c)
            if pp.exists():
                why = check_part(pp, sweep.hash, g, c, s, e)
                if why is None:
                    reused += 1
                    continue
                recomputed.append(f"{pp.relative_to(root)}: {why}")
                pp.unlink()
            todo.append(ChunkTask(spec_json, g, c, s, e))
        for tmp in (root / PARTS).glob(f"*/{TMP_PREFIX}*"):  # leftovers of a write that was killed
            tmp.unlink(missing_ok=True)
        total = trials * len(sweep.points)
        bar = Progress(total, "trials", enabled=progress) if progress is not False else None
        done_trials = total - sum(t.stop - t.start for t in todo)

        def tick(k: int) -> None:
            if bar is not None:
                bar.update(k)
            if on_progress:
                on_progress(k)

        if done_trials:
            tick(done_trials)
        complete = True
        seed_meta = seed_metadata(as_seed_sequence(sweep.seed))
        info = be.describe()
        try:
            for task, res in be.imap_unordered(compute_chunk, todo, max_in_flight):
                frame = pd.DataFrame(res["columns"])
                meta = {"sweep_hash": sweep.hash, "point": task.point, "chunk": task.chunk, "start": task.start,
                        "stop": task.stop, "rows": len(frame), "checksum": columns_checksum(frame),
                        "engine": res["engine"], "seconds": res["seconds"], "seed_sequence": seed_meta,
                        "spawn_keys": _spawn_keys(res["engine"], task),
                        "data_spawn_key": [0, 0], **info, "environment": env}
                write_part(part_path(root, task.point, task.chunk), frame, meta)
                tick(len(frame))
        except KeyboardInterrupt:
            complete = False
        if bar is not None:
            bar.close()
        summary = summarise_sweep(root, sweep, chunk_size, level=level) if complete else pd.DataFrame()
        if complete:
            from shufflesim.experiments.results_io import write_table

            write_table(summary, root / "summary", {"sweep": sweep.to_dict(), "sweep_hash": sweep.hash,
                                                     "chunk_size": chunk_size, **info})
    return SweepResult(summary, root, complete, len(_chunks(sweep, chunk_size)), reused, recomputed, info)


def _spawn_keys(engine: str, task: ChunkTask) -> str:
    """The spawn keys (relative to the root seed) that the chunk's trials drew from."""
    if engine == "fast":
        from shufflesim.pipeline.fast import FAST_BLOCK, FAST_STREAM

        b0, b1 = task.start // FAST_BLOCK, (task.stop - 1) // FAST_BLOCK
        return (f"({FAST_STREAM}, {task.point}, b) for b in [{b0}, {b1}] (fast-engine blocks of {FAST_BLOCK} "
                f"trials; trials [{task.start}, {task.stop}))")
    return f"(1, {task.point}, t) for t in [{task.start}, {task.stop})"


# --- reading back ------------------------------------------------------------------------------------------------
def _point_parts(root: Path, g: int) -> list[Path]:
    return sorted((Path(root) / PARTS / f"p{g:05d}").glob("c*.parquet"))


def iter_point_columns(root: Path, g: int, columns: Sequence[str]) -> Iterator[pd.DataFrame]:
    """The records of point ``g``, part after part, in trial order (only ``columns``)."""
    import pyarrow.parquet as pq

    for p in _point_parts(root, g):
        yield pq.read_table(p, columns=list(columns)).to_pandas()


def read_records(root: str | os.PathLike) -> pd.DataFrame:
    """Every record of the sweep in ``root``, sorted by (point, trial) (loads them all: small sweeps)."""
    parts = sorted((Path(root) / PARTS).glob("p*/c*.parquet"))
    if not parts:
        return pd.DataFrame()
    frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    return frame.sort_values(["point", "trial"], kind="stable").reset_index(drop=True)


def _blocked_sums(chunks: Iterator[np.ndarray], f: Callable[[np.ndarray], np.ndarray]) -> tuple[float, int]:
    """Σ f(x) over the concatenation of ``chunks``: exact-rounded sums (math.fsum) of fixed blocks of
    :data:`SUMMARY_BLOCK` values, then fsum of those — independent of how the values were chunked."""
    sums, buf, count = [], np.empty(0), 0
    for arr in chunks:
        buf = np.concatenate([buf, np.asarray(arr, dtype=float)])
        while buf.shape[0] >= SUMMARY_BLOCK:
            sums.append(math.fsum(f(buf[:SUMMARY_BLOCK])))
            count += SUMMARY_BLOCK
            buf = buf[SUMMARY_BLOCK:]
    if buf.shape[0]:
        sums.append(math.fsum(f(buf)))
        count += buf.shape[0]
    return math.fsum(sums), count


def stream_mean_ci(root: Path, g: int, column: str, level: float) -> tuple[float, float, float, int]:
    """Mean and Student-t interval of ``column`` at point ``g``, streamed from the parts (two passes)."""
    from scipy import stats

    total, count = _blocked_sums((f[column].to_numpy() for f in iter_point_columns(root, g, [column])), lambda a: a)
    if count == 0:
        return math.nan, math.nan, math.nan, 0
    mean = total / count
    if count < 2:
        return mean, math.nan, math.nan, count
    ss, _ = _blocked_sums((f[column].to_numpy() for f in iter_point_columns(root, g, [column])),
                          lambda a: (a - mean) ** 2)
    se = math.sqrt(ss / (count - 1)) / math.sqrt(count)
    h = float(stats.t.ppf(0.5 + level / 2.0, df=count - 1)) * se
    return mean, mean - h, mean + h, count


def summarise_sweep(root: str | os.PathLike, sweep: Sweep, chunk_size: int | None = None, *,
                    level: float = 0.95) -> pd.DataFrame:
    """One row per point: parameters, trials, MSE with its interval (Student-t on the trial mean, clipped to the
    support [0, inf)), the exact expectation, metrics."""
    import pyarrow.parquet as pq

    from shufflesim.pipeline.fast import mse_expected_of

    root = Path(root)
    spec = sweep.to_dict()
    rows = []
    for g, pt in enumerate(sweep.points):
        proto, x, _, _, engine = build_point(spec, g)
        parts = _point_parts(root, g)
        cols = set(pq.read_schema(parts[0]).names) if parts else set()
        mse, lo, hi, count = stream_mean_ci(root, g, "sq_error", level)
        lo = max(lo, 0.0) if math.isfinite(lo) else lo  # clipped to the MSE's support [0, inf), as summarise() does
        row = {"point": g, "protocol": pt.protocol, "data": pt.data, "n": proto.n, "engine": engine,
               **{f"param_{k}": v for k, v in proto.params.items() if isinstance(v, (int, float, str))},
               "trials": count, "mse": mse, "mse_lo": lo, "mse_hi": hi, "mse_expected": mse_expected_of(proto, x)}
        coalition = point_coalition(spec, g, proto)
        if coalition is not None:  # issue 23: bias of the attacked estimate, and the derived figures
            from shufflesim.experiments.population import attack_engine, attack_summary

            row["engine"] = attack_engine(proto, engine)[0]
            row.update(attack_summary(proto, x, coalition, pt.attack, stream_mean_ci(root, g, "error", level)))
        for m in proto.metric_names:
            if m in cols:
                mm, ml, mh, _ = stream_mean_ci(root, g, m, level)
                row.update({m: mm, f"{m}_lo": ml, f"{m}_hi": mh})
        rows.append(row)
    return pd.DataFrame(rows)
