"""``shufflesim simulate PROTOCOL …``: a Monte-Carlo error study of one protocol on one data set."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from shufflesim import __version__
from shufflesim.cli import _dishonest
from shufflesim.cli._common import add_output_options, cap_workers, float_arg, int_arg, open_output, print_json
from shufflesim.cli._protocol_args import add_data_options, add_protocol_parsers, protocol_params
from shufflesim.errors import ParameterError
from shufflesim.experiments.data import COUNTS_MIN_N as DATA_COUNTS_MIN_N
from shufflesim.pipeline import registry


def add_parser(sub: argparse._SubParsersAction) -> None:
    names = registry.names()
    lines = "\n".join(f"  {nm:<22} {registry.get(nm).summary}" for nm in names)
    p = sub.add_parser(
        "simulate",
        help="Monte-Carlo error study of a protocol",
        description="Simulate a protocol end to end (randomiser -> shuffler -> analyser) over T trials.\n\n"
        "registered protocols:\n" + lines,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        examples=("shufflesim simulate krr --n 10000 --k 10 --eps0 1 --data zipf:1.1 --trials 200",
                  "shufflesim simulate blanket-sum --n 10000 --eps 1 --data adult-age --trials 200 --json"),
        docs="README.md#using-it; docs/theory.md",
    )
    add_protocol_parsers(p, _study_options, run, names)


def _study_options(pp: argparse.ArgumentParser) -> None:
    c = pp.add_argument_group("study")
    add_data_options(c, trials=100)
    c.add_argument("--workers", type=int_arg, default=1, help="local worker processes (default: 1)")
    c.add_argument("--engine", choices=("faithful", "fast", "auto"), default="faithful",
                   help="faithful: simulate every message (default); fast: sample the analyser's sufficient "
                   "statistic from its exact distribution (same distribution, different draws); auto: fast "
                   "where the protocol has it")
    c.add_argument("--level", type=float_arg, default=0.95, help="confidence level (default: 0.95)")
    c.add_argument("--tolerate", type=float_arg, default=None, metavar="F",
                   help="calibrate the protocol so that its (eps, delta) holds whenever at least ceil((1-F)n) users "
                        "are honest (krr, blanket-sum, cheu-sum, recursive-sum, ikos-sum; "
                        "docs/theory.md#dishonest-tolerate); prints the certificate and the MSE price")
    c.add_argument("--chunk", type=int_arg, default=None, metavar="USERS",
                   help="faithful engine: randomise USERS users at a time in bounded memory (streamed; default: "
                   "streamed in chunks of 2^20 users above n = 1e7, all users at once below)")
    c.add_argument("--yes", action="store_true",
                   help="run even when the run time estimated before the start is above the time limit (default: "
                        "600 s; SHUFFLESIM_TIME_LIMIT sets it); without it such a run is refused with the estimate "
                        "and the faster path")
    add_output_options(c, "records.parquet (run metadata in its schema), records.csv, records.meta.json")
    c.add_argument("--json", action="store_true", help="print one JSON object; no progress bar")
    _dishonest.add_options(pp.add_argument_group("dishonest users"))


def run(args: argparse.Namespace) -> int:
    output = open_output(args)
    if output is None:
        return _run(args, None)
    with output:
        return _run(args, output)


#: above this n, categorical synthetic data for the fast engine are drawn as counts (one multinomial) instead of
#: n rows; below it the rows path is kept, so that results for a seed are unchanged there
COUNTS_MIN_N = DATA_COUNTS_MIN_N


def as_summary_path(cls, spec, args) -> bool:
    """Issue 21 (a): the data drawn as a multiset (a :class:`~shufflesim.pipeline.fast.DataSummary`), never as n
    rows, for the fast engine (``--engine fast``, or ``auto`` where the protocol has one: issue 29, ``auto`` never
    refuses for the n rows' memory where the fast engine answers): ``counts:...`` always (the fast engine reads
    only the multiset, so the numbers are those of the rows path), synthetic data above :data:`COUNTS_MIN_N`
    (categorical: one multinomial; real: a grid, :func:`shufflesim.experiments.data.real_counts`).  The rule is
    :func:`shufflesim.experiments.data.drawn_as_counts`, shared with ``validate`` and ``sweep``."""
    from shufflesim.experiments.data import drawn_as_counts

    return _fast_chosen(cls, args.engine) and drawn_as_counts(spec, data_kind=cls.data_kind, n=args.n)


def summary_data(cls, spec, args, k, rng):
    """The data of :func:`as_summary_path` as a DataSummary (counts or a grid of real values)."""
    from shufflesim.experiments.data import population_counts

    return population_counts(spec, data_kind=cls.data_kind, n=args.n, k=k, rng=rng)


#: a streamed faithful run estimated to take longer than this (seconds) names the fast engine, where there is one
LONG_STREAM_SECONDS = 60.0


def _fast_chosen(cls, engine: str) -> bool:
    """Whether ``engine`` runs the protocol class's fast engine (``auto`` does where there is one)."""
    from shufflesim.pipeline.protocol import Protocol

    return engine == "fast" or (engine == "auto" and cls.sample_fast is not Protocol.sample_fast)


