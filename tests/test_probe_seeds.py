"""Several training seeds (notebook 04): the seeds parameter, the seeded training order,
summaries over seeds and the sentences that state only what holds across seeds, checked on
hand-made tables."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from analysis_utils import params
from analysis_utils.analyses import probe_data, probes


def test_parse_seeds():
    assert probe_data.parse_seeds("0,1,2,3,4") == [0, 1, 2, 3, 4]
    assert probe_data.parse_seeds("7") == [7]
    for bad, why in [("0,1,1", "repeated"), ("0,x", "integers"), ("", "integers"),
                     ("-1,2", r"\[0, 2"), (str(2**32), r"\[0, 2")]:
        with pytest.raises(ValueError, match=why):
            probe_data.parse_seeds(bad)


@pytest.mark.parametrize("value, ok", [("0,1,2,3,4", True), ("0,1", True), ("3", False),
                                       ("0,1,0", False), ("0, 1", False), ("0,1,", False),
                                       (f"0,{2**32}", False), ("", False)])
def test_seeds_parameter_rule(value, ok):
    if ok:
        assert params.check_value("seeds", value, "0,1,2,3,4") == value
    else:
        with pytest.raises(params.ParameterError, match="at least 2 distinct seeds"):
            params.check_value("seeds", value, "0,1,2,3,4")


def test_train_order_is_a_seeded_permutation():
    a = probe_data.train_order(50, 0)
    assert sorted(a) == list(range(50))
    np.testing.assert_array_equal(a, probe_data.train_order(50, 0))
    assert not np.array_equal(a, probe_data.train_order(50, 1))
    # numpy's PCG64 stream is the same on every platform: pin its first values
    assert probe_data.train_order(10, 0).tolist() == [4, 6, 2, 7, 3, 5, 9, 0, 8, 1]


def _sentence(words, heads):
    n = len(words)
    return types.SimpleNamespace(words=tuple(words), heads=tuple(heads), upos=("X",) * n,
                                 deprels=("dep",) * n)


def test_stream_in_order_and_predictions_of_several_probes():
    sents = [_sentence(["a", "b"], [2, 0]), _sentence(["c", "d", "e"], [0, 1, 2]),
             _sentence(["f"], [0])]
    got = [ps.words for ps in probe_data.stream(sents, order=[2, 0, 1])()]
    assert got == [["f"], ["a", "b"], ["c", "d", "e"]]
    left = lambda s: np.arange(s.n)  # noqa: E731 - each word's head is the word before it
    many = probe_data.predictions_by_probe({"rb": probes.right_branching_probe, "left": left},
                                           sents, probe_data.stream(sents))
    one = probe_data.predictions(probes.right_branching_probe, sents, probe_data.stream(sents))
    pd.testing.assert_frame_equal(many["rb"], one)
    assert many["left"]["pred_argmax"].tolist() == [0, 1, 0, 1, 2, 0]
    # right-branching: 2,0 | 2,3,0 | 0 against gold 2,0 | 0,1,2 | 0 -> 3 of 6
    scores = probe_data.split_scores({"dev": one, "test": many["left"]})
    assert scores["dev argmax"] == scores["dev mst"] == 50.0
    assert scores["test argmax"] == pytest.approx(100 * 4 / 6)  # 0,1 | 0,1,2 | 0
    assert scores["trees %"] == 100.0


# A hand-made per-seed table: 5 seeds, one baseline with a fixed value.
PER_SEED = pd.DataFrame({
    "probe": ["A+G"] * 5 + ["A"] * 5 + ["D"] * 5,
    "seed": list(range(5)) * 3,
    "dev": [70.0, 71.0, 69.0, 70.5, 72.0,    # A+G: above A in every seed
            60.0, 61.0, 59.0, 60.0, 61.0,    # A
            61.0, 60.0, 59.0, 62.0, 60.0],   # D: A vs D: +-1 -> mixed (1 tie)
})


def test_seed_summary_by_hand():
    t = probe_data.seed_summary(PER_SEED, ["dev"])
    assert t["probe"].tolist() == ["A+G", "A", "D"]  # first-appearance order
    assert t["n seeds"].tolist() == [5, 5, 5]
    row = t.iloc[0]
    assert row["dev mean"] == pytest.approx(70.5)
    assert row["dev sd"] == pytest.approx(np.std([70, 71, 69, 70.5, 72], ddof=1))
    one = probe_data.seed_summary(PER_SEED[PER_SEED["seed"] == 0], ["dev"])
    assert one["dev sd"].isna().all()  # one seed: no sd


def test_order_claims_counts_and_statements():
    claims = probe_data.order_claims(
        PER_SEED, [("A+G", "A"), ("A", "D"), ("R", "A"), ("A", "R")], "dev",
        fixed={"R": 62.0}, label="dev UAS")
    c = claims.set_index("claim")
    assert c.loc["A+G > A", ["seeds", "above", "below", "tied"]].tolist() == [5, 5, 0, 0]
    assert c.loc["A+G > A", "direction"] == "as claimed"
    assert c.loc["A+G > A", "statement"] == (
        "A+G > A in 5 of 5 seeds (dev UAS: A+G ahead by 10.0 to 11.0 points)")
    assert c.loc["A > D", ["above", "below", "tied"]].tolist() == [2, 2, 1]
    assert c.loc["A > D", "direction"] == "mixed"
    assert c.loc["A > D", "statement"].startswith(
        "A vs. D is not settled by 5 seeds: A is ahead in 2, behind in 2, tied in 1")
    # the fixed baseline R = 62 is above A in every seed
    assert c.loc["R > A", "direction"] == "as claimed"
    assert c.loc["A > R", "direction"] == "reversed"
    assert c.loc["A > R", "statement"] == (
        "R ahead of A in 5 of 5 seeds (dev UAS: by 1.0 to 3.0 points)")
    assert "verdict" not in claims.columns  # a count over seeds, not a tested verdict
    assert c.loc["A+G > A", "diff mean"] == pytest.approx(70.5 - 60.2)
    with pytest.raises(KeyError, match="Z"):
        probe_data.order_claims(PER_SEED, [("A", "Z")], "dev")


def test_loss_curve_blocks():
    curve = probe_data.loss_curve(np.arange(10.0), n_bins=3)
    assert curve["sentences"].tolist() == [4, 7, 10]
    assert curve["loss"].tolist() == [1.5, 5.0, 8.0]
    assert len(probe_data.loss_curve([1.0, 2.0], n_bins=50)) == 2
