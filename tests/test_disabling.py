"""Head and layer disabling (Kovaleva et al. 2019, Section 4.6), gate importance and pruning
curves (Michel et al. 2019) on a tiny random BertForSequenceClassification (2 layers x 2
heads, the config of conftest's tiny BERT) with random labels."""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
)

from analysis_utils import training
from analysis_utils.analyses import disabling as dis
from analysis_utils.analyses import significance as sig
from analysis_utils.engine.interventions import intervene

N_EXAMPLES = 48
MAX_TOKENS = 96  # several padded batches of different lengths


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: a thread pool only adds contention on a shared machine."""
    with training.torch_threads(1):
        yield


@pytest.fixture(scope="module")
def clf(tiny_model_dir):
    """The tiny BERT's config with a 2-class head and large random weights: at the usual
    init (std 0.02) attention is nearly uniform and disabling a head moves the logits by
    ~1e-7, which would make "same predictions" vacuous."""
    config = BertConfig.from_pretrained(tiny_model_dir, num_labels=2, initializer_range=0.4)
    torch.manual_seed(0)
    model = BertForSequenceClassification._from_config(config, attn_implementation="eager")
    return model.eval()


@pytest.fixture(scope="module")
def data():
    """Random pairs ``[CLS] a [SEP] b [SEP]`` of 4-22 tokens and random labels."""
    rng = np.random.default_rng(0)
    inputs = []
    for _ in range(N_EXAMPLES):
        a, b = rng.integers(1, 10, 2)
        ids = [2, *rng.integers(5, 26, a), 3, *rng.integers(5, 26, b), 3]
        inputs.append({"input_ids": ids, "token_type_ids": [0] * (a + 2) + [1] * (b + 1)})
    labels = rng.integers(0, 2, N_EXAMPLES)
    return inputs, labels


def _all_changes(mode):
    return ([dis.baseline_change()] + dis.head_changes(2, 2, mode) + dis.layer_changes(2, 2, mode))


@pytest.mark.parametrize("mode", dis.MODES)
def test_fast_sweep_equals_naive_sweep_exactly(clf, data, mode):
    inputs, _ = data
    changes = _all_changes(mode) + [dis.Change(((0, 1), (1, 0)), mode, "pruned", name="both")]
    fast = dis.evaluate_changes(clf, inputs, changes, fast=True, max_tokens=MAX_TOKENS)
    naive = dis.evaluate_changes(clf, inputs, changes, fast=False, max_tokens=MAX_TOKENS)
    assert fast.shape == (len(changes), N_EXAMPLES, 2)
    assert np.array_equal(fast, naive)  # bit for bit, not just the same predictions
    preds = dis.predictions_from_logits(fast)
    assert np.array_equal(preds, dis.predictions_from_logits(naive))
    # not vacuous: every change moves the logits, and some flip predictions
    for k in range(1, len(changes)):
        assert np.abs(fast[k] - fast[0]).max() > 1e-3, changes[k].name
    assert (preds[1:] != preds[0]).any(axis=1).sum() >= 3
    # the baseline is the plain model (no intervention), in input order
    plain = _plain_logits(clf, inputs)
    np.testing.assert_allclose(fast[0], plain, rtol=1e-5, atol=1e-6)


def _plain_logits(model, inputs, **kw):
    out = []
    with torch.no_grad(), intervene(model, **kw) if kw else contextlib.nullcontext():
        for x in inputs:
            enc = {k: torch.tensor([v]) for k, v in x.items()}
            out.append(model(**enc).logits[0].numpy())
    return np.stack(out)


@pytest.mark.parametrize("fast", [True, False])
def test_disabled_head_is_uniform_inside_the_sweep(clf, data, fast):
    inputs, _ = data
    seen = []

    def inspect(change, idx, batch, iv):
        lengths = batch["attention_mask"].sum(1)
        first = iv.attentions[0]  # the change's lowest layer comes first
        assert len(iv.attentions) == 2 - change.lowest_layer
        n = first.shape[-1]
        for layer, head in change.heads:
            if layer != change.lowest_layer:
                continue
            for b, length in enumerate(lengths.tolist()):
                expected = torch.zeros(n, n)
                expected[:, :length] = 1.0 / length
                assert torch.equal(first[b, head], expected)
        untouched = [h for h in range(2) if (change.lowest_layer, h) not in change.heads]
        for h in untouched:  # the other head of the layer keeps its (peaked) map
            assert float(first[:, h].amax()) > 0.5
        seen.append((change.name, len(idx)))

    changes = _all_changes("uniform")
    dis.evaluate_changes(clf, inputs, changes, fast=fast, max_tokens=MAX_TOKENS,
                         inspect=inspect)
    names = {name for name, _ in seen}
    assert names == {c.name for c in changes[1:]}
    assert sum(n for name, n in seen if name == "1-2") == N_EXAMPLES


def test_layer_disabling_equals_all_heads_of_the_layer(clf, data):
    inputs, _ = data
    layer = dis.layer_changes(2, 2)[1]
    assert layer.heads == ((1, 0), (1, 1)) and layer.name == "layer 2"
    both = dis.Change(((1, 1), (1, 0)), "uniform", "pruned", name="heads 2-1, 2-2")
    single = dis.head_changes(2, 2)[2:]
    logits = dis.evaluate_changes(clf, inputs, [layer, both, *single], max_tokens=MAX_TOKENS)
    assert np.array_equal(logits[0], logits[1])
    assert not np.array_equal(logits[0], logits[2]) and not np.array_equal(logits[0], logits[3])
    direct = _plain_logits(clf, inputs, uniform=[(1, 0), (1, 1)])
    np.testing.assert_allclose(logits[0], direct, rtol=1e-5, atol=1e-6)


def test_sweep_table_significance_and_summary(clf, data):
    inputs, labels = data
    res = dis.sweep(clf, inputs, labels, sig.accuracy, max_tokens=MAX_TOKENS)
    t = res.table
    assert list(t["kind"]) == ["baseline"] + ["head"] * 4 + ["layer"] * 2
    assert list(t["label"]) == ["baseline", "1-1", "1-2", "2-1", "2-2", "layer 1", "layer 2"]
    assert t["delta"].iloc[0] == 0 and t["mode"].iloc[0] == "none"
    # layer and head numbered from 1, as the label (issue 33): "2-1" is layer 2, head 1
    assert [int(t.loc[3, "layer"]), int(t.loc[3, "head"])] == [2, 1]
    assert list(t.loc[t["kind"] == "layer", "layer"].astype(int)) == [1, 2]
    for k, row in t.iterrows():
        assert row["value"] == sig.accuracy(labels, res.predictions[k])
        assert row["delta"] == pytest.approx(row["value"] - t["value"].iloc[0])
    grid = dis.head_grid(t)
    assert grid.shape == (2, 2) and grid[1, 0] == t.loc[3, "delta"]

    table = dis.compare_to_baseline(res, sig.accuracy, n_boot=500, seed=0)
    assert list(table["test"]) == ["mcnemar"] * 7 + ["bootstrap"]  # last: mean over heads
    heads = table[table["kind"] == "head"]
    correct = res.predictions == labels
    assert heads["p_value"].iloc[1] == sig.mcnemar(correct[0], correct[2]).p_value
    np.testing.assert_allclose(heads["p_holm"], sig.holm(heads["p_value"]))
    np.testing.assert_allclose(heads["p_bh"], sig.benjamini_hochberg(heads["p_value"]))
    layers = table[table["kind"] == "layer"]
    np.testing.assert_allclose(layers["p_holm"], sig.holm(layers["p_value"]))
    tested = table["ci_lo"].notna()
    assert (table.loc[tested, "ci_lo"] <= table.loc[tested, "delta"] + 1e-12).all()
    assert (table.loc[tested, "ci_hi"] >= table.loc[tested, "delta"] - 1e-12).all()
    mean_row = table[table["kind"] == "mean over heads"].iloc[0]
    assert mean_row["delta"] == pytest.approx(heads["delta"].mean())
    assert mean_row["ci_lo"] <= mean_row["delta"] <= mean_row["ci_hi"]
    assert table.equals(dis.compare_to_baseline(res, sig.accuracy, n_boot=500, seed=0))
    boot = dis.compare_to_baseline(res, sig.f1, n_boot=200)
    assert (boot["test"] == "bootstrap").all() and boot["p_holm"].notna().sum() == 6

    row = dis.summarize(table).iloc[0]
    assert row["baseline"] == t["value"].iloc[0]
    assert row["mean_head_delta"] == pytest.approx(heads["delta"].mean())
    assert row["share_helping"] == pytest.approx((heads["delta"] > 0).mean())
    assert row["best_head_delta"] == heads["delta"].max()
    assert row["best_layer"] in ("layer 1", "layer 2")
    assert set(dis.summarize(t).columns) < set(dis.summarize(table).columns)


def test_gate_importance_equals_finite_differences(clf, data):
    inputs, labels = data
    inputs, labels = inputs[:6], labels[:6]
    model = copy.deepcopy(clf).double()
    absolute, signed = dis.head_importance(model, inputs, labels, max_tokens=64,
                                           return_signed=True)
    assert absolute.shape == (2, 2) and (absolute > 0).all()
    assert (absolute >= np.abs(signed) - 1e-12).all()
    assert all(p.grad is None for p in model.parameters())

    def loss(gate, xs, ys):
        total = 0.0
        with torch.no_grad(), intervene(model, gate=gate):
            for x, y in zip(xs, ys, strict=True):
                enc = {k: torch.tensor([v]) for k, v in x.items()}
                logits = model(**enc).logits
                total += float(torch.nn.functional.cross_entropy(logits, torch.tensor([y])))
        return total

    eps = 1e-6
    layer, head = 1, 0
    per_example = []
    for x, y in zip(inputs, labels, strict=True):
        values = []
        for sign in (1, -1):
            g = torch.ones(2, 2, dtype=torch.float64)
            g[layer, head] += sign * eps
            values.append(loss(g, [x], [int(y)]))
        per_example.append((values[0] - values[1]) / (2 * eps))
    per_example = np.array(per_example)
    assert np.abs(per_example).min() > 1e-6  # every example really depends on the head
    assert signed[layer, head] == pytest.approx(per_example.sum(), rel=1e-6)
    assert absolute[layer, head] == pytest.approx(np.abs(per_example).sum(), rel=1e-6)
    assert np.sign(per_example).min() != np.sign(per_example).max()  # |sum| != sum of |.|


def test_importance_normalisation_and_order():
    raw = np.array([[3.0, 4.0], [1.0, 1.0], [2.0, 0.0]])
    # per layer / L2 norm: [.6, .8], [.7071, .7071], [1, 0]; then min-max over the model
    np.testing.assert_allclose(dis.normalize_importance(raw),
                               [[0.6, 0.8], [2 ** -0.5, 2 ** -0.5], [1.0, 0.0]])
    assert dis.importance_order(dis.normalize_importance(raw)) == \
        [(2, 1), (0, 0), (1, 0), (1, 1), (0, 1), (2, 0)]
    table = dis.importance_table(raw)
    assert list(table.sort_values("rank")["label"]) == ["3-2", "1-1", "2-1", "2-2", "1-2", "3-1"]
    first = table.sort_values("rank").iloc[0]  # 1-based layer and head, as the label "3-2"
    assert (int(first["layer"]), int(first["head"])) == (3, 2)
    assert not dis.normalize_importance(np.ones((2, 2))).any()


def test_pruning_steps():
    assert dis.pruning_steps(144) == [0, 14, 29, 43, 58, 72, 86, 101, 115, 130, 144]
    assert dis.pruning_steps(72) == [0, 7, 14, 22, 29, 36, 43, 50, 58, 65, 72]
    assert dis.pruning_steps(4) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="divide 1"):
        dis.pruning_steps(10, 0.3)


def test_pruning_curves(clf, data):
    inputs, labels = data
    imp = np.array([[0.2, 0.9], [0.0, 0.5]])
    curves = dis.pruning_curves(clf, inputs, labels, sig.accuracy, imp, n_random=2, seed=0,
                                max_tokens=MAX_TOKENS)
    assert set(curves["order"]) == {"importance", "random"}
    ours = curves[curves["order"] == "importance"]
    assert list(ours["n_removed"]) == [0, 1, 2, 3, 4]
    assert list(ours["removed"])[:3] == ["", "2-1", "2-1 1-1"]
    assert ours["delta"].iloc[0] == 0
    ends = curves[curves["n_removed"] == 4]["value"]
    assert ends.nunique() == 1  # every order ends with all heads removed
    # a point of the curve is the metric with those heads zeroed
    logits = dis.evaluate_changes(clf, inputs, [dis.Change(((1, 0), (0, 0)), "zero", "pruned")],
                                  max_tokens=MAX_TOKENS)
    assert ours["value"].iloc[2] == sig.accuracy(labels, dis.predictions_from_logits(logits[0]))
    assert curves.equals(dis.pruning_curves(clf, inputs, labels, sig.accuracy, imp, n_random=2,
                                            seed=0, max_tokens=MAX_TOKENS))


def test_seed_agreement_hand_made():
    def table(deltas, holm):
        rows = [{"kind": "baseline", "label": "baseline", "layer": None, "head": None,
                 "delta": 0.0, "holm": False}]
        for k, (d, h) in enumerate(zip(deltas, holm, strict=True)):
            rows.append({"kind": "head", "label": f"1-{k + 1}", "layer": 1, "head": k + 1,
                         "delta": d, "holm": h})
        return pd.DataFrame(rows)

    tables = {1: table([0.5, -0.2, 0.1, 0.0], [True, False, False, False]),
              2: table([0.4, 0.3, -0.1, -0.2], [False, True, False, False])}
    per_head, pairs = dis.seed_agreement(tables)
    assert list(per_head["n_helping"]) == [2, 1, 1, 0]
    assert list(per_head["helps_in_all"]) == [True, False, False, False]
    assert pairs.loc[0, "jaccard"] == pytest.approx(1 / 3)
    assert pairs.loc[0, "spearman"] == pytest.approx(0.4)  # ranks 4,1,3,2 vs 4,3,2,1
    # helping sets {1-1, 1-3} and {1-1, 1-2} of 4 heads: chance shares 2 x 2 / 4 = 1;
    # sharing at least 1 of them: 1 - C(2,2)/C(4,2) = 5/6
    assert pairs.loc[0, "n_both_chance"] == pytest.approx(1.0)
    assert pairs.loc[0, "p_overlap"] == pytest.approx(5 / 6)
    _, strict = dis.seed_agreement(tables, significant="holm")
    assert strict.loc[0, "n_both"] == 0 and strict.loc[0, "jaccard"] == 0



def test_seed_agreement_of_a_degenerate_model_keeps_its_columns(tmp_path, monkeypatch):
    """A model whose heads change nothing (a random 4 x 4 BERT, issue 44) has constant deltas:
    no rank correlation and no helping head. The columns stay, empty, so the saved table's
    schema and the tolerances that name its columns do not depend on the numbers."""
    from analysis_utils.publish import report
    from analysis_utils.publish.compare import within

    def table(deltas):
        rows = [{"kind": "baseline", "label": "baseline", "layer": None, "head": None,
                 "delta": 0.0, "holm": False}]
        rows += [{"kind": "head", "label": f"1-{k + 1}", "layer": 1, "head": k + 1,
                  "delta": d, "holm": False} for k, d in enumerate(deltas)]
        return pd.DataFrame(rows)

    _, pairs = dis.seed_agreement({1: table([0.0] * 4), 2: table([0.0] * 4)})
    assert {"spearman", "jaccard"} <= set(pairs.columns)
    assert pairs[["spearman", "jaccard"]].isna().all().all()
    monkeypatch.setenv(report.OUTPUT_ENV, str(tmp_path))
    run = report.Run("07", {})
    csv = run.table(pairs.assign(task="MRPC", mode="uniform"), "seed_agreement",
                    tolerance={"spearman": within(abs=0.3), "jaccard*": within(abs=0.3)})
    assert "spearman" in pd.read_csv(csv).columns


def test_fast_sweep_on_distilbert_layout(data):
    """DistilBERT: other module names, no token types, no layer_idx."""
    inputs, _ = data
    inputs = [{"input_ids": x["input_ids"]} for x in inputs]
    torch.manual_seed(0)
    model = DistilBertForSequenceClassification(DistilBertConfig(
        vocab_size=30, dim=16, n_layers=2, n_heads=2, hidden_dim=32, num_labels=3,
        initializer_range=0.4, attn_implementation="eager")).eval()
    changes = _all_changes("uniform")
    fast = dis.evaluate_changes(model, inputs, changes, max_tokens=MAX_TOKENS)
    naive = dis.evaluate_changes(model, inputs, changes, fast=False, max_tokens=MAX_TOKENS)
    assert fast.shape == (len(changes), N_EXAMPLES, 3)
    assert np.array_equal(fast, naive)
    assert np.abs(fast[1:] - fast[0]).max() > 1e-3


@pytest.mark.parametrize("family", ["mpnet", "albert"])
def test_sweep_on_mpnet_and_albert(data, family):
    """MPNet (attention in its own code, reached by the engine's hook): the fast sweep equals
    full passes. ALBERT (one shared layer, no layer list): the sweep runs full passes."""
    from transformers import (
        AlbertConfig,
        AlbertForSequenceClassification,
        MPNetConfig,
        MPNetForSequenceClassification,
    )

    inputs, _ = data
    inputs = [{"input_ids": x["input_ids"]} for x in inputs]
    shape = dict(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, num_labels=3, initializer_range=0.4)
    torch.manual_seed(0)
    if family == "mpnet":
        model = MPNetForSequenceClassification(MPNetConfig(**shape)).eval()
    else:
        model = AlbertForSequenceClassification(AlbertConfig(
            **shape, embedding_size=8, attn_implementation="eager")).eval()
    changes = _all_changes("uniform")
    fast = dis.evaluate_changes(model, inputs, changes, max_tokens=MAX_TOKENS)
    naive = dis.evaluate_changes(model, inputs, changes, fast=False, max_tokens=MAX_TOKENS)
    assert np.array_equal(fast, naive)
    assert np.abs(fast[1:] - fast[0]).max() > 1e-3


def test_model_state_is_restored(clf, data):
    inputs, labels = data
    model = copy.deepcopy(clf).train()
    dis.evaluate_changes(model, inputs[:4], _all_changes("zero"))
    dis.head_importance(model, inputs[:4], labels[:4])
    assert model.training and model.config._attn_implementation == "eager"
    assert not any("forward" in vars(m) for m in model.modules())
    with pytest.raises(ValueError, match="mode must be"):
        dis.Change(((0, 0),), "mean")


def test_recap_states_what_the_tables_hold():
    summary = pd.DataFrame({
        "task": ["MRPC", "MRPC", "RTE"], "seed": [42, 43, 42], "mode": "uniform",
        "n_heads": 72, "best_head_delta": [0.5, -0.2, 1.25],
        "n_helping_holm": [0, 0, 1], "n_helping_bh": [1, 0, 2],
        "mean_head_delta": [-0.1, 0.2, 0.0], "mean_head_ci_lo": [-0.5, -0.1, -0.3],
        "mean_head_ci_hi": [0.3, 0.4, 0.3], "best_layer_delta": [-0.3, 0.7, -1.0],
        "best_layer": ["layer 2", "layer 6", "layer 1"],
        "worst_layer_delta": [-4.0, -2.0, -9.5], "worst_layer": ["layer 1", "layer 3", "layer 4"]})
    agreement = pd.DataFrame({"task": ["MRPC"], "mode": ["uniform"], "seed_a": [42],
                              "seed_b": [43], "spearman": [0.314], "n_helping_a": [10],
                              "n_helping_b": [20], "n_both": [4], "n_both_chance": [2.78]})
    framenet = pd.DataFrame({"task": ["MRPC", "MRPC", "RTE"], "mode": "uniform",
                             "head": ["3-2", "5-1", "3-2"], "delta": [-0.5, 0.1, -2.25],
                             "holm": [False, False, True], "importance_rank": [30, 12, 44]})
    pruning = pd.DataFrame({"task": ["MRPC"] * 4, "seed": [42] * 4,
                            "above_all_random": [True, False, True, True]})
    lines = dis.recap(summary, agreement, framenet, pruning)
    assert lines[0].startswith("Disabling one head raises the dev metric for at least one head "
                               "in 2 of 3 models; the best single-head gain ranges from -0.20 "
                               "(MRPC seed 43) to +1.25 points (RTE seed 42)")
    assert "over 72 heads: 1 in all (3 with BH)" in lines[0]
    assert "RTE seed 42 +0.00 [-0.30, +0.30]" in lines[1]
    assert lines[2] == ("Disabling a whole layer raises the metric (best layer's change > 0) in "
                        "1 of 3 models; largest: +0.70 points (MRPC seed 43, layer 6); largest "
                        "drop: -9.50 (RTE seed 42, layer 4).")
    assert "MRPC s42/s43 +0.31" in lines[3] and "MRPC s42/s43 4 of 10 / 20 (chance 2.8)" in \
        lines[3]
    assert lines[4] == ("FrameNet heads 3-2, 5-1: largest drop when disabled -2.25 points (RTE);"
                        " drops that survive Holm: 1; best importance rank 12 of 72.")
    assert lines[5] == ("Pruning in importance order beats every random order at MRPC seed 42 "
                        "75% of the intermediate steps.")
    assert dis.recap(summary, pd.DataFrame(), framenet, pruning)[3] == \
        "No task was trained with several seeds."
