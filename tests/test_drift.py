"""Kovaleva et al. Sections 4.3-4.5 drift statistics: cosine similarity (real-token block and
padded), attention to special tokens, the last-layer [CLS] row; all on hand-made maps."""

import numpy as np
import pandas as pd
import pytest
import torch

from analysis_utils.analyses import drift
from analysis_utils.engine.attention import ModelInput, extract_attention
from analysis_utils.engine.padded import iter_padded_attention

CLS, SEP, COMMA = 2, 3, 6


def _random_maps(rng, L, H, n):
    x = rng.random((L, H, n, n))
    return x / x.sum(-1, keepdims=True)


def test_identical_maps_have_cosine_one():
    a = _random_maps(np.random.default_rng(0), 2, 3, 5)
    np.testing.assert_allclose(drift.head_cosine(a, a), np.ones((2, 3)))
    df = drift.cosine_similarity([(a, a), (a[..., :5, :5].astype(np.float16),) * 2])
    np.testing.assert_allclose(df["cosine"], 1.0, atol=1e-12)
    assert (df["n_examples"] == 2).all() and list(df.columns[:2]) == ["layer", "head"]


def test_orthogonal_rows_have_cosine_zero():
    n = 4
    a = np.zeros((1, 1, n, n))
    b = np.zeros((1, 1, n, n))
    a[..., :, 0] = 1.0  # every row on token 0
    b[..., :, 1] = 1.0  # every row on token 1
    assert drift.head_cosine(a, b)[0, 0] == 0.0


def test_cosine_is_the_mean_over_inputs():
    a1 = np.array([[[[1.0, 0.0], [0.0, 1.0]]]])
    b1 = np.array([[[[1.0, 0.0], [1.0, 0.0]]]])  # cos = 1 / (sqrt2 * sqrt2) = 0.5
    df = drift.cosine_similarity([(a1, a1), (a1, b1)])
    assert df["cosine"].iloc[0] == pytest.approx(0.75)
    assert df["sd"].iloc[0] == pytest.approx(0.25)


def _pad(real, pad_rows, P):
    """A padded map as a model makes it: real block, zero columns for padding keys, padding
    rows spread over the real tokens."""
    L, H, n, _ = real.shape
    out = np.zeros((L, H, P, P))
    out[..., :n, :n] = real
    out[..., n:, :n] = pad_rows
    return out


def test_padded_variant_is_higher_than_the_real_block():
    n, P = 3, 8
    a = np.zeros((1, 1, n, n))
    b = np.zeros((1, 1, n, n))
    a[..., :, 0] = 1.0
    b[..., :, 1] = 1.0  # real blocks orthogonal: cosine 0
    pad = np.full((1, 1, P - n, n), 1.0 / n)  # both models' padding rows alike
    real = drift.cosine_similarity([(a, b)])
    padded = drift.cosine_similarity([(_pad(a, pad, P), _pad(b, pad, P))])
    assert real["cosine"].iloc[0] == 0.0
    # dot = 5 rows * 3 * (1/3)^2 = 5/3; |a|^2 = 3 + 5/3 = 14/3 -> cos = 5/14
    assert padded["cosine"].iloc[0] == pytest.approx(5 / 14)
    eff = drift.padding_effect(real, padded)
    assert eff["difference"].iloc[0] == pytest.approx(5 / 14)
    both = drift.padded_cosine([(_pad(a, pad, P), _pad(b, pad, P))], lengths=[n])
    assert both["cosine_real"].iloc[0] == 0.0
    assert both["cosine_padded"].iloc[0] == pytest.approx(5 / 14)


def test_zero_padding_alone_changes_nothing():
    # why the padded variant needs the models' own padding rows: appended zeros are inert
    rng = np.random.default_rng(1)
    a, b = _random_maps(rng, 2, 2, 4), _random_maps(rng, 2, 2, 4)
    widen = [(0, 0), (0, 0), (0, 4), (0, 4)]
    np.testing.assert_allclose(drift.head_cosine(np.pad(a, widen), np.pad(b, widen)),
                               drift.head_cosine(a, b))


