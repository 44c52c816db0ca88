"""Attention to linguistic features and token-to-token relation heads (Kovaleva et al. 2019,
Sections 4.4 and 4.5; Figures 6 and 7 take their special-token rows from here too, through
:mod:`analysis_utils.analyses.drift`).

Pure functions over arrays: maps in, per-head DataFrames out. The silver features come from
:mod:`analysis_utils.data.silver` (spaCy tags aligned to the model's words); this module only
reads the records it makes.

**Features** (:func:`word_feature_masks`; a word is flagged when any of its spaCy tokens is):

- ``noun``: universal POS ``NOUN`` or ``PROPN``; ``verb``: ``VERB`` (auxiliaries and copulas,
  POS ``AUX``, are not verbs here); ``pronoun``: ``PRON``;
- ``subject``: dependency ``nsubj`` or ``nsubjpass`` (``nsubj:pass`` in UD);
- ``object``: ``dobj`` (``obj`` in UD), direct objects of any verb;
- ``negation``: lemma in :data:`NEGATION_LEMMAS` (``not``, ``n't``, ``never``, ``no``,
  ``nobody``, ...) or dependency ``neg``; whole tokens, never substrings ("knot" is not one).
  spaCy splits "didn't" into ``did`` + ``n't``; the word "didn't" (one word, see
  :mod:`~analysis_utils.data.silver`) is therefore a negation word.

The tags are silver (spaCy's small English pipeline), not gold.

**The paper's aggregation** (Section 4.4, :func:`feature_attention`): "For every head, we
compute the sum of self-attention weights assigned to the token of interest from each input
token. Since the weights depend on the number of tokens in the input sequence, this sum is
normalized by sequence length. [...] If there are multiple tokens of the same type [...], we
take the maximum value. We disregard input sentences that do not contain a given feature."
Read as: for a map ``A (m, m)`` (rows attend), the attention a position ``j`` receives is
``r_j = sum_i A[i, j] / m`` (all rows, special tokens included; the mean column weight, so
``sum_j r_j = 1``); a feature's score for one input is ``max_j r_j`` over its positions; the
head's score is the mean over the inputs that contain the feature. A uniform head scores
``1/m`` (``attrs["uniform"]``). Here the map is word-level (attention TO a word summed over
its pieces, FROM a word averaged; ``m`` counts words and special tokens), the paper's code
worked on pieces; ``level="piece"`` in :func:`feature_statistics` gives that variant.

**Token-to-token relations** (Section 4.5, :func:`relation_pairs`, :func:`relation_attention`).
The paper asks "whether any of the tokens are particularly important while a given token is
being processed", for the verb-subject and the noun-pronoun relation, and gives no formula
and no source of pronoun antecedents (it used no coreference annotation). Read as:

- the processed token is the attending row: ``verb->subject`` is ``A[verb, subject]`` for
  each silver ``nsubj``/``nsubjpass`` arc whose head is a ``VERB``; ``pronoun->noun`` is
  ``A[pronoun, noun]`` for each third-person personal pronoun (``PronType=Prs``,
  ``Person=3``: he, she, it, they, him, his, ...) and its *antecedent candidate*: the nearest
  preceding ``NOUN``/``PROPN`` of the same text that agrees in number when both carry
  ``Number`` (``antecedent="all"``: every such preceding noun). Both reverse directions
  (``subject->verb``, ``noun->pronoun``) are reported too;
- per input, the largest weight over its pairs (the same authors' token-pair score in
  Section 4.2: "the maximum absolute attention weight among those token pairs"; ``reduce=
  "mean"`` averages instead), averaged over the inputs that have a pair.

The paper found the best heads for both relations to be diagonal (previous/next-token)
heads, since the pairs are often adjacent: ``attrs["adjacent_share"]`` and
``attrs["mean_distance"]`` say how often, to be read beside the heads' previous/next-token
attention (:func:`analysis_utils.analyses.surface.relative_position`).
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.attention import read_entry as _entry
from ..engine.attention import word_level

FEATURES = ("noun", "verb", "pronoun", "subject", "object", "negation")
SPECIAL_CLASSES = ("cls", "sep", "punct")
NOUN_POS = frozenset({"NOUN", "PROPN"})
VERB_POS = frozenset({"VERB"})
PRONOUN_POS = frozenset({"PRON"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "nsubj:pass"})
OBJECT_DEPS = frozenset({"dobj", "obj"})
NEGATION_DEPS = frozenset({"neg"})
#: Lemmas (lower-cased) of negation words. spaCy lemmatises "n't" to "not"; "cannot" is split
#: into "can" + "not". Matched against whole tokens only.
NEGATION_LEMMAS = frozenset({"not", "n't", "never", "no", "nobody", "nothing", "none",
                             "nowhere", "neither", "nor", "noone", "nope"})
RELATIONS = ("verb->subject", "pronoun->noun")
REVERSED = {"verb->subject": "subject->verb", "pronoun->noun": "noun->pronoun"}
LEVELS = ("word", "piece")

__all__ = [
    "FEATURES", "SPECIAL_CLASSES", "NEGATION_LEMMAS", "RELATIONS", "is_negation",
    "token_features", "word_feature_masks", "special_masks", "punctuation_ids", "piece_masks",
    "received_attention", "feature_attention", "cls_row_attention", "layer_mean", "relation_pairs",
    "relation_attention", "adjacent_attention", "feature_statistics", "feature_counts",
    "model_kind", "over_seeds",
]


# ---------------------------------------------------------------------------------------
# feature definitions


def is_negation(token) -> bool:
    """True for a negation token: lemma (or text) in :data:`NEGATION_LEMMAS`, or dependency
    ``neg``. ``token``: anything with ``text``, ``lemma`` and ``dep`` (a SilverToken)."""
    lemma = (getattr(token, "lemma", "") or "").lower()
    text = (getattr(token, "text", "") or "").lower()
    return (lemma in NEGATION_LEMMAS or text in NEGATION_LEMMAS
            or getattr(token, "dep", "") in NEGATION_DEPS)


def token_features(token) -> frozenset[str]:
    """The :data:`FEATURES` one silver token carries."""
    out = set()
    if token.pos in NOUN_POS:
        out.add("noun")
    if token.pos in VERB_POS:
        out.add("verb")
    if token.pos in PRONOUN_POS:
        out.add("pronoun")
    if token.dep in SUBJECT_DEPS:
        out.add("subject")
    if token.dep in OBJECT_DEPS:
        out.add("object")
    if is_negation(token):
        out.add("negation")
    return frozenset(out)


def word_feature_masks(aligned, features: Sequence[str] = FEATURES) -> dict[str, np.ndarray]:
    """``{feature: (m,) bool}`` over the words of an
    :class:`~analysis_utils.data.silver.AlignedInput`: a word has a feature when any of its
    spaCy tokens has it (special tokens never do)."""
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; known: {FEATURES}")
    masks = {f: np.zeros(aligned.n_words, dtype=bool) for f in features}
    for w, held in enumerate(aligned.word_tokens):
        for seg, i in held:
            for f in token_features(aligned.docs[seg].tokens[i]) & set(features):
                masks[f][w] = True
    return masks


def punctuation_ids(tokenizer) -> list[int]:
    """Ids of every vocabulary entry made only of Unicode punctuation (category P*), a
    leading ``##`` ignored; special tokens excluded. BERT's pre-tokenizer makes every
    punctuation character a word of its own, so these are the punctuation tokens of any
    input (Clark et al. used only "." and ",": pass those ids instead for their variant)."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out = []
    for tok, i in tokenizer.get_vocab().items():
        s = tok[2:] if tok.startswith("##") else tok
        if s and i not in special and all(unicodedata.category(c).startswith("P") for c in s):
            out.append(int(i))
    return sorted(out)


