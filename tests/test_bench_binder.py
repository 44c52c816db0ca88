"""benchmarks/bench_binder.py's limits (issue 54, item 3): a run that ends is read as reaching
its last cell, one that overstays its time or whose process tree (children included) grows
past the memory ceiling is stopped and said to be, and a failure keeps its return code. Each
case is a few lines of Python in place of a notebook run."""

from __future__ import annotations

import sys

import pytest
from conftest import benchmark_module

bench = benchmark_module("bench_binder")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and pins CPUs: Linux only")


def _watch(code: str, **kw):
    limits = {"limit_s": 20.0, "memory_mb": 4000.0, "cores": 1, "poll_s": 0.1, **kw}
    return bench.watch([sys.executable, "-c", code], env=None, **limits)


def test_a_run_that_ends_reached_its_last_cell_on_one_core():
    ended, wall, peak = _watch("import os; assert len(os.sched_getaffinity(0)) == 1")
    assert ended == "last cell" and wall < 20 and peak >= 0


def test_a_failure_keeps_its_return_code():
    assert _watch("raise SystemExit(3)")[0] == "failed (rc 3)"


def test_a_run_past_its_time_is_stopped():
    ended, wall, _ = _watch("import time; time.sleep(30)", limit_s=1.0)
    assert ended == "time limit" and 1.0 <= wall < 10


def test_the_ceiling_counts_the_children_too():
    """The parent stays small; the child it starts holds 300 MB: the tree is stopped."""
    child = "b = bytearray(300 * 2**20); import time; time.sleep(30)"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    ended, _, peak = _watch(code, memory_mb=200.0)
    assert ended == "memory ceiling" and peak > 200


def test_the_table_counts_the_notebooks_that_reached_their_last_cell():
    rows = [bench.Outcome("02", "last cell", 61.0, 900.0),
            bench.Outcome("06", "time limit", 300.4, 1500.0)]
    text = bench.table(rows, 300.0, 2048.0)
    assert "| 06 | time limit | 300 | 1,500 |" in text
    assert text.endswith("1 of 2 notebooks reached their last cell within 300 s and 2,048 MB")


def test_a_notebook_is_run_as_its_reader_opens_it():
    """Where a notebook has ``recompute`` (01), the profile's True is overridden by the
    notebook's own default; a notebook without it gets no override to refuse."""
    assert bench.as_opened("01") == ["-p", "recompute=False"]
    assert bench.as_opened("08") == []
