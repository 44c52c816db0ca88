"""Glue between the attention cache and the Section 5 probes (Clark et al. 2019): streams
:class:`~analysis_utils.analyses.probes.ProbeSentence` records one sentence at a time from an
attention store, in file order or a seed's order (piece-level maps -> word-level maps -> probe
features; nothing is kept once the next sentence is read), per-word predictions (argmax and
Chu-Liu/Edmonds tree), UAS tables (punctuation excluded), the averaged head weights of an
Attention + GloVe probe, and, over several training seeds, mean/sd summaries and the
comparisons that hold in every seed (:func:`order_claims`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

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
                         encoded: Sequence[EncodedWords] | None = None,
                         order: Sequence[int] | None = None
                         ) -> Iterator[probes.ProbeSentence]:
    """Yield one :class:`ProbeSentence` per gold sentence, in file order or in ``order``
    (indices into ``sentences``, e.g. :func:`train_order`; the store is read at those
    positions, one sentence at a time).

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
    indices = range(len(sentences)) if order is None else [int(i) for i in order]
    try:
        for i in indices:
            s = sentences[i]
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


def stream(sentences: Sequence, store=None, encoded: Sequence[EncodedWords] | None = None,
           order: Sequence[int] | None = None) -> Callable[[], Iterator[probes.ProbeSentence]]:
    """A factory for :func:`probes.train_probe`: each call starts a fresh stream (in
    ``order`` when given, see :func:`iter_probe_sentences`)."""
    return lambda: iter_probe_sentences(sentences, store, encoded, order)


def parse_seeds(text: str) -> list[int]:
    """The training seeds of a ``seeds`` parameter, ``"0,1,2"`` -> ``[0, 1, 2]``; raises on
    an empty list, a non-integer, a negative or 32-bit-overflowing seed or a repeated one."""
    try:
        seeds = [int(x) for x in str(text).split(",")]
    except ValueError:
        raise ValueError(f"seeds={text!r}: expected comma-separated integers, e.g. "
                         "'0,1,2,3,4'") from None
    if not seeds or any(not 0 <= x < 2**32 for x in seeds):
        raise ValueError(f"seeds={text!r}: every seed must be in [0, 2**32)")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds={text!r}: a seed is repeated; two runs of one seed are the "
                         "same run")
    return seeds


def train_order(n: int, seed: int) -> np.ndarray:
    """The order in which seed ``seed`` visits ``n`` training sentences: a permutation of
    ``range(n)`` from numpy's PCG64 generator (the same on every platform)."""
    return np.random.default_rng(seed).permutation(n)


def predictions(probe, sentences: Sequence,
                source: Callable[[], Iterator[probes.ProbeSentence]],
                num_threads: int | None = 1) -> pd.DataFrame:
    """Predicted heads of every word, both decodings, streamed once.

    ``probe``: a trained HeadSelector or a ``sentence -> heads`` function (right-branching,
    whose output is already a tree, so both columns hold it). Returns one row per word:
    ``sentence`` (index), ``word`` (0-based), ``upos``, ``deprel``, ``gold`` (1-based, 0 =
    ROOT), ``pred_argmax``, ``pred_mst``, ``scored`` (False for punctuation).
    """
    return predictions_by_probe({"probe": probe}, sentences, source, num_threads)["probe"]


def _heads_both(probe, ps: probes.ProbeSentence) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(probe, torch.nn.Module):
        heads = probes.predict_heads(probe, ps)
        return heads, heads
    logp = probes.probe_log_probs(probe, ps)
    full = np.full((ps.n + 1, ps.n + 1), -np.inf)
    full[1:, :] = logp
    return logp.argmax(axis=1), chu_liu_edmonds(full, single_root=True)


