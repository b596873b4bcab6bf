"""Accuracy against rounds (and, for several runs, against their eps) — matplotlib is optional."""

from __future__ import annotations

from shufflesim.errors import ParameterError


def plot_accuracy(results: list[dict], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ParameterError("plotting needs matplotlib (pip install 'shufflesim[plot]')") from exc
    fig, axes = plt.subplots(1, 2 if len(results) > 1 else 1, figsize=(10 if len(results) > 1 else 5, 3.5))
    ax = axes[0] if len(results) > 1 else axes
    colours = []
    for r in results:
        eps = r.get("eps")
        label = f"{r['protocol']} (eps={'inf' if eps is None else f'{eps:.3g}'})"
        (line,) = ax.plot(range(len(r["accuracy"])), r["accuracy"], marker=".", label=label)
        colours.append(line.get_color())
    ax.set_xlabel("round (0: the initial model)")
    ax.set_ylabel("test accuracy")
    r0 = results[0]
    users = r0.get("params", {}).get("n")
    ax.set_title(f"FedAvg on {r0.get('dataset', 'the data')}" + (f", {users} users a round" if users else "")
                 + ": test accuracy per round", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)  # off the data
    if len(results) > 1:
        pts = [(r["eps"], r["accuracy"][-1], r["protocol"], c) for r, c in zip(results, colours)
               if r.get("eps") is not None]
        for e, a, name, c in pts:
            axes[1].scatter([e], [a], color=c)
            axes[1].annotate(name, (e, a), fontsize=7)
        axes[1].set_xscale("log")
        axes[1].set_xlabel("eps of the run")
        axes[1].set_ylabel("final test accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