def special_masks(token_ids: Sequence[int], cls_id: int | None, sep_id: int | None,
                  punct_ids: Iterable[int] | None = (),
                  tok2word: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """``{"cls", "sep", "punct"}`` -> bool masks, by token id (never by string).

    Without ``tok2word``: ``(n,)`` piece masks. With it: ``(m,)`` word masks; a word is
    [CLS]/[SEP] when its piece is, punctuation when *all* its pieces are punctuation ids (so
    "U.S." is not punctuation)."""
    ids = np.asarray(token_ids, dtype=np.int64)
    pm = {"cls": ids == cls_id if cls_id is not None else np.zeros(len(ids), bool),
          "sep": ids == sep_id if sep_id is not None else np.zeros(len(ids), bool),
          "punct": np.isin(ids, list(punct_ids or ()))}
    pm["punct"] &= ~(pm["cls"] | pm["sep"])
    if tok2word is None:
        return pm
    tok2word = np.asarray(tok2word, dtype=np.int64)
    m = int(tok2word.max()) + 1
    count = np.bincount(tok2word, minlength=m)
    return {k: np.bincount(tok2word, weights=v.astype(float), minlength=m) == count
            for k, v in pm.items()}


def piece_masks(word_masks: Mapping[str, np.ndarray], tok2word: np.ndarray) -> dict:
    """Word masks ``(m,)`` -> piece masks ``(n,)``: every piece of a flagged word is flagged."""
    tok2word = np.asarray(tok2word, dtype=np.int64)
    return {k: np.asarray(v, dtype=bool)[tok2word] for k, v in word_masks.items()}


def feature_counts(aligned_inputs: Iterable) -> pd.DataFrame:
    """How many inputs contain each feature and how many words carry it (a feature's score
    averages over the inputs that contain it)."""
    inputs = {f: 0 for f in FEATURES}
    words = {f: 0 for f in FEATURES}
    total = 0
    for a in aligned_inputs:
        total += 1
        for f, m in word_feature_masks(a).items():
            inputs[f] += int(m.any())
            words[f] += int(m.sum())
    return pd.DataFrame({"feature": list(FEATURES), "inputs": [inputs[f] for f in FEATURES],
                         "share_of_inputs": [inputs[f] / total if total else np.nan
                                             for f in FEATURES],
                         "words": [words[f] for f in FEATURES]})


# ---------------------------------------------------------------------------------------
# the paper's aggregation


def received_attention(attn: np.ndarray) -> np.ndarray:
    """``attn (..., m, m)`` -> ``(..., m)``: the attention each position receives, summed over
    all attending rows and divided by the length ``m`` (Section 4.4)."""
    attn = np.asarray(attn, dtype=np.float32)
    return attn.sum(-2, dtype=np.float64) / attn.shape[-1]


class _MeanOver:
    """Running sum of ``(L, H)`` arrays and of how many were added."""

    def __init__(self):
        self.total = None
        self.count = 0
        self.uniform = 0.0

    def add(self, value: np.ndarray, uniform: float = 0.0) -> None:
        self.total = value.astype(np.float64) if self.total is None else self.total + value
        self.count += 1
        self.uniform += uniform

    def mean(self, shape) -> np.ndarray:
        if self.total is None:
            return np.full(shape, np.nan)
        return self.total / self.count


def _long_frame(shape, key: str, values: Mapping[str, tuple[np.ndarray, ...]],
                columns: Sequence[str]) -> pd.DataFrame:
    """Tidy frame: one row per (key value, layer, head)."""
    L, H = shape
    parts = []
    for name, arrays in values.items():
        part = {key: name, "layer": np.repeat(np.arange(1, L + 1), H),
                "head": np.tile(np.arange(1, H + 1), L)}
        for col, arr in zip(columns, arrays, strict=True):
            part[col] = np.broadcast_to(np.asarray(arr, dtype=np.float64), (L, H)).reshape(-1)
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True)