def _streamed(cls, args) -> bool:
    """Issue 21 (b): the faithful engine (also ``auto`` without a fast engine) streams users in chunks
    (``--chunk``, or n above COUNTS_MIN_N)."""
    return not _fast_chosen(cls, args.engine) and (getattr(args, "chunk", None) is not None
                                                   or (args.n is not None and args.n > COUNTS_MIN_N))


def _streamed_data(cls, spec, args, k, rng):
    """The data of a streamed faithful run: a multiset above COUNTS_MIN_N where the spec allows (never n rows),
    else the rows (memory-checked by load_data)."""
    from shufflesim.experiments.data import COUNTABLE, load_data

    if args.n is not None and args.n > COUNTS_MIN_N and spec.kind in COUNTABLE[cls.data_kind] + ("counts",):
        return summary_data(cls, spec, args, k, rng)
    return load_data(spec, data_kind=cls.data_kind, n=args.n, k=k, rng=rng, lower=args.lower, upper=args.upper)


def check_faithful_fits(protocol, args, *, trials: int, label: str, seconds: float,
                        nbytes: float | None = None) -> None:
    """Issue 29, work that will not fit is not started: a faithful run's estimate against the limits through the
    one policy (:func:`shufflesim.core.resources.choose_path`): refused in one line with the estimate, the knob
    (``--yes``; SHUFFLESIM_TIME_LIMIT) and the fast engine where the protocol has one."""
    from shufflesim.core.resources import RunPath, choose_path
    from shufflesim.pipeline.fast import has_fast

    paths = [RunPath(label, "--engine faithful", seconds=seconds, bytes=nbytes)]
    if has_fast(protocol):
        paths.append(RunPath("the fast engine", "--engine fast"))
    choose_path(f"{trials} trial(s) of {protocol.name} (n={protocol.n})", paths, auto=args.engine == "auto",
                yes=args.yes, advice=f"lower n or --trials ({protocol.name} has no fast engine)")


def check_fast_fits(protocol, args, data, root, *, trials: int, workers: int = 1) -> None:
    """Issue 29, the fast engine's side of :func:`check_faithful_fits`: its cost does not grow with n but does with
    the trials (time from one probe block, :func:`~shufflesim.experiments.montecarlo.fast_seconds`; memory of the
    records), weighed by the one policy before any trial runs (``simulate`` and ``validate``)."""
    from shufflesim.core.resources import RunPath, choose_path
    from shufflesim.experiments.montecarlo import RECORD_BYTES, fast_seconds

    choose_path(f"{trials} trial(s) of {protocol.name} (n={protocol.n})",
                [RunPath("the fast engine", "--engine fast", bytes=RECORD_BYTES * trials,
                         seconds=fast_seconds(protocol, data, root, trials=trials, workers=workers))],
                yes=args.yes, advice="lower --trials")


