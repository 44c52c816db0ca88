"""FrameNet head scores (analysis_utils.analyses.framenet) on hand-made maps, and the alignment
of NLTK tokens to word pieces on the tiny random BERT of conftest."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from analysis_utils.analyses import framenet as fs
from analysis_utils.engine import wordmaps
from analysis_utils.engine.attention import extract_attention


def _maps() -> np.ndarray:
    """(2 layers, 2 heads, 5, 5), rows = from. Target at 3, elements at 0 and 1."""
    a = np.zeros((2, 2, 5, 5))
    a[0, 0, 3, 0] = 0.6   # target -> element 0
    a[0, 0, 0, 3] = 0.1   # element 0 -> target
    a[0, 1, 1, 3] = 0.8   # element 1 -> target only
    a[0, 1, 3, 1] = 0.3
    a[1, 0, 3, 2] = 0.9   # target -> a word that is not linked: never counted
    a[1, 0, 3, 1] = 0.05
    a[1, 1, 3, 4] = 0.7   # not linked either
    return a


@pytest.mark.parametrize("direction, expected", [
    ("target_to_element", [[0.6, 0.3], [0.05, 0.0]]),
    ("element_to_target", [[0.1, 0.8], [0.0, 0.0]]),
    ("both", [[0.6, 0.8], [0.05, 0.0]]),
])
def test_link_score_by_direction(direction, expected):
    np.testing.assert_allclose(fs.link_score(_maps(), 3, [0, 1], direction), expected)


def test_link_score_takes_the_max_over_several_target_positions():
    a = _maps()
    a[0, 0, 4, 0] = 0.95  # a second piece of the target (position 4)
    assert fs.link_score(a, [3, 4], [0, 1], "target_to_element")[0, 0] == pytest.approx(0.95)
    assert fs.link_score(a, [3], [0, 1], "target_to_element")[0, 0] == pytest.approx(0.6)


@pytest.mark.parametrize("args, match", [
    ((3, [3]), "overlap"), ((3, [7]), "outside"), ((3, []), "non-empty"),
])
def test_link_score_refuses_bad_positions(args, match):
    with pytest.raises(ValueError, match=match):
        fs.link_score(_maps(), *args)


def test_link_score_refuses_bad_direction_and_shape():
    with pytest.raises(ValueError, match="direction"):
        fs.link_score(_maps(), 3, [0], "forward")
    with pytest.raises(ValueError, match="layers, heads, m, m"):
        fs.link_score(np.zeros((2, 5, 5)), 3, [0])


def test_sentence_and_head_scores_average_over_sentences():
    other = np.zeros((2, 2, 4, 4))
    other[:, :, 0, 2] = 0.2  # target 0 -> element 2, every head
    links = [(_maps(), 3, [0, 1]), (other, 0, [2])]
    per = fs.sentence_scores(links, "both")
    assert per.shape == (2, 2, 2)
    np.testing.assert_allclose(fs.head_scores(per), [[0.4, 0.5], [0.125, 0.1]])
    with pytest.raises(ValueError, match="no sentences"):
        fs.sentence_scores([])


def _planted(n_sent=20, seed=0) -> np.ndarray:
    """(n, 6, 12) per-sentence scores around 0.05, with heads 3-2 and 5-10 (1-based) near 0.2."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.03, 0.07, size=(n_sent, 6, 12))
    s[:, 2, 1] = rng.uniform(0.18, 0.22, n_sent)
    s[:, 4, 9] = rng.uniform(0.19, 0.23, n_sent)
    return s


def test_standout_heads_finds_the_planted_heads():
    scores = fs.head_scores(_planted())
    out = fs.standout_heads(scores, n_sd=2.0)
    assert list(out["head_label"]) == ["5-10", "3-2"]
    assert (out["z"] > 2).all()
    top3 = fs.standout_heads(scores, k=3)
    assert list(top3["head_label"][:2]) == ["5-10", "3-2"] and len(top3) == 3
    flat = fs.standout_heads(np.full((2, 2), 0.1))
    assert flat.empty  # no spread, nothing stands out


def test_head_table_is_tidy_and_ranked():
    per = _planted()
    table = fs.head_table(per)
    assert len(table) == 72 and list(table["rank"]) == list(range(1, 73))
    assert list(table.loc[table["standout"], "head_label"]) == ["5-10", "3-2"]
    row = table.set_index("head_label").loc["3-2"]
    assert (row["layer"], row["head"]) == (2, 1)
    assert row["score"] == pytest.approx(per[:, 2, 1].mean())
    assert row["sd"] == pytest.approx(per[:, 2, 1].std(ddof=1))
    assert row["n_sentences"] == 20


