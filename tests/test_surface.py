"""Hand-computed checks of the surface statistics on tiny synthetic attention maps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis_utils.analyses import gradients, surface

CLS, SEP, PERIOD, COMMA = 101, 102, 1012, 1010


def _maps(mat: np.ndarray, layers: int = 2, heads: int = 3) -> np.ndarray:
    return np.broadcast_to(mat, (layers, heads) + mat.shape).copy()


def _shift(n: int, k: int) -> np.ndarray:
    """Each token attends to token i + k; tokens without one attend to themselves."""
    m = np.zeros((n, n))
    for i in range(n):
        j = i + k
        m[i, j if 0 <= j < n else i] = 1.0
    return m


def _ids(n: int) -> np.ndarray:
    ids = np.arange(2000, 2000 + n)
    ids[0], ids[n // 2], ids[-1] = CLS, SEP, SEP
    return ids


def test_identity_map_is_all_current_token():
    n = 6
    df = surface.relative_position([(_maps(np.eye(n)), _ids(n))])
    assert list(df.columns) == ["layer", "head", "current", "previous", "next"]
    assert df["layer"].tolist() == [1, 1, 1, 2, 2, 2]
    assert df["head"].tolist() == [1, 2, 3, 1, 2, 3]
    np.testing.assert_allclose(df["current"], 1.0)
    np.testing.assert_allclose(df["previous"], 0.0)
    np.testing.assert_allclose(df["next"], 0.0)
    assert df.attrs["uniform"]["current"] == pytest.approx(1 / n)


@pytest.mark.parametrize("k,col", [(-1, "previous"), (1, "next")])
def test_shift_maps_are_all_previous_or_next(k, col):
    # bare arrays are accepted when no token ids are needed
    examples = [_maps(_shift(n, k)) for n in (5, 9)]
    df = surface.relative_position(examples)
    # every token that has a previous/next token puts all its attention there
    np.testing.assert_allclose(df[col], 1.0)
    other = "next" if col == "previous" else "previous"
    np.testing.assert_allclose(df[other], 0.0)
    # the only self-attending token is the first (k=-1) or last (k=+1): 1/n per example
    np.testing.assert_allclose(df["current"], (1 / 5 + 1 / 9) / 2)
    # token weighting pools the 14 tokens: 2 of them attend to themselves
    df_tok = surface.relative_position(examples, weighting="token")
    np.testing.assert_allclose(df_tok["current"], 2 / 14)
    np.testing.assert_allclose(df_tok[col], 1.0)


def test_uniform_map_entropy_and_sep_share():
    n = 8
    ids = _ids(n)
    ex = [(_maps(np.full((n, n), 1 / n)), ids)]
    ent = surface.entropy(ex)
    np.testing.assert_allclose(ent["entropy"], math.log(n))
    np.testing.assert_allclose(ent["entropy_cls"], math.log(n))
    np.testing.assert_allclose(ent["max_weight"], 1 / n)
    assert ent.attrs["uniform"]["entropy"] == pytest.approx(math.log(n))
    tc = surface.token_class_attention(ex, CLS, SEP, [PERIOD, COMMA])
    np.testing.assert_allclose(tc["sep"], 2 / n)
    np.testing.assert_allclose(tc["cls"], 1 / n)
    np.testing.assert_allclose(tc["punct"], 0.0)
    np.testing.assert_allclose(tc["other"], (n - 3) / n)
    # a uniform head scores exactly its own baseline
    for col in ("cls", "sep", "punct", "other"):
        np.testing.assert_allclose(tc[col], tc.attrs["uniform"][col])
    ss = surface.sep_to_sep(ex, SEP)
    np.testing.assert_allclose(ss["sep_to_sep"], 2 / n)
    np.testing.assert_allclose(ss["rest_to_sep"], 2 / n)


def test_four_token_example_by_hand():
    # [CLS] a . [SEP]
    ids = np.array([CLS, 7, PERIOD, SEP])
    a = np.array([
        [0.1, 0.2, 0.3, 0.4],
        [0.5, 0.0, 0.5, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.25, 0.25, 0.0, 0.5],
    ])
    attn = np.stack([np.stack([a, np.full((4, 4), 0.25)])])  # 1 layer, 2 heads
    ex = [(attn, ids)]

    rp = surface.relative_position(ex)
    h1 = rp.iloc[0]
    assert h1["current"] == pytest.approx((0.1 + 0.0 + 0.0 + 0.5) / 4)
    assert h1["previous"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert h1["next"] == pytest.approx((0.2 + 0.5 + 0.0) / 3)

    tc = surface.token_class_attention(ex, CLS, SEP, [PERIOD, COMMA])
    h1 = tc.iloc[0]
    assert h1["cls"] == pytest.approx((0.1 + 0.5 + 0.0 + 0.25) / 4)
    assert h1["sep"] == pytest.approx((0.4 + 0.0 + 0.0 + 0.5) / 4)
    assert h1["punct"] == pytest.approx((0.3 + 0.5 + 0.0 + 0.0) / 4)
    assert h1["other"] == pytest.approx((0.2 + 0.0 + 1.0 + 0.25) / 4)
    np.testing.assert_allclose(tc[["cls", "sep", "punct", "other"]].sum(axis=1), 1.0)

    ss = surface.sep_to_sep(ex, SEP)
    assert ss.iloc[0]["sep_to_sep"] == pytest.approx(0.5)
    assert ss.iloc[0]["rest_to_sep"] == pytest.approx((0.4 + 0.0 + 0.0) / 3)

    ent = surface.entropy(ex, cls_id=CLS)
    row_h = [
        -sum(p * math.log(p) for p in (0.1, 0.2, 0.3, 0.4)),
        math.log(2),
        0.0,
        -(0.25 * math.log(0.25) * 2 + 0.5 * math.log(0.5)),
    ]
    assert ent.iloc[0]["entropy"] == pytest.approx(sum(row_h) / 4)
    assert ent.iloc[0]["entropy_cls"] == pytest.approx(row_h[0])
    assert ent.iloc[0]["max_weight"] == pytest.approx((0.4 + 0.5 + 1.0 + 0.5) / 4)
    assert ent.iloc[1]["entropy"] == pytest.approx(math.log(4))


def test_example_vs_token_weighting_and_streaming():
    # two uniform examples of lengths 4 and 8, each with two [SEP]
    exs = [(_maps(np.full((n, n), 1 / n), 1, 1), _ids(n)) for n in (4, 8)]
    by_ex = surface.token_class_attention(iter(exs), CLS, SEP, [])
    by_tok = surface.token_class_attention(iter(exs), CLS, SEP, [], weighting="token")
    assert by_ex["sep"].iloc[0] == pytest.approx((2 / 4 + 2 / 8) / 2)
    assert by_tok["sep"].iloc[0] == pytest.approx((4 * 2 / 4 + 8 * 2 / 8) / 12)
    base = surface.uniform_baselines([ids for _, ids in exs], CLS, SEP, [])
    assert base["sep"] == pytest.approx(by_ex["sep"].iloc[0])
    assert base["entropy"] == pytest.approx((math.log(4) + math.log(8)) / 2)
    assert base["sep_to_sep"] == pytest.approx((2 / 4 + 2 / 8) / 2)
    np.testing.assert_allclose(surface.uniform_entropy([4, 8]), np.log([4, 8]))


def test_dict_examples_float16_and_errors():
    n = 5
    ex = {"attn": _maps(np.eye(n)).astype(np.float16), "token_ids": _ids(n)}
    df = surface.token_class_attention([ex], CLS, SEP, [PERIOD])
    np.testing.assert_allclose(df["cls"], 1 / n)
    with pytest.raises(ValueError, match="token ids"):
        surface.token_class_attention([_maps(np.eye(n))], CLS, SEP, [])
    with pytest.raises(ValueError, match="does not match"):
        surface.token_class_attention([(_maps(np.eye(n)), _ids(n + 1))], CLS, SEP, [])
    with pytest.raises(ValueError, match="no examples"):
        surface.relative_position([])


def test_heads_above_layer_means_and_share():
    n = 6
    # layer 1: previous-token heads; layer 2: all attention on the two [SEP]
    a1 = _shift(n, -1)
    a2 = np.zeros((n, n))
    a2[:, [n // 2, n - 1]] = 0.5
    attn = np.stack([np.stack([a1, a1]), np.stack([a2, a2])])
    ex = [(attn, _ids(n))]
    rp = surface.relative_position(ex)
    assert surface.heads_above(rp, "previous", 0.5) == ["1-1", "1-2"]
    tc = surface.token_class_attention(ex, CLS, SEP, [])
    lm = surface.layer_means(tc, ["sep"])
    assert lm.loc[2, "sep"] == pytest.approx(1.0)
    assert surface.share_in_layers(tc, "sep", [2]) == pytest.approx(1.0)
    assert surface.heads_above(tc, "sep", 0.9) == ["2-1", "2-2"]
    roles = surface.token_roles(_ids(n), CLS, SEP, [])
    assert roles[0] == "cls" and roles[n - 1] == "sep" and roles[1] == "other"


def test_split_word_share():
    # [CLS] w0 w1 w1 w2 [SEP] w0 w0 w1 [SEP]: word ids restart in the second segment
    wids = [None, 0, 1, 1, 2, None, 0, 0, 1, None]
    assert surface.split_word_share([wids]) == pytest.approx(2 / 5)
    assert surface.split_word_share([wids, [None, 0, 1, None]]) == pytest.approx(2 / 7)


def test_one_pass_equals_separate_calls():
    rng = np.random.default_rng(0)
    exs = []
    for n in (5, 9, 12):
        a = rng.random((2, 3, n, n))
        a /= a.sum(-1, keepdims=True)
        ids = _ids(n)
        ids[2] = PERIOD
        exs.append((a, ids))
    allst = surface.surface_statistics(iter(exs), CLS, SEP, [PERIOD, COMMA])
    pd_test = {
        "relative_position": surface.relative_position(exs),
        "token_class": surface.token_class_attention(exs, CLS, SEP, [PERIOD, COMMA]),
        "sep_to_sep": surface.sep_to_sep(exs, SEP),
        "entropy": surface.entropy(exs, cls_id=CLS),
    }
    assert set(allst) == set(pd_test)
    for k, df in pd_test.items():
        np.testing.assert_allclose(allst[k].to_numpy(float), df.to_numpy(float))
        assert allst[k].attrs["uniform"] == pytest.approx(df.attrs["uniform"])


# --- Figure 1 examples and the paper-vs-run table -------------------------------------------

class _Seg:
    def __init__(self, tokens, truncated=False):
        self.tokens = tuple(tokens)
        vocab = {"[CLS]": CLS, "[SEP]": SEP, ".": PERIOD, ",": COMMA}
        self.input_ids = tuple(vocab.get(t, 2000 + k) for k, t in enumerate(tokens))
        self.truncated = truncated


PROSE = ["[CLS]", "the", "cat", "sat", "down", ".", "[SEP]", "it", "was", "very", "tired", ".",
         "[SEP]"]
FORMULA = ["[CLS]", "<", "formula", ">", "[SEP]", "that", "is", ",", "the", "sum", ".", "[SEP]"]
LIST = ["[CLS]", "state", "highways", "[SEP]", "route", "19", "[SEP]"]


def test_example_candidates_skip_placeholders_and_prefer_whole_sentences():
    segs = [_Seg(FORMULA), _Seg(LIST), _Seg(PROSE), _Seg(PROSE, truncated=True)]
    assert surface.example_candidates(segs, max_length=40) == ([2], "prose")
    assert surface.example_candidates(segs[:2], max_length=40) == ([1], "no placeholder")
    assert surface.example_candidates(segs[:2], max_length=5) == ([1], "shortest")
    assert surface.example_candidates([_Seg(FORMULA)], max_length=5) == ([0], "shortest")


def test_pattern_strength_by_hand():
    ids = np.array(_Seg(PROSE).input_ids)
    n = len(ids)
    # every row but the first (which has no previous token) on its previous token
    assert surface.pattern_strength(_shift(n, -1), ids, "previous token", CLS, SEP,
                                    []) == pytest.approx(1.0)
    on_sep = np.zeros((n, n))
    on_sep[:, [6, 12]] = 0.5
    assert surface.pattern_strength(on_sep, ids, "[SEP]", CLS, SEP, []) == pytest.approx(1.0)
    assert surface.pattern_strength(on_sep, ids, "punctuation", CLS, SEP, [PERIOD]) == 0.0
    uniform = np.full((n, n), 1.0 / n)
    assert surface.pattern_strength(uniform, ids, "broad", CLS, SEP, []) == pytest.approx(1.0)
    assert surface.pattern_caption("[SEP]", 0.244) == "24% on [SEP]"
    assert surface.pattern_caption("broad", 0.93) == "entropy 93% of uniform"
    with pytest.raises(ValueError, match="unknown pattern"):
        surface.pattern_strength(uniform, ids, "diagonal", CLS, SEP, [])


def test_pick_pattern_examples_picks_where_the_head_shows_it():
    segs = [_Seg(FORMULA), _Seg(PROSE), _Seg(PROSE[:6] + ["[SEP]"] + PROSE[7:])]
    store = []
    for k, s in enumerate(segs):
        n = len(s.tokens)
        a = np.zeros((1, 2, n, n))
        a[0, 0] = _shift(n, -1) if k == 2 else np.eye(n)  # head 1-1: previous token on #2
        a[0, 1] = np.full((n, n), 1.0 / n)
        store.append(a)
    picks = surface.pick_pattern_examples(
        store, segs, {"previous token": (1, 1), "punctuation": (1, 2)}, CLS, SEP, [PERIOD])
    prev = picks.set_index("pattern").loc["previous token"]
    assert (prev["segment"], prev["layer"], prev["head"], prev["rule"]) == (2, 0, 0, "prose")
    assert prev["here"] == pytest.approx(1.0)
    assert picks.set_index("pattern").loc["punctuation", "segment"] in (1, 2)  # not #0
    no_punct = [_Seg(LIST)]
    one = surface.pick_pattern_examples([np.full((1, 1, 7, 7), 1 / 7)], no_punct,
                                        {"punctuation": (1, 1)}, CLS, SEP, [PERIOD])
    assert one["segment"].tolist() == [0]  # nothing better to show: still one panel


def _stats(prev_share: float, sep_share: float, cls_entropy: float, layers: int = 3):
    """Surface frames for a model with ``layers`` layers of 2 heads, built by hand."""
    import pandas as pd

    idx = pd.DataFrame({"layer": np.repeat(np.arange(1, layers + 1), 2),
                        "head": np.tile([1, 2], layers)})
    rp = idx.assign(current=0.1, previous=0.1, next=0.1)
    rp.loc[0, "previous"] = prev_share
    tc = idx.assign(cls=0.1, sep=sep_share, punct=0.05, other=0.85 - sep_share)
    tc.loc[tc["layer"] == layers, "punct"] = 0.5  # most ./, in the last layer
    tc.loc[tc["layer"] == 1, "cls"] = 0.6  # most [CLS] in the first
    ss = idx.assign(sep_to_sep=0.2, rest_to_sep=0.1)
    ent = idx.assign(entropy=3.0, entropy_cls=cls_entropy, max_weight=0.3, max_weight_cls=0.3)
    ent.loc[1, "max_weight"] = 0.07
    for df, uni in ((rp, {}), (tc, {"cls": 0.02, "sep": 0.04}), (ss, {"sep_to_sep": 0.04}),
                    (ent, {"entropy": 4.5, "entropy_cls": 4.5, "max_weight": 0.01})):
        df.attrs["uniform"] = uni
    return {"relative_position": rp, "token_class": tc, "sep_to_sep": ss, "entropy": ent}


def test_section3_comparison_states_numbers_and_leaves_verdicts_to_the_ledger():
    import pandas as pd

    stats = {"model": _stats(0.9, 0.6, 3.8), "control": _stats(0.1, 0.04, 4.5)}
    grad = pd.DataFrame([{"layer": la, "target": t, "mean_abs_grad": g}
                         for la in (1, 2, 3) for t, g in (("[SEP]", 0.1), ("other", 1.0),
                                                          ("[CLS]", 0.5))])
    table = surface.section3_comparison(stats, 0.07, num_layers=3, grad=grad)
    # a verdict of its own could contradict the claims ledger's (notebook 01 shows those)
    assert not {"held", "held if"} & set(table.columns)
    t = table.set_index("claim")
    prev = t.loc["heads > 50% on the previous token"]
    assert (prev["model"], prev["control"], prev["which"]) == (1, 0, "1-1")
    sep = t.loc["attention to [SEP] in the paper's layers 6-10"]
    assert sep["model"] == pytest.approx(60.0) and sep["control"] == pytest.approx(4.0)
    assert sep["uniform head"] == pytest.approx(4.0) and sep["layers of this model"] == "2-3"
    assert t.loc["layer with the most attention to [CLS]", "model"] == 1
    assert t.loc["layer with the most attention to ./,", "model"] == 3
    g = t.loc["|grad| of the MLM loss w.r.t. attention to [SEP], vs. other tokens"]
    assert g["model"] == pytest.approx(0.1)
    assert g["from"] == "fitted masked-LM head" and np.isnan(g["control"])
    assert t.loc["|grad| of the MLM loss w.r.t. attention to [CLS], vs. other tokens",
                 "model"] == pytest.approx(0.5)
    assert t.loc["layer 1: lowest mean max weight of a head", "which"] == "head 1-2"
    assert t.loc["entropy from [CLS], last layer", "model"] == pytest.approx(3.8)
    # a checkpoint's own head is named as such, which is what lets the ledger test the claim
    own = surface.section3_comparison(stats, 0.07, num_layers=3, grad=grad,
                                      head_source=gradients.OWN_HEAD).set_index("claim")
    assert set(own.loc[own.index.str.startswith("|grad|"), "from"]) == {gradients.OWN_HEAD}
    assert t.loc["words split into several pieces", "model"] == pytest.approx(7.0)
    view = surface.comparison_view(table)
    assert view.loc["heads > 50% on the previous token", "this run"] == "1 (1-1)"
    assert view.loc[sep.name, "this run"] == "60.0%"
    assert view.loc["entropy from [CLS], last layer", "uniform head"] == "4.50 nats"
    assert view.loc[g.name, "this run"] == "x0.10" and view.loc[g.name, "control"] == "\u2013"
    assert list(surface.COMPARISON_VALUES) == ["model", "control", "uniform head"]


# --- per-example statistics (issue 33: the ledger resamples the articles of the segments) ---


def test_per_example_statistics_by_hand():
    # example 0: [CLS] a [SEP] b [SEP], every token on the previous one ([CLS] on itself);
    # example 1: [CLS] . c (no [SEP]), uniform attention
    ids0 = np.array([CLS, 2001, SEP, 2002, SEP])
    ids1 = np.array([CLS, PERIOD, 2003])
    ex = [(_maps(_shift(5, -1), 1, 2), ids0), (_maps(np.full((3, 3), 1 / 3), 1, 2), ids1)]
    frames, bx = surface.surface_statistics(iter(ex), CLS, SEP, [PERIOD, COMMA],
                                            by_example=True)
    assert bx.n_examples == 2 and bx.values["previous"].shape == (2, 1, 2)
    # previous: example 0 all 4 eligible tokens on the previous one; example 1 1/3 each
    np.testing.assert_allclose(bx.values["previous"][:, 0, 0], [1.0, 1 / 3])
    assert bx.counts["previous"].tolist() == [4, 2]
    # [SEP] received: in example 0 only row 3 ("b") points at a [SEP] (1 of 5 rows); a
    # uniform head would put 2/5 there; example 1 has none
    np.testing.assert_allclose(bx.values["sep"][:, 0, 1], [1 / 5, 0.0])
    np.testing.assert_allclose(bx.uniform["sep"], [2 / 5, 0.0])
    np.testing.assert_allclose(bx.values["punct"][:, 0, 0], [0.0, 1 / 3])
    # [SEP] -> [SEP]: the first [SEP] attends to "a", the second to "b": 0; example 1 has no
    # [SEP], so no value (NaN, count 0), and it is left out of the pooled mean
    np.testing.assert_allclose(bx.values["sep_to_sep"][0], 0.0)
    assert np.isnan(bx.values["sep_to_sep"][1]).all()
    assert bx.counts["sep_to_sep"].tolist() == [2, 0]
    np.testing.assert_allclose(bx.values["entropy"][:, 0, 0], [0.0, math.log(3)], atol=1e-12)
    np.testing.assert_allclose(bx.values["max_weight"][:, 0, 0], [1.0, 1 / 3])
    # pooled as the frames pool them: example weighting (each example once) ...
    tables = {"previous": ("relative_position", (1.0 + 1 / 3) / 2),
              "sep": ("token_class", (1 / 5 + 0) / 2), "sep_to_sep": ("sep_to_sep", 0.0),
              "entropy": ("entropy", math.log(3) / 2)}
    for name, (frame, value) in tables.items():
        np.testing.assert_allclose(frames[frame][name], value, atol=1e-12)
        np.testing.assert_allclose(bx.pooled(name).ravel(), frames[frame][name], atol=1e-12)
    # ... and token weighting (4 and 2 previous-eligible tokens)
    tok, bxt = surface.surface_statistics(iter(ex), CLS, SEP, [PERIOD, COMMA],
                                          weighting="token", by_example=True)
    np.testing.assert_allclose(bxt.pooled("previous", "token").ravel(),
                               (4 * 1.0 + 2 / 3) / 6)
    np.testing.assert_allclose(tok["relative_position"]["previous"], (4 * 1.0 + 2 / 3) / 6)
    # the frames do not depend on by_example
    plain = surface.surface_statistics(iter(ex), CLS, SEP, [PERIOD, COMMA])
    for k, df in plain.items():
        pd.testing.assert_frame_equal(df, frames[k])


def test_segment_arrays_codes_articles_and_counts():
    ex = [(_maps(np.eye(n), 2, 3), _ids(n)) for n in (4, 6, 5)]
    _, bx = surface.surface_statistics(iter(ex), CLS, SEP, [PERIOD, COMMA], by_example=True)
    arr = surface.segment_arrays(bx, ["Zebra", "Apple", "Zebra"])
    assert arr["article_names"].tolist() == ["Apple", "Zebra"]
    assert arr["article"].tolist() == [1, 0, 1] and arr["segment"].tolist() == [0, 1, 2]
    assert arr["current"].dtype == np.float32 and arr["current"].shape == (3, 2, 3)
    np.testing.assert_allclose(arr["current"], 1.0)
    assert arr["count_previous"].tolist() == [3, 5, 4]
    np.testing.assert_allclose(arr["uniform_cls"], [1 / 4, 1 / 6, 1 / 5], rtol=1e-6)
    assert set(surface.SEGMENT_STATISTICS) <= set(arr)
    with pytest.raises(ValueError, match="one article per example"):
        surface.segment_arrays(bx, ["a", "b"])


def test_piece_counts_by_hand():
    ids, counts = surface.piece_counts([[CLS, 7, PERIOD, 7, SEP], [CLS, PERIOD, COMMA, SEP]],
                                       exclude=[CLS, SEP], top=3)
    # totals: 7 twice, . twice, , once; ties by id (7 < 1012)
    assert ids.tolist() == [7, PERIOD, COMMA]
    assert counts.tolist() == [[2, 1, 0], [0, 1, 1]]
    # a piece outside the top is counted when asked for; one never seen is not
    ids, counts = surface.piece_counts([[7, 7, PERIOD, COMMA]], top=1, include=[COMMA, 9])
    assert ids.tolist() == [7, COMMA] and counts.tolist() == [[2, 1]]
