"""The claims ledger's rules of notebooks 04 (Clark Section 5, Table 3) and 05 (Clark Section 6,
Kovaleva Section 4.1) on hand-made run folders: the Check each rule hands to the ledger (kind,
null, the paper's effect, direction), the unit it names, and the resampled statistic against a
hand-computed UAS difference or permutation test."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis_utils import claims as registry
from analysis_utils.ledger import clark, core, resample, spec_clark

IDENT = {"name": "tiny", "num_layers": 2, "num_heads": 2}

# --- 04 ----------------------------------------------------------------------------------------

#: per probe: seed -> each of 4 dev sentences' (correct, scored) words; sentences 1, 2 are in
#: document 1, sentence 3 in document 2, sentence 4 in document 3
DOCS = [1, 1, 2, 3]
COUNTS = {
    "Attention + GloVe": {0: [(8, 10), (5, 5), (3, 4), (6, 6)],     # 22 / 25
                          1: [(9, 10), (4, 5), (3, 4), (5, 6)],     # 21 / 25
                          2: [(7, 10), (5, 5), (4, 4), (4, 6)]},    # 20 / 25
    "Distances + GloVe": {0: [(6, 10), (3, 5), (2, 4), (4, 6)],     # 15 / 25
                          1: [(5, 10), (3, 5), (3, 4), (4, 6)],     # 15 / 25
                          2: [(7, 10), (2, 5), (2, 4), (5, 6)]},    # 16 / 25
    "Random-init attention + GloVe": {0: [(3, 10), (1, 5), (1, 4), (2, 6)],   # 7 / 25
                                      1: [(2, 10), (2, 5), (1, 4), (1, 6)],   # 6 / 25
                                      2: [(3, 10), (2, 5), (2, 4), (1, 6)]},  # 8 / 25
    "Attention only": {0: [(7, 10), (4, 5), (2, 4), (5, 6)],        # 18 / 25
                       1: [(7, 10), (4, 5), (3, 4), (5, 6)],        # 19 / 25
                       2: [(6, 10), (4, 5), (3, 4), (5, 6)]},       # 18 / 25
    "Right-branching": {None: [(3, 10), (2, 5), (1, 4), (2, 6)]},   # 8 / 25
}


def _uas(probe):
    """Each seed's pooled dev UAS (fraction), by hand from COUNTS."""
    return [sum(c for c, _ in rows) / sum(n for _, n in rows)
            for rows in COUNTS[probe].values()]


def _folder_04(tmp_path, seeds=(0, 1, 2), with_counts=True):
    f = tmp_path / "run04"
    f.mkdir()
    (f / "04_provenance.json").write_text(json.dumps(
        {"parameters": {"seeds": ",".join(map(str, seeds))}, "models": {"model": IDENT}}))
    rows, seed_rows = [], []
    for probe, by_seed in COUNTS.items():
        for s, counts in by_seed.items():
            if s is not None and s not in seeds:
                continue
            for k, (c, n) in enumerate(counts):
                rows.append({"probe": probe, "seed": s, "sentence": k + 1, "document": DOCS[k],
                             "correct": c, "scored": n})
            if s is not None:
                seed_rows.append({"probe": probe, "seed": s, "dev argmax": 100 * sum(
                    c for c, _ in counts) / sum(n for _, n in counts)})
    pd.DataFrame(seed_rows).to_csv(f / "04_table3_seeds.csv", index=False)
    if with_counts:
        d = pd.DataFrame(rows).astype({"seed": "Int64"})
        d.to_csv(f / clark.DEV_TABLE, index=False)
    return core.Tables(f)


def _claim(notebook, registry_id, words=""):
    hits = [c for c in spec_clark.claims() if c.notebook == notebook and registry_id in c.registry
            and words in c.claim]
    assert len(hits) == 1, [c.claim for c in hits]
    return hits[0]


def test_every_04_ordering_of_table3_is_a_row_with_its_registry_entries():
    rows = [c for c in spec_clark.claims() if c.notebook == "04"
            and "clark-5-distributed" not in c.registry]
    assert len(rows) == 8
    # the ninth 04 row compares the attention-only probe with 02's best single head
    assert [c.needs for c in spec_clark.claims() if "clark-5-distributed" in c.registry] == [
        (clark.DEV_TABLE, "02_by_word_model.npz")]
    ids = {e.id for e in registry.load()}
    for c in rows:
        assert c.registry and set(c.registry) <= ids
        assert c.needs == ("04_table3_seeds.csv",)
    assert {r for c in rows for r in c.registry} == {
        "clark-5-table3-attn-beats-right-branching", "clark-5-table3-attn-beats-distances",
        "clark-5-attn-glove-beats-baselines", "clark-5-table3-random-init-beats-right-branching",
        "clark-5-table3-distances-beats-random-init", "clark-5-words-help"}
    # the control swaps in the random-init maps only against the baselines that read no maps
    assert sorted(c.claim for c in rows if c.control) == [
        "attention + GloVe beats distances + GloVe", "attention + GloVe beats right-branching"]


