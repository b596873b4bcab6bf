"""``shufflesim fl``: federated learning in the shuffle model (FLAME, seed 002) and its baselines.

Trains multinomial logistic regression with FedAvg rounds on the embedded digits or MNIST (5,000-image)
data; each round samples ``--n`` users holding ``--per-user`` samples each.  Prints the test accuracy of
the initial model and after every round, and the (eps, delta) of the whole run against the analyser.
``--json`` prints one object with ``accuracy``, ``eps``, ``delta``, ``protocol``, ``params``,
``rejected_messages``, ``privacy`` (every method's value), ``messages`` and ``seconds``; with ``--poisoned`` or
``--no-range-check`` also ``poisoning`` (clients per round, strategy, out-of-range values counted and dropped).

Client sampling (docs/flame.md "Client sampling"): ``--clients-per-round m`` lets exactly m of the round's n
clients take part, ``--participation q`` each of them with probability q; only they compute and report, and the
run's ε is the accountant's (its method says whether the sampling is credited; ``sampling`` in the JSON has the
participants of every round).
"""

from __future__ import annotations

import argparse

from shufflesim.cli._common import float_arg, int_arg, print_json

PROTOCOL_CHOICES = ("ss-simple", "ss-double", "ss-topk", "np", "dp", "ldp")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fl", help="federated learning in the shuffle model (FLAME) and baselines",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       examples=("shufflesim fl --protocol ss-topk --dataset digits --rounds 3",
                                 "shufflesim fl --protocol ss-simple --dataset digits --rounds 3 --json",
                                 "shufflesim fl --protocol ss-double --rounds 3 --clients-per-round 100"),
                       docs="README.md#federated-learning-in-the-shuffle-model-flame; docs/flame.md")
    p.add_argument("--protocol", required=True, choices=PROTOCOL_CHOICES)
    p.add_argument("--dataset", default="digits", choices=("digits", "mnist"))
    p.add_argument("--rounds", type=int_arg, default=10)
    p.add_argument("--seed", type=int_arg, default=0)
    p.add_argument("--n", type=int_arg, default=300, help="users sampled per round (default 300)")
    p.add_argument("--per-user", type=int_arg, default=4, help="samples each user holds (default 4)")
    p.add_argument("--lr", type=float_arg, default=0.5, help="local learning rate (default 0.5)")
    p.add_argument("--local-steps", type=int_arg, default=1)
    p.add_argument("--clip", type=float_arg, default=0.1, help="coordinate clipping bound C (default 0.1)")
    p.add_argument("--eps-l", type=float_arg, default=None,
                   help="local budget per user and round (SS-*, LDP; default d/25)")
    p.add_argument("--randomiser", default="laplace", choices=("laplace", "rr"),
                   help="per-coordinate randomiser of SS-*: Laplace or R_{gamma,b} (default laplace)")
    p.add_argument("--b", type=int_arg, default=10, help="levels of R_{gamma,b} (default 10)")
    p.add_argument("--beta", type=float_arg, default=1 / 50, help="k/d for SS-Double/Topk (default 1/50)")
    p.add_argument("--k", type=int_arg, default=None, help="coordinates per user (overrides --beta)")
    p.add_argument("--n-p", type=int_arg, default=None, help="padded messages per coordinate (default: n for ss-topk, which then cannot overflow; "
                   "n/3 for ss-double, the paper's)")
    p.add_argument("--l", type=int_arg, default=None, help="SS-Topk: lk indices per user")
    p.add_argument("--nu", type=float_arg, default=None, help="SS-Topk: index-privacy level (chooses l)")
    p.add_argument("--encrypt", action="store_true", help="encrypt every message (slower; same pipeline)")
    p.add_argument("--eps", type=float_arg, default=1.0, help="DP-FL: total eps of the run (default 1)")
    p.add_argument("--delta", type=float_arg, default=None, help="delta (default 0.01/n^1.1, the paper's)")
    p.add_argument("--calibration", default="analytic", choices=("analytic", "classical"))
    p.add_argument("--ldp-mechanism", default="laplace", choices=("laplace", "gaussian"))
    p.add_argument("--l2-clip", type=float_arg, default=1.0, help="DP-FL: L2 clipping norm (default 1)")
    p.add_argument("--no-tight", action="store_true", help="skip the PLD accountant (faster)")
    p.add_argument("--poisoned", type=float_arg, default=0.0, metavar="F",
                   help="SS-*: clients an adversary controls per round, a fraction in [0, 1) or a count >= 1 "
                        "(default 0)")
    p.add_argument("--poison-strategy", default="worst-in-range",
                   choices=("worst-in-range", "worst-message", "out-of-range"),
                   help="what poisoned clients send: the clipping range's extreme against the mean update, "
                        "the most extreme value the analyser's range check accepts, or values outside it")
    p.add_argument("--no-range-check", action="store_true",
                   help="SS-*: switch the analyser's range check off (to measure what it protects against)")
    p.add_argument("--clients-per-round", type=int_arg, default=None, metavar="M",
                   help="client sampling: exactly M of the n clients take part in a round (without replacement)")
    p.add_argument("--participation", type=float_arg, default=None, metavar="Q",
                   help="client sampling: each of the n clients takes part in a round with probability Q in (0, 1]")
    p.add_argument("--plot", metavar="PNG", help="write accuracy against rounds (needs matplotlib)")
    p.add_argument("--yes", action="store_true", help="train even if the time estimate is above the limit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shufflesim.experiments.progress import Progress
    from shufflesim.federated.training import FLSettings, train

    s = FLSettings(protocol=args.protocol, dataset=args.dataset, rounds=args.rounds, seed=args.seed, n=args.n,
                   per_user=args.per_user, lr=args.lr, local_steps=args.local_steps, C=args.clip,
                   eps_l=args.eps_l, randomiser=args.randomiser, b=args.b, beta=args.beta, k=args.k,
                   n_p=args.n_p, l=args.l, nu=args.nu, encrypt=args.encrypt, eps=args.eps, delta=args.delta,
                   calibration=args.calibration, ldp_mechanism=args.ldp_mechanism, l2_clip=args.l2_clip,
                   tight=not args.no_tight, poisoned=args.poisoned, poison_strategy=args.poison_strategy,
                   range_check=not args.no_range_check, clients_per_round=args.clients_per_round,
                   participation=args.participation, yes=args.yes)
    bar = Progress(args.rounds, "rounds", enabled=False if args.json else None)
    try:
        res = train(s, progress=bar)
    finally:
        bar.close()
    if args.plot:
        from shufflesim.federated.plots import plot_accuracy

        plot_accuracy([res], args.plot)
    if args.json:
        print_json(res)
        return 0
    acc = res["accuracy"]
    who = "clients (sampled below)" if "sampling" in res else "users/round"
    print(f"{res['protocol']} on {res['dataset']}: d={res['params']['d']}, n={res['params']['n']} {who}, "
          f"{len(acc) - 1} rounds")
    if "sampling" in res:
        sm = res["sampling"]
        law = (f"exactly {sm['clients_per_round']}" if sm["law"] == "fixed" else
               f"Poisson, each with probability {sm['participation']:g}")
        print(f"client sampling: {law} of the n = {sm['population']} clients a round; participants "
              + " ".join(str(c) for c in sm["participants"])
              + (f" ({sm['empty_rounds']} empty round(s): the model did not move)" if sm["empty_rounds"] else ""))
    print("accuracy: " + " ".join(f"{a:.3f}" for a in acc))
    eps = res["eps"]
    covered = res["privacy"].get("covered", True)
    print(f"privacy: eps={'inf' if eps is None else f'{eps:.4g}'}, delta={res['delta']:.3g}"
          + (f" ({res['privacy'].get('method')})" if res["privacy"] else "")
          + ("" if covered else " - NOT COVERED: this run dropped messages (note below)"))
    if res["privacy"].get("values"):
        print("  " + ", ".join(f"{k}={v:.4g}" for k, v in res["privacy"]["values"].items()))
    if res["privacy"].get("sampling_note"):
        print("  sampling: " + res["privacy"]["sampling_note"])
    if res["privacy"].get("note"):
        print("  note: " + res["privacy"]["note"])
    print(f"rejected messages: {res['rejected_messages']}")
    if "poisoning" in res:
        ps = res["poisoning"]
        print(f"poisoning: {ps['clients_per_round']} of {res['params']['n']} clients a round ({ps['strategy']}), "
              f"range check {'on' if ps['range_check'] else 'off'}: {ps['out_of_range']} out-of-range values "
              f"{'dropped' if ps['range_check'] else 'summed'}")
        print(f"  note: {ps['privacy_note']}")
    return 0
