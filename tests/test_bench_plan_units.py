"""``benchmarks/bench_plan_units.py``'s measured-run summary on a hand-made segments log and
hand-made unit records: each stretch's wall time, the units it finished and the work in
progress when it stopped."""

from __future__ import annotations

from datetime import UTC

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    return benchmark_module("bench_plan_units")


LOG = """segment 1 start 2026-11-29T10:00:00 epoch 1000 commit abc
2026-11-29T10:30:00 stopping plan python pid 7 after: [plan] 2/5 ...
segment 1 end 2026-11-29T10:30:00 epoch 2800 rc 130
segment 2 start 2026-11-29T11:00:00 epoch 5000 commit def
segment 2 end 2026-11-29T11:10:00 epoch 5600 rc 143
segment 3 start 2026-11-29T12:00:00 epoch 9000 commit def
"""


def _rec(epoch, pid, cached=False):
    from datetime import datetime

    iso = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
    return {"finished": iso, "pid": pid, "from_cache": cached}


def test_read_segments_keeps_start_and_end_epochs(bench):
    segs = bench.read_segments(LOG)
    assert segs == [{"segment": 1, "start": 1000, "end": 2800, "rc": 130},
                    {"segment": 2, "start": 5000, "end": 5600, "rc": 143},
                    {"segment": 3, "start": 9000, "end": None, "rc": None}]


def test_segments_summary_by_hand(bench):
    # stretch 1 (1000-2800 s): worker 1 finished at 1900 and 2500, worker 2 at 2000; work in
    # progress at the stop: (2800 - 2500) + (2800 - 2000) = 1100 s. Stretch 2 (5000-5600):
    # worker 3 at 5500, a cache hit at 5550 does not count; nobody else finished, so a second
    # worker had been busy since the start: (5600 - 5500) + (5600 - 5000) = 700 s.
    records = [_rec(1900, 1), _rec(2500, 1), _rec(2000, 2), _rec(5500, 3),
               _rec(5550, 3, cached=True)]
    s = bench.segments_summary(bench.read_segments(LOG), records)
    rows = {r["segment"]: r for r in s["segments"]}
    assert (rows[1]["wall_s"], rows[1]["units"], rows[1]["in_progress_s"]) == (1800, 3, 1100)
    assert (rows[2]["wall_s"], rows[2]["units"], rows[2]["in_progress_s"]) == (600, 1, 700)
    assert rows[3]["wall_s"] is None and s["open"] == 1
    # the totals: the logged stretches' wall time, units and what their stops cost
    assert (s["wall_s"], s["units"], s["in_progress_s"]) == (2400, 4, 1800)
    # a stretch that ended the plan (rc 0) lost nothing
    ended = [{"segment": 1, "start": 1000, "end": 2800, "rc": 0}]
    assert bench.segments_summary(ended, records)["in_progress_s"] == 0
