"""Published bounds shared by several mechanism descriptions (as (δ(ε), ε(δ)) function pairs)."""

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
        return (lambda e: B.feldman_numerical_delta(e, n=n, eps0=eps0),
                lambda d: B.feldman_numerical_eps(d, n=n, eps0=eps0))
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
BLANKET_METHODS = ("balle", "bennett", "hoeffding")