class _FeatureAcc:
    def __init__(self, names=None, keep: bool = False):
        self.names = list(names) if names is not None else None
        self.score: dict[str, _MeanOver] = {}
        self.share: dict[str, _MeanOver] = {}
        self.shape = None
        self.keep = keep  # per-example scores, NaN where the input lacks the feature
        self.examples: dict[str, list[np.ndarray]] = {}

    def add(self, attn: np.ndarray, masks: Mapping[str, np.ndarray],
            received: np.ndarray | None = None) -> None:
        self.shape = attn.shape[:2]
        m = attn.shape[-1]
        r = received_attention(attn) if received is None else received
        for name in self.names if self.names is not None else masks:
            mask = np.asarray(masks[name], dtype=bool)
            if mask.shape != (m,):
                raise ValueError(f"mask {name!r} has shape {mask.shape}, the map {m} positions")
            self.score.setdefault(name, _MeanOver())
            self.share.setdefault(name, _MeanOver())
            if mask.any():
                sel = r[..., mask]
                self.score[name].add(sel.max(-1), 1.0 / m)
                self.share[name].add(sel.sum(-1), mask.sum() / m)
            if self.keep:
                self.examples.setdefault(name, []).append(
                    sel.max(-1) if mask.any() else np.full(self.shape, np.nan))

    def by_example(self) -> dict[str, np.ndarray]:
        """``{feature: (n_inputs, L, H)}`` per-input scores, NaN where the input lacks it."""
        if self.shape is None:
            raise ValueError("no examples")
        return {k: np.stack(v).astype(np.float64) for k, v in self.examples.items()}

    def frame(self) -> pd.DataFrame:
        if self.shape is None:
            raise ValueError("no examples")
        values = {k: (self.score[k].mean(self.shape), self.share[k].mean(self.shape),
                      np.full(self.shape, self.score[k].count)) for k in self.score}
        df = _long_frame(self.shape, "feature", values, ("score", "share", "n_examples"))
        df["n_examples"] = df["n_examples"].astype(int)
        df.attrs["uniform"] = {k: a.uniform / a.count if a.count else np.nan
                               for k, a in self.score.items()}
        df.attrs["uniform_share"] = {k: a.uniform / a.count if a.count else np.nan
                                     for k, a in self.share.items()}
        return df


def _as_pair(example) -> tuple[np.ndarray, dict]:
    if isinstance(example, Mapping):
        return np.asarray(example["attn"]), example["masks"]
    attn, masks = example
    attn = np.asarray(attn)
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must be (layers, heads, m, m), got shape {attn.shape}")
    return attn, masks


