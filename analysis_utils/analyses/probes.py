"""Attention-based probing classifiers for dependency parsing (Clark et al. 2019, Section 5,
Table 3): features (:func:`attention_features`), graph-based head selectors
(:class:`AttentionOnlyProbe`, :class:`AttentionGloveProbe`, :class:`DistanceGloveProbe`,
:func:`right_branching`), training (:func:`train_probe`; :func:`train_probes` for several probes
on one stream) and UAS (:func:`evaluate_uas`; per sentence :func:`uas_by_sentence`). For
dependent ``i`` the candidates are ROOT (0) and word ``j`` (``j + 1``), the word itself
excluded; a probe returns scores ``(n, n + 1)``, gold heads use the same numbering. The probes,
ROOT, OOV words, training and decoding: notebook 04.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .. import training
from ..data.glove import GloVe
from ..training import torch_threads
from .trees import chu_liu_edmonds

PUNCT = "PUNCT"
FEATURE_DTYPE = np.float16


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass
class ProbeSentence:
    """One sentence for the probes. ``features`` is optional (the distance probe needs none)."""

    heads: np.ndarray  # (n,) 1-based, 0 = ROOT
    upos: Sequence[str]
    words: Sequence[str]
    features: np.ndarray | None = None  # (2K, n, n + 1), float16 or float32
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.heads = np.asarray(self.heads, dtype=np.int64)
        n = self.heads.shape[0]
        if len(self.upos) != n or len(self.words) != n:
            raise ValueError("heads, upos and words must have the same length")
        if self.features is not None and self.features.shape[1:] != (n, n + 1):
            raise ValueError(f"features {self.features.shape} do not fit n = {n}")

    @property
    def n(self) -> int:
        return int(self.heads.shape[0])


def attention_features(
    word_attn: np.ndarray,
    word_pos: Sequence[int],
    cls_pos: int = 0,
    sep_pos: int = -1,
    dtype=FEATURE_DTYPE,
) -> np.ndarray:
    """Probe features ``(2 * L * H, n, n + 1)`` from a word-level map ``(L, H, m, m)``.

    ``word_pos``: positions of the n syntactic words in the map; ``cls_pos`` / ``sep_pos``:
    positions of [CLS] and of the [SEP] that closes the sentence (default first and last).

    Layout, with ``K = layers * heads``, every head in both directions as the paper and the
    released code do:

    - channel ``k < K``, column ``j + 1``: ``a^k(i -> j)``, dependent ``i`` attends to
      candidate ``j``;
    - channel ``K + k``, column ``j + 1``: ``a^k(j -> i)``, candidate ``j`` attends to
      dependent ``i``;
    - column 0 (ROOT): channel ``k`` holds ``a^k(i -> [CLS])`` and channel ``K + k`` holds
      ``a^k(i -> [SEP])``. ROOT is not a word, so, like the released code, it is scored from
      the word's attention to the special tokens, but with its OWN learned weights per head
      and direction plus a bias (never the word-pair weights, whose features mean something
      else);
    - the self column (``j == i``) is zero (masked to ``-inf`` in the scores).

    Maps are indexed through ``word_pos`` (specials excluded), so candidate ``j`` is always
    paired with word ``j`` itself (the released GloVe probe paired candidate j with word
    j + 1; this module does not).
    """
    attn = np.asarray(word_attn)
    if attn.ndim != 4 or attn.shape[2] != attn.shape[3]:
        raise ValueError(f"word_attn must be (layers, heads, m, m), got {attn.shape}")
    n_layers, n_heads, m, _ = attn.shape
    k = n_layers * n_heads
    pos = np.asarray(word_pos, dtype=np.int64)
    n = pos.shape[0]
    flat = attn.reshape(k, m, m)
    sub = flat[:, pos[:, None], pos[None, :]].astype(np.float32)  # (K, n, n): [k, i, j] = a(i->j)
    out = np.zeros((2 * k, n, n + 1), dtype=dtype)
    out[:k, :, 1:] = sub
    out[k:, :, 1:] = sub.transpose(0, 2, 1)  # [k, i, j] = a(j -> i)
    out[:k, :, 0] = flat[:, pos, cls_pos % m]
    out[k:, :, 0] = flat[:, pos, sep_pos % m]
    diag = np.arange(n)
    out[:, diag, diag + 1] = 0
    return out


def make_probe_sentence(
    word_attn: np.ndarray | None,
    word_pos: Sequence[int] | None,
    heads: Sequence[int],
    upos: Sequence[str],
    words: Sequence[str],
    **feature_kwargs,
) -> ProbeSentence:
    """A :class:`ProbeSentence` from one sentence of the engine's output (features computed
    here; pass ``word_attn=None`` for a sentence used only by attention-free probes)."""
    feats = None
    if word_attn is not None:
        feats = attention_features(word_attn, word_pos, **feature_kwargs)
    return ProbeSentence(heads=np.asarray(heads), upos=list(upos), words=list(words),
                         features=feats)


def distance_features(n: int, max_indicator: int = 5) -> np.ndarray:
    """Distance features ``(n, n + 1, D)`` for dependent i and candidate column c.

    With ``d = j - i`` (candidate minus dependent; d > 0: head after the dependent), for word
    candidates: one indicator per ``d`` in ``-max..-1, 1..max``, one for ``d < -max`` and one
    for ``d > max``, then continuous ``|d| / 10`` and ``log(1 + |d|)``, each twice (one copy
    non-zero only for heads before, one only for heads after), and a last is-ROOT indicator
    (1 only in column 0, where every other feature is 0). ``D = 2 * max + 7``.
    """
    offsets = [d for d in range(-max_indicator, max_indicator + 1) if d != 0]
    dim = len(offsets) + 2 + 4 + 1
    out = np.zeros((n, n + 1, dim), dtype=np.float32)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    d = np.broadcast_to(j - i, (n, n))
    words = out[:, 1:, :]
    for col, off in enumerate(offsets):
        words[..., col] = d == off
    base = len(offsets)
    words[..., base] = d < -max_indicator
    words[..., base + 1] = d > max_indicator
    ad = np.abs(d).astype(np.float32)
    before, after = d < 0, d > 0
    words[..., base + 2] = np.where(before, ad / 10.0, 0.0)
    words[..., base + 3] = np.where(after, ad / 10.0, 0.0)
    words[..., base + 4] = np.where(before, np.log1p(ad), 0.0)
    words[..., base + 5] = np.where(after, np.log1p(ad), 0.0)
    out[:, 0, -1] = 1.0
    return out


def _self_mask(n: int) -> torch.Tensor:
    mask = torch.zeros(n, n + 1, dtype=torch.bool)
    idx = torch.arange(n)
    mask[idx, idx + 1] = True
    return mask


def _features_tensor(sentence: ProbeSentence) -> torch.Tensor:
    if sentence.features is None:
        raise ValueError("this probe needs attention features (sentence.features is None)")
    return torch.from_numpy(np.asarray(sentence.features, dtype=np.float32))


# --------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------


class HeadSelector(nn.Module):
    """Base class: ``forward(sentence) -> (n, n + 1)`` scores with the self column at -inf."""

    def scores(self, sentence: ProbeSentence) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, sentence: ProbeSentence) -> torch.Tensor:
        s = self.scores(sentence)
        return s.masked_fill(_self_mask(sentence.n), float("-inf"))

    def reset_parameters(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class AttentionOnlyProbe(HeadSelector):
    """Linear combination of attention weights, both directions (Clark et al. eq. 1).

    ``n_heads_total = layers * heads`` (K). Parameters: ``w``, ``u`` (K,) for word candidates;
    ``w_root``, ``u_root`` (K,) and ``b_root`` for ROOT. All start at zero (uniform p).
    Scores: ``s_ij = sum_k w_k a^k_ij + u_k a^k_ji`` (the paper's form, no bias);
    ``s_i0 = sum_k w_root_k a^k(i -> [CLS]) + u_root_k a^k(i -> [SEP]) + b_root``.
    """

    def __init__(self, n_heads_total: int):
        super().__init__()
        self.n_heads_total = n_heads_total
        self.w = nn.Parameter(torch.zeros(n_heads_total))
        self.u = nn.Parameter(torch.zeros(n_heads_total))
        self.w_root = nn.Parameter(torch.zeros(n_heads_total))
        self.u_root = nn.Parameter(torch.zeros(n_heads_total))
        self.b_root = nn.Parameter(torch.zeros(()))

    def reset_parameters(self) -> None:
        with torch.no_grad():
            for p in self.parameters():
                p.zero_()

    def scores(self, sentence: ProbeSentence) -> torch.Tensor:
        f = _features_tensor(sentence)
        k = self.n_heads_total
        if f.shape[0] != 2 * k:
            raise ValueError(f"features have {f.shape[0]} channels, probe expects {2 * k}")
        words = torch.einsum("kij,k->ij", f[:k, :, 1:], self.w) + torch.einsum(
            "kij,k->ij", f[k:, :, 1:], self.u)
        root = f[:k, :, 0].T @ self.w_root + f[k:, :, 0].T @ self.u_root + self.b_root
        return torch.cat([root[:, None], words], dim=1)


class _GloveInput(nn.Module):
    """Fixed GloVe vectors of a sentence's words plus a learned UNK vector on OOV rows."""

    def __init__(self, glove: GloVe):
        super().__init__()
        self.glove = glove
        self.dim = glove.dim
        self.unk = nn.Parameter(torch.zeros(glove.dim))

    def forward(self, sentence: ProbeSentence) -> torch.Tensor:
        key = ("glove", id(self.glove))
        if key not in sentence.cache:
            vecs = torch.from_numpy(self.glove.matrix(sentence.words))
            oov = torch.from_numpy(self.glove.oov_mask(sentence.words))
            sentence.cache[key] = (vecs, oov)
        vecs, oov = sentence.cache[key]
        return vecs + oov[:, None].to(vecs.dtype) * self.unk


class AttentionGloveProbe(HeadSelector):
    """Attention + words probe (Clark et al. eq. 2): per-pair head weights from GloVe.

    ``W``, ``U``: (K, 2 * dim) (+ bias (K,) unless ``bias=False``) for word candidates;
    ``W_root``, ``U_root`` (K, 2 * dim) + bias and the learned ROOT vector ``root_vec`` for
    ROOT; the UNK vector for OOV words. Start: zero matrices (uniform p), small random ROOT
    and UNK vectors (from the training seed). Scores: per-pair head weights
    ``w = W [v_i; v_j] + b``, ``u = U [v_i; v_j] + c``, ``s_ij = w . a_ij + u . a_ji``; the
    bias (equivalent to a constant 1 appended to ``v_i ⊕ v_j``) is not in the paper's
    formula, ``bias=False`` gives the literal form. ROOT: ``w = W_root [v_i; r] + b_root`` on
    the [CLS]/[SEP] features, ``r`` the learned ROOT vector.
    """

    def __init__(self, n_heads_total: int, glove: GloVe, bias: bool = True):
        super().__init__()
        self.n_heads_total = n_heads_total
        self.inputs = _GloveInput(glove)
        d = glove.dim
        self.W = nn.Linear(2 * d, n_heads_total, bias=bias)
        self.U = nn.Linear(2 * d, n_heads_total, bias=bias)
        self.W_root = nn.Linear(2 * d, n_heads_total, bias=True)
        self.U_root = nn.Linear(2 * d, n_heads_total, bias=True)
        self.root_vec = nn.Parameter(torch.zeros(d))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            for lin in (self.W, self.U, self.W_root, self.U_root):
                lin.weight.zero_()
                if lin.bias is not None:
                    lin.bias.zero_()
            self.root_vec.normal_(0.0, 0.1)
            self.inputs.unk.normal_(0.0, 0.1)

    @staticmethod
    def _pair_weights(lin: nn.Linear, dep: torch.Tensor, cand: torch.Tensor):
        """Split ``lin([v_i; v_j])`` into ``A[i] + B[j]`` without building all pairs."""
        d = dep.shape[1]
        a = dep @ lin.weight[:, :d].T  # (n, K)
        b = cand @ lin.weight[:, d:].T  # (c, K)
        if lin.bias is not None:
            a = a + lin.bias
        return a, b

    def scores(self, sentence: ProbeSentence) -> torch.Tensor:
        f = _features_tensor(sentence)
        k = self.n_heads_total
        if f.shape[0] != 2 * k:
            raise ValueError(f"features have {f.shape[0]} channels, probe expects {2 * k}")
        v = self.inputs(sentence)  # (n, d)
        fw, fu = f[:k, :, 1:], f[k:, :, 1:]
        aw, bw = self._pair_weights(self.W, v, v)
        au, bu = self._pair_weights(self.U, v, v)
        words = (torch.einsum("kij,ik->ij", fw, aw) + torch.einsum("kij,jk->ij", fw, bw)
                 + torch.einsum("kij,ik->ij", fu, au) + torch.einsum("kij,jk->ij", fu, bu))
        r = self.root_vec.expand(v.shape[0], -1)
        vr = torch.cat([v, r], dim=1)
        w_root = self.W_root(vr)  # (n, K)
        u_root = self.U_root(vr)
        root = (f[:k, :, 0].T * w_root).sum(1) + (f[k:, :, 0].T * u_root).sum(1)
        return torch.cat([root[:, None], words], dim=1)


class DistanceGloveProbe(HeadSelector):
    """Baseline: one-hidden-layer MLP over ``[v_i; v_j; distance features]``, no attention.

    ROOT: ``v_j`` is the learned ``root_vec`` and only the is-ROOT distance feature is on.
    Hidden layer ``hidden`` units, ReLU; default PyTorch init drawn from the training seed.
    """

    def __init__(self, glove: GloVe, hidden: int = 128, max_indicator: int = 5):
        super().__init__()
        self.inputs = _GloveInput(glove)
        self.max_indicator = max_indicator
        d = glove.dim
        dist_dim = 2 * max_indicator + 7
        self.root_vec = nn.Parameter(torch.zeros(d))
        self.hidden = nn.Linear(2 * d + dist_dim, hidden)
        self.out = nn.Linear(hidden, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.hidden.reset_parameters()
        self.out.reset_parameters()
        with torch.no_grad():
            self.root_vec.normal_(0.0, 0.1)
            self.inputs.unk.normal_(0.0, 0.1)

    def scores(self, sentence: ProbeSentence) -> torch.Tensor:
        n = sentence.n
        key = ("dist", self.max_indicator)
        if key not in sentence.cache:
            sentence.cache[key] = torch.from_numpy(distance_features(n, self.max_indicator))
        dist = sentence.cache[key]
        v = self.inputs(sentence)
        cand = torch.cat([self.root_vec[None, :], v], dim=0)  # (n + 1, d)
        d = v.shape[1]
        # First layer split as A[i] + B[c] + C[i, c] so the (n, n + 1, 2d) pair tensor is
        # never materialised.
        w = self.hidden.weight
        a = v @ w[:, :d].T  # (n, H)
        b = cand @ w[:, d:2 * d].T  # (n + 1, H)
        c = dist @ w[:, 2 * d:].T  # (n, n + 1, H)
        h = torch.relu(a[:, None, :] + b[None, :, :] + c + self.hidden.bias)
        return self.out(h).squeeze(-1)


def right_branching(n: int) -> np.ndarray:
    """Right-branching baseline heads (n,): word i's head is word i + 1 (1-based), and the
    last word, which has no word to its right, is attached to ROOT (0)."""
    heads = np.arange(2, n + 2, dtype=np.int64)
    if n:
        heads[-1] = 0
    return heads


# --------------------------------------------------------------------------------------------
# Training and evaluation
# --------------------------------------------------------------------------------------------


class TrainLog(training.TrainLog):
    """What :func:`train_probe` did (:class:`analysis_utils.training.TrainLog`): one step is
    one sentence, one example one word, so ``sentences`` and ``words`` name the counts."""

    @property
    def sentences(self) -> int:
        return self.steps

    @property
    def words(self) -> int:
        return self.examples


def _iterate(source) -> Iterable[ProbeSentence]:
    return source() if callable(source) else source


def train_probe(probe: HeadSelector, sentences_iterable_factory, **options) -> TrainLog:
    """Train ``probe`` with Adam, one sentence per step, cross-entropy over the candidates:
    :func:`train_probes` with one probe, the same arguments and defaults (``epochs=1``,
    ``lr=0.002``, ``seed=0``, ``reset=True``, ``num_threads=1``).

    ``sentences_iterable_factory``: a callable returning a fresh iterable of
    :class:`ProbeSentence` for each epoch (so features can be streamed from disk), or a
    re-iterable collection; empty sentences are skipped. ``reset``: re-initialise the
    parameters from ``seed`` first (default), which makes the run independent of anything
    that touched the RNG before. ``num_threads``: torch threads while training (see
    :func:`torch_threads`). The loop is :func:`analysis_utils.training.fit`; the data order
    is the stream's own (pass a stream in a seeded order to vary it with the seed).
    """
    return train_probes({"probe": probe}, sentences_iterable_factory, **options)["probe"]


def train_probes(
    probes: Mapping[str, HeadSelector],
    sentences_iterable_factory: Callable[[], Iterable[ProbeSentence]] | Iterable[ProbeSentence],
    epochs: int = 1,
    lr: float = 0.002,
    seed: int = 0,
    reset: bool = True,
    num_threads: int | None = 1,
) -> dict[str, TrainLog]:
    """Train several probes on one stream in one pass; returns ``{name: TrainLog}``.

    Each sentence's features are built (read from the cache) once and used by every probe, so
    k probes on the same maps cost one pass, not k. The result is the same as calling
    :func:`train_probe` on each probe alone with the same ``seed`` and stream: each probe is
    re-initialised from ``seed`` on its own (``reset``), the probes share no parameter, the
    summed loss gives every parameter exactly its own probe's gradient and Adam updates each
    parameter from its own gradient only. Per probe, the log holds its own losses; ``seconds``
    is the wall time of the shared pass.
    """
    probes = dict(probes)
    if not probes:
        raise ValueError("no probes to train")
    if reset:
        for probe in probes.values():
            with training.seeded(seed):
                probe.reset_parameters()
    names = list(probes)
    bundle = nn.ModuleList(probes.values())
    losses: dict[str, list[float]] = {name: [] for name in names}
    sizes: list[int] = []
    epoch_starts: list[int] = []

    def batches(_generator):  # the stream's own order; nothing is shuffled here
        epoch_starts.append(len(sizes))
        return (s for s in _iterate(sentences_iterable_factory) if s.n)

    def loss_fn(_model, sentence):
        gold = torch.from_numpy(sentence.heads)
        each = [nn.functional.cross_entropy(p(sentence), gold) for p in probes.values()]
        for name, loss in zip(names, each, strict=True):
            losses[name].append(float(loss.detach()))
        sizes.append(sentence.n)
        return torch.stack(each).sum(), sentence.n

    log = training.fit(bundle, batches, loss_fn,
                       optimizer=functools.partial(torch.optim.Adam, lr=lr), epochs=epochs,
                       seed=seed, num_threads=num_threads)
    bounds = [*epoch_starts, len(sizes)]
    n = np.asarray(sizes, dtype=np.float64)
    out = {}
    for name in names:
        steps = np.asarray(losses[name])
        epoch_losses = [float(np.dot(steps[a:b], n[a:b]) / n[a:b].sum()) if b > a else math.nan
                        for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        out[name] = TrainLog(steps=log.steps, examples=log.examples, epoch_losses=epoch_losses,
                             step_losses=list(losses[name]),
                             epoch_seconds=list(log.epoch_seconds), seconds=log.seconds)
    return out


def probe_log_probs(probe: HeadSelector, sentence: ProbeSentence) -> np.ndarray:
    """(n, n + 1) float64 log p(candidate | word), self column -inf."""
    with torch.no_grad():
        return torch.log_softmax(probe(sentence), dim=1).double().numpy()


def predict_heads(
    probe: HeadSelector | Callable[[ProbeSentence], np.ndarray],
    sentence: ProbeSentence,
    decode: str = "argmax",
) -> np.ndarray:
    """Predicted heads (n,), 1-based with 0 = ROOT.

    ``probe`` is a :class:`HeadSelector` or any function ``sentence -> heads`` (e.g. the
    right-branching baseline, ``lambda s: right_branching(s.n)``), which is returned as is.
    ``decode``: ``argmax`` (best candidate per word) or ``mst`` (single-root maximum spanning
    tree on log-probabilities).
    """
    if not isinstance(probe, nn.Module):
        return np.asarray(probe(sentence), dtype=np.int64)
    logp = probe_log_probs(probe, sentence)
    if decode == "argmax":
        return logp.argmax(axis=1).astype(np.int64)
    if decode == "mst":
        full = np.full((sentence.n + 1, sentence.n + 1), -np.inf)
        full[1:, :] = logp
        return chu_liu_edmonds(full, single_root=True)
    raise ValueError(f"decode must be 'argmax' or 'mst', got {decode!r}")


def uas_counts(pred: Sequence[int], gold: Sequence[int], upos: Sequence[str],
               exclude_punct: bool = True) -> tuple[int, int]:
    """(correct, scored) head attachments; words tagged ``PUNCT`` are skipped if asked."""
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    keep = np.ones(gold.shape[0], dtype=bool)
    if exclude_punct:
        keep = np.array([u != PUNCT for u in upos], dtype=bool)
    return int((pred[keep] == gold[keep]).sum()), int(keep.sum())


def evaluate_uas(
    probe: HeadSelector | Callable[[ProbeSentence], np.ndarray],
    sentences: Iterable[ProbeSentence] | Callable[[], Iterable[ProbeSentence]],
    exclude_punct: bool = True,
    decode: str = "argmax",
    num_threads: int | None = 1,
    by_sentence: bool = False,
) -> float | np.ndarray:
    """UAS in percent (0-100) over all scored words of ``sentences`` (micro-average).

    Punctuation (UPOS ``PUNCT``) is excluded from scoring when ``exclude_punct``; it still
    takes part in decoding. ``sentences`` may be an iterable or a factory, streamed once.
    ``by_sentence``: return each sentence's ``(correct, scored)`` counts instead, an
    ``(n_sentences, 2)`` int64 array in stream order (the UAS is ``100 * sum(correct) /
    sum(scored)``), the per-unit data a bootstrap over dev sentences resamples.
    """
    rows = []
    with torch_threads(num_threads):
        for sentence in _iterate(sentences):
            pred = predict_heads(probe, sentence, decode=decode)
            rows.append(uas_counts(pred, sentence.heads, sentence.upos, exclude_punct))
    counts = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
    if by_sentence:
        return counts
    correct, scored = counts.sum(axis=0)
    return 100.0 * correct / scored if scored else float("nan")


def uas_by_sentence(pred: Sequence[int], gold: Sequence[int], sentence: Sequence[int],
                    scored: Sequence[bool], n_sentences: int | None = None) -> np.ndarray:
    """Per-sentence UAS counts from per-word predictions: an ``(n_sentences, 2)`` int64 array
    whose row ``k`` holds sentence ``k``'s correct head attachments and its scored words
    (``scored``: False for punctuation, which is not counted).

    ``pred``, ``gold``: predicted and gold heads of every word (1-based, 0 = ROOT);
    ``sentence``: each word's 0-based sentence index; ``n_sentences``: the number of rows
    (default ``max(sentence) + 1``; a sentence with no scored word gets ``(0, 0)``).

    >>> uas_by_sentence([2, 0, 1, 0], [2, 0, 3, 0], [0, 0, 1, 1], [True, True, True, False])
    array([[2, 2],
           [0, 1]])
    """
    pred, gold = np.asarray(pred), np.asarray(gold)
    sent = np.asarray(sentence, dtype=np.int64)
    keep = np.asarray(scored, dtype=bool)
    if not (pred.shape == gold.shape == sent.shape == keep.shape) or pred.ndim != 1:
        raise ValueError(f"pred, gold, sentence and scored must be (n,) per word, got "
                         f"{pred.shape}, {gold.shape}, {sent.shape}, {keep.shape}")
    if len(sent) and sent.min() < 0:
        raise ValueError("sentence indices must be >= 0")
    n = int(sent.max()) + 1 if n_sentences is None and len(sent) else int(n_sentences or 0)
    if len(sent) and sent.max() >= n:
        raise ValueError(f"a sentence index ({int(sent.max())}) is >= n_sentences ({n})")
    correct = np.bincount(sent[keep], weights=(pred == gold)[keep], minlength=n)
    total = np.bincount(sent[keep], minlength=n)
    return np.stack([correct, total], axis=1).astype(np.int64)


def document_numbers(doc_ids: Sequence[str | None]) -> np.ndarray:
    """1-based document numbers of a sequence of sentences, in order of first appearance,
    from each sentence's document id (UD's ``newdoc id``); a sentence without one (``None``)
    is a document of its own. The unit a bootstrap over a treebank's dev set draws.

    >>> document_numbers(["a", "a", "b", None, "a"]).tolist()
    [1, 1, 2, 3, 1]
    """
    numbers: dict[str, int] = {}
    out, last = [], 0
    for d in doc_ids:
        if d is None or d not in numbers:
            last += 1
            if d is not None:
                numbers[d] = last
            out.append(last)
        else:
            out.append(numbers[d])
    return np.asarray(out, dtype=np.int64)


def right_branching_probe(sentence: ProbeSentence) -> np.ndarray:
    """The right-branching baseline as a ``sentence -> heads`` function for
    :func:`evaluate_uas`."""
    return right_branching(sentence.n)


def iter_probe_sentences(records: Iterable[tuple]) -> Iterator[ProbeSentence]:
    """Stream ``(word_attn, word_pos, heads, upos, words)`` tuples into ProbeSentences, one at
    a time (features are computed lazily, so only the current sentence is held)."""
    for word_attn, word_pos, heads, upos, words in records:
        yield make_probe_sentence(word_attn, word_pos, heads, upos, words)