def _run_streamed(protocol, data, trials: int, root, args):
    """Plan (estimates, refusals before allocation), announce and run the streamed faithful trials."""
    from shufflesim.core.checks import check_int
    from shufflesim.core.progress import stage
    from shufflesim.core.resources import human_bytes
    from shufflesim.experiments.montecarlo import run_trials_streamed
    from shufflesim.pipeline.fast import has_fast
    from shufflesim.pipeline.stream import STREAM_CHUNK, plan_stream

    chunk = STREAM_CHUNK if args.chunk is None else check_int("chunk", args.chunk, minimum=1)
    chunk = min(chunk, protocol.n)
    plan = plan_stream(protocol, data, root, chunk=chunk, trials=trials, limit_time=False)
    check_faithful_fits(protocol, args, trials=trials, label=f"the faithful engine streamed in chunks of {chunk} users",
                        seconds=plan["seconds"])
    if not args.json:
        print(f"faithful engine streamed in chunks of {chunk} users: about {human_bytes(plan['memory_bytes'])} of "
              f"memory, about {plan['seconds']:.3g} s for {trials} trial(s) of n={protocol.n} "
              f"({plan['users_per_second']:.3g} users/s in a probe); --chunk sets the chunk", file=sys.stderr)
        if plan["seconds"] > LONG_STREAM_SECONDS and has_fast(protocol):
            print(f"note: {protocol.name} has a fast engine: --engine fast draws the same distribution of every "
                  f"trial's output without simulating each message, at a cost that does not grow with n",
                  file=sys.stderr)
    t0 = time.perf_counter()
    with stage(f"{trials} streamed faithful trial(s) of {protocol.name}", plan["seconds"]):
        result = run_trials_streamed(protocol, data, trials=trials, rng=root, chunk=chunk)
    done = len(result.records) * protocol.n
    info = {"chunk": chunk, "memory_estimate_bytes": plan["memory_bytes"], "seconds_estimate": plan["seconds"],
            "users_per_second": done / max(time.perf_counter() - t0, 1e-9)}
    return result, info


