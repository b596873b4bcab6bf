"""The Dask backend on a real local cluster: a ``dask scheduler`` and two ``dask worker`` processes on
127.0.0.1 (loopback only).  A worker is killed (SIGKILL) while it holds tasks of the running sweep (it is
frozen first, so that this does not depend on timing); the scheduler reruns its tasks on the other worker,
and the records equal the serial run's exactly (nothing lost, nothing duplicated: each chunk is written
once, and a rerun chunk is the same pure function of its seeds)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask backend needs the optional extra: pip install 'shufflesim[dask]'")
pytest.importorskip("pyarrow")

from shufflesim.experiments.sweep import Sweep, grid, read_records, run_sweep  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("dask")
    return [str(exe)] if exe.exists() else [shutil.which("dask") or "dask"]


@pytest.fixture
def cluster(tmp_path):
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False", PYTHONUNBUFFERED="1")
    log = open(tmp_path / "dask.log", "w")
    procs = [subprocess.Popen(_dask_cmd() + ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                                             "--no-dashboard"], stdout=log, stderr=log, env=env)]
    _wait_port(port)
    for i in range(2):
        procs.append(subprocess.Popen(_dask_cmd() + ["worker", addr, "--host", "127.0.0.1", "--nthreads", "1",
                                                     "--no-nanny", "--no-dashboard", "--name", f"w{i}",
                                                     "--local-directory", str(tmp_path / f"w{i}")],
                                      stdout=log, stderr=log, env=env))
    from distributed import Client

    with Client(addr, timeout=30) as c:
        c.wait_for_workers(2, timeout=60)
    try:
        yield addr, procs
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def _wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("the dask scheduler did not start")


SWEEP = Sweep(tuple(grid("krr", n=[20000], k=[4, 8], eps0=1.0)), trials=120, seed=5, engine="faithful")


def _wait_for(what: str, condition, timeout: float = 60.0) -> None:
    """Wait until ``condition()`` holds (polling a state that only moves one way); fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_dask_sweep_survives_a_killed_worker_and_equals_the_serial_run(cluster, tmp_path):
    """The victim worker is frozen (SIGSTOP) before the sweep starts, so the tasks the scheduler gives it
    stay in flight on it; it is killed (SIGKILL) from the driver's progress callback, i.e. after a part is
    known to be written and while the scheduler still lists tasks on the victim.  So the kill always falls
    mid-run and always loses work in flight, whatever the machine's speed."""
    from distributed import Client

    addr, procs = cluster
    victim = procs[1]  # worker "w0"
    parts = tmp_path / "dask" / "parts"
    at_kill: dict = {}
    with Client(addr, timeout=30) as client:
        victim_addr = next(a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "w0")

        def on_progress(k: int) -> None:
            if at_kill:
                return
            # the victim cannot finish anything: what the scheduler lists on it stays there until the kill
            _wait_for("a task on the frozen worker", lambda: client.processing(workers=[victim_addr])[victim_addr])
            at_kill["in_flight"] = list(client.processing(workers=[victim_addr])[victim_addr])
            at_kill["parts"] = len(list(parts.glob("*/c*.parquet")))
            victim.send_signal(signal.SIGKILL)
            at_kill["returncode"] = victim.wait(timeout=30)

        victim.send_signal(signal.SIGSTOP)
        try:
            res = run_sweep(SWEEP, tmp_path / "dask", scheduler=addr, chunk_size=4, on_progress=on_progress)
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait(timeout=30)
    assert at_kill["returncode"] == -signal.SIGKILL
    assert at_kill["in_flight"] and 1 <= at_kill["parts"] < 60, at_kill
    written = len(list(parts.glob("*/c*.parquet")))
    assert res.complete and res.backend["backend"] == "dask" and written == res.chunks_total == 60
    serial = run_sweep(SWEEP, tmp_path / "serial", backend="serial", chunk_size=7)
    assert read_records(tmp_path / "dask").equals(read_records(tmp_path / "serial"))
    assert res.summary.equals(serial.summary)
