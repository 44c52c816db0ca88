"""Head distances (Jensen-Shannon), MDS, behaviour labels, layer separation, plot."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from analysis_utils.analyses import clustering as cl
from analysis_utils.plotting import maptypes as maptype_plots


def random_attn(rng, layers, heads, n, power=4.0):
    a = rng.random((layers, heads, n, n)) ** power
    return a / a.sum(-1, keepdims=True)


def direct_js(examples, smoothing=1e-3):
    """Reference: scipy's JS distance per token, squared (= divergence), summed."""
    K = examples[0].shape[0] * examples[0].shape[1]
    out = np.zeros((K, K))
    for a in examples:
        n = a.shape[-1]
        P = a.reshape(K, n, n).astype(np.float64) + smoothing
        P /= P.sum(-1, keepdims=True)
        for i in range(K):
            for j in range(K):
                out[i, j] += (jensenshannon(P[i], P[j], axis=1) ** 2).sum()
    return out


@pytest.fixture(scope="module")
def small_examples():
    rng = np.random.default_rng(0)
    return [random_attn(rng, 2, 3, n) for n in (5, 8, 3)]


def test_matches_scipy(small_examples):
    ref = direct_js(small_examples)
    d64 = cl.js_distance_matrix(small_examples, dtype=torch.float64)
    np.testing.assert_allclose(d64, ref, rtol=1e-9, atol=1e-9)
    d32 = cl.js_distance_matrix(small_examples)  # float32 default
    np.testing.assert_allclose(d32, ref, rtol=1e-4, atol=1e-5)
    # the square-root variant and the per-token mean
    np.testing.assert_allclose(cl.js_distance_matrix(small_examples, kind="distance",
                                                     dtype=torch.float64), np.sqrt(ref),
                               rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(cl.js_distance_matrix(small_examples, reduction="mean",
                                                     dtype=torch.float64), ref / 16,
                               rtol=1e-9, atol=1e-9)
    # no smoothing, still matches
    np.testing.assert_allclose(cl.js_distance_matrix(small_examples, smoothing=0.0,
                                                     dtype=torch.float64),
                               direct_js(small_examples, 0.0), rtol=1e-8, atol=1e-8)


def test_self_zero_symmetric_and_identical_heads(small_examples):
    ex = [a.copy() for a in small_examples]
    for a in ex:
        a[1, 2] = a[0, 0]  # head 5 == head 0
    d = cl.js_distance_matrix(ex)
    assert np.all(np.diag(d) == 0)
    np.testing.assert_array_equal(d, d.T)
    assert d[0, 5] == pytest.approx(0.0, abs=1e-4)
    assert (d[~np.eye(6, dtype=bool)] >= 0).all()
    off = d[~np.eye(6, dtype=bool)]
    assert np.sort(off)[2:].min() > 0.01  # the others differ
    # per-token JS divergence is bounded by log 2
    assert d.max() <= np.log(2) * sum(a.shape[-1] for a in ex) + 1e-6


def test_inputs_streamed_float16_memmap_chunks_and_144_heads(tmp_path):
    rng = np.random.default_rng(1)
    ex = [random_attn(rng, 12, 12, n).astype(np.float16) for n in (6, 4)]
    mm = []
    for i, a in enumerate(ex):
        m = np.lib.format.open_memmap(tmp_path / f"{i}.npy", mode="w+", dtype=np.float16,
                                      shape=a.shape)
        m[:] = a
        mm.append(np.load(tmp_path / f"{i}.npy", mmap_mode="r"))
    d, info = cl.js_distance_matrix(iter(mm), return_info=True)
    assert d.shape == (144, 144) and info["n_examples"] == 2 and info["n_tokens"] == 10
    d_small_chunks = cl.js_distance_matrix([{"attn": a} for a in mm], chunk_elems=50)
    np.testing.assert_allclose(d, d_small_chunks, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cl.js_distance_matrix(mm, max_examples=1),
                               cl.js_distance_matrix(mm[:1]))
    with pytest.raises(ValueError):
        cl.js_distance_matrix([ex[0], ex[1][:6]])
    with pytest.raises(ValueError):
        cl.js_distance_matrix([])


def test_mds_recovers_planar_configuration():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(20, 2)) * 5
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    coords, stress = cl.mds_embedding(dist, seed=0)
    assert coords.shape == (20, 2)
    assert stress < 0.01
    emb = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1))
    np.testing.assert_allclose(emb, dist, atol=0.1 * dist.mean())
    coords2, stress2 = cl.mds_embedding(dist, seed=0)
    np.testing.assert_array_equal(coords, coords2)
    assert cl.kruskal_stress(dist, pts) == pytest.approx(0.0, abs=1e-12)


