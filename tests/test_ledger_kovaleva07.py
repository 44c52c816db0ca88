"""Notebook 07's ledger rules (Kovaleva Section 4.6 and the Discussion) on hand-made run
folders: a 1-layer x 2-head model fine-tuned with three seeds on MRPC, RTE and STS-B, whose
per-example predictions (``07_predictions_<task>.npz``, as notebook 07 saves them) are built
so that each rule's statistic can be computed by hand. The rules return checks (the verdicts
are :func:`~analysis_utils.ledger.core.evaluate`'s); these tests read the per-task keys, the
check fields and the estimates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from analysis_utils.analyses import disabling
from analysis_utils.ledger import core, kovaleva, spec_kovaleva
from analysis_utils.ledger import resample as rs

SEEDS = (42, 43, 44)
CHANGES = np.array(["baseline", "1-1", "1-2", "layer 1"])
KINDS = np.array(["baseline", "head", "head", "layer"])
N = 40


def _accuracy(y, p):
    return float(np.mean(y == p))


def _f1(y, p):
    tp = np.sum((y == 1) & (p == 1))
    return float(2 * tp / (2 * tp + np.sum((y == 0) & (p == 1)) + np.sum((y == 1) & (p == 0))))


def _pearson(y, p):
    return float(np.corrcoef(y, p.astype(float))[0, 1])


METRIC = {"MRPC": ("f1", _f1), "RTE": ("accuracy", _accuracy), "STS-B": ("pearson", _pearson)}


def _flip(y, k, start=0):
    """``y`` with ``k`` examples from ``start`` on predicted wrong (classes)."""
    p = y.copy()
    p[start:start + k] = 1 - p[start:start + k]
    return p


def _task_preds(task: str, seed: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Labels and (4, N) predictions: intact, head 1-1, head 1-2, layer 1."""
    if task == "STS-B":
        y = np.round(rng.uniform(0, 5, N), 2).astype(np.float32)
        base = y + rng.normal(0, 0.8, N)
        rows = [base, base + rng.normal(0, 0.3, N),  # 1-1: a little noise
                0.5 * base + rng.normal(0, 1.5, N),  # 1-2: a large drop
                np.full(N, 2.5) + rng.normal(0, 0.1, N)]  # layer 1: all but gone
        return y, np.stack(rows).astype(np.float16)
    y = (np.arange(N) % 2).astype(np.int8)
    intact = _flip(y, 8)  # 8 of 40 wrong
    gain = _flip(y, 8 - (seed - 40))  # 1-1: 2, 3, 4 fewer wrong by seed
    drop = _flip(y, 14)  # 1-2: 6 more wrong
    layer = _flip(y, 4) if task == "RTE" else 1 - y  # RTE: layer 1 helps; MRPC: all wrong
    return y, np.stack([intact, gain, drop, layer]).astype(np.int8)


def _folder(tmp_path, tasks=("MRPC", "RTE", "STS-B"), seeds=SEEDS, framenet=("1-1", "1-2")):
    f = tmp_path / "run"
    f.mkdir()
    (f / "07_provenance.json").write_text(json.dumps(
        {"parameters": {"tasks": ",".join(tasks)},
         "models": {"model": {"name": "tiny", "num_layers": 1, "num_heads": 2}}}))
    rng = np.random.default_rng(0)
    data = {}
    for task in tasks:
        arrays = {"changes": CHANGES, "kinds": KINDS, "layers": np.array([0, 1, 1, 1]),
                  "heads": np.array([0, 1, 2, 0]), "metric": np.array(METRIC[task][0])}
        for s in seeds:
            y, p = _task_preds(task, s, rng)
            arrays["labels"] = y
            arrays[f"pred_{s}_uniform"] = p
        np.savez_compressed(f / f"07_predictions_{task}.npz", **arrays)
        data[task] = arrays
    rows = [{"task": task, "seed": s, "mode": "uniform", "kind": k, "layer": la or None,
             "head": h or None, "label": c}
            for task in tasks for s in seeds
            for c, k, la, h in zip(CHANGES, KINDS, [0, 1, 1, 1], [0, 1, 2, 0], strict=True)]
    pd.DataFrame(rows).to_csv(f / "07_disabling.csv", index=False)
    pd.DataFrame([{"task": task, "seed": s, "mode": "uniform", "head": h}
                  for task in tasks for s in seeds for h in framenet]).to_csv(
        f / "07_framenet_heads_disabling.csv", index=False)
    return core.Tables(f), data