def predictions_by_probe(probes_by_name: Mapping[str, object], sentences: Sequence,
                         source: Callable[[], Iterator[probes.ProbeSentence]],
                         num_threads: int | None = 1) -> dict[str, pd.DataFrame]:
    """:func:`predictions` of several probes that read the same stream, in one pass (each
    sentence's features are built once): ``{name: per-word table}``."""
    gold_cols = []
    preds: dict[str, list] = {name: [] for name in probes_by_name}
    with probes.torch_threads(num_threads):
        for k, (s, ps) in enumerate(zip(sentences, source(), strict=True)):
            gold_cols.append(pd.DataFrame({
                "sentence": k, "word": np.arange(ps.n), "upos": list(s.upos),
                "deprel": list(s.deprels), "gold": ps.heads}))
            for name, probe in probes_by_name.items():
                preds[name].append(_heads_both(probe, ps))
    base = pd.concat(gold_cols, ignore_index=True)
    out = {}
    for name, pairs in preds.items():
        df = base.copy()
        df["pred_argmax"] = np.concatenate([a for a, _ in pairs]).astype(np.int64)
        df["pred_mst"] = np.concatenate([m for _, m in pairs]).astype(np.int64)
        df["scored"] = df["upos"] != probes.PUNCT
        out[name] = df
    return out


def uas(pred: pd.DataFrame, decode: str = "argmax") -> float:
    """UAS in percent over scored (non-punctuation) words."""
    sc = pred[pred["scored"]]
    return float(100.0 * (sc[f"pred_{decode}"] == sc["gold"]).mean()) if len(sc) else float("nan")


def well_formed_share(pred: pd.DataFrame, decode: str = "argmax") -> float:
    """Percent of sentences whose predicted heads form a single-root tree."""
    ok = [is_tree(g[f"pred_{decode}"].to_numpy(), single_root=True)
          for _, g in pred.groupby("sentence", sort=False)]
    return 100.0 * float(np.mean(ok)) if ok else float("nan")


def split_scores(preds: Mapping[str, pd.DataFrame], tree_split: str = "dev"
                 ) -> dict[str, float]:
    """One probe's Table 3 cells from its per-split :func:`predictions`: ``"<split> <decode>"``
    UAS (%) for every split and both decodings, and ``"trees %"``, the share of ``tree_split``
    sentences whose argmax heads already form a single-root tree."""
    out = {f"{split} {decode}": uas(pred, decode)
           for split, pred in preds.items() for decode in DECODES}
    out["trees %"] = well_formed_share(preds[tree_split], "argmax")
    return out


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


# --------------------------------------------------------------------------------------------
# Several training seeds: summaries and the conclusions that hold across them
# --------------------------------------------------------------------------------------------


def seed_summary(per_seed: pd.DataFrame, columns: Sequence[str],
                 by: str | Sequence[str] = "probe", seed_col: str = "seed") -> pd.DataFrame:
    """Mean, sd (ddof 1; NaN with a single seed) and number of seeds of ``columns`` per group.

    ``per_seed``: one row per group and seed. Returns one row per group, in order of first
    appearance, with columns ``by``, ``n seeds``, then ``"<c> mean"`` and ``"<c> sd"`` for each
    of ``columns``.

    >>> t = pd.DataFrame({"probe": ["a"] * 3 + ["b"] * 3, "seed": [0, 1, 2] * 2,
    ...                   "uas": [60.0, 62.0, 64.0, 50.0, 50.0, 50.0]})
    >>> seed_summary(t, ["uas"])
      probe  n seeds  uas mean  uas sd
    0     a        3      62.0     2.0
    1     b        3      50.0     0.0
    """
    by = [by] if isinstance(by, str) else list(by)
    groups = per_seed.groupby(by, sort=False)
    out = groups[seed_col].nunique().rename("n seeds").reset_index()
    for c in columns:
        stats = groups[c].agg(["mean", "std"]).reset_index(drop=True)
        out[f"{c} mean"] = stats["mean"].to_numpy()
        out[f"{c} sd"] = stats["std"].to_numpy()
    return out


def _points(x: float) -> str:
    return f"{x:.1f} point" + ("" if round(abs(x), 1) == 1.0 else "s")


