"""Published bounds shared by several mechanism descriptions (as (δ(ε), ε(δ)) function pairs), and the
genuine lower ends shared by the descriptions whose pairs only dominate their view (issue 17)."""

from __future__ import annotations

from shufflesim.accounting.model.mechanism import BoundFunctions, BoundOptions


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
        from shufflesim.accounting.model.results import as_dominating

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


#: largest n at which a single-use binary-RR lower end is the worst case over *every* data set (exact_rr2's
#: certified search, <= ~0.2 s there); above it, the data sets "all others hold 0 / 1" (milliseconds)
WORST_CASE_LOWER_MAX_N = 10_000


def binary_rr_lower(n: int, eps0: float, eps=None, delta=None, compositions: int = 1) -> tuple[list, str]:
    """Certified lower ends on δ(ε) (``eps`` given) or ε(δ) (``delta`` given) of shuffled binary randomised
    response with local privacy ``eps0`` among ``n`` users, used ``compositions`` times — THE one place
    every genuine lower end that rests on binary RR comes from (``clones``: binary RR is an ε0-LDP
    randomiser, so its δ lower-bounds the worst case over all of them; k-RR with k = 2; rr2's ``tight``).

    From :mod:`shufflesim.accounting.exact.exact_rr2` (docs/theory.md#exact-rr2): single use with n ≤
    :data:`WORST_CASE_LOWER_MAX_N`, the lower end of the mechanism's exact value (the worst of every data set);
    otherwise the exact value of the data sets "all others hold 0" / "all others hold 1", composed by the PLD
    engine with the same data in every use (a lower bound on the composition).  ``eps0`` is lowered by the
    margin of :func:`~shufflesim.maths.rr.eps0_upper` first: binary RR at a smaller ε0 is a post-processing of
    binary RR at a larger one, so an ε0 computed from γ (a few ulps off) cannot raise the lower end.
    """
    from shufflesim.accounting.exact import exact_rr2 as X
    from shufflesim.maths.rr import EPS0_MARGIN

    e0 = eps0 * (1.0 - EPS0_MARGIN)
    ends = [0, n - 1]
    if eps is not None:
        if compositions == 1 and n <= WORST_CASE_LOWER_MAX_N:
            vals = [X.delta_bracket(n, e0, e).lower for e in eps]
        elif compositions == 1:
            vals = [X.data_sets_lower(n, e0, eps=e)[0] for e in eps]
        else:
            vals = [X.composed_lower_delta(n, e0, e, compositions, ends)[0] for e in eps]
    else:
        if compositions == 1 and n <= WORST_CASE_LOWER_MAX_N:
            vals = [X.eps_bracket(n, e0, d).lower for d in delta]
        elif compositions == 1:
            vals = [X.data_sets_lower(n, e0, delta=d)[0] for d in delta]
        else:
            vals = [X.composed_lower_eps(n, e0, d, compositions, ends)[0] for d in delta]
    if compositions == 1 and n <= WORST_CASE_LOWER_MAX_N:
        what = "shuffled binary randomised response at eps0, its exact worst case over every data set (exact_rr2)"
    else:
        what = ("the exact value of shuffled binary randomised response at eps0 on the data sets 'all others hold "
                "0' / 'all others hold 1'" + (f", the same data in all {compositions} uses" if compositions > 1 else ""))
    return vals, what


BLANKET_METHODS = ("balle", "bennett", "hoeffding")
