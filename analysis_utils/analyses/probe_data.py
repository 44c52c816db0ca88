"""Glue between the attention cache and the Section 5 probes (Clark et al. 2019): streams
:class:`~analysis_utils.analyses.probes.ProbeSentence` records one sentence at a time from an
attention store (piece-level maps -> word-level maps -> probe features; nothing is kept once
the next sentence is read), per-word predictions (argmax and Chu-Liu/Edmonds tree), UAS tables
(punctuation excluded) and the averaged head weights of an Attention + GloVe probe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from ..engine import wordmaps
from ..engine.wordmaps import EncodedWords
from . import probes
from .trees import chu_liu_edmonds, is_tree

DECODES = ("argmax", "mst")


def special_positions(is_special: np.ndarray) -> tuple[int, int]:
    """(first, last) special-token positions of a word-level map: [CLS] and the closing
    [SEP] for BERT. Raises if the map has fewer than two special tokens."""
    pos = np.flatnonzero(np.asarray(is_special, dtype=bool))
    if pos.shape[0] < 2:
        raise ValueError("the map needs an opening and a closing special token ([CLS]/[SEP])")
    return int(pos[0]), int(pos[-1])


def _piece_map_reader(store):
    """``(i -> (layers, heads, t, t) maps, close)`` for a store: the AttentionStore's positioned,
    checksum-verified reads, plain indexing for anything else.

    Positioned reads (``os.pread``) into a fresh array, not the store's memory map: pages
    touched through a map count towards the process's resident memory (``ru_maxrss``) until
    the kernel evicts them, so one pass over the train set would show up as the whole store
    in memory although no more than one sentence is needed at a time."""
    if hasattr(store, "read"):
        return store.read, lambda: None
    return store.__getitem__, lambda: None


def iter_probe_sentences(sentences: Sequence, store=None,
                         encoded: Sequence[EncodedWords] | None = None
                         ) -> Iterator[probes.ProbeSentence]:
    """Yield one :class:`ProbeSentence` per gold sentence, in order.

    ``sentences``: ``corpora.Sentence`` (``words``, ``upos``, ``heads``); ``store``: an
    AttentionStore (or any sequence of piece-level maps ``(layers, heads, t, t)``) extracted
    from ``[e.as_input() for e in encoded]``. With ``store=None`` no features are built (the
    distance probe and right-branching need none). Features: ``(2 * layers * heads, n, n + 1)``
    float16, ROOT column from attention to [CLS] and the closing [SEP].
    """
    if store is not None and (encoded is None or len(encoded) != len(sentences)
                              or len(store) != len(sentences)):
        raise ValueError("sentences, encoded and store must have the same length "
                         "(extract the store from the encodings of these sentences)")
    read, close = _piece_map_reader(store) if store is not None else (None, lambda: None)
    try:
        for i, s in enumerate(sentences):
            feats = None
            if read is not None:
                maps = wordmaps.word_maps(read(i), encoded[i])
                cls_pos, sep_pos = special_positions(maps.is_special)
                feats = probes.attention_features(maps.attn, maps.word_pos, cls_pos=cls_pos,
                                                  sep_pos=sep_pos)
            yield probes.ProbeSentence(heads=np.asarray(s.heads), upos=list(s.upos),
                                       words=list(s.words), features=feats)
    finally:
        close()


def stream(sentences: Sequence, store=None, encoded: Sequence[EncodedWords] | None = None
           ) -> Callable[[], Iterator[probes.ProbeSentence]]:
    """A factory for :func:`probes.train_probe`: each call starts a fresh stream."""
    return lambda: iter_probe_sentences(sentences, store, encoded)


def predictions(probe, sentences: Sequence,
                source: Callable[[], Iterator[probes.ProbeSentence]],
                num_threads: int | None = 1) -> pd.DataFrame:
    """Predicted heads of every word, both decodings, streamed once.

    ``probe``: a trained HeadSelector or a ``sentence -> heads`` function (right-branching,
    whose output is already a tree, so both columns hold it). Returns one row per word:
    ``sentence`` (index), ``word`` (0-based), ``upos``, ``deprel``, ``gold`` (1-based, 0 =
    ROOT), ``pred_argmax``, ``pred_mst``, ``scored`` (False for punctuation).
    """
    frames = []
    with probes.torch_threads(num_threads):
        for k, (s, ps) in enumerate(zip(sentences, source(), strict=True)):
            if isinstance(probe, torch.nn.Module):
                logp = probes.probe_log_probs(probe, ps)
                arg = logp.argmax(axis=1)
                full = np.full((ps.n + 1, ps.n + 1), -np.inf)
                full[1:, :] = logp
                mst = chu_liu_edmonds(full, single_root=True)
            else:
                arg = mst = probes.predict_heads(probe, ps)
            frames.append(pd.DataFrame({
                "sentence": k, "word": np.arange(ps.n), "upos": list(s.upos),
                "deprel": list(s.deprels), "gold": ps.heads, "pred_argmax": arg,
                "pred_mst": mst}))
    df = pd.concat(frames, ignore_index=True)
    df["scored"] = df["upos"] != probes.PUNCT
    return df


def uas(pred: pd.DataFrame, decode: str = "argmax") -> float:
    """UAS in percent over scored (non-punctuation) words."""
    sc = pred[pred["scored"]]
    return float(100.0 * (sc[f"pred_{decode}"] == sc["gold"]).mean()) if len(sc) else float("nan")


def well_formed_share(pred: pd.DataFrame, decode: str = "argmax") -> float:
    """Percent of sentences whose predicted heads form a single-root tree."""
    ok = [is_tree(g[f"pred_{decode}"].to_numpy(), single_root=True)
          for _, g in pred.groupby("sentence", sort=False)]
    return 100.0 * float(np.mean(ok)) if ok else float("nan")


def uas_by_relation(pred: pd.DataFrame, decode: str = "argmax", min_count: int = 100,
                    relations: Sequence[str] | None = None,
                    collapse_subtypes: bool = False) -> pd.DataFrame:
    """UAS (%) per gold relation of the dependent, scored words only; relations with fewer
    than ``min_count`` words are pooled as ``other`` (with ``relations`` given, e.g. the
    relations of the dev table, exactly those are kept and everything else is ``other``, so
    two splits get the same rows). Columns: relation, n, uas; most frequent first."""
    sc = pred[pred["scored"]].copy()
    rel = sc["deprel"].str.split(":").str[0] if collapse_subtypes else sc["deprel"]
    if relations is not None:
        sc["relation"] = rel.where(rel.isin(list(relations)), "other")
    else:
        counts = rel.value_counts()
        sc["relation"] = rel.where(rel.map(counts) >= min_count, "other")
    sc["correct"] = sc[f"pred_{decode}"] == sc["gold"]
    out = (sc.groupby("relation")["correct"].agg(n="size", uas="mean").reset_index())
    out["uas"] *= 100.0
    out["_other"] = out["relation"] == "other"
    return (out.sort_values(["_other", "n"], ascending=[True, False])
            .drop(columns="_other").reset_index(drop=True))


def attention_only_weights(probe: probes.AttentionOnlyProbe, layers: int, heads: int
                           ) -> dict[str, np.ndarray]:
    """The attention-only probe's word-pair weights as ``(layers, heads)`` arrays:
    ``dep2cand`` (``w``, on a^k(dependent -> candidate)) and ``cand2dep`` (``u``)."""
    w = probe.w.detach().numpy().reshape(layers, heads)
    u = probe.u.detach().numpy().reshape(layers, heads)
    return {"dep2cand": w, "cand2dep": u}


def glove_head_weights(probe: probes.AttentionGloveProbe,
                       source: Callable[[], Iterator[probes.ProbeSentence]],
                       layers: int, heads: int) -> dict[str, np.ndarray]:
    """Mean word-dependent head weights ``W [v_i; v_j] + b`` (``dep2cand``) and
    ``U [v_i; v_j] + c`` (``cand2dep``) over the gold (dependent i, head j) word pairs of the
    streamed sentences (ROOT attachments skipped), as ``(layers, heads)`` arrays."""
    d = probe.inputs.dim
    sums = {"dep2cand": np.zeros(layers * heads), "cand2dep": np.zeros(layers * heads)}
    count = 0
    with torch.no_grad():
        for s in source():
            keep = s.heads > 0
            if not keep.any():
                continue
            v = probe.inputs(s)
            dep, cand = v[torch.from_numpy(keep)], v[torch.from_numpy(s.heads[keep] - 1)]
            for name, lin in (("dep2cand", probe.W), ("cand2dep", probe.U)):
                w = dep @ lin.weight[:, :d].T + cand @ lin.weight[:, d:].T
                if lin.bias is not None:
                    w = w + lin.bias
                sums[name] += w.sum(0).double().numpy()
            count += int(keep.sum())
    return {k: (v / max(count, 1)).reshape(layers, heads) for k, v in sums.items()}