def test_attention_glove_beats_distances_on_a_hand_made_folder(tmp_path):
    t = _folder_04(tmp_path)
    c = _claim("04", "clark-5-attn-glove-beats-baselines", "distances")
    o = c.rule(t, "model")
    assert not o.untestable and o.check is not None
    ch = o.check
    assert (ch.kind, ch.null, ch.direction) == ("effect", 0.0, 1)
    assert ch.paper_effect == pytest.approx((77 - 58) / 100)
    # (22 + 21 + 20) / 75 - (15 + 15 + 16) / 75 = 17 / 75
    want = np.mean(_uas("Attention + GloVe")) - np.mean(_uas("Distances + GloVe"))
    assert want == pytest.approx(17 / 75)
    r = ch.result
    assert isinstance(r, resample.Resampled)
    assert r.estimate == pytest.approx(want)
    assert r.n_clusters == 3  # documents, not sentences
    assert r.detail["seeds"] == 3 and r.detail["seeds_b"] == 3
    assert r.n_resamples == clark.PROBE_RESAMPLES
    lo, hi = r.interval_at(0.05 / 8)
    assert lo <= r.estimate <= hi and r.se > 0
    assert o.unit == "3 probe seeds x 4 dev sentences (3 documents)"
    assert (o.scale, o.suffix, o.seeds) == (100, " points", "3")
    assert "coarse seed level" in o.note and "10 distinct multisets" in o.note
    assert o.value == "Attention + GloVe 84.0 vs. Distances + GloVe 61.3 (+22.7)"
    # on the control the random-init probe stands in for the trained one
    co = c.rule(t, "control")
    assert co.check.result.estimate == pytest.approx(
        np.mean(_uas("Random-init attention + GloVe")) - np.mean(_uas("Distances + GloVe")))


def test_against_right_branching_the_baseline_is_one_row(tmp_path):
    t = _folder_04(tmp_path)
    o = _claim("04", "clark-5-table3-attn-beats-right-branching").rule(t, "model")
    r = o.check.result
    assert r.detail["seeds_b"] == 1
    assert r.estimate == pytest.approx(np.mean(_uas("Attention only")) - 8 / 25)
    assert o.check.paper_effect == pytest.approx(0.35)
    assert o.unit == "3 probe seeds x 4 dev sentences (3 documents)"
    # no random-init attention-only probe exists: the rule has no control
    assert _claim("04", "clark-5-table3-attn-beats-right-branching").rule(t, "control") is None


def test_a_reversed_ordering_is_judged_no(tmp_path):
    t = _folder_04(tmp_path)
    o = _claim("04", "clark-5-table3-random-init-beats-right-branching").rule(t, "model")
    r = o.check.result
    assert r.estimate == pytest.approx(np.mean(_uas("Random-init attention + GloVe")) - 8 / 25)
    assert o.check.paper_effect == pytest.approx(0.04)
    # the exact verdict rule of the ledger at the family's level (8 rows)
    lo, hi = r.interval_at(0.05 / 8)
    assert lo < 0  # random-init attention is at or below right-branching here
    v = resample.judge_effect(lo, hi, null=0.0, paper_effect=o.check.paper_effect,
                              direction=o.check.direction)
    assert v.verdict in ("no", "inconclusive")