def _run(args: argparse.Namespace, output) -> int:
    from shufflesim.core.checks import check_int, check_real
    from shufflesim.core.rng import as_seed_sequence, data_seed
    from shufflesim.experiments.data import load_data, parse_data_spec
    from shufflesim.experiments.montecarlo import run_trials, summarise
    from shufflesim.experiments.progress import Progress

    t0 = time.perf_counter()
    cls = registry.get(args.protocol)
    trials = check_int("trials", args.trials, minimum=1)
    workers = cap_workers(check_int("workers", args.workers, minimum=1))
    level = check_real("level", args.level, low=0.0, high=1.0, low_open=True, high_open=True)
    if args.tolerate is not None:
        check_real("tolerate", args.tolerate, low=0.0, high=1.0, high_open=True)
    if args.seed < 0:
        check_int("seed", args.seed, minimum=0)
    if args.chunk is not None and _fast_chosen(cls, args.engine):
        raise ParameterError(f"--chunk applies to the faithful engine only (it streams users); --engine "
                             f"{args.engine} runs {args.protocol}'s fast engine, whose memory does not grow with n: "
                             f"drop --chunk or use --engine faithful")
    root = as_seed_sequence(args.seed)
    params = protocol_params(args)
    spec = parse_data_spec(args.data)
    if args.n is not None:
        check_int("n", args.n, minimum=1)
    if args.n is None and spec.kind not in ("file", "counts", "adult-age"):
        raise ParameterError(f"--n is required with the synthetic data spec {args.data!r} (n >= 1)")
    k = cls.data_k(params)
    if cls.data_kind == "categorical" and k is not None:
        check_int("k", k, minimum=2)
    counts_path = as_summary_path(cls, spec, args)  # cost not growing with n
    streamed = _streamed(cls, args)
    attacked = _dishonest.active(args)  # issue 23: a deviating coalition (cli/_dishonest.py)
    if attacked and (counts_path or streamed):
        raise ParameterError("--dishonest needs the n inputs in memory (the coalition is the first C users); data "
                             f"as counts or streamed users (above n = {COUNTS_MIN_N}, or --chunk) are not supported: "
                             "use a smaller n")
    if args.n is not None:
        probe = cls.create(args.n, **params)  # validate the parameters before generating any data
        if not counts_path and not streamed and not _fast_chosen(cls, args.engine):
            probe.check_resources()  # the faithful engine's messages; the fast engine allocates none of them
    if counts_path:  # issue 21: population scale, never n rows (experiments.data.data_counts, real_counts)
        data = summary_data(cls, spec, args, k, data_seed(root))
        protocol = probe if args.n == data.n else cls.create(data.n, **params)  # created once at n = 1e9
    elif streamed:  # bounded memory: the chunk's messages, not the n users' (pipeline.stream)
        if args.n is not None:
            from shufflesim.pipeline.stream import check_streamable

            check_streamable(probe)  # before any data are drawn
        data = _streamed_data(cls, spec, args, k, data_seed(root))
        n_data = data.n if hasattr(data, "counts") else len(data)
        protocol = probe if args.n == n_data else cls.create(n_data, **params)
    else:
        data = load_data(spec, data_kind=cls.data_kind, n=args.n, k=k, rng=data_seed(root),
                         lower=args.lower, upper=args.upper)
        protocol = cls.create(len(data), **params)
        if not _fast_chosen(cls, args.engine):
            protocol.check_resources()
    notes = tuple(getattr(protocol, "notes", ()))  # a protocol's one-line notes (e.g. cheu-sum's capped default r)
    if notes and not args.json:
        for line in notes:
            print(f"note: {line}", file=sys.stderr)
    tolerance = None
    if args.tolerate is not None:  # issue 23: the defence against F dishonest or absent users
        from shufflesim.validation.dishonest import tolerant_protocol

        tolerance = tolerant_protocol(protocol, args.tolerate)
        protocol = tolerance.defended
    if attacked:
        if not _fast_chosen(cls, args.engine):  # issue 29: attacked and honest faithful trials, in this process
            from shufflesim.experiments.montecarlo import faithful_seconds

            check_faithful_fits(protocol, args, trials=2 * trials,
                                label="the faithful engine (attacked and honest runs)",
                                seconds=faithful_seconds(protocol, data, root, trials=2 * trials))
        return _dishonest.run(args, protocol, data, root, trials=trials, level=level, output=output, t0=t0,
                              workers=workers)
    stream_info = None
    if streamed:
        result, stream_info = _run_streamed(protocol, data, trials, root, args)
    else:
        from shufflesim.experiments.montecarlo import RECORD_BYTES, faithful_seconds

        if not _fast_chosen(cls, args.engine):  # issue 29: the in-memory faithful run's time, before it starts
            check_faithful_fits(protocol, args, trials=trials, label="the faithful engine",
                                seconds=faithful_seconds(protocol, data, root, trials=trials, workers=workers),
                                nbytes=RECORD_BYTES * trials)
        else:  # the fast engine's cost does not grow with n, but it does with the trials (time and records)
            check_fast_fits(protocol, args, data, root, trials=trials, workers=workers)
        progress = Progress(trials, enabled=False if args.json else None)
        result = run_trials(protocol, data, trials=trials, rng=root, workers=workers, on_progress=progress.update,
                            engine=args.engine)
        progress.close()
    summary = summarise(result.records, protocol, data, level=0.95) if len(result.records) else {}
    at_level = summarise(result.records, protocol, data, level=level) if len(result.records) else {}
    privacy = protocol.privacy()
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {
        "protocol": protocol.name,
        "params": protocol.params,
        "n": protocol.n,
        "data": args.data,
        "trials": trials,
        "trials_completed": int(len(result.records)),
        "complete": result.complete,
        "seed": args.seed,
        "workers": workers,
        "engine": result.engine,
        "mse": summary.get("mse"),
        "mse_ci95": summary.get("mse_ci"),
        "mse_ci": at_level.get("mse_ci"),
        "ci_level": level,
        "ci_method": summary.get("ci_method"),
        "ci_method_at_level": at_level.get("ci_method"),
        "mse_expected": summary.get("mse_expected"),
        "mse_worst": summary.get("mse_worst"),
        "mse_bound": summary.get("mse_bound"),
        "messages_per_user": protocol.messages_per_user,
        "bits_per_message": protocol.bits_per_message,
        "privacy": privacy.to_dict() if privacy is not None else None,
        **({"notes": list(notes)} if notes else {}),
        **({"tolerate": tolerance.to_dict()} if tolerance is not None else {}),
        "version": __version__,
        "seconds": seconds,
    }
    if stream_info is not None:
        out["stream"] = stream_info
    for name in protocol.metric_names:
        if name in summary:
            out[name] = summary[name]
            out[f"{name}_ci95"] = summary[f"{name}_ci"]
            out[f"{name}_ci_method"] = summary[f"{name}_ci_method"]
    if output is not None:
        _write_output(output, result.records, out, root)
    if args.json:
        print_json(out)
    else:
        _print_human(out)
    if not result.complete:
        print(f"error: interrupted after {len(result.records)} of {trials} trials; the summary covers only those",
              file=sys.stderr)
        return 130
    return 0


