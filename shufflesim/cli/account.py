"""``shufflesim account MECHANISM …``: certified (ε, δ) of a shuffled mechanism by a chosen method."""

from __future__ import annotations

import argparse
import math
from typing import Any

from shufflesim.cli._common import float_arg, int_arg, print_json

_TYPES = {"int": int_arg, "float": float_arg, "str": str}
ACCOUNT_DOCS = "README.md#privacy-accounting; docs/theory.md"


def _power10(x: int) -> str:
    """``1e5`` for 100000 (a power of ten from 10³ up), else the integer."""
    t = str(x)
    return f"1e{len(t) - 1}" if x >= 1000 and t == "1" + "0" * (len(t) - 1) else t


def default_method_rules(cls) -> tuple[tuple[str, str, Any], ...]:
    """The default ``--method`` of mechanism class ``cls`` as (method, when, applies(mech, compositions)) rules,
    the first that applies wins: the help text is written from them and tests/test_cli_help.py checks them against
    ``default_for`` (the choice :func:`~shufflesim.accounting.account.account` makes), the numbers are the code's
    own constants."""
    from shufflesim.mechanisms.sampled import SAMPLED_KINDS, SampledMechanism

    rules: list[tuple[str, str, Any]] = []
    if cls.kind in SAMPLED_KINDS:
        rules.append((SampledMechanism.methods[0], "with --sample-rate or --sample-size",
                      lambda m, c: isinstance(m, SampledMechanism)))
    if cls.kind == "rr2":
        from shufflesim.accounting.exact.exact_rr2 import DEFAULT_EXACT_MAX_N, MAX_N_EXACT, MAX_N_POPULATION

        rules += [("exact", f"for n <= {_power10(DEFAULT_EXACT_MAX_N)}", lambda m, c: m.n <= DEFAULT_EXACT_MAX_N),
                  ("exact", f"for single use at {_power10(MAX_N_EXACT)} < n <= {_power10(MAX_N_POPULATION)} (the "
                   "population cover)", lambda m, c: c == 1 and MAX_N_EXACT < m.n <= MAX_N_POPULATION),
                  ("tight", "otherwise", lambda m, c: True)]
    elif cls.kind == "krr":
        from shufflesim.accounting.model.mechanism import Relation

        rules += [("blanket", "for the shuffled reports (the default view) when gamma > 0",
                   lambda m, c: m.view is Relation.SHUFFLED and m.gamma > 0),
                  ("tight", "otherwise (--adversary strong-1d, strong, weak)", lambda m, c: True)]
    elif cls.kind == "matrix":
        rules += [("tight", "for a sampler known only by its declared eps0", lambda m, c: m.matrix is None),
                  ("blanket", "for a matrix", lambda m, c: True)]
    else:
        rules.append((cls.methods[0], "", lambda m, c: True))
    return tuple(rules)


def default_method_help(cls) -> str:
    """The help sentence of :func:`default_method_rules` (one method: its name)."""
    rules = default_method_rules(cls)
    if len({method for method, _, _ in rules}) == 1:
        return rules[0][0]
    return ", ".join(f"{method} {when}".strip() for method, when, _ in rules)