def test_behaviour_labels():
    df = pd.DataFrame({
        "layer": [0, 0, 1, 1, 2, 2, 3], "head": [0, 1, 0, 1, 0, 1, 0],
        "entropy": [4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "prev": [0.0, 0.7, 0.0, 0.0, 0.0, 0.0, 0.1],
        "next": [0.0, 0.0, 0.6, 0.0, 0.0, 0.0, 0.1],
        "cls": [0.0, 0.0, 0.0, 0.65, 0.0, 0.0, 0.1],
        "sep": [0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.1],
        "punct": [0.0, 0.0, 0.0, 0.0, 0.0, 0.7, 0.1],
    })
    lab = cl.behaviour_labels(df)
    assert lab.tolist() == ["broad", "previous token", "next token", "[CLS]", "[SEP]",
                            ". and ,", "other"]
    lab = cl.behaviour_labels(df, thresholds={"sep": 0.95, "prev": 0.5},
                              extra={(3, 0): "coref"})
    assert lab.tolist() == ["other", "previous token", "other", "other", "other", "other",
                            "coref"]
    # entropy_nats (maptypes tables) wins over a normalised entropy column
    df2 = df.assign(entropy_nats=df["entropy"], entropy=0.5)
    assert cl.behaviour_labels(df2).iloc[0] == "broad"
    with pytest.raises(ValueError):
        cl.behaviour_labels(df.drop(columns="punct"), thresholds={"punct": 0.6})


def test_layer_separation():
    rng = np.random.default_rng(0)
    layers = np.repeat(np.arange(4), 5)
    centres = rng.normal(size=(4, 2)) * 10
    pts = centres[layers] + rng.normal(size=(20, 2))
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    res = cl.layer_separation(dist, layers, n_perm=200, seed=0)
    assert res["within"] < res["between"] and res["p_value"] < 0.01
    assert res["p_value"] == pytest.approx(1 / 201)
    noise = np.abs(rng.normal(size=(20, 20)))
    noise = noise + noise.T
    np.fill_diagonal(noise, 0)
    assert cl.layer_separation(noise, layers, n_perm=200)["p_value"] > 0.01


def test_layer_separation_null_ratio_by_hand():
    # 4 heads, 2 layers: same-layer pairs (0,1) and (2,3) at 1, the 4 other pairs at 3
    d = np.array([[0, 1, 3, 3], [1, 0, 3, 3], [3, 3, 0, 1], [3, 3, 1, 0]], dtype=float)
    res = cl.layer_separation(d, [1, 1, 2, 2], n_perm=300, seed=0, return_null=True)
    assert (res["within"], res["between"], res["ratio"]) == (1.0, 3.0, pytest.approx(1 / 3))
    null = res["null_ratio"]
    assert null.shape == (300,)
    # a relabelling of 2 + 2 heads pairs them as the layers do (ratio 1/3) or across them:
    # within = 3, between = (1 + 1 + 3 + 3) / 4 = 2, ratio 1.5
    assert set(np.round(null, 6)) <= {round(1 / 3, 6), 1.5}
    assert res["null_ratio_mean"] == pytest.approx(null.mean())
    assert res["null_ratio_sd"] == pytest.approx(null.std())
    # the permutation stream and the diff-based p are those of the call without the draws
    plain = cl.layer_separation(d, [1, 1, 2, 2], n_perm=300, seed=0)
    assert "null_ratio" not in plain
    assert plain["p_value"] == res["p_value"] and plain["null_std"] == res["null_std"]


def test_behaviour_separation():
    rng = np.random.default_rng(1)
    labels = ["broad"] * 5 + ["[CLS]"] * 4 + ["other"] * 6 + ["next token"]
    centre = {"broad": (0, 0), "[CLS]": (10, 0), "other": (5, 5), "next token": (0, 10)}
    pts = np.array([centre[x] for x in labels]) + rng.normal(size=(len(labels), 2))
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    res = cl.behaviour_separation(dist, labels, n_perm=200, seed=0, return_null=True)
    assert (res["heads"], res["groups"], res["testable"]) == (10, 2, True)
    assert res["labels"] == "broad 5, [CLS] 4, next token 1"
    assert res["ratio"] < 0.5 and res["p_value"] == pytest.approx(1 / 201)
    # the same as layer_separation over the labelled heads only
    keep = [i for i, x in enumerate(labels) if x != "other"]
    same = cl.layer_separation(dist[np.ix_(keep, keep)], [labels[i] for i in keep],
                               n_perm=200, seed=0)
    assert res["ratio"] == same["ratio"] and res["p_value"] == same["p_value"]
    # one behaviour with two heads or more is no set of clusters: untestable, NaN
    one = cl.behaviour_separation(dist, ["broad"] * 3 + ["other"] * 12 + ["[CLS]"],
                                  n_perm=10, return_null=True)
    assert not one["testable"] and one["groups"] == 1 and math.isnan(one["ratio"])
    assert one["null_ratio"].shape == (10,)
    with pytest.raises(ValueError, match="labels"):
        cl.behaviour_separation(dist, labels[:-1])


def test_mds_plot_and_head_index():
    idx = cl.head_index(3, 4)
    assert idx.iloc[5].tolist() == [1, 1]
    coords = np.random.default_rng(0).normal(size=(12, 2))
    labels = ["other"] * 10 + ["[SEP]", "broad"]
    fig = maptype_plots.mds_plot(coords, idx["layer"], labels, heads=idx["head"], title="t")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.tell() > 1000


def test_stream_reads_each_entry_from_a_store_and_gives_identical_distances(tiny_loaded,
                                                                            tmp_path):
    from analysis_utils.engine import attention

    ids = [[2, 7, 8, 9, 3], [2, 12, 13, 14, 15, 3, 7, 8, 3], [2, 21, 24, 3]]
    store = attention.extract_attention(tiny_loaded, [{"input_ids": x} for x in ids],
                                        cache_dir=tmp_path, progress=False)
    streamed = list(cl.stream(store))
    assert [a.shape[-1] for a in streamed] == [5, 9, 4]
    for a, i in zip(streamed, range(len(store)), strict=True):
        assert not isinstance(a, np.memmap)  # a fresh array, not a view of the mapped file
        np.testing.assert_array_equal(a, store[i])
    np.testing.assert_array_equal(cl.js_distance_matrix(cl.stream(store)),
                                  cl.js_distance_matrix(store))
    plain = [np.ones((1, 1, 2, 2))]
    assert list(cl.stream(plain))[0] is plain[0]  # anything without read() as it is


def test_format_p_bounds_the_floor():
    assert cl.format_p(1 / 1001, 1000) == "p < 0.001 (1000 permutations)"
    assert cl.format_p(1 / 201, 200) == "p < 0.005 (200 permutations)"
    assert cl.format_p(2 / 1001, 1000) == "p = 0.002 (1000 permutations)"
    assert cl.format_p(0.2128, 1000) == "p = 0.21 (1000 permutations)"
    res = cl.layer_separation(np.eye(4)[::-1] + 1 - np.eye(4), [0, 0, 1, 1], n_perm=99)
    assert cl.format_p(res["p_value"], 99).startswith(("p < 0.01", "p = "))