def test_maps_of_different_inputs_are_refused():
    with pytest.raises(ValueError, match="same inputs"):
        drift.head_cosine(np.ones((1, 1, 3, 3)), np.ones((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="same encoded examples"):
        list(drift.store_pairs([np.ones((1, 1, 3, 3))], []))


def test_store_pairs_streams_and_caps(tiny_loaded, tmp_path):
    items = [ModelInput((CLS, 7, 8, 9, SEP)), ModelInput((CLS, 12, 13, SEP)),
             ModelInput((CLS, 7, SEP))]
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    df = drift.cosine_similarity(drift.store_pairs(store, store, max_examples=2))
    assert (df["n_examples"] == 2).all()
    np.testing.assert_allclose(df["cosine"], 1.0, atol=1e-6)


def test_padded_maps_hold_the_real_block_and_attending_padding_rows(tiny_loaded, tmp_path):
    items = [ModelInput((CLS, 7, 8, 9, SEP), (0,) * 5), ModelInput((CLS, 12, SEP), (0,) * 3)]
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    padded = list(iter_padded_attention(tiny_loaded, items, pad_to=10, batch_size=1))
    for i, p in enumerate(padded):
        n = len(items[i])
        assert p.shape == (2, 2, 10, 10)
        np.testing.assert_allclose(p[..., :n, :n], store[i], atol=2e-3)  # float16 store
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)  # padding rows attend too
        assert np.abs(p[..., n:]).max() < 1e-6  # nobody attends to padding
    both = drift.padded_cosine(zip(padded, padded, strict=True), [len(x) for x in items])
    np.testing.assert_allclose(both[["cosine_real", "cosine_padded"]], 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="longer than pad_to"):
        list(iter_padded_attention(tiny_loaded, items, pad_to=4))


def _frame(values, task):
    L, H = values.shape
    return pd.DataFrame({"task": task, "layer": np.repeat(np.arange(1, L + 1), H),
                         "head": np.tile(np.arange(1, H + 1), L), "cosine": values.ravel()})


def test_layer_summary_finds_the_layers_that_changed_most():
    df = pd.concat([_frame(np.array([[1.0, 0.9], [0.8, 0.8], [0.5, 0.7]]), "MRPC"),
                    _frame(np.array([[0.4, 0.4], [0.9, 0.9], [0.5, 0.5]]), "QQP")])
    summary = drift.drift_by_layer(df)
    mrpc = summary[summary["task"] == "MRPC"].set_index("layer")
    assert mrpc.loc[3, "mean"] == pytest.approx(0.6) and mrpc.loc[3, "rank"] == 1
    assert mrpc.loc[1, "drift"] == pytest.approx(0.05)
    top = drift.layers_changed_most(df, k=2).set_index("task")
    assert top.loc["MRPC", "layers"] == [2, 3] and top.loc["MRPC", "last_k"]
    assert top.loc["QQP", "layers"] == [1, 3] and not top.loc["QQP", "last_k"]
    grids = drift.as_grids(df, "cosine", by="task")
    assert set(grids) == {"MRPC", "QQP"} and grids["QQP"][0, 1] == 0.4


def test_special_token_attention_on_a_hand_made_map():
    # [CLS] a , b [SEP]  (n = 5); received attention r_j = column sum / 5
    ids = np.array([CLS, 7, COMMA, 8, SEP])
    A = np.array([[0.6, 0.1, 0.1, 0.1, 0.1],
                  [0.5, 0.0, 0.0, 0.0, 0.5],
                  [0.2, 0.2, 0.2, 0.2, 0.2],
                  [0.0, 0.0, 0.5, 0.0, 0.5],
                  [0.2, 0.0, 0.0, 0.0, 0.8]])
    df = drift.special_token_attention([(A[None, None], ids)], CLS, SEP, [COMMA])
    got = df.set_index("feature")
    assert got.loc["cls", "score"] == pytest.approx(1.5 / 5)
    assert got.loc["sep", "score"] == pytest.approx(2.1 / 5)
    assert got.loc["punct", "score"] == pytest.approx(0.8 / 5)
    assert df.attrs["uniform"]["sep"] == pytest.approx(1 / 5)


def test_max_over_tokens_makes_one_sep_score_higher_than_two():
    # uniform attention over the same mass on [SEP]: one [SEP] with all of it vs two sharing it
    one = np.array([CLS, 7, 8, SEP])
    two = np.array([CLS, 7, SEP, SEP])
    A1 = np.tile([0.25, 0.25, 0.0, 0.5], (4, 1))[None, None]
    A2 = np.tile([0.25, 0.25, 0.25, 0.25], (4, 1))[None, None]
    s1 = drift.special_token_attention([(A1, one)], CLS, SEP).set_index("feature")
    s2 = drift.special_token_attention([(A2, two)], CLS, SEP).set_index("feature")
    assert s1.loc["sep", "share"] == s2.loc["sep", "share"] == pytest.approx(0.5)
    assert s1.loc["sep", "score"] == pytest.approx(0.5)
    assert s2.loc["sep", "score"] == pytest.approx(0.25)


def test_inputs_without_the_class_are_left_out():
    ids_with = np.array([CLS, COMMA, SEP])
    ids_without = np.array([CLS, 7, SEP])
    A = np.full((1, 1, 3, 3), 1 / 3)
    B = np.zeros((1, 1, 3, 3))
    B[..., 0] = 1.0
    df = drift.special_token_attention([(A, ids_with), (B, ids_without)], CLS, SEP, [COMMA])
    got = df.set_index("feature")
    assert got.loc["punct", "n_examples"] == 1 and got.loc["punct", "score"] == pytest.approx(1 / 3)
    assert got.loc["cls", "n_examples"] == 2
    assert got.loc["cls", "score"] == pytest.approx((1 / 3 + 1.0) / 2)


def test_cls_row_by_type_reads_the_last_layer_cls_row():
    ids = np.array([CLS, 7, COMMA, 8, SEP])
    A = np.zeros((2, 1, 5, 5))
    A[0] = 0.2
    A[1, 0, :, 4] = 1.0
    A[1, 0, 0] = [0.1, 0.2, 0.3, 0.0, 0.4]  # the [CLS] row of the last layer
    df = drift.cls_attention_by_type([(A, ids)], CLS, SEP, [COMMA]).set_index("target")
    assert (df["layer"] == 2).all()
    assert df.loc["sep", "weight"] == pytest.approx(0.4)
    assert df.loc["punct", "weight"] == pytest.approx(0.3)
    assert df.loc["other", "weight"] == pytest.approx(0.2)
    assert df.loc["other", "share"] == pytest.approx(0.2)
    assert df.loc["cls", "weight"] == pytest.approx(0.1)


def test_stack_adds_key_columns():
    a = pd.DataFrame({"layer": [1], "head": [1], "cosine": [0.5]})
    out = drift.stack({("MRPC", "pre"): a, ("MRPC", "ft"): a}, names=("task", "model"))
    assert list(out.columns[:2]) == ["task", "model"] and len(out) == 2


def test_zipped_padded_streams_leave_gradients_enabled(tiny_loaded):
    # Two streams zipped (the notebook's use) once left torch in inference mode for the rest of
    # the process, which broke every later training step.
    items = [ModelInput((CLS, 7, 8, SEP), (0,) * 4), ModelInput((CLS, 12, SEP), (0,) * 3)]
    pairs = zip(iter_padded_attention(tiny_loaded, items, pad_to=6, batch_size=1),
                iter_padded_attention(tiny_loaded, items, pad_to=6, batch_size=1), strict=True)
    first = next(pairs)
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    assert len(list(pairs)) == 1 and first[0].shape[-1] == 6
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


# --- per-example variants (the ledger resamples dev examples, issue 33) --------------------


def test_cosine_by_example_is_what_the_table_averages():
    a1 = np.array([[[[1.0, 0.0], [0.0, 1.0]]]])
    b1 = np.array([[[[1.0, 0.0], [1.0, 0.0]]]])  # cos = 1 / (sqrt2 * sqrt2) = 0.5
    a2 = np.array([[[[0.5, 0.5], [0.5, 0.5]]]])  # cos with itself = 1
    per = drift.cosine_similarity([(a1, b1), (a2, a2)], by_example=True)
    assert per.shape == (2, 1, 1)
    np.testing.assert_allclose(per[:, 0, 0], [0.5, 1.0])
    table = drift.cosine_table(per)
    assert table["cosine"].iloc[0] == pytest.approx(0.75)
    assert table["sd"].iloc[0] == pytest.approx(0.25)  # ddof 0, as before
    assert table.equals(drift.cosine_similarity([(a1, b1), (a2, a2)]))


def test_drift_by_example_is_one_minus_the_head_mean_per_layer():
    # 2 inputs, 2 layers, 2 heads: drift = 1 - mean over the layer's heads, per input
    per = np.array([[[1.0, 0.5], [0.2, 0.4]],
                    [[0.0, 1.0], [1.0, 1.0]]])
    d = drift.drift_by_example(per)
    np.testing.assert_allclose(d, [[0.25, 0.7], [0.5, 0.0]])
    # the mean over inputs is the layer table's drift
    frame = drift.cosine_table(per).assign(task="A")
    layer = drift.drift_by_layer(frame, by=["task"])
    np.testing.assert_allclose(layer["drift"], d.mean(0))


def test_special_token_attention_by_example_keeps_each_input():
    ids_with = np.array([CLS, COMMA, SEP])
    ids_without = np.array([CLS, 7, SEP])
    A = np.full((1, 1, 3, 3), 1 / 3)
    B = np.zeros((1, 1, 3, 3))
    B[..., 0] = 1.0
    per = drift.special_token_attention([(A, ids_with), (B, ids_without)], CLS, SEP, [COMMA],
                                        by_example=True)
    assert set(per) == {"cls", "sep", "punct"} and per["cls"].shape == (2, 1, 1)
    np.testing.assert_allclose(per["cls"][:, 0, 0], [1 / 3, 1.0])
    np.testing.assert_allclose(per["sep"][:, 0, 0], [1 / 3, 0.0])
    assert per["punct"][0, 0, 0] == pytest.approx(1 / 3) and np.isnan(per["punct"][1, 0, 0])
    # the table's score is the mean over the inputs that have the class
    table = drift.special_token_attention([(A, ids_with), (B, ids_without)], CLS, SEP,
                                          [COMMA]).set_index("feature")
    for k in ("cls", "sep", "punct"):
        assert table.loc[k, "score"] == pytest.approx(np.nanmean(per[k][:, 0, 0]))


def test_cls_row_by_example_reads_each_inputs_cls_row():
    ids = np.array([CLS, 7, COMMA, 8, SEP])
    A = np.zeros((2, 1, 5, 5))
    A[1, 0, 0] = [0.1, 0.2, 0.3, 0.0, 0.4]
    B = np.zeros((2, 1, 3, 3))
    B[1, 0, 0] = [0.5, 0.25, 0.25]  # no punctuation in this input
    per = drift.cls_attention_by_type([(A, ids), (B, np.array([CLS, 7, SEP]))], CLS, SEP,
                                      [COMMA], by_example=True)
    assert per["sep"].shape == (2, 1)
    np.testing.assert_allclose(per["sep"][:, 0], [0.4, 0.25])
    np.testing.assert_allclose(per["cls"][:, 0], [0.1, 0.5])
    assert per["punct"][0, 0] == pytest.approx(0.3) and np.isnan(per["punct"][1, 0])
    np.testing.assert_allclose(per["other"][:, 0], [0.2, 0.25])  # largest over the type