def add_parser(sub: argparse._SubParsersAction) -> None:
    from shufflesim.mechanisms import kinds
    from shufflesim.mechanisms.sampled import SAMPLED_KINDS

    p = sub.add_parser("account", help="certified privacy (eps, delta) of a shuffled mechanism",
                       description="Certified upper and lower bounds on delta(eps) or eps(delta). MECHANISM may also "
                       "name a protocol built on a matrix randomiser (matrix-rr, plug-ins; docs/plugins.md): "
                       "shufflesim account PROTOCOL --n N <its options> --eps ...",
                       examples=("shufflesim account rr2 --n 1000 --eps0 2 --eps 0.3 0.5 1",
                                 "shufflesim account clones --n 10000 --eps0 4 --delta 1e-6 --compare",
                                 "shufflesim account krr --n 1000 --k 4 --gamma 0.25 --delta 1e-6 --compositions 16"),
                       docs=ACCOUNT_DOCS)
    ms = p.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True, parser_class=type(p))
    for name, cls in kinds().items():
        q = ms.add_parser(name, help=cls.summary, description=cls.summary,
                          examples=(f"shufflesim account {name} {cls.example}".strip(),), docs=ACCOUNT_DOCS)
        groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
        for f in cls.flags:
            if f.group is not None:
                if f.group not in groups:
                    groups[f.group] = q.add_mutually_exclusive_group(required=f.required)
                target, required = groups[f.group], {}
            else:
                target, required = q, {"required": f.required}
            kind = {"choices": f.choices} if f.type == "choice" else {"type": _TYPES[f.type]}
            target.add_argument(f"--{f.name}", dest=f.dest, help=f.help, **kind, **required)
        t = q.add_mutually_exclusive_group(required=True)
        t.add_argument("--eps", type=float_arg, nargs="+", help="eps values: report delta(eps)")
        t.add_argument("--delta", type=float_arg, nargs="+", help="delta values: report eps(delta)")
        q.add_argument("--compositions", type=int_arg, default=1, help="number of compositions (default 1)")
        if name in SAMPLED_KINDS:
            _add_sampling_options(q)
        q.add_argument("--method", choices=(*cls.methods, "best"), default=None,
                       help=f"default: the mechanism's own ({default_method_help(cls)}); best: every applicable "
                            "certified method, the smallest upper bound (the winner is named in the notes)")
        q.add_argument("--compare", action="store_true",
                       help="run every applicable method on this question and print them side by side "
                            "(interval, validity, time, ratio to the best); --method is ignored")
        q.add_argument("--composition", choices=("basic", "advanced", "best"), default="basic",
                       help="composition theorem for analytic methods with --compositions > 1 (default basic)")
        q.add_argument("--bennett-variant", choices=("fixed", "original-2019"), default="fixed",
                       help="Bennett bound form (default: fixed; original-2019 is what FLAME used)")
        q.add_argument("--target-accuracy", type=float_arg, default=None,
                       help="relative width of the certified interval for FFT composition (default 1e-3)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        _add_dishonest_options(q, name)
        q.set_defaults(func=run, mechanism_class=cls)
    # from now on an unknown name may be a protocol's: argparse checks a sub-command's name against the action's
    # public ``choices`` container before it selects the sub-parser, so a container that adds the protocol's
    # sub-parser (with the public ``add_parser``) on its first miss builds it only when it is named
    ms.choices = _MechanismsOrProtocols(ms)


class _MechanismsOrProtocols(dict):
    """The sub-parsers of ``account``: the mechanism kinds, and — built only when named, so that ``account KIND``
    imports no protocol — every registered protocol with ``account_by_name`` (matrix-rr, plug-ins built on
    protocols/matrix_rr.py; issue 22): ``shufflesim account PROTOCOL --n N <its options> --eps ...`` accounts the
    protocol's ``mechanism()``."""

    def __init__(self, action):
        super().__init__(action.choices)
        self.action = action

    def __contains__(self, name) -> bool:
        if not dict.__contains__(self, name) and isinstance(name, str) and not name.startswith("-"):
            q = _add_protocol_parser(self.action, name)
            if q is not None:
                self[name] = q
        return dict.__contains__(self, name)


def _add_protocol_parser(ms, name: str) -> argparse.ArgumentParser | None:
    """The sub-parser of protocol ``name`` (None unless it is registered with ``account_by_name``)."""
    from shufflesim.cli._protocol_args import CONVERT
    from shufflesim.pipeline import registry

    if name not in registry.names():
        return None  # argparse names the unknown choice
    cls = registry.get(name)
    if getattr(cls, "account_by_name", False):
        q = ms.add_parser(name, help=f"the shuffled mechanism of protocol {name}: {cls.summary}", description=cls.summary,
                          examples=(f"shufflesim account {name} --n 1000 --delta 1e-6 "
                                    f"{(cls.example or '').partition('#')[0].strip()}".strip(),),
                          docs="README.md#privacy-accounting; docs/plugins.md")
        q.add_argument("--n", type=int_arg, required=True, help="number of users")
        for opt in cls.options:
            if opt.name != "delta":
                q.add_argument(opt.flag, dest=opt.name, type=CONVERT.get(opt.type, opt.type), default=None,
                               help=opt.help, choices=opt.choices, metavar=opt.metavar)
        t = q.add_mutually_exclusive_group(required=True)
        t.add_argument("--eps", type=float_arg, nargs="+", help="eps values: report delta(eps)")
        t.add_argument("--delta", type=float_arg, nargs="+", help="delta values: report eps(delta)")
        q.add_argument("--compositions", type=int_arg, default=1, help="number of compositions (default 1)")
        q.add_argument("--method", default=None, help="accounting method (default: the mechanism's first, tight); best")
        q.add_argument("--compare", action="store_true", help="every applicable method side by side")
        q.add_argument("--composition", choices=("basic", "advanced", "best"), default="basic",
                       help="composition theorem for analytic methods with --compositions > 1 (default basic)")
        q.add_argument("--bennett-variant", choices=("fixed", "original-2019"), default="fixed", help=argparse.SUPPRESS)
        q.add_argument("--target-accuracy", type=float_arg, default=None,
                       help="relative width of the certified interval for FFT composition (default 1e-3)")
        q.add_argument("--json", action="store_true", help="print one JSON object")
        _add_dishonest_options(q, None)
        q.set_defaults(func=run, mechanism_class=None, protocol_class=cls)
        return q
    return None


def _add_dishonest_options(q: argparse.ArgumentParser, kind: str | None) -> None:
    """``--honest M`` and ``--tolerate F`` (issue 23; docs/theory.md#dishonest-honest, #dishonest-tolerate) on
    every mechanism; where they are not defined the run is refused in one line naming why."""
    q.add_argument("--honest", type=float_arg, default=None, metavar="M",
                   help="only M of the n users are honest (a count, or a fraction in (0, 1)); the others' reports "
                        "are known: k-RR family (rr2, krr, clones, cheu, matrix): the same mechanism among the M "
                        "honest users; ikos, central-dlap: the noise of M Polya shares designed for --n users")
    q.add_argument("--tolerate", type=float_arg, default=None, metavar="F",
                   help="rr2, krr, clones: calibrate eps0 (gamma for krr) so that the guarantee at --delta holds "
                        "whenever at least ceil((1-F)n) users are honest (target: --target-eps, default the "
                        "undefended mechanism's certified eps at n), and print its MSE price")
    q.add_argument("--target-eps", type=float_arg, default=None, help="with --tolerate: the eps to keep")
    if kind in ("ikos", "central-dlap"):
        q.add_argument("--n", dest="noise_users", type=int_arg, default=None, metavar="N",
                       help="with --honest: the number of users whose Polya shares sum to the noise (seed 004 §5.2)")
    if kind == "ikos":
        q.add_argument("--messages", type=int_arg, default=None,
                       help="with --honest: messages per user m (the IKOS term with M honest users uses m - 1 shares)")


def _add_sampling_options(q: argparse.ArgumentParser) -> None:
    """Who takes part in each use (docs/theory.md#sampling): Poisson rate or fixed size, and the relation."""
    from shufflesim.accounting.model.mechanism import SAMPLING_RELATIONS

    s = q.add_argument_group("sampling (docs/theory.md#sampling)")
    s.add_argument("--sample-rate", type=float_arg, default=None, metavar="Q",
                   help="each user takes part independently with probability Q in (0, 1] (Poisson sampling)")
    s.add_argument("--sample-size", type=int_arg, default=None, metavar="M",
                   help="a uniformly random M of the n users take part (fixed size, without replacement; single use)")
    s.add_argument("--sample-relation", choices=SAMPLING_RELATIONS, default=None,
                   help="neighbouring data sets: one user's value replaced (default) or one user added/removed "
                        "(Poisson only)")


def _mechanism(args: argparse.Namespace):
    cls = args.mechanism_class
    if cls is not None:
        mech = cls.from_flags(**{f.dest: getattr(args, f.dest) for f in cls.flags})
        from shufflesim.mechanisms.sampled import SAMPLED_KINDS

        if cls.kind in SAMPLED_KINDS:
            from shufflesim.accounting.model.mechanism import Sampling
            from shufflesim.mechanisms.sampled import with_sampling

            mech = with_sampling(mech, Sampling.from_flags(args.sample_rate, args.sample_size, args.sample_relation))
        return mech
    from shufflesim.errors import ParameterError

    pcls = args.protocol_class
    params = {o.name: getattr(args, o.name) for o in pcls.options
              if o.name != "delta" and getattr(args, o.name, None) is not None}
    mech = pcls.create(args.n, **params).mechanism()
    if mech is None:
        raise ParameterError(f"protocol {pcls.name} describes no mechanism to account")
    return mech


def run(args: argparse.Namespace) -> int:
    from shufflesim.accounting.account import account
    from shufflesim.accounting.model.queries import check_question

    mech = _mechanism(args)
    # the one question validator (issue 28): every path below (account, --compare, --honest, --tolerate) refuses
    # an edge question with the same line as the library
    check_question(eps=args.eps, delta=args.delta, compositions=args.compositions)
    honest_line = None
    if getattr(args, "tolerate", None) is not None:
        return _run_tolerate(args, mech)
    if getattr(args, "target_eps", None) is not None:
        from shufflesim.errors import ParameterError

        raise ParameterError("--target-eps goes with --tolerate F")
    if getattr(args, "honest", None) is None and args.mechanism in ("ikos", "central-dlap") and any(
            getattr(args, a, None) is not None for a in ("noise_users", "messages")):
        from shufflesim.errors import ParameterError

        raise ParameterError("--n and --messages of ikos/central-dlap go with --honest M")
    if getattr(args, "honest", None) is not None:
        from shufflesim.validation.dishonest import HONEST_NOISE_KINDS, honest_mechanism

        if getattr(mech, "kind", None) in HONEST_NOISE_KINDS:
            return _run_honest_noise(args, mech)
        n = mech.n
        mech = honest_mechanism(mech, args.honest)
        honest_line = f"{mech.n} of {n} users honest (the others' reports known): the same mechanism among {mech.n} users"
    numerics = {"target_accuracy": args.target_accuracy} if args.target_accuracy is not None else None
    _warn_slow(args, mech)
    if args.compare:
        from shufflesim.accounting.compare import compare, format_table

        cmp = compare(mech, run=account, eps=args.eps, delta=args.delta, compositions=args.compositions,
                      composition=args.composition, numerics=numerics)
        if args.json:
            print_json(dict(cmp.to_dict(), **({"honest": honest_line} if honest_line else {})))
        else:
            if honest_line:
                print(honest_line)
            print(format_table(cmp))
        return 0
    rep = account(mech, eps=args.eps, delta=args.delta, method=args.method, compositions=args.compositions,
                  composition=args.composition, bennett_variant=args.bennett_variant, numerics=numerics)
    if args.json:
        print_json(dict(rep.to_dict(), **({"honest": honest_line} if honest_line else {})))
        return 0
    if honest_line:
        print(honest_line)
    print(f"{rep.mechanism}  " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in rep.params.items()))
    print(f"method {rep.method}, {rep.compositions} composition(s)"
          + (f" ({rep.composition} theorem)" if rep.composition else ""))
    for r in rep.results:
        d = r.to_dict()
        if not getattr(r, "applicable", True):
            print(f"  not applicable: {r.reason}")
        elif "eps_upper" in d:
            lo = "n/a" if d["eps_lower"] is None else f"{d['eps_lower']:.6g}"
            print(f"  delta={d['delta']:.3g}:  eps in [{lo}, {d['eps_upper']:.6g}]" + _pair_bracket(d))
        else:
            lo = "n/a" if d["delta_lower"] is None else f"{d['delta_lower']:.6g}"
            print(f"  eps={d['eps']:.6g}:  delta in [{lo}, {d['delta_upper']:.6g}]" + _pair_bracket(d))
    for nt in rep.notes:
        print(f"  note: {nt}")
    print(f"  seconds: {rep.seconds:.2f}")
    return 0