def feature_attention(examples: Iterable, features: Sequence[str] | None = None,
                      by_example: bool = False) -> pd.DataFrame | dict[str, np.ndarray]:
    """The paper's per-head score for every feature (Section 4.4, see the module docstring).

    examples: ``(attn, masks)`` pairs (or mappings with those keys): ``attn (L, H, m, m)``
    whose rows sum to 1 (word- or piece-level), ``masks``: ``{feature: (m,) bool}``.
    features: which masks to score (default: every key of the first example's masks).

    Returns a tidy frame ``feature, layer, head, score, share, n_examples`` (1-based layer
    and head): ``score`` is the mean over inputs containing the feature of the largest
    received attention ``r_j = sum_i A[i, j] / m`` among its positions; ``share`` the same
    mean of ``sum_j r_j`` over them (the feature's share of all attention, Clark et al.'s
    token-class statistic); ``n_examples`` how many inputs contain it.
    ``attrs["uniform"]``/``attrs["uniform_share"]``: what a uniform head scores (``1/m`` and
    ``count/m``, averaged the same way).

    ``by_example=True``: what ``score`` averages, per input: ``{feature: (n_inputs, L, H)}``,
    NaN for the inputs without the feature (``np.nanmean`` over axis 0 gives ``score``).
    """
    acc = _FeatureAcc(features, keep=by_example)
    for ex in examples:
        acc.add(*_as_pair(ex))
    return acc.by_example() if by_example else acc.frame()


class _ClsRowAcc:
    def __init__(self, layer: int, names=None, keep: bool = False):
        self.layer = layer
        self.names = list(names) if names is not None else None
        self.weight: dict[str, _MeanOver] = {}
        self.share: dict[str, _MeanOver] = {}
        self.H = None
        self.keep = keep
        self.examples: dict[str, list[np.ndarray]] = {}

    def add(self, attn: np.ndarray, masks: Mapping[str, np.ndarray]) -> None:
        cls = np.flatnonzero(np.asarray(masks["cls"], dtype=bool))
        if len(cls) != 1:
            raise ValueError(f"the [CLS] mask must flag exactly one position, got {len(cls)}")
        row = np.asarray(attn[self.layer, :, cls[0], :], dtype=np.float64)  # (H, m)
        self.H = row.shape[0]
        m = row.shape[-1]
        for name in self.names if self.names is not None else masks:
            mask = np.asarray(masks[name], dtype=bool)
            self.weight.setdefault(name, _MeanOver())
            self.share.setdefault(name, _MeanOver())
            if mask.any():
                self.weight[name].add(row[:, mask].max(-1), 1.0 / m)
                self.share[name].add(row[:, mask].sum(-1), mask.sum() / m)
            if self.keep:
                self.examples.setdefault(name, []).append(
                    row[:, mask].max(-1) if mask.any() else np.full(self.H, np.nan))

    def by_example(self) -> dict[str, np.ndarray]:
        """``{target: (n_inputs, H)}`` per-input weights, NaN where the input lacks it."""
        if self.H is None:
            raise ValueError("no examples")
        return {k: np.stack(v) for k, v in self.examples.items()}

    def frame(self, num_layers: int | None) -> pd.DataFrame:
        if self.H is None:
            raise ValueError("no examples")
        rows = []
        for k in self.weight:
            w, s = self.weight[k].mean((self.H,)), self.share[k].mean((self.H,))
            for h in range(self.H):
                rows.append({"target": k, "head": h + 1, "weight": w[h], "share": s[h],
                             "n_examples": self.weight[k].count})
        df = pd.DataFrame(rows)
        df.insert(1, "layer", (self.layer % num_layers) + 1 if num_layers else self.layer)
        df.attrs["uniform"] = {k: a.uniform / a.count if a.count else np.nan
                               for k, a in self.weight.items()}
        df.attrs["uniform_share"] = {k: a.uniform / a.count if a.count else np.nan
                                     for k, a in self.share.items()}
        return df


def cls_row_attention(examples: Iterable, layer: int = -1,
                      targets: Sequence[str] | None = None,
                      by_example: bool = False) -> pd.DataFrame | dict[str, np.ndarray]:
    """Attention FROM [CLS] in one layer (default the last) to each token type (Figure 7).

    examples: ``(attn, masks)`` pairs as for :func:`feature_attention`; ``masks["cls"]`` flags
    the [CLS] position (exactly one). Every mask (or those in ``targets``), [CLS] itself
    included, is a target. Returns ``target, layer, head, weight, share, n_examples``:
    ``weight`` the mean over inputs containing the type of the largest weight the [CLS] row
    puts on one of its positions (the paper's "maximum over tokens of the same type"; for a
    single row, the sum over rows of Section 4.4 is the weight itself, and dividing by the
    length would only rescale each input), ``share`` the mean total weight on the type.
    :func:`layer_mean` averages over heads.

    ``by_example=True``: what ``weight`` averages, per input: ``{target: (n_inputs, H)}``, NaN
    for the inputs without the type.
    """
    acc = _ClsRowAcc(layer, targets, keep=by_example)
    num_layers = None
    for ex in examples:
        attn, masks = _as_pair(ex)
        num_layers = attn.shape[0]
        acc.add(attn, masks)
    return acc.by_example() if by_example else acc.frame(num_layers)


