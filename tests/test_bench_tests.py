"""benchmarks/bench_tests.py: the per-file times and outcome counts it prints come from
pytest's JUnit XML as written."""

from __future__ import annotations

from conftest import benchmark_module

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_a" name="t1" file="tests/test_a.py" time="1.5"/>
<testcase classname="tests.test_a" name="t2" file="tests/test_a.py" time="2.0">
  <failure message="boom"/></testcase>
<testcase classname="tests.test_b" name="t3" time="0.25"><skipped message="no"/></testcase>
<testcase classname="tests.golden.01_x.ipynb" name="Cell 0" file="tests/golden/01_x.ipynb"
  time="4"/>
</testsuite></testsuites>
"""


def test_per_file_sums_times_and_counts_outcomes(tmp_path):
    bench = benchmark_module("bench_tests")
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    seconds, counts = bench.per_file(path)
    assert seconds == {"tests/test_a.py": 3.5, "tests/test_b.py": 0.25,
                       "tests/golden/01_x.ipynb": 4.0}
    assert counts == {"passed": 2, "failed": 1, "skipped": 1}
