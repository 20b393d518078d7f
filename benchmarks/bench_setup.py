"""How long a newcomer waits: `make lab` and `make test`'s set-up, from a fresh clone.

    python3 benchmarks/bench_setup.py                 # both, with an empty download cache
    python3 benchmarks/bench_setup.py --warm          # uv's cache kept (a second clone on the same machine)
    python3 benchmarks/bench_setup.py --json FILE     # also write the figures as JSON

Each run clones this repository (its committed HEAD) into a temporary folder, so nothing here
is touched, and times, in that clone:

- lab: `make lab` with `--no-browser` until JupyterLab answers on /api/status (the venv, the
  lab extra, the server start), then stops the server;
- test set-up: every prerequisite of `make test` (`make -n test` lists them: .venv with the test
  extra, the vendored web assets, .venv-grade, .venv-present), without running the suite.

It prints the wall time of each and the disk each venv takes. `--cold` (the default) points
uv at an empty cache of its own, as on a machine that has never installed these packages: the
figures then include the downloads. Uses the standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_PREREQUISITES = [".venv/.installed-test", "build/vendor/.packages.json", ".venv-grade/.installed",
                      ".venv-present/.installed"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _du(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def time_lab(clone: Path, env: dict, timeout: float = 600) -> float:
    port = _free_port()
    args = f"--no-browser --ServerApp.port={port} --ServerApp.token= --ServerApp.ip=127.0.0.1"
    start = time.perf_counter()
    proc = subprocess.Popen(["make", "lab", f"JUPYTER_ARGS={args}"], cwd=clone, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while time.perf_counter() - start < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"make lab exited with {proc.returncode} before JupyterLab answered")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2) as r:
                    if r.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"JupyterLab did not answer within {timeout} s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def time_test_setup(clone: Path, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(["make", *TEST_PREREQUISITES], cwd=clone, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="keep uv's download cache (default: an empty one)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"Python {platform.python_version()}; cache: {'warm' if args.warm else 'cold (empty uv cache)'}")
    results: dict = {"cache": "warm" if args.warm else "cold", "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        env = dict(os.environ)
        if not args.warm:
            env["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")
        for part in ("lab", "test"):
            clone = Path(tmp) / part
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
            if part == "lab":
                seconds = time_lab(clone, env)
                results["lab_seconds"] = round(seconds, 1)
                results["lab_venv_mib"] = round(_du(clone / ".venv") / 2**20)
                print(f"make lab, fresh clone to JupyterLab answering: {seconds:.1f} s; "
                      f".venv {results['lab_venv_mib']} MiB")
            else:
                seconds = time_test_setup(clone, env)
                sizes = {name: round(_du(clone / name) / 2**20) for name in (".venv", ".venv-grade", ".venv-present")}
                results["test_setup_seconds"] = round(seconds, 1)
                results["test_venvs_mib"] = sizes
                print(f"make test's set-up, fresh clone: {seconds:.1f} s; "
                      + ", ".join(f"{k} {v} MiB" for k, v in sizes.items()))
            shutil.rmtree(clone, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