def layer_mean(df: pd.DataFrame, value: str, by: Sequence[str] = ("target",)) -> pd.DataFrame:
    """Mean of ``value`` over the heads of each layer, per group in ``by`` (columns present
    in ``df`` only), e.g. the last layer's [CLS] attention per token type."""
    keys = [c for c in (*by, "layer") if c in df.columns]
    return df.groupby(keys, sort=False)[value].mean().reset_index()


def model_kind(models: pd.Series) -> pd.Series:
    """Each fine-tuned model's label without its seed (``"fine-tuned s42"`` ->
    ``"fine-tuned"``); other labels (``"pre-trained"``) unchanged."""
    return models.astype(str).str.replace(r"^fine-tuned s\d+$", "fine-tuned", regex=True)


def over_seeds(df: pd.DataFrame, value: str, by: Sequence[str]) -> pd.DataFrame:
    """``value`` per group of ``by`` with the fine-tuning seeds pooled (``model`` read as
    :func:`model_kind`): columns ``by...``, ``value`` (the mean over the seeds' rows),
    ``low`` and ``high`` (the lowest and highest seed's), ``n_seeds`` (rows pooled).

    >>> d = pd.DataFrame({"model": ["pre-trained", "fine-tuned s42", "fine-tuned s43"],
    ...                   "w": [0.1, 0.2, 0.4]})
    >>> over_seeds(d, "w", ["model"]).round(2).to_dict("records")[1]
    {'model': 'fine-tuned', 'w': 0.3, 'low': 0.2, 'high': 0.4, 'n_seeds': 2}
    """
    d = df.assign(model=model_kind(df["model"]))
    out = d.groupby(list(by), sort=False)[value].agg(["mean", "min", "max", "count"])
    out.columns = [value, "low", "high", "n_seeds"]
    return out.reset_index()


# ---------------------------------------------------------------------------------------
# token-to-token relations


def _number(tok) -> str | None:
    return tok.morph_value("Number") if hasattr(tok, "morph_value") else None


def relation_pairs(aligned, antecedent: str = "nearest") -> dict[str, np.ndarray]:
    """``{"verb->subject", "pronoun->noun"}`` -> ``(k, 2)`` int arrays of
    ``(attending word, attended word)`` positions in the word-level map of ``aligned``.

    verb->subject: each silver ``nsubj``/``nsubjpass`` arc whose head is a ``VERB``.
    pronoun->noun: each third-person personal pronoun (``PronType=Prs``, ``Person=3``) with
    its antecedent candidate(s) in the same text: ``antecedent="nearest"`` the closest
    preceding ``NOUN``/``PROPN`` agreeing in ``Number`` when both have one, ``"all"`` every
    such noun. Pairs whose two tokens fall in one word, or whose words were truncated away,
    are left out.
    """
    if antecedent not in ("nearest", "all"):
        raise ValueError(f"antecedent must be 'nearest' or 'all', got {antecedent!r}")
    out: dict[str, list[tuple[int, int]]] = {r: [] for r in RELATIONS}
    for seg, doc in enumerate(aligned.docs):
        if doc is None:
            continue
        tw = aligned.token_word[seg]
        toks = doc.tokens
        for i, t in enumerate(toks):
            if t.dep in SUBJECT_DEPS and toks[t.head].pos in VERB_POS and t.head != i:
                out["verb->subject"].append((tw[t.head], tw[i]))
            if (t.pos in PRONOUN_POS and t.morph_value("PronType") == "Prs"
                    and t.morph_value("Person") == "3"):
                num = _number(t)
                cands = [j for j in range(i - 1, -1, -1)
                         if toks[j].pos in NOUN_POS
                         and (num is None or _number(toks[j]) in (None, num))]
                if antecedent == "nearest":
                    cands = cands[:1]
                out["pronoun->noun"] += [(tw[i], tw[j]) for j in cands]
    return {r: np.array([(a, b) for a, b in p if a >= 0 and b >= 0 and a != b],
                        dtype=np.int64).reshape(-1, 2) for r, p in out.items()}


