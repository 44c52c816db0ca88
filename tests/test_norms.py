"""Attention norms (Kobayashi et al. 2020): the maths on hand-made arrays, and the model path
on the tiny BERT against a computation written out token by token."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis_utils.analyses import norms


def test_weighted_norms_and_shares_by_hand():
    # one head, 3 tokens: [CLS] x [SEP]; token norms 1, 2, 0.5
    attn = np.array([[[0.2, 0.3, 0.5],
                      [0.1, 0.1, 0.8],
                      [0.0, 0.5, 0.5]]])
    fnorm = np.array([[1.0, 2.0, 0.5]])
    wn = norms.weighted_norms(attn, fnorm)
    np.testing.assert_allclose(wn[0, 0], [0.2, 0.6, 0.25])
    masks = {"cls": np.array([True, False, False]), "sep": np.array([False, False, True]),
             "other": np.array([False, True, False])}
    got = norms.class_shares(attn, fnorm, masks)
    # weight share to [SEP]: mean of rows (0.5, 0.8, 0.5) = 0.6
    np.testing.assert_allclose(got["sep"][0], [0.6])
    # norm share to [SEP]: rows 0.25/1.05, 0.4/(0.1+0.2+0.4), 0.25/(1.0+0.25)
    expect = np.mean([0.25 / 1.05, 0.4 / 0.7, 0.25 / 1.25])
    np.testing.assert_allclose(got["sep"][1], [expect])
    # norm ratio of [SEP]: 0.5 / mean(1, 2, 0.5)
    np.testing.assert_allclose(got["sep"][2], [0.5 / (3.5 / 3)])
    total = sum(got[k][1] for k in masks)
    np.testing.assert_allclose(total, [1.0])
    absent = norms.class_shares(attn, fnorm, {"punct": np.zeros(3, bool)})
    assert absent["punct"][0] == 0 and np.isnan(absent["punct"][2])


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="do not match"):
        norms.weighted_norms(np.ones((2, 3, 3)), np.ones((2, 4)))


def _by_hand(model, ids, layer, head):
    """Layer ``layer``'s input from hidden states, then f(x_j) token by token."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True,
                    output_hidden_states=True)
        x = out.hidden_states[layer][0]
        block = model.encoder.layer[layer]
        wv, bv = block.attention.self.value.weight, block.attention.self.value.bias
        wo = block.attention.output.dense.weight
        dh = model.config.hidden_size // model.config.num_attention_heads
        sl = slice(head * dh, (head + 1) * dh)
        f = []
        for j in range(len(ids)):
            v = wv @ x[j] + bv
            f.append(float(torch.linalg.vector_norm(wo[:, sl] @ v[sl])))
        a = out.attentions[layer][0, head].double().numpy()
    return a, np.array(f)


@pytest.mark.parametrize("layer,head", [(0, 0), (1, 1)])
def test_norm_map_matches_hand_computation(tiny_loaded, layer, head):
    ids = [2, 7, 8, 9, 10, 7, 11, 5, 3]
    maps = norms.norm_maps(tiny_loaded, {"input_ids": ids}, [(layer, head)])
    a, nb = maps[(layer, head)]
    a_hand, f_hand = _by_hand(tiny_loaded.model, ids, layer, head)
    np.testing.assert_allclose(a, a_hand, atol=1e-6)
    n = a_hand * f_hand[None, :]
    np.testing.assert_allclose(nb, n / n.sum(-1, keepdims=True), rtol=1e-5)


def test_norm_statistics_streams_and_matches_per_input(tiny_loaded):
    items = [{"input_ids": [2, 7, 8, 5, 3]}, {"input_ids": [2, 13, 14, 6, 7, 11, 3]},
             {"input_ids": [2, 12, 15, 8, 9, 3]}]
    df = norms.norm_statistics(tiny_loaded, items, 2, 3, [5, 6], max_tokens=12, max_batch=2)
    assert set(df.target) == set(norms.TARGETS) and len(df) == 4 * 2 * 2
    assert df.attrs["n_inputs"] == 3
    # shares over the four classes sum to one per head
    sums = df.groupby(["layer", "head"])[["weight_share", "norm_share"]].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-9)
    # the mean over inputs equals the per-input computation by hand (layer 2, head 1)
    hand = []
    for it in items:
        ids = it["input_ids"]
        a, f = _by_hand(tiny_loaded.model, ids, 1, 0)
        s = norms.row_normalise(a * f[None, :])
        hand.append(s[:, np.asarray(ids) == 3].sum(-1).mean())
    row = df[(df["layer"] == 2) & (df["head"] == 1) & (df["target"] == "sep")]
    assert row.norm_share.item() == pytest.approx(np.mean(hand), rel=1e-5)
    lay = norms.layer_summary(df)
    assert list(lay.columns) == ["layer", "target", "weight_share", "norm_share", "norm_ratio",
                                 "norm_over_weight"]
    assert len(lay) == 2 * 4


def test_unknown_architecture_is_refused():
    block = torch.nn.Module()
    with pytest.raises(ValueError, match="no value/output projection"):
        norms.projections(block)
