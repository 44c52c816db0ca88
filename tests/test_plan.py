"""The fine-tuning runs notebooks 06 and 07 share, parsed from their string parameters."""

from __future__ import annotations

import pytest

from analysis_utils.runplan.finetunes import Run, parse_limits, parse_seeds, parse_tasks, runs


def test_runs_cover_every_seed_on_multi_seed_tasks_only():
    got = runs("MRPC,STS-B,RTE", "42,43", "MRPC,RTE", "STS-B:100", random_init=True)
    assert got == [Run("MRPC", 42), Run("MRPC", 43), Run("STS-B", 42, max_train=100),
                   Run("RTE", 42), Run("RTE", 43),
                   Run("MRPC", 42, "random"), Run("STS-B", 42, "random", 100),
                   Run("RTE", 42, "random")]
    assert runs("MRPC", "7", "", "") == [Run("MRPC", 7)]
    # random-init runs: the first N seeds of every task, whether or not it is multi-seed
    three = runs("MRPC,STS-B", "42,43,44", "MRPC", "", random_init=3)
    assert [r for r in three if r.init == "random"] == [
        Run(t, s, "random") for t in ("MRPC", "STS-B") for s in (42, 43, 44)]


@pytest.mark.parametrize("call, message", [
    (lambda: parse_tasks("MRPC,QQQ"), "unknown GLUE task"),
    (lambda: parse_tasks("MRPC,MRPC"), "twice"),
    (lambda: parse_seeds("42,x"), "comma-separated integers"),
    (lambda: parse_seeds(""), "at least one"),
    (lambda: parse_limits("SST-2=8000"), "TASK:N"),
    (lambda: parse_limits("SST-2:0"), "TASK:N"),
    (lambda: runs("MRPC", "42", "RTE"), "not among tasks"),
    (lambda: runs("MRPC", "42,43", "MRPC", "", random_init=3), "add seeds or lower random_init"),
])
def test_bad_plans_are_refused_with_the_expected_form(call, message):
    with pytest.raises(ValueError, match=message):
        call()
