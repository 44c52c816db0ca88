"""Map-type statistics on hand-built maps, the rule classifier and the CNN."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis_utils.analyses import maptypes as mt

CLS, SEP = 7, 9  # deliberately not BERT's 101/102: ids come from the caller


def make_input(la: int, lb: int):
    """``[CLS] a1..a_la [SEP] b1..b_lb [SEP]``: token ids and token-type ids."""
    ids = np.r_[CLS, 20 + np.arange(la), SEP, 20 + la + np.arange(lb), SEP]
    tt = np.r_[np.zeros(la + 2, int), np.ones(lb + 1, int)]
    return ids, tt


# [CLS] a b c [SEP] d e f g [SEP]
IDS, TT = make_input(3, 4)
N = len(IDS)
SEG_A, SEG_B = [1, 2, 3], [5, 6, 7, 8]


def vertical_map(ids=IDS):
    n = len(ids)
    a = np.zeros((n, n))
    a[:, ids == CLS] = 0.5
    a[:, ids == SEP] = 0.5 / (ids == SEP).sum()
    return a


def prev_map(ids=IDS):
    n = len(ids)
    a = np.zeros((n, n))
    a[0, 0] = 1.0
    for i in range(1, n):
        a[i, i - 1] = 1.0
    return a


def block_map(ids=IDS, tt=TT):
    n = len(ids)
    a = np.full((n, n), 1.0 / n)  # special rows uniform
    real = (ids != CLS) & (ids != SEP)
    for i in np.flatnonzero(real):
        seg = np.flatnonzero(real & (tt == tt[i]))
        a[i] = 0.0
        a[i, seg] = 1.0 / len(seg)
    return a


def clean_maps(la=12, lb=15):
    """The five clean types on a longer input (short inputs blur the types: in a 10-token
    input, 30% of a previous-token map's mass lands on [CLS]/[SEP])."""
    ids, tt = make_input(la, lb)
    n = len(ids)
    maps = [vertical_map(ids), prev_map(ids), block_map(ids, tt),
            0.5 * vertical_map(ids) + 0.5 * prev_map(ids), np.full((n, n), 1.0 / n)]
    labels = [mt.VERTICAL, mt.DIAGONAL, mt.BLOCK, mt.VERTICAL_DIAGONAL, mt.HETEROGENEOUS]
    return maps, [ids] * 5, [tt] * 5, labels


def stats(a, tt=TT, **kw):
    return mt.map_statistics(a, IDS, tt, CLS, SEP, **kw)


def test_vertical_statistics():
    s = stats(vertical_map())
    assert s["cls"] == pytest.approx(0.5)
    assert s["sep"] == pytest.approx(0.5)
    assert s["special"] == pytest.approx(1.0)
    assert s["prev"] == pytest.approx(0.0) and s["next"] == pytest.approx(0.0)
    assert s["adjacent"] == pytest.approx(0.0) and s["self"] == pytest.approx(0.0)
    assert s["within_segment"] == pytest.approx(0.0)
    assert math.isnan(s["within_share"])  # no mass on real tokens at all
    assert s["entropy_nats"] == pytest.approx(1.5 * math.log(2), rel=1e-5)
    assert s["entropy"] == pytest.approx(1.5 * math.log(2) / math.log(N), rel=1e-5)
    assert s["max_col"] == pytest.approx(0.5)
    assert s["max_col_other"] == pytest.approx(0.0)


def test_diagonal_statistics():
    s = stats(prev_map())
    assert s["prev"] == pytest.approx(1.0)  # rows 2, 3, 6, 7, 8
    assert s["next"] == pytest.approx(0.0)
    assert s["self"] == pytest.approx(0.0)
    assert s["adjacent"] == pytest.approx(5 / 7)  # rows 1 and 5 look at [CLS] / [SEP]
    assert s["cls"] == pytest.approx(2 / N)  # rows 0 and 1
    assert s["sep"] == pytest.approx(1 / N)  # row 5
    assert s["within_segment"] == pytest.approx(5 / 7)
    assert s["within_share"] == pytest.approx(1.0)
    assert s["entropy"] == pytest.approx(0.0, abs=1e-6)
    assert s["max_col"] == pytest.approx(0.2)
    assert s["max_col_other"] == pytest.approx(0.1)
    # the next-token map mirrors it
    nxt = prev_map()[::-1, ::-1].copy()  # row i -> i + 1, last row -> itself
    s2 = mt.map_statistics(nxt, IDS[::-1], TT[::-1], CLS, SEP)
    assert s2["next"] == pytest.approx(1.0) and s2["prev"] == pytest.approx(0.0)
    assert s2["adjacent"] == pytest.approx(5 / 7)


def test_block_statistics():
    s = stats(block_map())
    assert s["within_segment"] == pytest.approx(1.0)
    assert s["within_share"] == pytest.approx(1.0)
    assert s["adjacent"] == pytest.approx(17 / 42)
    assert s["self"] == pytest.approx(2 / 7)
    assert s["cls"] == pytest.approx(0.03)
    assert s["sep"] == pytest.approx(0.06)
    # single segment: within statistics are undefined
    for tt in (None, np.zeros(N, dtype=int)):
        s1 = stats(block_map(), tt=tt)
        assert math.isnan(s1["within_segment"]) and math.isnan(s1["within_share"])


def test_uniform_statistics():
    s = stats(np.full((N, N), 1.0 / N), punct_ids=[21, 25])
    assert s["cls"] == pytest.approx(0.1)
    assert s["sep"] == pytest.approx(0.2)
    assert s["special"] == pytest.approx(0.3)
    assert s["punct"] == pytest.approx(0.2)
    assert s["prev"] == pytest.approx(0.1) and s["next"] == pytest.approx(0.1)
    assert s["self"] == pytest.approx(0.1)
    assert s["adjacent"] == pytest.approx(1 / 7)
    assert s["within_segment"] == pytest.approx(2.5 / 7)
    assert s["within_share"] == pytest.approx(25 / 49)
    assert s["entropy"] == pytest.approx(1.0, rel=1e-6)
    assert s["entropy_nats"] == pytest.approx(math.log(N), rel=1e-6)
    assert s["max_col"] == pytest.approx(0.1)
    assert math.isnan(stats(np.full((N, N), 1.0 / N))["punct"])


def test_statistics_table_vectorised_matches_single():
    maps = np.stack([vertical_map(), prev_map(), block_map(), np.full((N, N), 1 / N)])
    attn = maps.reshape(2, 2, N, N).astype(np.float16)
    df = mt.statistics_table([attn, attn], [IDS, IDS], [TT, None], cls_id=CLS, sep_id=SEP)
    assert len(df) == 8 and list(df["example"].unique()) == [0, 1]
    assert df["two_segments"].tolist() == [True] * 4 + [False] * 4
    row = df[(df["example"] == 0) & (df["layer"] == 1) & (df["head"] == 0)].iloc[0]
    single = stats(block_map())
    for k in mt.STAT_COLUMNS:
        if math.isnan(single[k]):
            assert math.isnan(row[k])
        else:
            assert row[k] == pytest.approx(single[k], abs=2e-3)  # float16 storage


# --- synthetic labelled set ----------------------------------------------------------------

def synthetic(n_per_class: int, seed: int):
    """Noisy two-segment maps of the five types, with their token ids."""
    rng = np.random.default_rng(seed)
    maps, ids, tts, labels = [], [], [], []
    for k in range(n_per_class * len(mt.MAP_TYPES)):
        lab = mt.MAP_TYPES[k % len(mt.MAP_TYPES)]
        la, lb = rng.integers(6, 15, size=2)
        n = la + lb + 3
        tok = rng.integers(20, 1000, size=n)
        tok[0], tok[la + 1], tok[-1] = CLS, SEP, SEP
        tt = np.r_[np.zeros(la + 2, int), np.ones(lb + 1, int)]
        special = np.flatnonzero((tok == CLS) | (tok == SEP))
        vert = np.zeros((n, n))
        vert[:, special] = rng.dirichlet(np.ones(len(special)))
        diag = np.zeros((n, n))
        off = rng.choice([-1, 1])
        for i in range(n):
            diag[i, min(max(i + off, 0), n - 1)] = 1.0
        block = np.zeros((n, n))
        for i in range(n):
            seg = np.flatnonzero((tt == tt[i]) & (tok != CLS) & (tok != SEP))
            block[i, seg] = rng.dirichlet(np.ones(len(seg)) * 3)
        noise = rng.dirichlet(np.ones(n) * 0.3, size=n)
        base = {mt.VERTICAL: vert, mt.DIAGONAL: diag, mt.BLOCK: block,
                mt.VERTICAL_DIAGONAL: 0.5 * vert + 0.5 * diag, mt.HETEROGENEOUS: noise}[lab]
        eps = 0.1 if lab != mt.HETEROGENEOUS else 0.0
        a = (1 - eps) * base + eps * rng.dirichlet(np.ones(n), size=n)
        maps.append(a)
        ids.append(tok)
        tts.append(tt)
        labels.append(lab)
    return maps, ids, tts, labels


def table_of(maps, ids, tts):
    return pd.concat([pd.DataFrame([mt.map_statistics(a, i, t, CLS, SEP)])
                      for a, i, t in zip(maps, ids, tts, strict=True)], ignore_index=True)


@pytest.mark.parametrize("method", ["grid", "tree"])
def test_rule_classifier_fits_and_generalises(method):
    train = synthetic(8, seed=1)
    test = synthetic(6, seed=2)
    clf = mt.RuleClassifier(method=method).fit(table_of(*train[:3]), train[3])
    assert clf.train_score_ > 0.9
    pred = clf.predict(table_of(*test[:3]))
    assert np.mean(pred == np.asarray(test[3], dtype=object)) > 0.9
    assert "Vertical" in clf.rules() or "special" in clf.rules()
    ev = mt.evaluate(test[3], pred)
    assert ev.set_index("class").loc["macro avg", "f1"] > 0.85
    # the clean hand-built maps
    maps, ids, tts, labels = clean_maps()
    assert list(clf.predict(table_of(maps, ids, tts))) == labels


def test_rule_classifier_default_thresholds():
    maps, ids, tts, labels = clean_maps()
    clf = mt.RuleClassifier()
    assert list(clf.predict(table_of(maps, ids, tts))) == labels
    assert "otherwise -> Heterogeneous" in clf.rules()


def test_evaluate_table():
    ev = mt.evaluate(["Vertical", "Vertical", "Block", "Diagonal"],
                     ["Vertical", "Block", "Block", "Vertical"]).set_index("class")
    assert ev.loc["Vertical", "precision"] == pytest.approx(0.5)
    assert ev.loc["Vertical", "recall"] == pytest.approx(0.5)
    assert ev.loc["Block", "f1"] == pytest.approx(2 / 3)
    assert ev.loc["Diagonal", "f1"] == 0.0
    assert ev.loc["macro avg", "f1"] == pytest.approx((0.5 + 0 + 2 / 3) / 3)
    assert ev.loc["accuracy", "f1"] == pytest.approx(0.5)


def test_cnn_overfits_and_is_deterministic():
    maps, _, _, labels = synthetic(10, seed=3)
    x = mt.prepare_maps(maps, size=32)
    assert x.shape == (50, 1, 32, 32)
    model = mt.train_cnn(x, labels, seed=0, epochs=40, width=8, threads=1)
    acc = np.mean(model.predict(x) == np.asarray(labels, dtype=object))
    assert acc > 0.9, acc
    assert model.predict(maps[:5]).shape == (5,)  # raw maps of different sizes work too
    again = mt.train_cnn(x, labels, seed=0, epochs=2, width=8, threads=1)
    again2 = mt.train_cnn(x, labels, seed=0, epochs=2, width=8, threads=1)
    np.testing.assert_array_equal(again.predict_proba(x), again2.predict_proba(x))


def test_macro_f1_codes_is_sklearns_macro_f1():
    """The grid search's fast macro-F1 equals scikit-learn's exactly, including classes that
    are never predicted (F1 0) and predicted classes absent from the truth (left out)."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for trial in range(500):
        n = int(rng.integers(1, 60))
        y = rng.integers(0, int(rng.integers(1, 6)), n)
        p = rng.integers(0, int(rng.integers(1, 6)), n)
        if trial % 3 == 0:  # mostly right, as a fitted classifier is
            p = np.where(rng.random(n) < 0.7, y, p)
        ref = f1_score(y, p, labels=np.unique(y), average="macro", zero_division=0)
        assert mt._macro_f1_codes(y, p, 5) == ref
    # by hand: class 0 F1 2/3, class 1 never predicted (0), class 2 only predicted (ignored)
    assert mt._macro_f1_codes(np.array([0, 0, 1]), np.array([0, 2, 2]), 3) == pytest.approx(1 / 3)


# --- several seeds ---------------------------------------------------------------------------

def test_prepare_maps_pools_equal_size_maps_at_once_as_one_by_one():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(45), size=(6, 45)).astype(np.float32)  # (6, 45, 45)
    np.testing.assert_allclose(mt.prepare_maps(maps, 16).numpy(),
                               mt.prepare_maps(list(maps), 16).numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError):
        mt.prepare_maps(np.zeros((2, 3, 4)))


CNNS = {"cnn": {"n_stages": 1, "epochs": 2, "width": 4, "size": 8}}


def test_out_of_fold_predicts_each_map_once_and_the_seed_drives_the_split():
    maps, ids, tts, labels = synthetic(4, seed=5)
    table = table_of(maps, ids, tts)
    pred, secs = mt.out_of_fold(table, maps, labels, seed=0, n_folds=4, cnns=CNNS)
    assert set(pred) == set(secs) == {"rules", "cnn"}
    assert all(len(p) == len(labels) and all(v in mt.MAP_TYPES for v in p)
               for p in pred.values())
    again, _ = mt.out_of_fold(table, maps, labels, seed=0, n_folds=4, cnns=CNNS)
    for k in pred:
        np.testing.assert_array_equal(pred[k], again[k])  # same seed, same predictions
    # rules fitted on folds: out-of-fold scores on clean synthetic types stay high
    assert np.mean(pred["rules"] == np.asarray(labels, dtype=object)) > 0.8
    other, _ = mt.out_of_fold(table, maps, labels, seed=1, n_folds=4, cnns=CNNS)
    assert any((other[k] != pred[k]).any() for k in pred)  # another split / initialisation


def test_out_of_fold_with_a_type_rarer_than_the_folds_warns_nothing_and_predicts_all():
    """scikit-learn warns when a class has fewer members than folds; out_of_fold says so in
    its own comment and keeps the notebooks' output clean (no filter in the notebooks)."""
    import warnings

    maps, ids, tts, labels = synthetic(4, seed=5)
    rare = labels[-1]
    keep = [i for i, lab in enumerate(labels) if lab != rare or i == len(labels) - 1]
    maps = [maps[i] for i in keep]
    labels = [labels[i] for i in keep]  # one map of the last type, 4 folds
    table = table_of(maps, [ids[i] for i in keep], [tts[i] for i in keep])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pred, _ = mt.out_of_fold(table, maps, labels, seed=0, n_folds=4)
    assert len(pred["rules"]) == len(labels)


def test_cross_validate_seeds_and_summary():
    maps, ids, tts, labels = synthetic(3, seed=6)
    scores, cost = mt.cross_validate_seeds(table_of(maps, ids, tts), maps, labels, [0, 1],
                                           n_folds=3, cnns=CNNS)
    assert len(scores) == 2 * 2 * (len(mt.MAP_TYPES) + 3)  # seeds x classifiers x rows
    assert set(cost["classifier"]) == {"rules", "cnn"} and (cost["seconds"] >= 0).all()
    summary = mt.summarise_seeds(scores, ["classifier", "class"], ["f1"])
    row = summary.set_index(["classifier", "class"]).loc[("rules", "macro avg")]
    per = scores[(scores.classifier == "rules") & (scores["class"] == "macro avg")]["f1"]
    assert row["f1_mean"] == pytest.approx(per.mean())
    assert row["f1_sd"] == pytest.approx(per.std(ddof=1))
    assert row["f1_min"] <= row["f1_mean"] <= row["f1_max"] and row["n_seeds"] == 2


def test_summarise_seeds_one_seed_has_no_sd():
    df = pd.DataFrame({"task": ["A", "A", "B"], "seed": [0, 1, 0], "share": [0.2, 0.4, 0.5]})
    out = mt.summarise_seeds(df, ["task"], ["share"]).set_index("task")
    assert out.loc["A", "share_mean"] == pytest.approx(0.3)
    assert out.loc["A", "share_sd"] == pytest.approx(math.sqrt(0.02))
    assert math.isnan(out.loc["B", "share_sd"]) and out.loc["B", "n_seeds"] == 1


def test_seed_comparison_states_an_order_only_when_every_seed_agrees():
    t = pd.DataFrame({"deep": [0.30, 0.45, 0.32, 0.35, 0.40],
                      "shallow": [0.60, 0.61, 0.58, 0.62, 0.59]})
    names = {"deep": "the 8-conv CNN", "shallow": "the 4-conv CNN"}
    text = mt.seed_comparison(t, "deep", "shallow", what="macro-F1", names=names)
    assert text.startswith("the 8-conv CNN is below the 4-conv CNN in 5 of 5 seeds")
    assert "0.36 ± 0.06 vs 0.60 ± 0.02" in text
    assert "is above" in mt.seed_comparison(t, "shallow", "deep", what="x")
    mixed = t.assign(deep=[0.30, 0.65, 0.32, 0.63, 0.40])
    text = mt.seed_comparison(mixed, "deep", "shallow", what="macro-F1")
    assert text.startswith("no consistent order: deep is above shallow in 2 of 5 seeds, "
                           "below in 3")
    tied = t.assign(deep=t["shallow"])
    assert "equal in 5" in mt.seed_comparison(tied, "deep", "shallow", what="x")
    assert "60 ± 2%" in mt.seed_comparison(t, "shallow", "deep", what="share", percent=True)


def test_seed_extremes_counts_the_seeds_that_agree():
    t = pd.DataFrame({"CoLA": [0.1, 0.1, 0.1], "MRPC": [0.6, 0.5, 0.6], "RTE": [0.5, 0.6, 0.5]})
    text = mt.seed_extremes(t, what="Heterogeneous share")
    assert text.startswith("Heterogeneous share lowest on CoLA in 3 of 3 seeds")
    assert "highest on MRPC in 2 of 3 seeds, RTE in 1" in text


def test_mean_sd_pivot():
    s = pd.DataFrame({"classifier": ["cnn", "cnn", "rules"], "class": ["a", "b", "a"],
                      "f1_mean": [0.5, 0.25, 0.7], "f1_sd": [0.014, 0.02, float("nan")]})
    p = mt.mean_sd_pivot(s, "classifier", "class", "f1")
    assert p.loc["cnn", "a"] == "0.50 ± 0.01" and p.loc["rules", "a"] == "0.70"
    assert list(p.columns) == ["a", "b"] and list(p.index) == ["cnn", "rules"]


def test_count_types_matches_predict_for_rules_and_cnns():
    from analysis_utils.engine.attention import ModelInput

    maps, ids, tts, labels = synthetic(4, seed=7)
    rules = mt.RuleClassifier().fit(table_of(maps, ids, tts), labels)
    cnn = mt.train_cnn(maps, labels, seed=0, epochs=1, width=4, n_stages=1, size=8, threads=1)
    # two inputs of 2 layers x 5 heads: the maps of one length, grouped
    rng = np.random.default_rng(0)
    attns, inputs, flat, flat_stats = [], [], [], []
    for _ in range(2):
        la, lb = 5, 6
        tok, tt = make_input(la, lb)
        n = len(tok)
        a = rng.dirichlet(np.ones(n) * 0.5, size=(2, 5, n))
        a[0, 0] = vertical_map(tok)
        a[1, 1] = prev_map(tok)
        attns.append(a.astype(np.float16))
        inputs.append(ModelInput(tuple(int(i) for i in tok), tuple(int(t) for t in tt)))
        flat += list(a.astype(np.float16).astype(np.float32).reshape(-1, n, n))
        flat_stats += [mt.map_statistics(m, tok, tt, CLS, SEP) for m in flat[-10:]]
    counts = mt.count_types({"r": rules, 0: cnn, 1: cnn}, iter(attns), inputs, cls_id=CLS,
                            sep_id=SEP)
    assert list(counts.index) == ["r", 0, 1] and (counts["maps"] == 20).all()
    want_rules = pd.Series(rules.predict(pd.DataFrame(flat_stats))).value_counts()
    want_cnn = pd.Series(cnn.predict(flat)).value_counts()
    for t in mt.MAP_TYPES:
        assert counts.loc["r", t] == want_rules.get(t, 0)
        assert counts.loc[0, t] == counts.loc[1, t] == want_cnn.get(t, 0)
