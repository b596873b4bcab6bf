"""Sweeps: bit-identical for any chunking, worker count and backend; resume after Ctrl-C and kill -9;
corrupt parts recomputed; a different sweep refused; the streamed summary equals the in-memory one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shufflesim.experiments.data import load_data
from shufflesim.experiments.montecarlo import run_trials, summarise
from shufflesim.experiments.outdir import TMP_PREFIX, DirectoryLock
from shufflesim.experiments.sweep import (Sweep, SweepMismatchError, grid, part_path, read_part, read_records,
                                          run_sweep, summarise_sweep)
from shufflesim.core.rng import data_seed
from shufflesim.errors import ParameterError
from shufflesim.pipeline import registry

pytest.importorskip("pyarrow")

SWEEP = Sweep(tuple(grid("krr", n=[300], k=[2, 5], eps0=[0.5, 1.0]) + grid("cheu-sum", n=40, eps=1.0, data="beta:2,5",
                                                                        messages=4, gamma=0.5)),
              trials=60, seed=9, engine="auto")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref") / "sweep"
    res = run_sweep(SWEEP, d, backend="serial", chunk_size=60)
    return res, read_records(d)


def test_records_identical_across_chunkings_workers_and_backends(tmp_path, reference):
    ref_res, ref = reference
    for i, (backend, workers, size) in enumerate([("serial", 1, 7), ("processes", 2, 13)]):
        res = run_sweep(SWEEP, tmp_path / f"s{i}", backend=backend, workers=workers, chunk_size=size)
        assert res.complete and res.backend["backend"] == backend and res.backend["workers"] == workers
        assert read_records(tmp_path / f"s{i}").equals(ref)
        pd.testing.assert_frame_equal(res.summary, ref_res.summary, check_exact=True)


def test_sweep_point_equals_run_trials_and_its_summary(reference):
    ref_res, ref = reference
    g = 1
    pt = SWEEP.points[g]
    cls = registry.get(pt.protocol)
    root = np.random.SeedSequence(SWEEP.seed)
    x = load_data(pt.data, data_kind=cls.data_kind, n=pt.n, k=pt.params.get("k"), rng=data_seed(root))
    proto = cls.create(pt.n, **pt.params)
    run = run_trials(proto, x, trials=SWEEP.trials, rng=SWEEP.seed, point=g, engine=SWEEP.engine)
    mine = ref[ref.point == g].reset_index(drop=True)
    assert np.array_equal(mine["sq_error"].to_numpy(), run.records["sq_error"].to_numpy())
    s = summarise(run.records, proto, x)
    row = ref_res.summary.iloc[g]
    assert row["mse"] == pytest.approx(s["mse"], rel=1e-13)
    assert [row["mse_lo"], row["mse_hi"]] == pytest.approx(s["mse_ci"], rel=1e-12)
    assert row["mse_expected"] == s["mse_expected"] and row["engine"] == "fast"


def test_parts_carry_the_run_metadata(reference):
    res, _ = reference
    frame, meta = read_part(part_path(res.path, 0, 0))
    assert meta["sweep_hash"] == SWEEP.hash and meta["point"] == 0 and (meta["start"], meta["stop"]) == (0, 60)
    assert meta["seed_sequence"]["entropy"] == str(SWEEP.seed) and meta["spawn_keys"].startswith("(2, 0, b)")
    assert meta["backend"] == "serial" and meta["workers"] == 1 and meta["engine"] == "fast"
    assert {"shufflesim", "numpy", "pandas", "python"} <= set(meta["environment"])
    spec = json.loads((res.path / "sweep.json").read_text())
    assert spec["sweep_hash"] == SWEEP.hash and spec["chunk_size"] == 60
    assert (res.path / "summary.parquet").exists() and (res.path / "summary.csv").exists()


def test_ctrl_c_keeps_finished_chunks_and_resume_completes(tmp_path, reference):
    _, ref = reference
    seen = []

    def interrupt(k):
        seen.append(k)
        if len(seen) == 5:
            raise KeyboardInterrupt

    d = tmp_path / "s"
    res = run_sweep(SWEEP, d, backend="serial", chunk_size=10, on_progress=interrupt)
    assert not res.complete and res.summary.empty
    again = run_sweep(SWEEP, d, backend="serial", chunk_size=10, resume=True)
    assert again.complete and again.chunks_reused >= 4 and not again.chunks_recomputed
    assert read_records(d).equals(ref)


def test_corrupt_truncated_or_foreign_parts_are_recomputed(tmp_path, reference):
    _, ref = reference
    d = tmp_path / "s"
    run_sweep(SWEEP, d, backend="serial", chunk_size=20)
    truncated, flipped, foreign = part_path(d, 0, 1), part_path(d, 1, 0), part_path(d, 2, 2)
    raw = truncated.read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    frame, meta = read_part(flipped)  # a part that still parses but whose numbers changed
    frame.loc[3, "sq_error"] += 1.0
    from shufflesim.experiments.sweep import write_part

    write_part(flipped, frame, meta)
    foreign.write_bytes(part_path(d, 2, 1).read_bytes())  # a valid part of another chunk
    (part_path(d, 0, 0).parent / f"{TMP_PREFIX}abc-c0000009.parquet").write_bytes(b"half")  # a killed write
    res = run_sweep(SWEEP, d, backend="serial", chunk_size=20, resume=True)
    why = "\n".join(res.chunks_recomputed)
    assert len(res.chunks_recomputed) == 3, why
    assert "c0000001.parquet: does not parse" in why and "checksum mismatch" in why and "metadata chunk=1" in why
    assert read_records(d).equals(ref)
    assert not list(part_path(d, 0, 0).parent.glob(f"{TMP_PREFIX}*"))


def test_a_directory_in_use_is_refused_at_once(tmp_path):
    d = tmp_path / "busy"
    d.mkdir()
    with DirectoryLock(d, "held by this test"):
        with pytest.raises(ParameterError, match="in use by another sweep"):
            run_sweep(SWEEP, d, backend="serial", chunk_size=20)
        assert not (d / "sweep.json").exists()  # refused before anything is written
    run_sweep(SWEEP, d, backend="serial", chunk_size=20)  # the lock ends with its holder


def test_resume_with_a_different_sweep_is_refused_naming_the_difference(tmp_path):
    small = Sweep(SWEEP.points[:1], trials=4, seed=1, engine="fast")
    d = tmp_path / "s"
    run_sweep(small, d, backend="serial", chunk_size=2)
    with pytest.raises(ParameterError, match="already holds a sweep; pass --resume"):
        run_sweep(small, d, backend="serial", chunk_size=2)
    with pytest.raises(SweepMismatchError, match=r"sweep\.trials: 4 on disk, 5 now"):
        run_sweep(Sweep(small.points, trials=5, seed=1, engine="fast"), d, chunk_size=2, resume=True)
    with pytest.raises(SweepMismatchError, match=r"sweep\.points\[0\]\.params\.eps0: 0\.5 on disk, 0\.7 now"):
        pts = grid("krr", n=[300], k=2, eps0=0.7)
        run_sweep(Sweep(tuple(pts), trials=4, seed=1, engine="fast"), d, chunk_size=2, resume=True)
    with pytest.raises(SweepMismatchError, match="chunk_size: 2 on disk, 3 now"):
        run_sweep(small, d, chunk_size=3, resume=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x")
    with pytest.raises(ParameterError, match="not empty and holds no sweep"):
        run_sweep(small, tmp_path / "other", chunk_size=2)
    assert run_sweep(small, d, backend="serial", chunk_size=2, resume=True).chunks_reused == 2


def test_summary_streams_in_blocks_independent_of_chunking(tmp_path, monkeypatch):
    import shufflesim.experiments.sweep as sw

    monkeypatch.setattr(sw, "SUMMARY_BLOCK", 16)  # several blocks, not aligned with the chunks
    s = Sweep(SWEEP.points[:1], trials=100, seed=2, engine="fast")
    a = run_sweep(s, tmp_path / "a", backend="serial", chunk_size=7).summary
    b = run_sweep(s, tmp_path / "b", backend="serial", chunk_size=33).summary
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    recs = read_records(tmp_path / "a")
    assert a.loc[0, "mse"] == pytest.approx(recs["sq_error"].mean(), rel=1e-14)
    assert a.loc[0, "tv"] == pytest.approx(recs["tv"].mean(), rel=1e-14)


_KILL_SCRIPT = textwrap.dedent("""
    import sys
    from shufflesim.experiments.sweep import Sweep, grid, run_sweep
    pts = grid("krr", n=[20000], k=[4, 8], eps0=1.0)
    run_sweep(Sweep(tuple(pts), trials=int(sys.argv[2]), seed=4, engine="faithful"), sys.argv[1],
              backend="serial", chunk_size=3, resume=True)
""")


def test_resume_after_kill_9_equals_the_uninterrupted_run(tmp_path):
    trials = 90
    script = tmp_path / "run.py"
    script.write_text(_KILL_SCRIPT)
    d = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(script), str(d), str(trials)])
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(list(d.glob("parts/*/c*.parquet"))) < 6:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    done = len(list(d.glob("parts/*/c*.parquet")))
    assert proc.returncode == -signal.SIGKILL and 6 <= done < 60, done
    assert subprocess.run([sys.executable, str(script), str(d), str(trials)]).returncode == 0
    subprocess.run([sys.executable, str(script), str(tmp_path / "clean"), str(trials)], check=True)
    assert read_records(d).equals(read_records(tmp_path / "clean"))
    a = pd.read_parquet(d / "summary.parquet")
    b = pd.read_parquet(tmp_path / "clean" / "summary.parquet")
    pd.testing.assert_frame_equal(a, b, check_exact=True)