def _write_output(output, records, meta: dict, root) -> None:
    from shufflesim.core.rng import seed_metadata
    from shufflesim.experiments.results_io import write_table

    meta = dict(meta, seed_sequence=seed_metadata(root), run_id=output.run_id)
    write_table(records, output.path / "records", meta)


def _print_human(out: dict) -> None:
    def f(x):
        return "n/a" if x is None else f"{x:.6g}"

    ci = out.get("mse_ci95") or [None, None]
    print(f"protocol  {out['protocol']}  n={out['n']}  trials={out['trials_completed']}/{out['trials']}  seed={out['seed']}")
    print("params    " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in out["params"].items()))
    print(f"mse       {f(out['mse'])}  95% CI [{f(ci[0])}, {f(ci[1])}]  ({out['ci_method']})")
    print(f"expected  {f(out['mse_expected'])} (exact, this data)   worst {f(out['mse_worst'])} (exact, worst input)")
    if out["mse_bound"] is not None:
        # mse_bound is the paper's (or its code's) worst-case expression as published: no certified bound, and
        # it can fall below the exact expectation (blanket-sum n=1000: 58.85 < 59.96) - say so where it is printed
        below = [name for name in ("mse_expected", "mse_worst")
                 if out[name] is not None and out["mse_bound"] < out[name]]
        note = f"; below the exact {' and '.join(n[4:] for n in below)}" if below else ""
        print(f"paper     {f(out['mse_bound'])} (the paper's worst-case MSE expression as published, not a "
              f"bound on the expectation{note})")
    if "tv" in out:
        t = out["tv_ci95"]
        print(f"tv        {f(out['tv'])}  95% CI [{f(t[0])}, {f(t[1])}]")
    print(f"messages  {out['messages_per_user']} per user, {out['bits_per_message']:g} bits each")
    if out["privacy"]:
        p = out["privacy"]
        print(f"privacy   eps={p['eps']:.6g} delta={p['delta']:.3g} ({p['method']})")
    if out.get("tolerate"):
        t = out["tolerate"]
        cert = (f"delta_upper {t['delta_defended_h0']:.3g} <= {t['delta']:.3g}" if t["delta_defended_h0"] <= t["delta"]
                else f"eps_upper {t['eps_defended_h0'][1]:.6g} <= {t['target_eps']:.6g}")
        print(f"tolerate  F={t['fraction']:g}: holds with >= {t['h0']} of {out['n']} users honest (certified "
              f"{cert}); MSE price x{t['mse_ratio']:.4g} ({t['mse_base']:.6g} -> {t['mse_defended']:.6g})")
    print(f"seconds   {out['seconds']:.2f}")