def _deltas(data, task, seed):
    """Hand-computed metric change of every row against the intact model (row 0)."""
    fn = METRIC[task][1]
    y, p = data[task]["labels"], data[task][f"pred_{seed}_uniform"]
    values = np.array([fn(y, row) for row in p])
    return values - values[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _folder(tmp_path_factory.mktemp("k07"))


def test_some_head_improves_judges_each_task_and_seed_on_its_largest_gain(run):
    t, data = run
    o = kovaleva._some_head_improves(t, "model")
    assert list(o.per_task) == ["MRPC", "RTE", "STS-B"] and o.scope == "every"
    for task, checks in o.per_task.items():
        assert len(checks) == len(SEEDS)
        for seed, c in zip(SEEDS, checks, strict=True):
            d = _deltas(data, task, seed)[1:3]  # the two heads
            assert isinstance(c.result, rs.MaxOverHeads) and c.result.alternative == "two-sided"
            assert c.kind == "effect" and c.direction == 1 and c.head == int(np.argmax(d))
            assert c.result.margins == pytest.approx(d, abs=1e-6)
            assert c.paper_effect == {"MRPC": 0.012, "STS-B": 0.001}.get(task)
    # RTE seed 42: head 1-1 has 2 fewer of 40 wrong: +5 points
    assert o.per_task["RTE"][0].result.margins[0] == pytest.approx(2 / 40)
    assert "RTE s42: 1-1 +5.00" in o.value


def test_help_and_hurt_has_both_sides_per_task(run):
    t, data = run
    o = kovaleva._help_and_hurt(t, "model")
    assert list(o.per_task) == [f"{task}: a head {side}" for task in ("MRPC", "RTE", "STS-B")
                                for side in ("helps", "hurts")]
    for task in ("MRPC", "RTE"):
        up, down = o.per_task[f"{task}: a head helps"], o.per_task[f"{task}: a head hurts"]
        assert [c.head for c in up] == [0] * 3 and [c.direction for c in up] == [1] * 3
        assert [c.head for c in down] == [1] * 3 and [c.direction for c in down] == [-1] * 3
    assert o.per_task["RTE: a head hurts"][0].result.margins[1] == pytest.approx(-6 / 40)


def test_gain_range_is_an_equivalence_to_the_papers_gain(run):
    t, _ = run
    o = kovaleva._gain_range(t, "model")
    assert list(o.per_task) == ["MRPC", "STS-B"]  # the tasks the paper gives a gain for
    c = o.per_task["MRPC"][0]
    assert c.kind == "no effect" and c.null == pytest.approx(0.012) and c.margin == 0.01
    assert o.per_task["STS-B"][0].null == pytest.approx(0.001)


def test_random_head_is_pooled_over_seeds_with_the_metrics_margin(run):
    t, data = run
    o = kovaleva._random_head_helps(t, "model")
    assert list(o.per_task) == ["MRPC", "RTE"] and o.scope == "every"
    for task in ("MRPC", "RTE"):
        (c,) = o.per_task[task]
        want = np.mean([_deltas(data, task, s)[1:3].mean() for s in SEEDS])
        assert isinstance(c.result, rs.Resampled) and c.result.estimate == pytest.approx(want)
        assert c.kind == "effect" and c.paper_effect is None
        # the paper's smallest single-head gain, the metric's equivalence margin beside it
        assert float(c.margin) == pytest.approx(0.001) and c.margin.kind == "paper"
        assert c.alt_margins == (rs.EQUIVALENCE_MARGINS[METRIC[task][0]],)
        assert c.result.detail["seeds"] == 3
    # RTE: head 1-1 +2/+3/+4 of 40 by seed, head 1-2 -6: mean over heads and seeds -1.5 / 40
    assert o.per_task["RTE"][0].result.estimate == pytest.approx(-1.5 / 40)


def test_layer_improves_some_task_per_seed(run):
    t, data = run
    o = kovaleva._layer_improves(t, "model")
    assert o.scope == "some" and list(o.per_task) == ["MRPC", "RTE", "STS-B"]
    rte = o.per_task["RTE"]
    assert [c.paper_effect for c in rte] == [0.032] * 3 and {c.head for c in rte} == {0}
    assert rte[0].result.margins[0] == pytest.approx(_deltas(data, "RTE", 42)[3])  # +10 points
    assert o.per_task["MRPC"][0].paper_effect is None


def test_rte_layer1_is_paired_over_seeds_against_the_first_layer(run):
    t, data = run
    o = kovaleva._rte_layer1(t, "model")
    c = o.check
    assert c.kind == "effect" and c.paper_effect == pytest.approx(0.032)
    want = np.mean([_deltas(data, "RTE", s)[3] for s in SEEDS])  # 4 fewer of 40 wrong
    assert c.result.estimate == pytest.approx(want) == pytest.approx(0.1)
    assert c.result.detail["seeds"] == 3 and c.result.detail["seeds_b"] == 3
    assert o.per_task == {}


def test_not_detrimental_is_decided_by_the_change_that_reaches_lowest(run):
    t, data = run
    o = kovaleva._not_detrimental(t, "model")
    assert o.scope == "every" and list(o.per_task) == ["MRPC", "RTE", "STS-B"]
    mrpc = o.per_task["MRPC"]
    # MRPC's layer 1 predicts every example wrong: F1 0, far beyond the 1-point margin
    assert [c.head for c in mrpc] == [2] * 3 and all(c.kind == "no drop" for c in mrpc)
    assert mrpc[0].margin == 0.01
    assert mrpc[0].result.margins[2] == pytest.approx(_deltas(data, "MRPC", 42)[3])
    assert mrpc[0].result.margins[2] == pytest.approx(-_f1(data["MRPC"]["labels"],
                                                          data["MRPC"]["pred_42_uniform"][0]))


def test_same_heads_correlates_the_seed_mean_changes_of_sts_b_and_rte(run):
    t, data = run
    o = kovaleva._same_heads(t, "model")
    sts = np.mean([_deltas(data, "STS-B", s)[1:3] for s in SEEDS], 0)
    rte = np.mean([_deltas(data, "RTE", s)[1:3] for s in SEEDS], 0)
    # float16 scores: the saved STS-B predictions, so the same numbers as the rule
    assert o.check.result.estimate == pytest.approx(st.spearmanr(sts, rte)[0])
    assert o.check.kind == "effect" and o.check.paper_effect is None
    assert "share" in o.note  # the top-5 overlap stays a descriptive note


def test_varying_impact_compares_correlations_within_and_between_tasks(run):
    t, data = run
    o = kovaleva._varying_impact(t, "model")
    models = [(task, s) for task in ("MRPC", "RTE", "STS-B") for s in SEEDS]
    d = {m: _deltas(data, *m)[1:3] for m in models}
    within, between = [], []
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            rho = st.spearmanr(d[a], d[b])[0]
            (within if a[0] == b[0] else between).append(rho)
    assert o.check.result.estimate == pytest.approx(np.mean(within) - np.mean(between))


def test_framenet_heads_are_a_no_drop_claim_per_task_and_seed(run):
    t, data = run
    o = kovaleva._framenet_unimportant(t, "model")
    assert o.scope == "every" and o.heads == "1-1, 1-2"
    for task, checks in o.per_task.items():
        margin = rs.EQUIVALENCE_MARGINS[METRIC[task][0]]
        for seed, c in zip(SEEDS, checks, strict=True):
            assert c.kind == "no drop" and c.margin == margin
            d = _deltas(data, task, seed)[1:3]
            assert c.result.margins == pytest.approx(d, abs=1e-6)
    assert [c.head for c in o.per_task["RTE"]] == [1] * 3  # 1-2 costs 6 of 40


def test_framenet_heads_that_change_nothing_are_exactly_zero(tmp_path):
    t, _ = _folder(tmp_path, tasks=("RTE",))
    path = t.path / "07_predictions_RTE.npz"
    z = dict(np.load(path))
    for s in SEEDS:  # both heads disabled give the intact model's predictions
        p = z[f"pred_{s}_uniform"]
        p[1] = p[2] = p[0]
    np.savez_compressed(path, **z)
    o = kovaleva._framenet_unimportant(core.Tables(t.path), "model")
    for c in o.per_task["RTE"]:
        assert isinstance(c.result, rs.Resampled) and c.head is None
        assert c.result.estimate == 0 and (c.result.lo, c.result.hi) == (0, 0)


def test_rules_without_saved_predictions_are_untestable(tmp_path):
    t, _ = _folder(tmp_path, tasks=("RTE",))
    (t.path / "07_predictions_RTE.npz").unlink()
    for rule in (kovaleva._some_head_improves, kovaleva._random_head_helps,
                 kovaleva._rte_layer1, kovaleva._framenet_unimportant):
        assert "07_predictions_" in rule(core.Tables(t.path), "model").untestable


def test_rules_that_need_tasks_not_run_say_so(tmp_path):
    t, _ = _folder(tmp_path, tasks=("MRPC",))
    assert "RTE was not fine-tuned" in kovaleva._rte_layer1(t, "model").untestable
    assert "not both" in kovaleva._same_heads(t, "model").untestable
    assert "two tasks" in kovaleva._varying_impact(t, "model").untestable


def test_shared_words_is_untestable_with_its_reason(run):
    t, _ = run
    assert "attention maps" in kovaleva._shared_words(t, "model").untestable


def test_every_07_claim_names_its_registry_entries():
    from analysis_utils import claims as registry

    ids = {e.id for e in registry.load()}
    rows = [c for c in spec_kovaleva.claims() if c.notebook == "07"]
    assert all(c.registry for c in rows)
    named = {r for c in rows for r in c.registry}
    assert {"kovaleva-4.6-some-help-others-hurt", "kovaleva-4.6-gain-range",
            "kovaleva-5-not-detrimental", "kovaleva-abstract-varying-impact",
            "kovaleva-5-shared-words"} <= named
    assert named <= ids


def test_07_disabling_numbers_layers_and_heads_from_1():
    """07_disabling.csv is compare_to_baseline's table as notebook 07 saves it: its layer and
    head columns agree with the 1-based labels ("2-1" is layer 2, head 1; "layer 1" the
    first layer)."""
    changes = ([disabling.baseline_change()] + disabling.head_changes(2, 2)
               + disabling.layer_changes(2, 2))
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 30)
    preds = np.stack([np.where(rng.random(30) < 0.2, 1 - y, y) for _ in changes])
    values = np.array([_accuracy(y, p) for p in preds])
    sweep = disabling.Sweep(disabling.sweep_table(changes, values, "accuracy"), preds, y,
                            np.zeros((len(changes), 30, 2)), changes)
    table = disabling.compare_to_baseline(sweep, _accuracy, n_boot=50, test="bootstrap")
    heads = table[table["kind"] == "head"]
    assert [f"{la}-{h}" for la, h in zip(heads["layer"], heads["head"], strict=True)] == \
        list(heads["label"])
    layers = table[table["kind"] == "layer"]
    assert [f"layer {la}" for la in layers["layer"]] == list(layers["label"])
    assert heads["layer"].min() == 1 and heads["head"].min() == 1
    assert disabling.head_grid(table)[1, 0] == heads.loc[heads["label"] == "2-1",
                                                         "delta"].iloc[0]


def test_a_task_with_fewer_than_three_seeds_draws_no_verdict(tmp_path, run):
    """Each check of a task fine-tuned with fewer than MIN_SEEDS seeds carries why (a task's
    single per-seed check would otherwise pass for a pooled one); with three, none does."""
    t2, _ = _folder(tmp_path, seeds=(42, 43))
    t3, _ = run
    for rule in (kovaleva._some_head_improves, kovaleva._random_head_helps,
                 kovaleva._layer_improves, kovaleva._not_detrimental,
                 kovaleva._framenet_unimportant):
        few, enough = rule(t2, "model"), rule(t3, "model")
        assert all("fewer than 3 fine-tuning seeds" in c.untestable
                   for checks in few.per_task.values() for c in checks), rule.__name__
        assert not any(c.untestable for checks in enough.per_task.values() for c in checks)
    for rule in (kovaleva._rte_layer1, kovaleva._same_heads, kovaleva._varying_impact):
        assert "fewer than 3" in rule(t2, "model").check.untestable
        assert rule(t3, "model").check.untestable == ""
