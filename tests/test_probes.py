"""Section 5 probes: features and scores against hand computations, learning a planted head,
UAS with punctuation excluded, determinism and streaming."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analysis_utils.analyses.probes import (
    AttentionGloveProbe,
    AttentionOnlyProbe,
    DistanceGloveProbe,
    ProbeSentence,
    attention_features,
    distance_features,
    document_numbers,
    evaluate_uas,
    make_probe_sentence,
    predict_heads,
    right_branching,
    right_branching_probe,
    train_probe,
    train_probes,
    uas_by_sentence,
    uas_counts,
)
from analysis_utils.analyses.trees import is_tree
from analysis_utils.data.glove import GloVe, load_glove

VOCAB = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", ".", ","]


@pytest.fixture(scope="module")
def tiny_glove():
    rng = np.random.default_rng(3)
    return GloVe(VOCAB, rng.normal(size=(len(VOCAB), 4)).astype(np.float32))


# ---- toy corpus ---------------------------------------------------------------------------


def random_tree(rng, n):
    order = rng.permutation(n)
    heads = np.zeros(n, dtype=np.int64)
    for t in range(1, n):
        heads[order[t]] = order[rng.integers(0, t)] + 1
    return heads


def planted_sentence(rng, layers=2, heads_per_layer=3, planted=(1, 1), strength=0.6):
    """Random tree; every head's rows are Dirichlet noise, except the planted head whose row
    for word i puts ``strength`` on its gold head ([CLS] when the head is ROOT)."""
    n = int(rng.integers(3, 13))
    gold = random_tree(rng, n)
    m = n + 2
    attn = rng.dirichlet(np.ones(m), size=(layers, heads_per_layer, m)).astype(np.float32)
    word_pos = np.arange(1, n + 1)
    row = attn[planted[0], planted[1]]
    row[word_pos] *= 1 - strength
    for i in range(n):
        target = 0 if gold[i] == 0 else word_pos[gold[i] - 1]
        row[word_pos[i], target] += strength
    words = [VOCAB[k] for k in rng.integers(0, len(VOCAB), size=n)]
    upos = ["PUNCT" if w in {".", ","} else "X" for w in words]
    return make_probe_sentence(attn, word_pos, gold, upos, words)


def toy_corpus(seed, count):
    rng = np.random.default_rng(seed)
    return [planted_sentence(rng) for _ in range(count)]


# ---- features and hand-computed scores -----------------------------------------------------


def test_attention_features_layout():
    # m = 4: [CLS] w1 w2 [SEP]; one layer, two heads.
    a = np.zeros((1, 2, 4, 4), dtype=np.float32)
    a[0, 0] = [[.1, .2, .3, .4], [.5, .0, .2, .3], [.1, .6, .1, .2], [.25, .25, .25, .25]]
    a[0, 1] = [[.4, .3, .2, .1], [.1, .1, .7, .1], [.3, .3, .3, .1], [.25, .25, .25, .25]]
    f = attention_features(a, [1, 2], dtype=np.float32)
    assert f.shape == (4, 2, 3)
    # word 1 (i = 0), candidate word 2 (column 2): a(1 -> 2) per head, then a(2 -> 1).
    np.testing.assert_allclose(f[:, 0, 2], [.2, .7, .6, .3])
    np.testing.assert_allclose(f[:, 1, 1], [.6, .3, .2, .7])
    # ROOT column: attention to [CLS] (channels 0..K-1) and to [SEP] (K..2K-1).
    np.testing.assert_allclose(f[:, 0, 0], [.5, .1, .3, .1])
    np.testing.assert_allclose(f[:, 1, 0], [.1, .3, .2, .1])
    # Self column is zero.
    assert f[:, 0, 1].sum() == 0 and f[:, 1, 2].sum() == 0
    assert attention_features(a, [1, 2]).dtype == np.float16


def _hand_sentence():
    a = np.zeros((1, 2, 4, 4), dtype=np.float32)
    a[0, 0] = [[.1, .2, .3, .4], [.5, .0, .2, .3], [.1, .6, .1, .2], [.25, .25, .25, .25]]
    a[0, 1] = [[.4, .3, .2, .1], [.1, .1, .7, .1], [.3, .3, .3, .1], [.25, .25, .25, .25]]
    return make_probe_sentence(a, [1, 2], [2, 0], ["DET", "NOUN"], ["the", "cat"],
                               dtype=np.float32)


def test_attention_only_scores_by_hand():
    s = _hand_sentence()
    p = AttentionOnlyProbe(2)
    with torch.no_grad():
        p.w.copy_(torch.tensor([1.0, 2.0]))
        p.u.copy_(torch.tensor([-1.0, 0.5]))
        p.w_root.copy_(torch.tensor([3.0, 0.0]))
        p.u_root.copy_(torch.tensor([0.0, -2.0]))
        p.b_root.fill_(0.25)
    out = p(s).detach().numpy()
    # word 1 -> word 2: w.(a1(1->2), a2(1->2)) + u.(a1(2->1), a2(2->1))
    assert out[0, 2] == pytest.approx(1 * .2 + 2 * .7 - 1 * .6 + .5 * .3)
    assert out[1, 1] == pytest.approx(1 * .6 + 2 * .3 - 1 * .2 + .5 * .7)
    # ROOT: wR.(a(i->CLS)) + uR.(a(i->SEP)) + bR
    assert out[0, 0] == pytest.approx(3 * .5 + 0 * .1 - 2 * .1 + .25)
    assert out[1, 0] == pytest.approx(3 * .1 - 2 * .1 + .25)
    assert np.isneginf(out[0, 1]) and np.isneginf(out[1, 2])


def test_attention_glove_scores_by_hand(tiny_glove):
    s = _hand_sentence()
    s.words = ["the", "zzz-oov"]  # second word is OOV: GloVe zero + learned UNK vector
    p = AttentionGloveProbe(2, tiny_glove)
    torch.manual_seed(5)
    with torch.no_grad():
        for prm in p.parameters():
            prm.copy_(torch.randn_like(prm))
    out = p(s).detach().numpy()
    P = {k: v.detach().numpy().astype(np.float64) for k, v in p.named_parameters()}
    v = np.stack([tiny_glove.vector("the"), P["inputs.unk"]])
    f = s.features
    for i, c in [(0, 2), (1, 1)]:
        j = c - 1
        x = np.concatenate([v[i], v[j]])
        w = P["W.weight"] @ x + P["W.bias"]
        u = P["U.weight"] @ x + P["U.bias"]
        assert out[i, c] == pytest.approx(w @ f[:2, i, c] + u @ f[2:, i, c], rel=1e-5)
    for i in range(2):
        x = np.concatenate([v[i], P["root_vec"]])
        w = P["W_root.weight"] @ x + P["W_root.bias"]
        u = P["U_root.weight"] @ x + P["U_root.bias"]
        assert out[i, 0] == pytest.approx(w @ f[:2, i, 0] + u @ f[2:, i, 0], rel=1e-5)


def test_distance_features_by_hand():
    f = distance_features(9, max_indicator=5)
    assert f.shape == (9, 10, 17)
    # dependent 2, candidate word 3 (column 4): d = +1 -> indicator column 5 (offsets -5..-1, 1..5)
    row = f[2, 4]
    assert row[5] == 1 and row[:10].sum() == 1 and row[10:12].sum() == 0
    np.testing.assert_allclose(row[12:16], [0, .1, 0, np.log(2)], rtol=1e-6)
    # dependent 8, candidate word 1 (column 2): d = -7 -> "before, beyond 5"
    row = f[8, 2]
    assert row[:10].sum() == 0 and row[10] == 1 and row[11] == 0
    np.testing.assert_allclose(row[12:16], [.7, 0, np.log(8), 0], rtol=1e-6)
    assert row[16] == 0
    # ROOT column: only the is-ROOT indicator.
    np.testing.assert_array_equal(f[3, 0], np.eye(17)[16])


def test_distance_glove_scores_by_hand(tiny_glove):
    s = ProbeSentence(heads=[2, 0, 2], upos=["X"] * 3, words=["the", "cat", "sat"])
    p = DistanceGloveProbe(tiny_glove, hidden=8)
    torch.manual_seed(1)
    p.reset_parameters()
    out = p(s).detach().numpy()
    P = {k: v.detach().numpy().astype(np.float64) for k, v in p.named_parameters()}
    v = tiny_glove.matrix(s.words).astype(np.float64)
    dist = distance_features(3)
    for i, c in [(0, 2), (2, 1), (1, 0)]:
        cand = P["root_vec"] if c == 0 else v[c - 1]
        x = np.concatenate([v[i], cand, dist[i, c]])
        h = np.maximum(P["hidden.weight"] @ x + P["hidden.bias"], 0)
        assert out[i, c] == pytest.approx((P["out.weight"] @ h + P["out.bias"]).item(), rel=1e-5)


# ---- UAS and baselines ---------------------------------------------------------------------


def test_uas_excludes_punctuation_by_hand():
    gold = [2, 0, 2, 2]
    pred = [2, 0, 1, 3]  # word 3 wrong, word 4 (punct) wrong
    upos = ["DET", "NOUN", "VERB", "PUNCT"]
    assert uas_counts(pred, gold, upos) == (2, 3)
    assert uas_counts(pred, gold, upos, exclude_punct=False) == (2, 4)
    sentences = [ProbeSentence(heads=gold, upos=upos, words=["a", "b", "c", "."])]
    fixed = lambda s: np.array(pred)  # noqa: E731
    assert evaluate_uas(fixed, sentences) == pytest.approx(100 * 2 / 3)
    assert evaluate_uas(fixed, sentences, exclude_punct=False) == pytest.approx(50.0)


def test_uas_by_sentence_by_hand():
    # sentence 0: words 1, 2 right, word 3 wrong, word 4 punct (skipped): (2, 3)
    # sentence 1: word 1 wrong, word 2 right: (1, 2); sentence 2: only punctuation: (0, 0)
    pred = [2, 0, 1, 3, 0, 1, 0]
    gold = [2, 0, 2, 2, 2, 1, 0]
    sent = [0, 0, 0, 0, 1, 1, 2]
    scored = [True, True, True, False, True, True, False]
    counts = uas_by_sentence(pred, gold, sent, scored)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, [[2, 3], [1, 2], [0, 0]])
    # pooled: 3 of 5 scored words, the UAS of the whole set
    assert 100 * counts[:, 0].sum() / counts[:, 1].sum() == pytest.approx(60.0)
    # a trailing sentence with no words still gets its row
    np.testing.assert_array_equal(uas_by_sentence(pred, gold, sent, scored, n_sentences=4)[3],
                                  [0, 0])
    with pytest.raises(ValueError, match="n_sentences"):
        uas_by_sentence(pred, gold, sent, scored, n_sentences=2)
    with pytest.raises(ValueError, match="per word"):
        uas_by_sentence(pred[:3], gold, sent, scored)


def test_evaluate_uas_by_sentence_matches_the_pooled_uas():
    sentences = [ProbeSentence(heads=[2, 0, 2, 2], upos=["DET", "NOUN", "VERB", "PUNCT"],
                               words=list("abc.")),
                 ProbeSentence(heads=[0, 1], upos=["X", "X"], words=list("ab"))]
    counts = evaluate_uas(right_branching_probe, sentences, by_sentence=True)
    # right-branching: [2, 3, 4, 0] -> word 1 right, 2 and 3 wrong (punct skipped): (1, 3);
    # [2, 0] -> both wrong: (0, 2)
    np.testing.assert_array_equal(counts, [[1, 3], [0, 2]])
    assert evaluate_uas(right_branching_probe, sentences) == pytest.approx(
        100 * counts[:, 0].sum() / counts[:, 1].sum())
    assert evaluate_uas(right_branching_probe, [], by_sentence=True).shape == (0, 2)


def test_document_numbers():
    np.testing.assert_array_equal(document_numbers(["d1", "d1", "d2", "d1", None, None, "d3"]),
                                  [1, 1, 2, 1, 3, 4, 5])
    assert document_numbers([]).shape == (0,)


def test_right_branching():
    np.testing.assert_array_equal(right_branching(4), [2, 3, 4, 0])
    np.testing.assert_array_equal(right_branching(1), [0])
    assert is_tree(right_branching(7), single_root=True)
    s = ProbeSentence(heads=[2, 3, 0, 3], upos=["X", "X", "X", "PUNCT"], words=list("abcd"))
    # predictions [2, 3, 4, 0]: words 1, 2 right, word 3 wrong, word 4 punct (skipped)
    assert evaluate_uas(right_branching_probe, [s]) == pytest.approx(100 * 2 / 3)


# ---- learning ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpora():
    return toy_corpus(10, 200), toy_corpus(11, 60)


def test_attention_only_learns_planted_head(corpora):
    train, dev = corpora
    probe = AttentionOnlyProbe(6)
    log = train_probe(probe, lambda: iter(train), epochs=1, seed=0)
    assert log.sentences == 200
    assert evaluate_uas(probe, dev) > 95
    planted = 1 * 3 + 1
    assert int(torch.argmax(probe.w)) == planted and probe.w.detach()[planted].item() > 0
    mst = evaluate_uas(probe, dev, decode="mst")
    assert mst > 95
    for s in dev[:10]:
        assert is_tree(predict_heads(probe, s, decode="mst"), single_root=True)


def test_attention_glove_learns_planted_head(corpora):
    # Real GloVe 6B vectors (the toy words are all in vocabulary).
    train, dev = corpora
    probe = AttentionGloveProbe(6, load_glove())
    train_probe(probe, lambda: iter(train), epochs=1, seed=0)
    assert evaluate_uas(probe, dev) > 95


def test_distance_glove_learns_right_branching(tiny_glove):
    rng = np.random.default_rng(4)
    sents = []
    for _ in range(260):
        n = int(rng.integers(3, 15))
        words = [VOCAB[k] for k in rng.integers(0, len(VOCAB), size=n)]
        sents.append(ProbeSentence(heads=right_branching(n), upos=["X"] * n, words=words))
    probe = DistanceGloveProbe(tiny_glove)
    train_probe(probe, sents[:200], epochs=1, seed=0)
    assert evaluate_uas(probe, sents[200:]) > 95


def test_training_is_deterministic_and_streams(corpora):
    train, dev = corpora
    calls = []

    def factory():
        calls.append(1)
        yield from train[:50]

    a, b = AttentionOnlyProbe(6), AttentionOnlyProbe(6)
    torch.manual_seed(123)  # global RNG state must not matter
    threads = torch.get_num_threads()
    log_a = train_probe(a, factory, epochs=2, seed=7)
    assert torch.get_num_threads() == threads  # the single-thread switch is undone
    log_b = train_probe(b, factory, epochs=2, seed=7)
    assert len(calls) == 4 and log_a.sentences == 100 and len(log_a.epoch_losses) == 2
    assert log_a.epoch_losses == log_b.epoch_losses
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_bad_inputs():
    with pytest.raises(ValueError):
        ProbeSentence(heads=[0, 1], upos=["X"], words=["a", "b"])
    s = _hand_sentence()
    with pytest.raises(ValueError):
        AttentionOnlyProbe(3)(s)
    with pytest.raises(ValueError):
        predict_heads(AttentionOnlyProbe(2), s, decode="beam")


def test_train_probes_together_equals_training_each_alone(corpora, tiny_glove):
    """One pass for several probes gives exactly what one pass per probe gives."""
    train, _ = corpora
    order = np.random.default_rng(3).permutation(80)
    src = lambda: (train[i] for i in order)  # noqa: E731 - a stream factory in a seeded order
    make = {"only": lambda: AttentionOnlyProbe(6), "glove": lambda: AttentionGloveProbe(6, tiny_glove),
            "dist": lambda: DistanceGloveProbe(tiny_glove, hidden=8)}
    together = {k: f() for k, f in make.items()}
    logs = train_probes(together, src, epochs=2, seed=4)
    for name, f in make.items():
        alone = f()
        log = train_probe(alone, src, epochs=2, seed=4)
        for pa, pb in zip(alone.parameters(), together[name].parameters(), strict=True):
            assert torch.equal(pa, pb), name
        assert logs[name].step_losses == log.step_losses
        assert logs[name].epoch_losses == pytest.approx(log.epoch_losses, rel=1e-12)
        assert (logs[name].sentences, logs[name].words) == (log.sentences, log.words) == (
            160, 2 * sum(s.n for s in train[:80]))
    # each log holds its own probe's losses, not the sum
    assert logs["only"].step_losses != logs["glove"].step_losses
    with pytest.raises(ValueError, match="no probes"):
        train_probes({}, src)


def test_seed_sets_initialisation_and_order_is_the_streams(corpora, tiny_glove):
    train, _ = corpora
    first = [train_probe(AttentionGloveProbe(6, tiny_glove), train[:30], seed=s) for s in (0, 1)]
    a, b = AttentionGloveProbe(6, tiny_glove), AttentionGloveProbe(6, tiny_glove)
    train_probe(a, train[:30], seed=0)
    train_probe(b, train[:30], seed=1)
    assert not torch.equal(a.root_vec, b.root_vec)  # random ROOT/UNK start from the seed
    assert first[0].step_losses != first[1].step_losses
    # attention-only starts at zero: with one order, two seeds give the same probe
    c, d = AttentionOnlyProbe(6), AttentionOnlyProbe(6)
    train_probe(c, train[:30], seed=0)
    train_probe(d, train[:30], seed=1)
    assert torch.equal(c.w, d.w)
    e = AttentionOnlyProbe(6)
    train_probe(e, train[:30][::-1], seed=0)  # another order: another probe
    assert not torch.equal(c.w, e.w)
