"""wordmaps: encoding pre-split words with the model's tokenizer and streaming word-level
maps. Uses the tiny random BERT of conftest (vocab has "un ##believ ##able")."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from transformers import AutoTokenizer

from analysis_utils.analyses import syntax
from analysis_utils.engine import attention, wordmaps


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def _softmax_maps(n, layers=2, heads=2, seed=0):
    x = np.random.default_rng(seed).normal(size=(layers, heads, n, n))
    e = np.exp(x)
    return (e / e.sum(-1, keepdims=True)).astype(np.float16)


def test_split_word_and_special_tokens(tok):
    enc = wordmaps.encode_words(tok, ["the", "unbelievable", "cat"])
    assert tok.convert_ids_to_tokens(list(enc.input_ids)) == [
        "[CLS]", "the", "un", "##believ", "##able", "cat", "[SEP]"]
    assert enc.word_ids == (None, 0, 1, 1, 1, 2, None)
    assert enc.tok2word.tolist() == [0, 1, 2, 2, 2, 3, 4]
    # [CLS] and [SEP] are words of their own, never input words
    assert enc.is_special.tolist() == [True, False, False, False, True]
    assert enc.word_pos.tolist() == [1, 2, 3]
    assert enc.n_positions == 5 and enc.n_words == 3


def test_word_maps_sum_to_and_average_from(tok):
    enc = wordmaps.encode_words(tok, ["the", "unbelievable", "cat"])
    a = _softmax_maps(len(enc))
    w = wordmaps.word_maps(a, enc).attn
    assert w.shape == (2, 2, 5, 5)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-3)  # rows still sum to 1
    a32 = a.astype(np.float32)
    # TO the split word: sum over its three pieces; FROM it: mean of their rows
    np.testing.assert_allclose(w[0, 0, 1, 2], a32[0, 0, 1, 2:5].sum(), rtol=1e-5)
    np.testing.assert_allclose(w[1, 0, 2, 0], a32[1, 0, 2:5, 0].mean(), rtol=1e-5)
    # same as the matrix-product reference in attention.word_level
    np.testing.assert_allclose(w, attention.word_level(a, enc.tok2word), atol=1e-6)


def test_one_word_sentence(tok):
    enc = wordmaps.encode_words(tok, ["cat"])
    assert enc.word_pos.tolist() == [1] and enc.is_special.tolist() == [True, False, True]
    maps = wordmaps.word_maps(_softmax_maps(3), enc)
    np.testing.assert_allclose(maps.attn.sum(-1), 1.0, atol=1e-3)
    sent = SimpleNamespace(heads=(0,), deprels=("root",), words=("cat",))
    df = syntax.score_heads([(sent, maps)], min_count=0)
    assert set(df["relation"]) == {"All"} and (df["total"] == 1).all()
    assert (df["correct"] == 0).all()  # the root word is never right


def test_no_split_word_is_identity(tok):
    enc = wordmaps.encode_words(tok, ["the", "cat", "sat"])
    a = _softmax_maps(len(enc))
    np.testing.assert_array_equal(wordmaps.word_maps(a, enc).attn, a.astype(np.float32))


def test_word_without_pieces_becomes_unk(tok):
    enc = wordmaps.encode_words(tok, ["the", "\u200b", "cat"])
    assert enc.unk_words == (1,)
    assert enc.n_words == 3
    assert tok.convert_ids_to_tokens(enc.input_ids[2]) == "[UNK]"
    assert wordmaps.piece_counts(tok, ["the", "\u200b", "unbelievable"]) == [1, 1, 3]


def test_encode_corpus_drops_and_counts_long_inputs(tok):
    lists = [["cat"], ["the", "unbelievable", "cat", "sat"], ["dog"]]
    ec = wordmaps.encode_corpus(tok, lists, max_length=5)
    assert ec.kept == [0, 2] and ec.dropped == [1]
    assert ec.report["dropped_too_long"] == 1 and ec.report["inputs"] == 3
    assert ec.report["longest_pieces"] == 8
    assert len(ec.inputs()) == 2


def test_piece_counts_chunking(tok):
    words = ["the", "unbelievable", "cat", "dogs"] * 7
    assert wordmaps.piece_counts(tok, words, chunk=3) == wordmaps.piece_counts(tok, words)


def test_stream_from_real_extraction(tiny_loaded, tmp_path):
    lists = [["the", "cat", "sat", "on", "the", "mat"], ["unbelievable"], ["he", "ran", "."]]
    ec = wordmaps.encode_corpus(tiny_loaded.tokenizer, lists)
    store = attention.extract_attention(tiny_loaded, ec.inputs(), cache_dir=tmp_path,
                                        progress=False)
    items = list(wordmaps.with_items(lists, store, ec.encoded))
    assert [len(w) for w, _ in items] == [6, 1, 3]
    for words, maps in items:
        assert maps.attn.shape == (2, 2, len(words) + 2, len(words) + 2)
        np.testing.assert_allclose(maps.attn.sum(-1), 1.0, atol=2e-3)
    with pytest.raises(ValueError, match="store has"):
        list(wordmaps.iter_word_maps(store, ec.encoded[:2]))