def test_the_bootstrap_by_hand_with_every_resample(tmp_path):
    """hierarchical_bootstrap over all 27 document resamples and all 10 x 10 seed draws is
    reproduced by loops over the same weights (the difference of pooled UAS means)."""
    t = _folder_04(tmp_path)
    d = t.read(clark.DEV_TABLE)
    a, _, docs = clark._dev_counts(d, "Attention + GloVe")
    b, _, _ = clark._dev_counts(d, "Attention only")
    w = resample.all_resamples(3)  # 27 document draws
    seeds = resample.all_resamples(3)  # every ordered seed draw of 3, 27 rows
    rows = [(i, j, k) for i in range(27) for j in range(27) for k in range(27)]
    sub = rows[::97]  # a spread of (document, seed A, seed B) draws
    r = resample.hierarchical_bootstrap(
        np.zeros(4), a, resample.RATIO, preds_b=b, paired_seeds=False, clusters=docs,
        weights=w[[i for i, _, _ in sub]], seed_weights=seeds[[j for _, j, _ in sub]],
        seed_weights_b=seeds[[k for _, _, k in sub]])
    code = {1: 0, 2: 1, 3: 2}
    for n, (i, j, k) in enumerate(sub):
        sentence_w = np.array([w[i, code[x]] for x in docs])

        def uas(counts, sw, sentence_w=sentence_w):
            per = [(sentence_w * c[:, 0]).sum() / (sentence_w * c[:, 1]).sum() for c in counts]
            return float(np.dot(sw, per) / sw.sum())
        assert r.draws[n] == pytest.approx(uas(a, seeds[j]) - uas(b, seeds[k]))


def test_too_few_seeds_and_an_old_run_are_untestable(tmp_path):
    c = _claim("04", "clark-5-words-help")
    two = tmp_path / "two"
    two.mkdir()
    o = c.rule(_folder_04(two, seeds=(0, 1)), "model")
    assert o.untestable == f"2 probe seeds; {core.MIN_SEEDS} needed" and o.check is None
    old = tmp_path / "old"
    old.mkdir()
    o = c.rule(_folder_04(old, with_counts=False), "model")
    assert "re-run notebook 04" in o.untestable and o.check is None
    assert o.value == "Attention + GloVe 84.0 vs. Attention only 73.3"


# --- 05 ----------------------------------------------------------------------------------------

NULL = 1.0 + np.linspace(-0.05, 0.05, 101)  # a hand-made permutation null of the ratio


def _folder_05(tmp_path, behaviour_testable=True, with_null=True):
    f = tmp_path / "run05"
    f.mkdir()
    (f / "05_provenance.json").write_text(json.dumps(
        {"parameters": {"n_perm": len(NULL)}, "models": {"model": IDENT}}))
    sep = pd.DataFrame({"model": ["model", "control"], "within": [8.0, 10.0],
                        "between": [10.0, 10.0], "ratio": [0.8, 1.0], "diff": [2.0, 0.0],
                        "p_value": [1 / 102, 0.5], "n_perm": len(NULL),
                        "null_mean": 0.0, "null_std": 0.5, "null_ratio_mean": 1.0,
                        "null_ratio_sd": float(NULL.std())})
    sep.to_csv(f / "05_layer_separation.csv", index=False)
    beh = sep.assign(heads=[3, 4], groups=[2 if behaviour_testable else 1, 1],
                     labels=["broad 2, [CLS] 1" if behaviour_testable else "broad 3", "broad 4"],
                     testable=[behaviour_testable, False], ratio=[0.97, np.nan])
    beh.to_csv(f / "05_behaviour_separation.csv", index=False)
    if with_null:
        pd.concat([pd.DataFrame({"model": m, "grouping": g, "permutation": np.arange(1, 102),
                                 "ratio": NULL})
                   for m in ("model", "control") for g in ("layer", "behaviour")]
                  ).to_csv(f / clark.NULL_TABLE, index=False)
    pd.DataFrame({"task": ["MRPC", "MRPC", "RTE", "RTE"], "seed": [0, 1, 0, 1],
                  "Vertical": [0.5, 0.6, 0.55, 0.45], "Diagonal": [0.1, 0.1, 0.2, 0.2],
                  "Vertical+Diagonal": [0.1, 0.1, 0.05, 0.05], "Block": [0.0, 0.0, 0.01, 0.03],
                  "Heterogeneous": [0.3, 0.2, 0.19, 0.27]}
                 ).to_csv(f / "05_type_proportions_by_seed.csv", index=False)
    return core.Tables(f)


def _heads_05(folder, which):
    """Per-head statistics and distances of 20 heads (4 x 5): heads 1-1 and 1-2 attend to the
    previous token, 2-1 and 2-2 to the next, the rest to neither; every other statistic is the
    same for every head, so no head stands out on it. Distances: 1 between the two heads of a
    behaviour, 5 between any others."""
    layer, head = np.repeat(np.arange(1, 5), 5), np.tile(np.arange(1, 6), 4)
    prev = np.linspace(0.10, 0.29, 20)
    nxt = np.linspace(0.29, 0.10, 20)
    prev[[0, 1]], nxt[[5, 6]] = 0.9, 0.9
    nxt[[0, 1]], prev[[5, 6]] = 0.0, 0.0
    pd.DataFrame({"layer": layer, "head": head, "prev": prev, "next": nxt, "cls": 0.1,
                  "sep": 0.1, "punct": 0.1, "entropy": 2.0}
                 ).to_csv(folder / f"05_head_behaviour_{which}.csv", index=False)
    names = [f"{la}-{h}" for la, h in zip(layer, head, strict=True)]
    d = np.full((20, 20), 5.0)
    for a, b in ((0, 1), (5, 6)):
        d[a, b] = d[b, a] = 1.0
    np.fill_diagonal(d, 0.0)
    pd.DataFrame(d, index=pd.Index(names, name="head"), columns=names).to_csv(
        folder / f"05_js_distance_{which}.csv")


