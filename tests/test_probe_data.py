"""probe_data: streaming ProbeSentences from piece-level maps, per-word predictions and UAS
tables against hand computations."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
import torch

from analysis_utils.analyses import probe_data, probes
from analysis_utils.analyses.trees import is_tree
from analysis_utils.data.glove import GloVe
from analysis_utils.engine import wordmaps
from analysis_utils.engine.attention import word_level


def sentence(words, heads, upos, deprels):
    return types.SimpleNamespace(words=tuple(words), heads=tuple(heads), upos=tuple(upos),
                                 deprels=tuple(deprels))


SENTS = [
    sentence(["the", "cat", "sat", "."], [2, 3, 0, 3], ["DET", "NOUN", "VERB", "PUNCT"],
             ["det", "nsubj", "root", "punct"]),
    sentence(["unbelievable", "dog", "ran"], [2, 3, 0], ["ADJ", "NOUN", "VERB"],
             ["amod", "nsubj", "root"]),
]


@pytest.fixture(scope="module")
def encoded_and_store(tiny_loaded):
    rng = np.random.default_rng(0)
    encoded = [wordmaps.encode_words(tiny_loaded.tokenizer, s.words) for s in SENTS]
    store = [rng.dirichlet(np.ones(len(e)), size=(2, 2, len(e))).astype(np.float16)
             for e in encoded]
    return encoded, store


def test_special_positions():
    assert probe_data.special_positions(np.array([True, False, False, True])) == (0, 3)
    with pytest.raises(ValueError):
        probe_data.special_positions(np.array([True, False]))


def test_stream_features_match_word_level_maps(encoded_and_store):
    encoded, store = encoded_and_store
    assert len(encoded[1]) > encoded[1].n_words + 2  # "unbelievable" is split into pieces
    out = list(probe_data.iter_probe_sentences(SENTS, store, encoded))
    for s, ps, enc, maps in zip(SENTS, out, encoded, store, strict=True):
        wl = word_level(maps, enc.tok2word)
        m = wl.shape[-1]
        expected = probes.attention_features(wl, enc.word_pos, cls_pos=0, sep_pos=m - 1)
        assert ps.features.shape == (2 * 2 * 2, len(s.words), len(s.words) + 1)
        np.testing.assert_array_equal(ps.features, expected)
        np.testing.assert_array_equal(ps.heads, s.heads)
    # Dependent 0 of sentence 2, layer 1 head 1, attention to word 1 ("dog") = row of the
    # split word (mean over its pieces) at the "dog" column.
    enc = encoded[1]
    pieces = np.flatnonzero(enc.tok2word == enc.word_pos[0])
    dog = int(np.flatnonzero(enc.tok2word == enc.word_pos[1])[0])
    by_hand = store[1][0, 0][pieces, dog].astype(np.float32).mean()
    assert out[1].features[0, 0, 2] == pytest.approx(by_hand, abs=1e-3)


def test_stream_is_lazy_and_restartable(encoded_and_store):
    encoded, store = encoded_and_store
    factory = probe_data.stream(SENTS, store, encoded)
    gen = factory()
    assert not isinstance(gen, list)
    first = next(gen)
    assert first.n == 4
    assert len(list(factory())) == 2  # a fresh pass each call
    assert all(ps.features is None for ps in probe_data.iter_probe_sentences(SENTS))


def test_stream_rejects_mismatched_store(encoded_and_store):
    encoded, store = encoded_and_store
    with pytest.raises(ValueError):
        list(probe_data.iter_probe_sentences(SENTS, store[:1], encoded))


def test_right_branching_predictions_and_uas_by_hand():
    pred = probe_data.predictions(probes.right_branching_probe, SENTS,
                                  probe_data.stream(SENTS))
    # sentence 1: heads 2,3,4,0 vs gold 2,3,0,3 -> "the", "cat" right, "sat" wrong, "." punct
    # sentence 2: heads 2,3,0 vs gold 2,3,0 -> all right. Scored 6, correct 5.
    assert list(pred["pred_argmax"]) == [2, 3, 4, 0, 2, 3, 0]
    assert (pred["pred_argmax"] == pred["pred_mst"]).all()
    assert list(pred["scored"]) == [True, True, True, False, True, True, True]
    assert probe_data.uas(pred) == pytest.approx(100 * 5 / 6)
    assert probe_data.well_formed_share(pred) == 100.0


def test_uas_by_relation_by_hand():
    pred = pd.DataFrame({
        "sentence": [0, 0, 0, 0, 1, 1], "word": [0, 1, 2, 3, 0, 1],
        "upos": ["DET", "NOUN", "VERB", "PUNCT", "DET", "NOUN"],
        "deprel": ["det", "nsubj", "root", "punct", "det", "nsubj:pass"],
        "gold": [2, 3, 0, 3, 2, 0], "pred_argmax": [2, 1, 0, 1, 1, 0],
        "pred_mst": [2, 3, 0, 3, 2, 0]})
    pred["scored"] = pred["upos"] != "PUNCT"
    t = probe_data.uas_by_relation(pred, min_count=2)
    assert list(t["relation"]) == ["det", "other"]
    assert t.set_index("relation")["uas"].to_dict() == pytest.approx({"det": 50.0,
                                                                      "other": 200 / 3})
    c = probe_data.uas_by_relation(pred, min_count=2, collapse_subtypes=True)
    assert c.set_index("relation")["n"].to_dict() == {"det": 2, "nsubj": 2, "other": 1}
    fixed = probe_data.uas_by_relation(pred, "mst", relations=["nsubj"])
    assert fixed.set_index("relation")["n"].to_dict() == {"other": 4, "nsubj": 1}
    assert (fixed["uas"] == 100.0).all()
    # sentence 0 argmax heads 2,1,0,1: word 1 <-> word 2 cycle, not a tree
    assert probe_data.well_formed_share(pred, "argmax") == 0.0
    assert probe_data.well_formed_share(pred, "mst") == 100.0


def test_trained_probe_mst_trees_and_head_weights(encoded_and_store):
    encoded, store = encoded_and_store
    src = probe_data.stream(SENTS, store, encoded)
    only = probes.AttentionOnlyProbe(4)
    probes.train_probe(only, src, epochs=3, seed=0)
    pred = probe_data.predictions(only, SENTS, src)
    for _, g in pred.groupby("sentence"):
        assert is_tree(g["pred_mst"].to_numpy(), single_root=True)
    w = probe_data.attention_only_weights(only, 2, 2)
    np.testing.assert_array_equal(w["dep2cand"].ravel(), only.w.detach().numpy())

    vocab = ["the", "cat", "sat", ".", "dog", "ran"]
    glove = GloVe(vocab, np.random.default_rng(1).normal(size=(6, 3)).astype(np.float32))
    probe = probes.AttentionGloveProbe(4, glove)
    probes.train_probe(probe, src, seed=0)
    got = probe_data.glove_head_weights(probe, src, 2, 2)
    # By hand: average of W [v_dep; v_head] + b over the 5 word-headed gold edges.
    vecs, lin = [], probe.W
    with torch.no_grad():
        for s in src():
            v = probe.inputs(s)
            for i, h in enumerate(s.heads):
                if h > 0:
                    vecs.append(lin(torch.cat([v[i], v[h - 1]])).numpy())
    np.testing.assert_allclose(got["dep2cand"].ravel(), np.mean(vecs, axis=0), rtol=1e-5,
                               atol=1e-6)


def test_store_is_read_without_its_memory_map(tiny_loaded, tmp_path):
    """Positioned reads from a real AttentionStore give the same features as its memmap."""
    from analysis_utils.engine.attention import extract_attention

    encoded = [wordmaps.encode_words(tiny_loaded.tokenizer, s.words) for s in SENTS]
    store = extract_attention(tiny_loaded, [e.as_input() for e in encoded], cache_dir=tmp_path,
                              progress=False)
    via_pread = list(probe_data.iter_probe_sentences(SENTS, store, encoded))
    via_map = list(probe_data.iter_probe_sentences(SENTS, [store[i] for i in range(2)],
                                                   encoded))
    for a, b in zip(via_pread, via_map, strict=True):
        np.testing.assert_array_equal(a.features, b.features)