def _run_honest_noise(args: argparse.Namespace, mech) -> int:
    """``account ikos|central-dlap --honest M --n N``: the noise of M honest Pólya shares designed for N users
    (docs/theory.md#dishonest-honest), certified two-sided; ikos adds its statistical-distance term with M users."""
    import time

    from shufflesim.core.checks import check_int
    from shufflesim.errors import NotApplicableError, ParameterError
    from shufflesim.validation import dishonest as D

    t0 = time.perf_counter()
    if args.noise_users is None:
        raise ParameterError(f"--honest on {mech.kind} needs --n N: the number of users whose Polya shares sum to "
                             "the noise")
    n = check_int("n", args.noise_users, minimum=1)
    m = D.honest_count(args.honest, n)
    if args.compositions != 1 or args.compare or args.method not in (None, "closed-form"):
        raise NotApplicableError("--honest on the distributed noise answers one use with its own exact method "
                                 "(no --compositions, --compare or --method)")
    sigma = None
    if mech.kind == "ikos":
        from shufflesim.protocols.ikos_sum import ikos_sigma_improved

        if args.messages is None or mech.q is None:
            raise ParameterError("--honest on ikos needs --messages m and --q (the IKOS term with M honest users is "
                                 "(1+e^eps) 2^-sigma(M, q, m-1))")
        mm = check_int("messages", args.messages, minimum=2)
        sigma = ikos_sigma_improved(max(m, 2), mech.q, mm - 1)
        p, alpha, q = mech.p, mech.alpha, mech.q
    else:
        p, alpha, q = mech.sensitivity, math.exp(-mech.eps0 / mech.sensitivity), None

    def at(e: float):
        return D.polya_honest_delta(alpha, p, n, m, e, q=q, sigma=sigma)

    rows = []
    if args.eps is not None:
        for e in args.eps:
            r = at(e)
            rows.append({"eps": e, "delta_lower": r.delta_lower, "delta_upper": r.delta_upper,
                         "noise_delta_upper": r.noise_delta_upper, "ikos_term": r.tv_term})
    else:
        for d in args.delta:
            lo, up = D.honest_eps_interval(at, d, mech.eps0)
            rows.append({"delta": d, "eps_lower": lo, "eps_upper": up})
    what = f"{m} of {n} users honest"
    note = (f"the noise of {m} Polya(1/{n}, alpha) differences (seed 004 §5.2), exact law, its truncated mass (<= "
            f"{2 * D.PRIVACY_TAIL:.0e}) added to the upper end"
            + (f"; IKOS term (1+e^eps) 2^-sigma with sigma({m}) = {sigma:.6g} (reconstructed eq. 4, "
               f"{args.messages - 1} shares)" if sigma is not None else "")
            + ("; lower end: the pair at shift p folded mod q" if q is not None else "; lower end: the pair at "
               "shift = sensitivity"))
    out = {"mechanism": mech.kind, "params": mech.params(), "honest": what, "method": "polya-remaining-noise",
           "results": rows, "notes": [note], "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(out)
        return 0
    print(what)
    print(f"{mech.kind}  " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in mech.params().items()))
    print("method polya-remaining-noise, 1 composition(s)")
    for r in rows:
        if "eps_upper" in r:
            print(f"  delta={r['delta']:.3g}:  eps in [{r['eps_lower']:.6g}, {r['eps_upper']:.6g}]")
        else:
            print(f"  eps={r['eps']:.6g}:  delta in [{r['delta_lower']:.6g}, {r['delta_upper']:.6g}]")
    print(f"  note: {note}")
    print(f"  seconds: {out['seconds']:.2f}")
    return 0


