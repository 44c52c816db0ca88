"""Wall time of each test tier, and where it goes: the README's test command (`make test`) has
a 15-minute budget on the 2-core CPU machine from a fresh clone, install included.

Runs each tier as `make test` / `make test-all` run it (pytest-xdist over every core, one
worker per test file) and prints, per tier: the wall time, the workers, the passed/failed
counts, and the test files that take longest (the sum of their tests' times, setup included,
from pytest's JUnit XML). Files are the unit of scheduling, so the slowest file bounds the
tier from below.

Usage: ``python benchmarks/bench_tests.py [--tier default|slow|all] [--workers auto|0|N]
[--top 15] [--cache DIR]``. ``--cache``: a BERTOLOGY_CACHE_DIR for the run; an empty folder
measures a cold cache as CI meets it (the Colab-install test then needs
``make wheelhouse CACHE=DIR`` first). The default tier takes minutes; run it on an otherwise
idle machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = {"default": ["-m", "not slow"], "slow": ["-m", "slow"], "all": []}
BUDGET_S = 15 * 60


def per_file(junit: Path) -> tuple[dict[str, float], dict[str, int]]:
    """Seconds per test file and the outcome counts, from pytest's JUnit XML."""
    seconds: dict[str, float] = defaultdict(float)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        seconds[name] += float(case.get("time", 0) or 0)
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return dict(seconds), counts


def run_tier(tier: str, workers: str, env: dict) -> tuple[float, dict[str, float], dict, int]:
    with tempfile.TemporaryDirectory(prefix="bench_tests_") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TIERS[tier],
               f"--junitxml={junit}", "-o", "junit_family=xunit1"]
        if workers != "0":
            cmd += ["-n", workers, "--dist", "loadfile"]
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode
        wall = time.perf_counter() - t0
        seconds, counts = per_file(junit) if junit.is_file() else ({}, {})
    return wall, seconds, counts, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=sorted(TIERS), default="default")
    ap.add_argument("--workers", default="auto", help="pytest-xdist workers; 0: one process")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--cache", default="", help="BERTOLOGY_CACHE_DIR for the run")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.cache:
        env["BERTOLOGY_CACHE_DIR"] = str(Path(args.cache).resolve())
    wall, seconds, counts, rc = run_tier(args.tier, args.workers, env)
    print(f"tier {args.tier}: {wall:.0f} s wall on {os.cpu_count()} CPUs, workers "
          f"{args.workers}, exit {rc}; " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.tier == "default":
        print(f"budget: make test (install included) <= {BUDGET_S} s; pytest alone used "
              f"{wall / BUDGET_S:.0%} of it")
    total = sum(seconds.values())
    print(f"sum of test times {total:.0f} s (parallel speed-up {total / wall:.2f}x)")
    print(f"{'seconds':>8}  test file")
    for name, s in sorted(seconds.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{s:8.1f}  {name}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
