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