class _RelationAcc:
    def __init__(self, reduce: str, keep: bool = False):
        if reduce not in ("max", "mean"):
            raise ValueError(f"reduce must be 'max' or 'mean', got {reduce!r}")
        self.reduce = reduce
        self.acc: dict[str, _MeanOver] = {}
        self.dist: dict[str, list[int]] = {}
        self.shape = None
        self.keep = keep
        self.examples: dict[str, list[np.ndarray]] = {}

    def add(self, attn: np.ndarray, pairs: Mapping[str, np.ndarray]) -> None:
        self.shape = attn.shape[:2]
        m = attn.shape[-1]
        for rel, p in pairs.items():
            p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
            for name, (src, dst) in ((rel, (p[:, 0], p[:, 1])),
                                     (REVERSED.get(rel, f"{rel} (reversed)"), (p[:, 1], p[:, 0]))):
                self.acc.setdefault(name, _MeanOver())
                v = None
                if len(p):
                    w = np.asarray(attn[..., src, dst], dtype=np.float64)  # (L, H, k)
                    v = w.max(-1) if self.reduce == "max" else w.mean(-1)
                    self.acc[name].add(v, 1.0 / m)
                if self.keep:
                    self.examples.setdefault(name, []).append(
                        v if v is not None else np.full(self.shape, np.nan))
            self.dist.setdefault(rel, []).extend(np.abs(p[:, 1] - p[:, 0]).tolist())

    def by_example(self) -> dict[str, np.ndarray]:
        """``{relation: (n_inputs, L, H)}`` per-input scores, NaN where it has no pair."""
        if self.shape is None:
            raise ValueError("no examples")
        return {k: np.stack(v) for k, v in self.examples.items()}

    def frame(self) -> pd.DataFrame:
        if self.shape is None:
            raise ValueError("no examples")
        values = {k: (a.mean(self.shape), np.full(self.shape, a.count))
                  for k, a in self.acc.items()}
        df = _long_frame(self.shape, "relation", values, ("score", "n_examples"))
        df["n_examples"] = df["n_examples"].astype(int)
        df.attrs["uniform"] = {k: a.uniform / a.count if a.count else np.nan
                               for k, a in self.acc.items()}
        df.attrs["pairs"] = {k: len(v) for k, v in self.dist.items()}
        df.attrs["mean_distance"] = {k: float(np.mean(v)) if v else np.nan
                                     for k, v in self.dist.items()}
        df.attrs["adjacent_share"] = {k: float(np.mean(np.asarray(v) == 1)) if v else np.nan
                                      for k, v in self.dist.items()}
        return df


def relation_attention(examples: Iterable, reduce: str = "max",
                       by_example: bool = False) -> pd.DataFrame | dict[str, np.ndarray]:
    """Per-head attention along relation pairs (Section 4.5; see the module docstring).

    examples: ``(attn, pairs)`` with ``attn (L, H, m, m)`` and ``pairs``:
    ``{relation: (k, 2) (from, to) positions}`` (:func:`relation_pairs`). Each relation is
    scored in both directions (``verb->subject`` and ``subject->verb``, ...). Returns
    ``relation, layer, head, score, n_examples``; ``attrs``: ``uniform`` (a uniform head:
    ``1/m``), ``pairs``, ``mean_distance`` and ``adjacent_share`` (pairs one word apart).

    ``by_example=True``: what ``score`` averages, per input: ``{relation: (n_inputs, L, H)}``,
    NaN for the inputs without a pair of the relation.
    """
    acc = _RelationAcc(reduce, keep=by_example)
    for ex in examples:
        attn, pairs = ex if not isinstance(ex, Mapping) else (ex["attn"], ex["pairs"])
        acc.add(np.asarray(attn), pairs)
    return acc.by_example() if by_example else acc.frame()