def test_behaviours_relative_to_the_model(tmp_path):
    """Under the model-relative reading, a head shows a behaviour when it lies in this model's
    most extreme tenth of heads on a statistic: here the two previous-token and the two
    next-token heads; same-behaviour pairs at distance 1, others at 5: ratio 1 / 5. Where
    notebook 05's thresholds label too few behaviours (the control's 'broad 4'), the main
    reading takes the relative labels and says so."""
    from analysis_utils.ledger import readings

    t = _folder_05(tmp_path)
    for which in ("model", "control"):
        _heads_05(t.path, which)
    c = _claim("05", "clark-6-behaviour-clusters")
    assert c.reading == "behaviours"
    assert c.rule(t, "model").check.result.estimate == pytest.approx(0.97)  # the notebook's
    with readings.reading("behaviours", readings.READINGS["behaviours"][1]):
        o = c.rule(t, "model")
    assert o.check.result.estimate == pytest.approx(1 / 5)
    assert "4 heads with a behaviour (previous token 2, next token 2)" in o.value
    assert o.unit == "4 heads (101 permutations of their surface behaviour labels)"
    assert "most extreme tenth" in o.note and "label too few" not in o.note
    # under the main reading the model is labelled by notebook 05's thresholds and its control,
    # which they label too few, relative to itself: the model's row says so and compares both
    # labelled alike (here 0.2 and 0.2: the control is clearly below 0.9, so no word on the
    # margin deciding)
    main = c.rule(t, "model").note
    assert ("labelled differently from its random-weights control: notebook 05's thresholds "
            "label too few of the control's behaviours (broad 4)") in main
    assert "ratio 0.200 here against the control's 0.200" in main
    assert "'clear' margin" not in main
    co = c.rule(t, "control")  # the main reading, falling back
    assert co.check.result.estimate == pytest.approx(1 / 5)
    assert "notebook 05's thresholds label too few behaviours (broad 4)" in co.note
    # the control's value says how it was labelled (the row's reference cell shows it)
    assert co.value.endswith("labelled relative to this model (notebook 05's thresholds label "
                             "too few: broad 4)")
    # 'clear' clusters: the ratio must lie below 1 by more than a tenth
    assert float(co.check.margin) == pytest.approx(0.1) and co.check.margin.kind == "convention"


def test_a_reading_that_is_the_main_one_on_this_model_counts_once():
    """Two readings with the same statistic, interval, null, margin and unit are one
    specification: core._same_evidence, which the multiverse uses to count it once."""
    import dataclasses

    from analysis_utils.ledger.core import Check, Outcome, _same_evidence

    r = resample.from_draws(np.linspace(0.7, 0.9, 101), 0.8, null=1.0)
    a = Outcome(value="ratio 0.8; labelled relative", check=Check(result=r, null=1.0,
                                                                   direction=-1), unit="9 heads")
    b = dataclasses.replace(a, value="ratio 0.8")
    assert _same_evidence(a, b)
    assert not _same_evidence(a, dataclasses.replace(b, unit="8 heads"))
    # the same resampled result judged on another head (notebook 06's standout, not the best)
    assert not _same_evidence(a, dataclasses.replace(b, check=dataclasses.replace(b.check,
                                                                                 head=3)))
    assert not _same_evidence(a, dataclasses.replace(b, heads="6-5, 1-2"))
    other = resample.from_draws(np.linspace(0.6, 0.9, 101), 0.8, null=1.0)
    assert not _same_evidence(a, dataclasses.replace(b, check=Check(result=other, null=1.0,
                                                                    direction=-1)))