def order_claims(per_seed: pd.DataFrame, claims: Sequence[tuple[str, str]], column: str,
                 fixed: Mapping[str, float] | None = None, label: str | None = None,
                 seed_col: str = "seed", probe_col: str = "probe") -> pd.DataFrame:
    """In how many seeds each claimed order ``(higher, lower)`` goes the claimed way on
    ``column``: a count over seeds, not a test (with few seeds a difference can point the same
    way in each and not be significant; the claims ledger tests the paper's comparisons).

    ``per_seed``: one row per probe and seed; ``fixed``: probe -> value for deterministic
    baselines (e.g. right-branching), compared with every seed's value of the other probe.
    Only seeds that both sides have are counted. Returns one row per claim: ``claim``
    ("higher > lower"), ``seeds``, ``above``, ``below``, ``tied`` (counts), ``diff min``,
    ``diff mean``, ``diff max`` (higher minus lower), ``direction`` (``as claimed`` in every
    seed, ``reversed`` in every seed, else ``mixed``) and ``statement``, a sentence that says
    only what the seeds show (``label`` names the column in it; default ``column``).

    >>> t = pd.DataFrame({"probe": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
    ...                   "uas": [60.0, 62.0, 50.0, 63.0]})
    >>> claims = order_claims(t, [("a", "b"), ("a", "c")], "uas", fixed={"c": 70.0})
    >>> for line in claims["statement"]:
    ...     print(line)
    a vs. b is not settled by 2 seeds: a is ahead in 1, behind in 1 (uas: difference -1.0 to +10.0 points)
    c ahead of a in 2 of 2 seeds (uas: by 8.0 to 10.0 points)
    """
    fixed = dict(fixed or {})
    label = label or column
    wide = per_seed.pivot_table(index=seed_col, columns=probe_col, values=column,
                                aggfunc="first")
    rows = []
    for hi, lo in claims:
        a = pd.Series(fixed[hi], index=wide.index) if hi in fixed else wide.get(hi)
        b = pd.Series(fixed[lo], index=wide.index) if lo in fixed else wide.get(lo)
        if a is None or b is None:
            missing = [x for x, v in ((hi, a), (lo, b)) if v is None]
            raise KeyError(f"no per-seed values of {missing} in column {column!r}")
        d = (a - b).dropna().to_numpy(dtype=float)
        n = len(d)
        above, below = int((d > 0).sum()), int((d < 0).sum())
        tied = n - above - below
        seeds = f"{n} seed" + ("" if n == 1 else "s")
        lo_d, hi_d = (float(d.min()), float(d.max())) if n else (np.nan, np.nan)
        if n and above == n:
            direction = "as claimed"
            text = (f"{hi} > {lo} in {above} of {seeds} ({label}: {hi} ahead by "
                    f"{lo_d:.1f} to {_points(hi_d)})")
        elif n and below == n:
            direction = "reversed"
            text = (f"{lo} ahead of {hi} in {below} of {seeds} "
                    f"({label}: by {-hi_d:.1f} to {_points(-lo_d)})")
        else:
            direction = "mixed"
            parts = [f"ahead in {above}", f"behind in {below}"] + (
                [f"tied in {tied}"] if tied else [])
            text = (f"{hi} vs. {lo} is not settled by {seeds}: {hi} is " + ", ".join(parts)
                    + (f" ({label}: difference {lo_d:+.1f} to {hi_d:+.1f} points)" if n else ""))
        rows.append({"claim": f"{hi} > {lo}", "seeds": n, "above": above, "below": below,
                     "tied": tied, "diff min": lo_d, "diff mean": float(d.mean()) if n else np.nan,
                     "diff max": hi_d, "direction": direction, "statement": text})
    return pd.DataFrame(rows)


def loss_curve(step_losses: Sequence[float], n_bins: int = 50) -> pd.DataFrame:
    """A training curve small enough to save: the steps (sentences) cut into ``n_bins``
    consecutive blocks of near-equal size, each block's mean loss. Columns ``sentences``
    (steps seen at the end of the block) and ``loss``.

    >>> loss_curve([4.0, 2.0, 3.0, 1.0], n_bins=2).to_dict("list")
    {'sentences': [2, 4], 'loss': [3.0, 2.0]}
    """
    x = np.asarray(step_losses, dtype=np.float64)
    blocks = [b for b in np.array_split(np.arange(len(x)), min(n_bins, len(x))) if len(b)]
    return pd.DataFrame({"sentences": [int(b[-1]) + 1 for b in blocks],
                         "loss": [float(x[b].mean()) for b in blocks]})