def _run_tolerate(args: argparse.Namespace, mech) -> int:
    """``account rr2|krr|clones --tolerate F --delta D``: the calibrated defence (docs/theory.md#dishonest-tolerate)."""
    import time

    from shufflesim.errors import NotApplicableError, ParameterError
    from shufflesim.validation.dishonest import tolerant_mechanism

    t0 = time.perf_counter()
    if args.honest is not None:
        raise ParameterError("give --honest M or --tolerate F, not both")
    if args.delta is None or len(args.delta) != 1:
        raise ParameterError("--tolerate F needs one --delta D (the guarantee is kept at that delta)")
    if args.compositions != 1 or args.compare:
        raise NotApplicableError("--tolerate calibrates one use (no --compositions or --compare)")
    tol = tolerant_mechanism(mech, args.tolerate, args.delta[0], target_eps=args.target_eps, method=args.method)
    if args.json:
        print_json(dict(tol.to_dict(), seconds=time.perf_counter() - t0))
        return 0

    def iv(t):
        return f"[{'n/a' if t[0] is None else f'{t[0]:.6g}'}, {t[1]:.6g}]"

    print(f"{mech.kind}  tolerate F={tol.fraction:g}: the guarantee must hold whenever at least {tol.h0} of "
          f"{tol.n} users are honest")
    print(f"  target eps={tol.target_eps:.6g} at delta={tol.delta:.3g}")
    print(f"  undefended {tol.param}={tol.base_value:.6g}: eps {iv(tol.eps_base_n)} with {tol.n} of {tol.n} users "
          f"honest, {iv(tol.eps_base_h0)} with {tol.h0} of {tol.n} honest")
    print(f"  defended   {tol.param}={tol.value:.6g}: eps {iv(tol.eps_defended_h0)} with {tol.h0} of {tol.n} "
          f"users honest; certified delta_upper({tol.target_eps:.6g}) = {tol.delta_defended_h0:.6g} "
          f"{'<=' if tol.certified else '>'} {tol.delta:.3g}")
    if tol.mse_ratio is not None:
        print(f"  MSE price: x{tol.mse_ratio:.6g} ({tol.mse_base:.6g} -> {tol.mse_defended:.6g}; {tol.mse_what})")
    print(f"  seconds: {time.perf_counter() - t0:.2f}")
    return 0