def test_same_layer_permutation_test_as_a_check(tmp_path):
    t = _folder_05(tmp_path)
    c = _claim("05", "clark-6-same-layer")
    o = c.rule(t, "model")
    ch = o.check
    assert (ch.kind, ch.null, ch.paper_effect, ch.direction) == ("effect", 1.0, None, -1)
    r = ch.result
    assert r.estimate == pytest.approx(0.8)
    # the null's sd is the test's standard error, hence the MDE
    assert r.se == pytest.approx(NULL.std())
    assert r.mde(alpha=0.025) == pytest.approx(resample.minimum_detectable_effect(
        NULL.std(), alpha=0.025))
    # the inverted permutation test: [0.8 + 1 - q_hi, 0.8 + 1 - q_lo] of the null ratios
    q_lo, q_hi = np.quantile(NULL, [0.0125, 0.9875])
    assert r.interval_at(0.025) == pytest.approx((1.8 - q_hi, 1.8 - q_lo))
    # two-sided permutation p: no null ratio is as low as 0.8: 2 x 1 / 102
    assert r.p_value == pytest.approx(2 / 102)
    assert o.unit == "4 heads (101 permutations of their layer labels)"
    assert o.value == f"ratio 0.800 (permutation null 1.000 \u00b1 {NULL.std():.3f})"
    assert (o.scale, o.suffix, o.digits) == (1.0, "", 3)
    lo, hi = r.interval_at(0.025)
    assert resample.judge_effect(lo, hi, null=1.0, direction=-1).verdict == "yes"
    # the control's ratio 1.0 sits in the middle of its null: its interval holds 1
    clo, chi = c.rule(t, "control").check.result.interval_at(0.025)
    assert clo < 1.0 < chi


def test_the_permutation_check_is_the_permutation_test():
    """The interval excludes 1 exactly when the ratio lies beyond the null's alpha/2 quantile."""
    null = np.random.default_rng(0).normal(1.0, 0.02, 999)
    q = np.quantile(null, 0.025)
    for ratio in (q - 1e-4, q + 1e-4):
        lo, hi = clark._permutation_result(ratio, null, 72).interval_at(0.05)
        assert (hi < 1.0) == (ratio < q)
    r = clark._permutation_result(0.99, null, 72)
    assert r.p_value == pytest.approx(2 * (1 + np.sum(null <= 0.99)) / 1000)


def test_behaviour_clusters(tmp_path):
    c = _claim("05", "clark-6-behaviour-clusters")
    t = _folder_05(tmp_path)
    o = c.rule(t, "model")
    assert o.check.result.estimate == pytest.approx(0.97)
    assert (o.check.kind, o.check.null, o.check.paper_effect, o.check.direction) == (
        "effect", 1.0, None, -1)
    assert o.check.result.se == pytest.approx(NULL.std())
    assert o.unit == "3 heads (101 permutations of their surface behaviour labels)"
    assert "broad 2, [CLS] 1" in o.value
    # 0.97 lies inside the null (0.95-1.05): the interval holds 1, no clusters shown
    lo, hi = o.check.result.interval_at(0.025)
    assert lo < 1.0 < hi
    # the control's heads all behave alike under notebook 05's thresholds, and the run saved
    # no per-head statistics to read them relative to the model
    co = c.rule(t, "control")
    assert "re-run notebook 05" in co.untestable and co.check is None
    assert co.value == "4 heads with a behaviour (broad 4)"


def test_05_without_the_null_is_untestable_and_the_descriptive_rows_stay_so(tmp_path):
    t = _folder_05(tmp_path, behaviour_testable=False, with_null=False)
    o = _claim("05", "clark-6-same-layer").rule(t, "model")
    assert "re-run notebook 05" in o.untestable and o.check is None
    o = _claim("05", "clark-6-behaviour-clusters").rule(t, "model")
    assert o.untestable.startswith("this run saved no 05_head_behaviour_model.csv") and \
        o.value == "3 heads with a behaviour (broad 3)"
    o = _claim("05", "kovaleva-4.1-types-repeated").rule(t, "model")
    assert o.untestable and o.check is None
    # mean over seeds per task: Block 0% (MRPC) and 2% (RTE): not in every task
    assert o.value.startswith("4 of 5 types in every task (2 tasks)")
    assert "Block 0%-2%" in o.value
    o = _claim("05", "kovaleva-4.1-heterogeneous-range").rule(t, "model")
    assert o.untestable and o.check is None and not o.effect


def test_every_05_row_names_registry_entries():
    ids = {e.id for e in registry.load()}
    rows = [c for c in spec_clark.claims() if c.notebook == "05"]
    assert [c.registry for c in rows] == [
        ("clark-6-same-layer",), ("clark-6-behaviour-clusters",),
        ("kovaleva-4.1-types-repeated",), ("kovaleva-4.1-heterogeneous-range",)]
    assert all(set(c.registry) <= ids for c in rows)