def adjacent_attention(attn: np.ndarray) -> np.ndarray:
    """``attn (L, H, m, m)`` -> ``(L, H)``: the weight each row puts on its previous and next
    position together, averaged over the rows (Kovaleva's Diagonal pattern; the first and last
    rows have one neighbour). A head that always attends to the previous token scores
    ``(m - 1) / m``.

    >>> a = np.zeros((1, 1, 3, 3)); a[0, 0, [1, 2], [0, 1]] = 1; a[0, 0, 0, 0] = 1
    >>> adjacent_attention(a)
    array([[0.66666667]])
    """
    a = np.asarray(attn, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attention must be (layers, heads, m, m), got shape {a.shape}")
    m = a.shape[-1]
    if m < 2:
        return np.zeros(a.shape[:2])
    prev = np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(-1)
    nxt = np.diagonal(a, offset=1, axis1=-2, axis2=-1).sum(-1)
    return (prev + nxt) / m


# ---------------------------------------------------------------------------------------
# one pass over a store


def feature_statistics(store, aligned: Sequence, cls_id: int, sep_id: int,
                       punct_ids: Iterable[int] = (), *, level: str = "word",
                       max_examples: int | None = 1000, cls_layer: int = -1,
                       antecedent: str = "nearest", reduce: str = "max",
                       by_example: bool = False) -> dict:
    """Every Section 4.4-4.5 statistic of one model in ONE pass over its maps.

    store: an AttentionStore (or any sequence of ``(L, H, n, n)`` piece-level maps) extracted
    from ``[a.as_input() for a in aligned]`` (the ids of ``glue.encode``); ``aligned``:
    :class:`~analysis_utils.data.silver.AlignedInput` records. level: ``"word"`` (maps
    converted to silver-aligned words) or ``"piece"`` (every piece of a flagged word flagged,
    as the authors' code worked on pieces). Only the first ``max_examples`` inputs are read,
    one at a time.

    Returns ``{"features": feature_attention (linguistic features, [CLS], [SEP], punctuation),
    "cls_row": cls_row_attention in layer cls_layer, "relations": relation_attention}``.
    ``by_example=True`` adds ``"by_example"``: from the same pass, what each frame averages
    per input (``feature_attention(..., by_example=True)`` etc.): ``{"features": {feature:
    (n, L, H)}, "cls_row": {target: (n, H)}, "relations": {relation: (n, L, H)}, "adjacent":
    (n, L, H)}`` (:func:`adjacent_attention` of every input; NaN where an input lacks a
    feature, a target or a pair).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if len(store) != len(aligned):
        raise ValueError(f"store has {len(store)} inputs, aligned {len(aligned)}: they must "
                         "come from the same encoded examples")
    n = len(aligned) if max_examples is None else min(max_examples, len(aligned))
    feats = _FeatureAcc((*FEATURES, *SPECIAL_CLASSES), keep=by_example)
    cls_row = _ClsRowAcc(cls_layer, (*SPECIAL_CLASSES, *FEATURES), keep=by_example)
    rels = _RelationAcc(reduce, keep=by_example)
    adjacent = []
    punct_ids = list(punct_ids)
    num_layers = None
    for i in range(n):
        a = aligned[i]
        attn = np.asarray(_entry(store, i))
        if attn.shape[-1] != len(a):
            raise ValueError(f"input {i}: the map has {attn.shape[-1]} tokens, the aligned "
                             f"input {len(a)}: store and alignment do not belong together")
        num_layers = attn.shape[0]
        wmask = word_feature_masks(a)
        pairs = relation_pairs(a, antecedent)
        if level == "word":
            attn = word_level(attn, a.tok2word)
            masks = {**wmask, **special_masks(a.input_ids, cls_id, sep_id, punct_ids,
                                              a.tok2word)}
        else:
            attn = np.asarray(attn, dtype=np.float32)
            masks = {**piece_masks(wmask, a.tok2word),
                     **special_masks(a.input_ids, cls_id, sep_id, punct_ids)}
            pairs = {r: _first_pieces(p, a.tok2word) for r, p in pairs.items()}
        feats.add(attn, masks)
        cls_row.add(attn, masks)
        rels.add(attn, pairs)
        if by_example:
            adjacent.append(adjacent_attention(attn))
    out = {"features": feats.frame(), "cls_row": cls_row.frame(num_layers),
           "relations": rels.frame()}
    if by_example:
        out["by_example"] = {"features": feats.by_example(), "cls_row": cls_row.by_example(),
                             "relations": rels.by_example(), "adjacent": np.stack(adjacent)}
    return out


def _first_pieces(pairs: np.ndarray, tok2word: np.ndarray) -> np.ndarray:
    """Word pairs -> pairs of the words' first pieces (the piece-level variant)."""
    first = np.full(int(tok2word.max()) + 1, -1, dtype=np.int64)
    for t in range(len(tok2word) - 1, -1, -1):
        first[tok2word[t]] = t
    return first[pairs] if len(pairs) else pairs


# ---------------------------------------------------------------------------------------
# per-input statistics for the claims ledger (resampled over seeds and dev examples)

#: The token types of the last layer's [CLS] row, in the order the per-input arrays keep them.
CLS_TARGETS = (*SPECIAL_CLASSES, *FEATURES)
#: The types whose best heads are kept per input (the linguistic features, then [CLS], [SEP]).
TOP_GROUPS = (*FEATURES, "cls", "sep")
#: The relations whose best heads are kept per input (the processed token attends).
TOP_RELATIONS = RELATIONS


def top_heads(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` heads of highest mean over inputs (NaN inputs skipped) and their per-input
    values: ``values (n, L, H)`` -> ``((n, k), (k, 2))``, the second the heads' 1-based
    ``(layer, head)``, best first (ties: lower layer, then lower head). A head with no input
    (all NaN) ranks last.

    >>> v = np.array([[[0.1, 0.5], [0.3, np.nan]], [[0.1, 0.7], [0.1, np.nan]]])
    >>> vals, heads = top_heads(v, 2)
    >>> heads.tolist(), vals[:, 0].tolist()
    ([[1, 2], [2, 1]], [0.5, 0.7])
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 3:
        raise ValueError(f"values must be (n, layers, heads), got {v.shape}")
    n, L, H = v.shape
    flat = v.reshape(n, L * H)
    with warnings.catch_warnings():  # a head with no input: NaN mean, ranked last
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(flat, axis=0)
    mean = np.where(np.isfinite(mean), mean, -np.inf)
    order = np.lexsort((np.arange(L * H), -mean))[:min(k, L * H)]
    heads = np.stack([order // H + 1, order % H + 1], axis=1)
    return flat[:, order], heads


def per_example_arrays(task: str, models: Mapping[str, Mapping], k: int = 5,
                       increase: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The per-input statistics of one task that the ledger resamples (notebook 06's
    ``06_by_example.npz``), from :func:`feature_statistics`'s ``by_example`` of each model
    (``models``: ``{label: by_example}``, the pre-trained model first, then each fine-tuned
    seed), all on the same inputs. Keys (``<t>`` the task; ``M`` models, ``n`` inputs):

    - ``models_<t>`` (M,): the labels; ``cls_<t>``, ``sep_<t>`` (M, n, L): the Section 4.4
      score of [CLS] / [SEP] per input and layer, mean over the layer's heads;
    - ``clslast_<t>`` (M, n, T): the weight of the last layer's [CLS] row on each type of
      :data:`CLS_TARGETS` (largest over its tokens), mean over heads, NaN where absent;
    - ``top_<t>`` (M, n, G, k) and ``tophead_<t>`` (M, G, k, 2): for each type of
      :data:`TOP_GROUPS`, the per-input scores of the model's ``k`` best heads by mean score
      and their 1-based (layer, head) (:func:`top_heads`);
    - ``rel_<t>``, ``reladj_<t>`` (M, n, R, k), ``relhead_<t>`` (M, R, k, 2): the same for
      the relations of :data:`TOP_RELATIONS`, with those heads' :func:`adjacent_attention`;
    - ``increase_<t>_<feature>`` (M - 1, n, L * H) for each feature in ``increase``: every
      head's score in each fine-tuned model minus the pre-trained model's (heads in layer
      order, 1-based ``layer * H + head`` order), NaN where the input lacks the feature.

    Floats are float16 (about 3 significant digits, far below the resampling error), so the
    file of a full run stays near 3 MB.
    """
    labels = list(models)
    if not labels:
        raise ValueError("no models")
    ex = [models[m] for m in labels]
    n = len(ex[0]["adjacent"])
    if any(len(e["adjacent"]) != n for e in ex):
        raise ValueError("the models were not scored on the same inputs")
    f16 = np.float16  # 3 significant digits: the file stays small (results/ is committed)
    out = {f"models_{task}": np.array(labels),
           f"cls_{task}": np.stack([e["features"]["cls"].mean(-1) for e in ex]).astype(f16),
           f"sep_{task}": np.stack([e["features"]["sep"].mean(-1) for e in ex]).astype(f16),
           f"clslast_{task}": np.stack([np.stack([e["cls_row"][t].mean(-1)
                                                  for t in CLS_TARGETS], axis=-1)
                                        for e in ex]).astype(f16)}
    tops, top_heads_, rels, adjs, rel_heads = [], [], [], [], []
    for e in ex:
        vals, heads = zip(*(top_heads(e["features"][g], k) for g in TOP_GROUPS), strict=True)
        tops.append(np.stack(vals, axis=1))
        top_heads_.append(np.stack(heads))
        rv, ra, rh = [], [], []
        adj = np.asarray(e["adjacent"], dtype=np.float64).reshape(n, -1)
        for r in TOP_RELATIONS:
            v, h = top_heads(e["relations"][r], k)
            idx = (h[:, 0] - 1) * e["relations"][r].shape[2] + h[:, 1] - 1
            rv.append(v)
            ra.append(adj[:, idx])
            rh.append(h)
        rels.append(np.stack(rv, axis=1))
        adjs.append(np.stack(ra, axis=1))
        rel_heads.append(np.stack(rh))
    out[f"top_{task}"] = np.stack(tops).astype(np.float16)
    out[f"tophead_{task}"] = np.stack(top_heads_).astype(np.int16)
    out[f"rel_{task}"] = np.stack(rels).astype(np.float16)
    out[f"reladj_{task}"] = np.stack(adjs).astype(np.float16)
    out[f"relhead_{task}"] = np.stack(rel_heads).astype(np.int16)
    for feat in increase:
        pre = np.asarray(ex[0]["features"][feat], dtype=np.float64).reshape(n, -1)
        out[f"increase_{task}_{feat}"] = np.stack(
            [np.asarray(e["features"][feat], dtype=np.float64).reshape(n, -1) - pre
             for e in ex[1:]]).astype(np.float16)
    return out
