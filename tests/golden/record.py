"""Record the JSON outputs of tests/golden/commands.txt into tests/golden/cli_outputs.json.

Run once, before a restructuring, with the tree whose numbers are the reference:
``python tests/golden/record.py``.  tests/test_golden.py then checks every later tree against it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def commands() -> list[str]:
    lines = (HERE / "commands.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def run(cmd: str) -> dict:
    argv = [sys.executable, "-P", "-m", "shufflesim", *shlex.split(cmd), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


if __name__ == "__main__":
    import time
    data = {}
    for cmd in commands():
        t0 = time.perf_counter()
        data[cmd] = run(cmd)
        print(f"{time.perf_counter() - t0:6.1f} s  {cmd}", flush=True)
    (HERE / "cli_outputs.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(data)} commands")
