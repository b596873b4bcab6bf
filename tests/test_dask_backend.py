"""The Dask backend on a real local cluster: a ``dask scheduler`` and two ``dask worker`` processes on
127.0.0.1 (loopback only).  A worker is killed (SIGKILL) while the sweep runs; the scheduler reruns its
tasks on the other worker, and the records equal the serial run's exactly (nothing lost, nothing
duplicated: each chunk is written once, and a rerun chunk is the same pure function of its seeds)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
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


def test_dask_sweep_survives_a_killed_worker_and_equals_the_serial_run(cluster, tmp_path):
    addr, procs = cluster
    victim = procs[1]
    parts = tmp_path / "dask" / "parts"

    def kill_when_running():
        deadline = time.time() + 60
        while time.time() < deadline and len(list(parts.glob("*/c*.parquet"))) < 4:
            time.sleep(0.01)
        victim.send_signal(signal.SIGKILL)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    res = run_sweep(SWEEP, tmp_path / "dask", scheduler=addr, chunk_size=4)
    killer.join()
    assert victim.poll() == -signal.SIGKILL
    written = len(list(parts.glob("*/c*.parquet")))
    assert res.complete and res.backend["backend"] == "dask" and written == res.chunks_total == 60
    serial = run_sweep(SWEEP, tmp_path / "serial", backend="serial", chunk_size=7)
    assert read_records(tmp_path / "dask").equals(read_records(tmp_path / "serial"))
    assert res.summary.equals(serial.summary)