def test_compare_readings():
    a, b = fs.head_scores(_planted(seed=0)), fs.head_scores(_planted(seed=1))
    df = fs.compare_readings({"exact": a, "broad": b})
    assert {"score_exact", "score_broad", "standout_exact", "standout_broad"} <= set(df.columns)
    assert df["standout_exact"].sum() == 2
    rho = df.attrs["spearman"][("exact", "broad")]
    assert 0 < rho <= 1
    with pytest.raises(ValueError, match="shape"):
        fs.compare_readings({"a": a, "b": np.zeros((2, 2))})


# --------------------------------------------------------------------------- alignment


def _sentence(words, target, linked):
    return SimpleNamespace(words=tuple(words), target=target, linked_tokens=tuple(linked))


def test_link_positions_word_and_piece_level(tiny_loaded):
    # "unbelievable" is three pieces in the tiny vocabulary: un ##believ ##able
    s = _sentence(["he", "saw", "the", "unbelievable", "cat"], target=1, linked=[3, 4])
    enc = wordmaps.encode_words(tiny_loaded.tokenizer, s.words)
    assert fs.link_positions(s, enc, "word") == ([2], [4, 5])
    assert fs.link_positions(s, enc, "piece") == ([2], [4, 5, 6, 7])
    with pytest.raises(ValueError, match="do not belong together"):
        fs.link_positions(_sentence(["he"], 0, []), enc)
    labels = fs.map_labels(enc, s.words, tiny_loaded.tokenizer)
    assert labels == ["[CLS]", "he", "saw", "the", "unbelievable", "cat", "[SEP]"]


def test_iter_links_scores_match_the_maps(tiny_loaded, tmp_path):
    sents = [_sentence(["he", "saw", "the", "unbelievable", "cat"], 1, [3]),
             _sentence(["the", "dog", "ran", "and", "sat"], 4, [0, 1])]
    enc = [wordmaps.encode_words(tiny_loaded.tokenizer, s.words) for s in sents]
    store = extract_attention(tiny_loaded, [e.as_input() for e in enc], cache_dir=tmp_path,
                              progress=False)
    word = fs.sentence_scores(fs.iter_links(sents, store, enc, "word"), "both")
    piece = fs.sentence_scores(fs.iter_links(sents, store, enc, "piece"), "both")
    # by hand, sentence 0: word map positions 2 (saw) and 4 (unbelievable)
    wm = wordmaps.word_maps(store[0], enc[0]).attn
    np.testing.assert_allclose(word[0], np.maximum(wm[:, :, 2, 4], wm[:, :, 4, 2]), rtol=1e-6)
    # piece level: saw is piece 2, unbelievable pieces 4-6
    raw = np.asarray(store[0], dtype=np.float64)
    expected = np.maximum(raw[:, :, 2, 4:7].max(-1), raw[:, :, 4:7, 2].max(-1))
    np.testing.assert_allclose(piece[0], expected, rtol=1e-6)
    # no split word in sentence 1: both levels agree
    np.testing.assert_allclose(word[1], piece[1], rtol=1e-6)
    with pytest.raises(ValueError, match="one to one"):
        list(fs.iter_links(sents[:1], store, enc))
    df = fs.example_map(wm, fs.map_labels(enc[0], sents[0].words, tiny_loaded.tokenizer), 1, 0)
    assert df.loc["saw", "unbelievable"] == pytest.approx(wm[1, 0, 2, 4])


def test_unlinked_tokens_follow_the_links_distance_rule():
    s = _sentence(["He", "was", "becoming", "very", "agitated", "today", ",", "then", "calm"],
                  target=4, linked=[0])
    # not the target, not linked, more than 2 words away, not punctuation
    assert fs.unlinked_tokens(s) == [1, 7, 8]
    assert fs.unlinked_tokens(s, min_gap=3) == [8]


def test_unlinked_null_scores_and_empty_sentences(tiny_loaded, tmp_path):
    sents = [_sentence(["the", "dog", "ran", "and", "sat", "down", "there"], 0, [3]),
             _sentence(["he", "saw", "cats"], 0, [2])]  # nothing unlinked far enough away
    enc = [wordmaps.encode_words(tiny_loaded.tokenizer, s.words) for s in sents]
    store = extract_attention(tiny_loaded, [e.as_input() for e in enc], cache_dir=tmp_path,
                              progress=False)
    null = fs.sentence_scores(fs.iter_links(sents, store, enc, "word", unlinked=True), "both")
    wm = wordmaps.word_maps(store[0], enc[0]).attn
    # target "the" at word position 1; unlinked words 4, 5, 6 (sat, down, there) at 5, 6, 7
    want = np.max([np.maximum(wm[:, :, 1, p], wm[:, :, p, 1]) for p in (5, 6, 7)], axis=0)
    np.testing.assert_allclose(null[0], want, rtol=1e-6)
    assert np.isnan(null[1]).all()
