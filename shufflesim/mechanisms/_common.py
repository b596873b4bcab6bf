"""Published bounds shared by several mechanism descriptions (as (δ(ε), ε(δ)) function pairs), and the
genuine lower ends shared by the descriptions whose pairs only dominate their view (issue 17)."""

from __future__ import annotations

from shufflesim.accounting.mechanism import BoundFunctions, BoundOptions


def ldp_bound(method: str, n: int, eps0: float) -> BoundFunctions:
    """Bounds that hold for any shuffled ε0-LDP randomiser: Erlingsson et al. 2019, Feldman et al. 2021."""
    from shufflesim.accounting import bounds as B  # imported on use: the CLI starts without scipy.optimize

    if method == "erlingsson":
        return (lambda e: B.erlingsson_delta(e, n=n, eps0=eps0), lambda d: B.erlingsson_eps(d, n=n, eps0=eps0))
    if method == "feldman":
        return (lambda e: B.feldman_delta(e, n=n, eps0=eps0), lambda d: B.feldman_eps(d, n=n, eps0=eps0))
    if method == "feldman-numerical":
        # its interval brackets Feldman et al.'s own (dominating) pair: reported as bound_*, no lower end here
        # (account() adds the description's genuine lower end, docs/theory.md#lower-ends)
        from shufflesim.accounting.results import as_dominating

        name = FELDMAN_PAIR
        return (lambda e: as_dominating(B.feldman_numerical_delta(e, n=n, eps0=eps0), name),
                lambda d: as_dominating(B.feldman_numerical_eps(d, n=n, eps0=eps0), name))
    raise AssertionError(method)


def blanket_bound(method: str, n: int, k: int, gamma: float, options: BoundOptions) -> BoundFunctions:
    """Balle et al. 2019's bounds for shuffled k-RR in blanket form: closed form, Bennett, Hoeffding."""
    from shufflesim.accounting import bounds as B  # imported on use: the CLI starts without scipy.optimize

    if method == "balle":
        return (lambda e: B.balle_delta(e, n=n, k=k, gamma=gamma), lambda d: B.balle_eps(d, n=n, k=k, gamma=gamma))
    r = B.KRRBlanket(k, gamma)
    if method == "bennett":
        v = options.bennett_variant
        return (lambda e: B.bennett_delta(e, n=n, randomiser=r, variant=v),
                lambda d: B.bennett_eps(d, n=n, randomiser=r, variant=v))
    if method == "hoeffding":
        return (lambda e: B.hoeffding_delta(e, n=n, randomiser=r), lambda d: B.hoeffding_eps(d, n=n, randomiser=r))
    raise AssertionError(method)


LDP_METHODS = ("erlingsson", "feldman", "feldman-numerical")

#: names of the dominating pairs, as reported in ``bound_pair``
STRONGER_CLONES = "stronger clone pair (Feldman, McMillan, Talwar 2023)"
FELDMAN_PAIR = "Feldman et al.'s clone pair (their numerical method)"
KOSKELA_CLONES = "clones pair of seed 001 eq 6.1"


def binary_rr_lower(n: int, eps0: float, eps=None, delta=None, compositions: int = 1) -> tuple[list, str]:
    """Certified lower ends on δ(ε) (``eps`` given) or ε(δ) (``delta`` given) of shuffled binary randomised
    response with local privacy ``eps0`` among ``n`` users, used ``compositions`` times — THE one place
    every genuine lower end that rests on binary RR comes from (``clones``: binary RR is an ε0-LDP
    randomiser, so its δ lower-bounds the worst case over all of them; k-RR with k = 2).

    Today: the exact δ of the all-zeros data set (seed 001 eq 4.1, :func:`~shufflesim.accounting.pairs.rr2_pair`;
    docs/theory.md#pairs-rr2), composed by the PLD engine (its certified lower end; the engine's truncated
    tails only enter the upper end).  It is a genuine lower bound — the mechanism meets that data set — but
    not the worst data set.  Issue 17's exact worst case over data sets (accounting.exact_rr2) replaces it
    at merge: only this function changes.
    """
    from shufflesim.accounting.pairs import rr2_pair
    from shufflesim.accounting.tight import tight_delta, tight_epsilon

    pair = rr2_pair(n, eps0)
    if eps is not None:
        res = tight_delta(pair, list(eps), compositions=compositions)
        vals = [r.delta_lower for r in res]
    else:
        res = tight_epsilon(pair, list(delta), compositions=compositions)
        vals = [r.eps_lower for r in res]
    what = ("the exact delta of binary randomised response at eps0 on the all-zeros data set (seed 001 eq 4.1)"
            + (f", composed {compositions} times" if compositions > 1 else ""))
    return vals, what
BLANKET_METHODS = ("balle", "bennett", "hoeffding")
