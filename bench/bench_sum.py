"""Throughput of the real-summation protocols at n = 10⁶ users (a script, not a test).

For each protocol one simulated execution (randomiser → shuffler(s) → analyser, ``Protocol.run``) is timed
after a warm-up, and its rate in messages per second (n × messages per user / seconds) is compared with a
plain numpy baseline run in the same process: draw the same number of random 8-bit messages with the same
generator and sum them (the cheapest possible "protocol" that touches every message once).  Parameter
calibration (choosing γ) is timed separately and not included in the rate.

    /work/venv/bin/python bench/bench_sum.py [--n 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from shufflesim.pipeline import registry

CASES = [
    ("blanket-sum", {"eps": 1.0, "mode": "bennett"}),
    ("recursive-sum", {"eps": 1.0, "messages": 2, "mode": "bennett"}),
    ("recursive-sum", {"eps": 1.0, "messages": 3, "mode": "bennett"}),
    ("cheu-sum", {"eps": 0.1, "gamma": 0.3}),  # r = ceil(0.1 sqrt(n)) = 100 bits per user; gamma fixed
    ("local-rr-sum", {"eps": 1.0}),
    ("local-laplace-sum", {"eps": 1.0}),
    ("central-laplace-sum", {"eps": 1.0}),
    ("central-dlap-sum", {"eps": 1.0}),
    ("ikos-sum", {"eps": 1.0, "messages": 10}),
]


def baseline_rate(total_messages: int, rng: np.random.Generator, repeats: int) -> float:
    """Messages per second of the plain numpy yardstick: draw uint8 messages and sum them."""
    best = np.inf
    chunk = 1 << 24
    for _ in range(repeats):
        t0 = time.perf_counter()
        acc = 0
        left = total_messages
        while left > 0:
            m = min(chunk, left)
            acc += int(rng.integers(0, 256, size=m, dtype=np.uint8).sum(dtype=np.uint64))
            left -= m
        best = min(best, time.perf_counter() - t0)
    return total_messages / best


def blanket_numpy_rate(x: np.ndarray, k: int, gamma: float, rng: np.random.Generator, repeats: int) -> float:
    """The blanket protocol written directly in numpy (no framework): rounding, blanket RR, sum, debias."""
    n = x.shape[0]
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        s = x * k
        lo = np.floor(s)
        xbar = (lo + (rng.random(n) < s - lo)).astype(np.uint8)
        idx = np.flatnonzero(rng.random(n) < gamma)
        xbar[idx] = rng.integers(0, k + 1, size=idx.size, dtype=np.uint8)
        est = (int(xbar.sum(dtype=np.int64)) / k - n * gamma / 2) / (1 - gamma)
        best = min(best, time.perf_counter() - t0)
    assert np.isfinite(est)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n = args.n
    data = np.random.default_rng(0).random(n)
    rng = np.random.default_rng(1)
    print(f"n = {n:,}; best of {args.repeats} runs; baseline = draw and sum the same number of uint8 messages")
    print(f"{'protocol':<40}{'msgs/user':>10}{'setup s':>9}{'run s':>9}{'Mmsg/s':>9}{'base Mmsg/s':>12}{'ratio':>8}")
    for name, kw in CASES:
        try:
            t0 = time.perf_counter()
            proto = registry.create(name, n, **kw)
            setup = time.perf_counter() - t0
        except Exception as exc:  # a protocol that is not installed or not feasible here
            print(f"{name:<40} skipped: {exc}")
            continue
        proto.run(data, 0, validate=False)  # warm-up
        best = np.inf
        for r in range(args.repeats):
            t0 = time.perf_counter()
            proto.run(data, r + 1, validate=False)
            best = min(best, time.perf_counter() - t0)
        msgs = n * proto.messages_per_user
        rate = msgs / best
        base = baseline_rate(msgs, rng, args.repeats)
        label = name + " " + ",".join(f"{k}={v}" for k, v in kw.items() if k in ("mode", "messages"))
        print(f"{label:<40}{proto.messages_per_user:>10}{setup:>9.2f}{best:>9.3f}{rate / 1e6:>9.1f}"
              f"{base / 1e6:>12.1f}{rate / base:>8.2f}")
        if name == "blanket-sum":
            same = blanket_numpy_rate(data, proto.k, proto.gamma, rng, args.repeats)
            print(f"{'  same mechanism, plain numpy':<40}{1:>10}{'':>9}{n / same:>9.3f}{same / 1e6:>9.1f}"
                  f"{'':>12}{rate / same:>8.2f}  (framework / plain numpy)")


if __name__ == "__main__":
    main()