def _pair_bracket(d: dict) -> str:
    """The evaluated pair's own bracket (issue 17), when the method's pair only dominates the view."""
    if d.get("bound_pair") is None:
        return ""
    lo, up = d["bound_lower"], d["bound_upper"]
    return (f"   (pair bracket [{'n/a' if lo is None else f'{lo:.6g}'}, "
            f"{'inf' if up is None else f'{up:.6g}'}]: {d['bound_pair']})")


#: compositions from which the FFT accountant is warned about (measured: 10^3 takes ~25 s, 10^4-10^6 about a
#: minute or more on 2 cores for rr2 with n = 1000)
SLOW_COMPOSITIONS = 1000


def _warn_slow(args: argparse.Namespace, mech) -> None:
    """One ``warning:`` line before a pair-based composition that is known to take long (issue 8)."""
    import sys

    from shufflesim.accounting.model import queries
    from shufflesim.accounting.model.mechanism import PAIR_METHODS

    method = args.method or mech.default_for(args.compositions)
    # no warning before an error: a request the accountant refuses was refused first, by run()'s check_question
    if method in PAIR_METHODS and queries.MAX_COMPOSITIONS >= args.compositions >= SLOW_COMPOSITIONS \
            and mech.n <= mech.max_n_pairs:
        print(f"warning: {args.compositions} compositions with the pair-based method {method!r} may take a minute "
              "or more (each FFT composition step works on a grid that grows with the composed range); fewer "
              "compositions or a published bound (--method erlingsson|feldman) answer at once", file=sys.stderr)
