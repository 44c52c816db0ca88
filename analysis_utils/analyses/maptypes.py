"""Self-attention map types (Kovaleva et al. 2019, Section 4.1): transparent per-map
statistics (:func:`head_statistics`, which defines them), a threshold :class:`RuleClassifier`,
a small CNN (:func:`train_cnn`) and per-class scores (:func:`evaluate`). The five types and
what the paper did: notebook 05, "Attention-map types".
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from .. import training

# The five types are the vocabulary of the hand labels, so they live with their reader (the
# data layer, which cannot import analyses); this module's names for them stay the same.
from ..data.labels import BLOCK, DIAGONAL, HETEROGENEOUS, MAP_TYPES, VERTICAL, VERTICAL_DIAGONAL

STAT_COLUMNS = ("cls", "sep", "special", "punct", "prev", "next", "self", "adjacent", "band",
                "within_segment", "within_share", "entropy", "entropy_nats", "max_col",
                "max_col_other")

__all__ = [
    "MAP_TYPES", "VERTICAL", "DIAGONAL", "VERTICAL_DIAGONAL", "BLOCK", "HETEROGENEOUS",
    "STAT_COLUMNS", "map_statistics", "head_statistics", "statistics_table",
    "RuleClassifier", "MapCNN", "prepare_maps", "train_cnn", "evaluate",
    "out_of_fold", "cross_validate_seeds", "summarise_seeds", "count_types",
    "seed_comparison", "seed_extremes", "mean_sd_pivot",
]


# --- statistics -----------------------------------------------------------------------------

def _nanmean_masked(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of ``values (H, n)`` over positions where ``mask (n,)``; NaN when none."""
    if not mask.any():
        return np.full(values.shape[0], np.nan)
    return values[:, mask].mean(1)


def head_statistics(attn: np.ndarray, token_ids: Sequence[int],
                    token_type_ids: Sequence[int] | None, cls_id: int, sep_id: int,
                    punct_ids: Iterable[int] | None = None) -> dict[str, np.ndarray]:
    """Statistics of many maps of one input at once: ``attn (..., n, n)`` -> ``{name: (...)}``
    arrays, one per :data:`STAT_COLUMNS`.

    For an ``(n, n)`` map ``A`` (rows = attending token, each row sums to 1). "Special"
    tokens are those whose id is ``cls_id`` or ``sep_id`` (ids, never strings); "rows" means
    query tokens:

    - ``cls``, ``sep``, ``special``: mean over all rows of the mass on [CLS] columns, on [SEP]
      columns, on both (``special = cls + sep``);
    - ``punct``: same for ``punct_ids`` columns (NaN without ``punct_ids``);
    - ``prev`` / ``next``: mean of ``A[i, i-1]`` / ``A[i, i+1]`` over non-special rows ``i``
      whose neighbour exists and is non-special (a pure shift map gives exactly 1);
    - ``self``: mean of ``A[i, i]`` over non-special rows;
    - ``adjacent``: mean over non-special rows of the mass on their non-special ``i-1`` and
      ``i+1`` (so a pure shift map gives slightly less than 1: each sentence's first (or
      last) token has no non-special neighbour on that side); ``band = adjacent + self``;
    - ``within_segment``: two-segment inputs only (else NaN): mean over non-special rows of
      the mass on non-special columns of the same segment (token-type id); ``within_share``:
      that divided by the mean mass those rows put on non-special columns at all (1 for a
      pure block map, about the segment's share of tokens for a uniform map; NaN when there
      is no such mass);
    - ``entropy_nats``: mean row entropy (nats); ``entropy``: the same divided by ``log n``
      (0 = one-hot rows, 1 = uniform rows);
    - ``max_col``: largest mean column mass (mean over rows of the attention a column
      receives); ``max_col_other``: the same over non-special columns only (stripes on other
      tokens).
    """
    a = np.asarray(attn, dtype=np.float32)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attn must be (..., n, n), got {a.shape}")
    lead = a.shape[:-2]
    n = a.shape[-1]
    A = a.reshape(-1, n, n)
    ids = np.asarray(token_ids).ravel()
    if ids.shape != (n,):
        raise ValueError(f"token_ids has {ids.size} entries for maps of size {n}")
    is_cls = ids == cls_id
    is_sep = ids == sep_id
    special = is_cls | is_sep
    ns = ~special
    col = A.mean(1)  # (H, n): mean mass each column receives
    out: dict[str, np.ndarray] = {}
    out["cls"] = col[:, is_cls].sum(1)
    out["sep"] = col[:, is_sep].sum(1)
    out["special"] = out["cls"] + out["sep"]
    if punct_ids is not None:
        is_p = np.isin(ids, np.asarray(list(punct_ids)))
        out["punct"] = col[:, is_p].sum(1)
    else:
        out["punct"] = np.full(len(A), np.nan)
    idx = np.arange(n)
    diag0 = A[:, idx, idx]
    sub = np.zeros((len(A), n), dtype=np.float32)  # A[i, i-1], 0 when not eligible
    sup = np.zeros((len(A), n), dtype=np.float32)  # A[i, i+1]
    ok_prev = np.zeros(n, dtype=bool)
    ok_next = np.zeros(n, dtype=bool)
    if n > 1:
        ok_prev[1:] = ns[1:] & ns[:-1]
        ok_next[:-1] = ns[:-1] & ns[1:]
        sub[:, 1:] = A[:, idx[1:], idx[:-1]]
        sup[:, :-1] = A[:, idx[:-1], idx[1:]]
    out["prev"] = _nanmean_masked(sub, ok_prev)
    out["next"] = _nanmean_masked(sup, ok_next)
    out["self"] = _nanmean_masked(diag0, ns)
    adj = sub * ok_prev + sup * ok_next
    out["adjacent"] = _nanmean_masked(adj, ns)
    out["band"] = out["adjacent"] + out["self"]
    tt = None if token_type_ids is None else np.asarray(token_type_ids).ravel()
    if tt is not None and tt.shape != (n,):
        raise ValueError(f"token_type_ids has {tt.size} entries for maps of size {n}")
    if tt is not None and len(np.unique(tt[ns])) >= 2:
        same = (tt[:, None] == tt[None, :]) & ns[None, :]  # (n, n) same-segment real columns
        within_rows = (A * same).sum(-1)  # (H, n)
        ns_rows = A[:, :, ns].sum(-1)
        w = _nanmean_masked(within_rows, ns)
        m = _nanmean_masked(ns_rows, ns)
        out["within_segment"] = w
        with np.errstate(invalid="ignore", divide="ignore"):
            out["within_share"] = np.where(m > 1e-8, w / np.maximum(m, 1e-30), np.nan)
    else:
        out["within_segment"] = np.full(len(A), np.nan)
        out["within_share"] = np.full(len(A), np.nan)
    ent = -torch.special.xlogy(torch.from_numpy(A), torch.from_numpy(A)).sum(-1).mean(-1)
    out["entropy_nats"] = ent.numpy().astype(np.float64)
    out["entropy"] = out["entropy_nats"] / math.log(n) if n > 1 else np.zeros(len(A))
    out["max_col"] = col.max(1)
    out["max_col_other"] = col[:, ns].max(1) if ns.any() else np.full(len(A), np.nan)
    return {k: np.asarray(out[k], dtype=np.float64).reshape(lead) for k in STAT_COLUMNS}


def map_statistics(attn_2d: np.ndarray, token_ids: Sequence[int],
                   token_type_ids: Sequence[int] | None, cls_id: int, sep_id: int,
                   punct_ids: Iterable[int] | None = None) -> dict[str, float]:
    """Statistics of one head's ``(n, n)`` map as a dict of floats (NaN where undefined)."""
    a = np.asarray(attn_2d)
    if a.ndim != 2:
        raise ValueError(f"attn_2d must be (n, n), got {a.shape}")
    st = head_statistics(a, token_ids, token_type_ids, cls_id, sep_id, punct_ids)
    return {k: float(v) for k, v in st.items()}


def statistics_table(attns: Iterable, token_ids: Iterable[Sequence[int]],
                     token_type_ids: Iterable[Sequence[int] | None] | None = None, *,
                     cls_id: int, sep_id: int, punct_ids: Iterable[int] | None = None,
                     max_examples: int | None = None, progress: bool = False) -> pd.DataFrame:
    """Statistics of every head of every example, one row per (example, layer, head).

    attns: iterable of ``(layers, heads, n, n)`` arrays (e.g. an ``AttentionStore``; read one
        at a time). token_ids / token_type_ids: aligned per-example sequences (token types
        ``None`` for single-segment inputs).
    Columns: ``example, layer, head`` (0-based), ``n``, ``two_segments`` and
    :data:`STAT_COLUMNS`.
    """
    punct = None if punct_ids is None else list(punct_ids)
    tts = itertools.repeat(None) if token_type_ids is None else token_type_ids
    it = zip(attns, token_ids, tts, strict=token_type_ids is not None)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="map statistics")
    frames = []
    for e, (attn, ids, tt) in enumerate(it):
        if max_examples is not None and e >= max_examples:
            break
        a = np.asarray(attn)
        if a.ndim != 4:
            raise ValueError(f"attn must be (layers, heads, n, n), got {a.shape}")
        L, H, n = a.shape[0], a.shape[1], a.shape[-1]
        st = head_statistics(a, ids, tt, cls_id, sep_id, punct)
        ll, hh = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
        df = {"example": np.full(L * H, e), "layer": ll.ravel(), "head": hh.ravel(),
              "n": np.full(L * H, n),
              "two_segments": np.full(L * H, bool(np.isfinite(st["within_segment"]).any()))}
        df.update({k: v.ravel() for k, v in st.items()})
        frames.append(pd.DataFrame(df))
    if not frames:
        raise ValueError("no examples given")
    return pd.concat(frames, ignore_index=True)


# --- rule classifier ------------------------------------------------------------------------

def _macro_f1_codes(y: np.ndarray, p: np.ndarray, k: int) -> float:
    """Macro-F1 over the classes present in ``y`` (integer codes ``0..k-1``).

    Bit-for-bit ``f1_score(y, p, labels=np.unique(y), average="macro", zero_division=0)``
    (tests/test_maptypes.py), kept because the grid search calls it 2,304 times per fit and
    scikit-learn's input checks make that about 100x slower (2.6 s instead of 0.02 s).
    """
    cm = np.bincount(y * k + p, minlength=k * k).reshape(k, k)
    tp = np.diag(cm).astype(float)
    support = cm.sum(1)
    pred = cm.sum(0)
    present = support > 0
    denom = support + pred
    f1 = np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)
    return float(f1[present].mean())


DEFAULT_GRID: dict[str, tuple[float, ...]] = {
    "vertical": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    "diagonal": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    "mix_vertical": (0.1, 0.2, 0.3, 0.4),
    "mix_diagonal": (0.1, 0.2, 0.3, 0.4),
    "block": (0.6, 0.7, 0.8, 0.9),
}

DEFAULT_THRESHOLDS: dict[str, float] = {
    "vertical": 0.6, "diagonal": 0.5, "mix_vertical": 0.3, "mix_diagonal": 0.3, "block": 0.8,
}

TREE_FEATURES = ("cls", "sep", "special", "adjacent", "self", "band", "within_share",
                 "entropy", "max_col_other")


class RuleClassifier:
    """Transparent map-type classifier over :func:`statistics_table` columns.

    ``method="grid"`` (default): ordered rules, first match wins::

        special >= mix_vertical and adjacent >= mix_diagonal -> Vertical+Diagonal
        special >= vertical                                   -> Vertical
        adjacent >= diagonal                                  -> Diagonal
        within_share >= block (two-segment inputs only)       -> Block
        otherwise                                             -> Heterogeneous

    ``fit`` picks the five thresholds from ``grid`` (default :data:`DEFAULT_GRID`) that
    maximise macro-F1 on the given rows (first best in grid order); unfitted, it uses
    ``thresholds`` (default :data:`DEFAULT_THRESHOLDS`). ``method="tree"``: a scikit-learn
    decision tree (``max_depth <= 3``, balanced class weights) on ``features``; NaN
    (single-segment ``within_share``) is encoded as -1. ``rules()`` prints either.
    """

    def __init__(self, method: str = "grid", thresholds: dict | None = None,
                 grid: dict | None = None, max_depth: int = 3,
                 features: Sequence[str] = TREE_FEATURES, seed: int = 0):
        if method not in ("grid", "tree"):
            raise ValueError("method must be 'grid' or 'tree'")
        if max_depth > 3:
            raise ValueError("max_depth must be <= 3 (keep the rules readable)")
        self.method = method
        self.thresholds = dict(DEFAULT_THRESHOLDS if thresholds is None else thresholds)
        self.grid = dict(DEFAULT_GRID if grid is None else grid)
        self.max_depth = max_depth
        self.features = tuple(features)
        self.seed = seed
        self.tree_ = None
        self.train_score_: float | None = None

    # grid rules
    @staticmethod
    def _columns(stats: pd.DataFrame):
        v = stats["special"].to_numpy(dtype=float)
        d = stats["adjacent"].to_numpy(dtype=float)
        b = stats["within_share"].to_numpy(dtype=float)
        return np.nan_to_num(v, nan=0.0), np.nan_to_num(d, nan=0.0), np.nan_to_num(b, nan=-1.0)

    @staticmethod
    def _apply(v, d, b, t) -> np.ndarray:
        """Codes into :data:`MAP_TYPES`."""
        out = np.full(len(v), MAP_TYPES.index(HETEROGENEOUS))
        done = np.zeros(len(v), dtype=bool)
        for cond, lab in (((v >= t["mix_vertical"]) & (d >= t["mix_diagonal"]), VERTICAL_DIAGONAL),
                          (v >= t["vertical"], VERTICAL),
                          (d >= t["diagonal"], DIAGONAL),
                          (b >= t["block"], BLOCK)):
            sel = cond & ~done
            out[sel] = MAP_TYPES.index(lab)
            done |= sel
        return out

    def _xy(self, stats: pd.DataFrame) -> np.ndarray:
        return stats[list(self.features)].to_numpy(dtype=float).copy()

    def fit(self, stats: pd.DataFrame, labels: Sequence[str]) -> RuleClassifier:
        y = np.asarray(labels, dtype=object)
        bad = set(y) - set(MAP_TYPES)
        if bad:
            raise ValueError(f"unknown labels {sorted(bad)}; expected {MAP_TYPES}")
        if self.method == "tree":
            from sklearn.tree import DecisionTreeClassifier

            X = np.nan_to_num(self._xy(stats), nan=-1.0)
            self.tree_ = DecisionTreeClassifier(max_depth=self.max_depth,
                                                class_weight="balanced",
                                                random_state=self.seed).fit(X, y)
            pred = self.tree_.predict(X)
            yc = np.array([MAP_TYPES.index(t) for t in y])
            pc = np.array([MAP_TYPES.index(t) for t in pred])
            self.train_score_ = _macro_f1_codes(yc, pc, len(MAP_TYPES))
            return self
        yc = np.array([MAP_TYPES.index(t) for t in y])
        v, d, b = self._columns(stats)
        keys = list(self.grid)
        best, best_t = -1.0, None
        for combo in itertools.product(*(self.grid[k] for k in keys)):
            t = dict(zip(keys, combo, strict=True))
            score = _macro_f1_codes(yc, self._apply(v, d, b, t), len(MAP_TYPES))
            if score > best:
                best, best_t = score, t
        self.thresholds = best_t
        self.train_score_ = best
        return self

    def predict(self, stats: pd.DataFrame) -> np.ndarray:
        if self.method == "tree":
            if self.tree_ is None:
                raise RuntimeError("fit the tree first")
            return self.tree_.predict(np.nan_to_num(self._xy(stats), nan=-1.0))
        codes = self._apply(*self._columns(stats), self.thresholds)
        return np.asarray(MAP_TYPES, dtype=object)[codes]

    def rules(self) -> str:
        if self.method == "tree":
            if self.tree_ is None:
                return "(tree not fitted)"
            from sklearn.tree import export_text

            return export_text(self.tree_, feature_names=list(self.features), decimals=3)
        t = self.thresholds
        return (f"special >= {t['mix_vertical']:.2f} and adjacent >= {t['mix_diagonal']:.2f}"
                f" -> {VERTICAL_DIAGONAL}\n"
                f"special >= {t['vertical']:.2f} -> {VERTICAL}\n"
                f"adjacent >= {t['diagonal']:.2f} -> {DIAGONAL}\n"
                f"within_share >= {t['block']:.2f} (two segments) -> {BLOCK}\n"
                f"otherwise -> {HETEROGENEOUS}")

    def __repr__(self) -> str:
        return f"RuleClassifier(method={self.method!r})\n{self.rules()}"


# --- CNN ------------------------------------------------------------------------------------

def prepare_maps(maps, size: int = 32) -> torch.Tensor:
    """``(N, 1, size, size)`` float32 inputs for :class:`MapCNN`.

    maps: sequence of ``(n, n)`` maps (real tokens only, any ``n``) or an already prepared
    tensor (returned unchanged). Each map is adaptive-average-pooled to ``size x size``,
    multiplied by ``n`` (a uniform map becomes all ones, whatever its length) and passed
    through ``log1p``.
    """
    if isinstance(maps, torch.Tensor) and maps.ndim == 4:
        return maps.float()
    if isinstance(maps, np.ndarray) and maps.ndim == 3:  # equal-size maps: pool all at once
        if maps.shape[1] != maps.shape[2]:
            raise ValueError(f"maps must be (k, n, n), got {maps.shape}")
        t = torch.as_tensor(np.asarray(maps, dtype=np.float32))[:, None]
        return torch.log1p(nn.functional.adaptive_avg_pool2d(t, (size, size)) * t.shape[-1])
    out = torch.empty((len(maps), 1, size, size), dtype=torch.float32)
    for i, m in enumerate(maps):
        t = torch.as_tensor(np.asarray(m, dtype=np.float32))
        if t.ndim != 2 or t.shape[0] != t.shape[1]:
            raise ValueError(f"map {i} must be (n, n), got {tuple(t.shape)}")
        pooled = nn.functional.adaptive_avg_pool2d(t[None, None], (size, size))[0]
        out[i] = torch.log1p(pooled * t.shape[0])
    return out


class MapCNN(nn.Module):
    """Small CNN over ``size x size`` pooled maps: ``n_stages`` stages of two 3x3 conv + ReLU
    layers and a 2x2 max-pool (default 4 stages = 8 conv layers, as in Kovaleva et al.),
    global average pooling, one linear layer. ``classes`` names the outputs."""

    def __init__(self, classes: Sequence[str] = MAP_TYPES, size: int = 32, width: int = 16,
                 n_stages: int = 4):
        super().__init__()
        self.classes = tuple(classes)
        self.size = size
        layers: list[nn.Module] = []
        c_in = 1
        for s in range(n_stages):
            c_out = width * min(2 ** s, 4)
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(),
                       nn.Conv2d(c_out, c_out, 3, padding=1), nn.ReLU()]
            if size // (2 ** (s + 1)) >= 1:
                layers.append(nn.MaxPool2d(2))
            c_in = c_out
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, len(self.classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((-1, -2)))

    @torch.no_grad()
    def predict_proba(self, maps, batch_size: int = 256) -> np.ndarray:
        x = prepare_maps(maps, self.size)
        was = self.training
        self.eval()
        out = [torch.softmax(self(x[i:i + batch_size]), -1) for i in range(0, len(x), batch_size)]
        self.train(was)
        return torch.cat(out).numpy()

    def predict(self, maps, batch_size: int = 256) -> np.ndarray:
        proba = self.predict_proba(maps, batch_size)
        return np.asarray(self.classes, dtype=object)[proba.argmax(1)]


def train_cnn(maps, labels: Sequence[str], seed: int = 0, epochs: int = 40, *,
              lr: float = 2e-3, batch_size: int = 32, size: int = 32, width: int = 16,
              n_stages: int = 4, weight_decay: float = 1e-4, balanced: bool = True,
              classes: Sequence[str] | None = None, threads: int | None = None) -> MapCNN:
    """Train a :class:`MapCNN` (Adam, cross-entropy, class-balanced weights by default).

    Deterministic for a given ``seed``: weights and batch order come from ``seed``, with the
    caller's global RNGs untouched (:func:`analysis_utils.training.fit`). ``classes``
    defaults to the :data:`MAP_TYPES` that occur in ``labels`` (in that order).
    ``model.history`` holds the mean training loss per epoch, ``model.train_log`` the whole
    :class:`~analysis_utils.training.TrainLog`. ``threads``: torch intra-op threads while
    training (restored afterwards); 1 is often fastest for these small convolutions on a
    busy CPU.
    """
    y_names = np.asarray(labels, dtype=object)
    if classes is None:
        classes = [c for c in MAP_TYPES if c in set(y_names)] + sorted(
            set(y_names) - set(MAP_TYPES), key=str)
    classes = list(classes)
    unknown = set(y_names) - set(classes)
    if unknown:
        raise ValueError(f"labels {sorted(unknown)} not in classes {classes}")
    x = prepare_maps(maps, size)
    y = torch.as_tensor([classes.index(c) for c in y_names], dtype=torch.long)
    if len(x) != len(y):
        raise ValueError(f"{len(x)} maps for {len(y)} labels")
    with training.seeded(seed):  # the initial weights come from seed
        model = MapCNN(classes, size=size, width=width, n_stages=n_stages)
    counts = torch.bincount(y, minlength=len(classes)).float()
    w = (counts.sum() / (len(classes) * counts.clamp(min=1))) if balanced else None
    loss_fn = nn.CrossEntropyLoss(weight=w)

    def batches(generator):  # a fresh permutation per epoch
        perm = torch.randperm(len(x), generator=generator)
        return (perm[i:i + batch_size] for i in range(0, len(x), batch_size))

    def batch_loss(m, idx):
        return loss_fn(m(x[idx]), y[idx]), len(idx)

    log = training.fit(model, batches, batch_loss,
                       optimizer=functools.partial(torch.optim.Adam, lr=lr,
                                                   weight_decay=weight_decay),
                       epochs=epochs, seed=seed, num_threads=threads)
    model.history = log.epoch_losses
    model.train_log = log
    return model


# --- evaluation -----------------------------------------------------------------------------

def evaluate(y_true: Sequence[str], y_pred: Sequence[str],
             labels: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-class ``precision, recall, f1, support`` plus rows ``macro avg`` and
    ``weighted avg`` (over ``labels``; default: the :data:`MAP_TYPES` present in either
    input) and ``accuracy`` (in the f1 column). Classes never predicted score 0."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    yt = np.asarray(y_true, dtype=object)
    yp = np.asarray(y_pred, dtype=object)
    if labels is None:
        seen = set(yt) | set(yp)
        labels = [c for c in MAP_TYPES if c in seen] + sorted(seen - set(MAP_TYPES), key=str)
    labels = list(labels)
    p, r, f, s = precision_recall_fscore_support(yt, yp, labels=labels, zero_division=0)
    rows = [{"class": c, "precision": p[i], "recall": r[i], "f1": f[i], "support": int(s[i])}
            for i, c in enumerate(labels)]
    for avg in ("macro", "weighted"):
        pa, ra, fa, _ = precision_recall_fscore_support(yt, yp, labels=labels, average=avg,
                                                        zero_division=0)
        rows.append({"class": f"{avg} avg", "precision": pa, "recall": ra, "f1": fa,
                     "support": int(s.sum())})
    rows.append({"class": "accuracy", "precision": np.nan, "recall": np.nan,
                 "f1": accuracy_score(yt, yp), "support": len(yt)})
    return pd.DataFrame(rows)


# --- several seeds --------------------------------------------------------------------------

def out_of_fold(stats: pd.DataFrame, maps, labels: Sequence[str], *, seed: int,
                n_folds: int = 5, grid: dict | None = None,
                cnns: dict[str, dict] | None = None, threads: int | None = 1,
                ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Out-of-fold predictions of the rule classifier and of each CNN setting, for one seed.

    stats: :func:`statistics_table`-style rows, one per labelled map; maps: the same maps,
    ``(n, n)`` each (or a prepared tensor); labels: their types. ``seed`` drives everything
    that is random: the fold split (``StratifiedKFold(shuffle=True, random_state=seed)``),
    each CNN's initial weights and its batch order. Each map is predicted once, by
    classifiers fitted on the other folds only (the rule thresholds by :class:`RuleClassifier`
    with ``grid``). cnns: ``{name: train_cnn keyword arguments}``, e.g.
    ``{"cnn": {"n_stages": 2, "epochs": 150}}``.

    Returns ``({"rules" and each cnn name: predictions (N,)}, {same names: seconds})``.
    """
    import time

    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(labels, dtype=object)
    cnns = dict(cnns or {})
    prepared: dict[int, torch.Tensor] = {}  # pooled once per input size, not once per fold
    for kw in cnns.values():
        size = kw.get("size", 32)
        if size not in prepared:
            prepared[size] = prepare_maps(maps, size)
    pred = {k: np.empty(len(y), dtype=object) for k in ("rules", *cnns)}
    seconds = dict.fromkeys(pred, 0.0)
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        # a type with fewer labelled maps than folds makes scikit-learn warn that some fold
        # lacks it; every map is still predicted exactly once (the type counts are tabled)
        warnings.filterwarnings("ignore", message="The least populated class")
        splits = list(folds.split(np.zeros(len(y)), y))
    for fit_idx, test_idx in splits:
        t0 = time.perf_counter()
        rc = RuleClassifier(grid=grid).fit(stats.iloc[fit_idx], y[fit_idx])
        pred["rules"][test_idx] = rc.predict(stats.iloc[test_idx])
        seconds["rules"] += time.perf_counter() - t0
        for name, kw in cnns.items():
            t0 = time.perf_counter()
            x = prepared[kw.get("size", 32)]
            model = train_cnn(x[fit_idx], y[fit_idx], seed=seed, threads=threads, **kw)
            pred[name][test_idx] = model.predict(x[test_idx])
            seconds[name] += time.perf_counter() - t0
    return pred, seconds


def cross_validate_seeds(stats: pd.DataFrame, maps, labels: Sequence[str],
                         seeds: Sequence[int], **kwargs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`out_of_fold` for every seed, scored with :func:`evaluate` over all five types.

    Returns ``(scores, cost)``: ``scores`` is :func:`evaluate`'s table per classifier and seed
    (columns ``classifier, seed`` added); ``cost`` has ``classifier, seed, seconds``.
    """
    labels = np.asarray(labels, dtype=object)
    frames, cost = [], []
    for s in seeds:
        pred, secs = out_of_fold(stats, maps, labels, seed=int(s), **kwargs)
        for name, p in pred.items():
            frames.append(evaluate(labels, p, labels=list(MAP_TYPES))
                          .assign(classifier=name, seed=int(s)))
            cost.append({"classifier": name, "seed": int(s), "seconds": secs[name]})
    return pd.concat(frames, ignore_index=True), pd.DataFrame(cost)


def summarise_seeds(per_seed: pd.DataFrame, by: Sequence[str], values: Sequence[str],
                    seed: str = "seed") -> pd.DataFrame:
    """Mean, sd (``ddof=1``), min and max over seeds of each ``values`` column per ``by``
    group: columns ``by..., <value>_mean, <value>_sd, <value>_min, <value>_max, n_seeds``
    (groups in order of first appearance). With one seed the sd is NaN.

    >>> df = pd.DataFrame({"clf": ["a", "a"], "seed": [0, 1], "f1": [0.5, 0.7]})
    >>> summarise_seeds(df, ["clf"], ["f1"]).round(3).to_dict("records")
    [{'clf': 'a', 'f1_mean': 0.6, 'f1_sd': 0.141, 'f1_min': 0.5, 'f1_max': 0.7, 'n_seeds': 2}]
    """
    g = per_seed.groupby(list(by), sort=False)
    out = g[list(values)].agg(["mean", "std", "min", "max"])
    out.columns = [f"{v}_{'sd' if s == 'std' else s}" for v, s in out.columns]
    out["n_seeds"] = g[seed].nunique()
    return out.reset_index()


def count_types(classifiers: dict, attns: Iterable, inputs: Sequence, *, cls_id: int,
                sep_id: int, punct_ids: Iterable[int] | None = None,
                threads: int | None = 1) -> pd.DataFrame:
    """How many maps of each type every classifier finds, over every head of every example.

    classifiers: ``{key: fitted RuleClassifier or MapCNN}`` (e.g. one per seed); attns:
    iterable of ``(layers, heads, n, n)`` arrays (e.g. ``clustering.stream(store)``, read one
    at a time); inputs: aligned objects with ``input_ids`` and ``token_type_ids`` (for the
    rule statistics). Per example the CNN inputs are pooled once and the rule statistics
    computed once, then shared by all classifiers, so adding seeds costs only their forward
    passes. threads: torch intra-op threads for the CNNs' forward passes (restored
    afterwards; None: leave them): on a busy 2-core machine two threads made them about 5x
    slower than one. Returns one row per key (index ``key``), a column per
    :data:`MAP_TYPES` (counts) and ``maps``.
    """
    with training.torch_threads(threads):
        return _count_types(classifiers, attns, inputs, cls_id, sep_id, punct_ids)


def _count_types(classifiers, attns, inputs, cls_id, sep_id, punct_ids) -> pd.DataFrame:
    punct = None if punct_ids is None else list(punct_ids)
    keys = list(classifiers)
    counts = np.zeros((len(keys), len(MAP_TYPES)), dtype=np.int64)
    code = {t: i for i, t in enumerate(MAP_TYPES)}
    sizes = {c.size for c in classifiers.values() if isinstance(c, MapCNN)}
    rules = any(isinstance(c, RuleClassifier) for c in classifiers.values())
    for attn, x in zip(attns, inputs, strict=True):
        a = np.asarray(attn, dtype=np.float32)
        flat = a.reshape(-1, *a.shape[-2:])
        pooled = {s: prepare_maps(flat, s) for s in sizes}
        table = None
        if rules:
            st = head_statistics(flat, x.input_ids, x.token_type_ids, cls_id, sep_id, punct)
            table = pd.DataFrame(st)
        for k, key in enumerate(keys):
            clf = classifiers[key]
            pred = clf.predict(pooled[clf.size] if isinstance(clf, MapCNN) else table)
            counts[k] += np.bincount([code[p] for p in pred], minlength=len(MAP_TYPES))
    out = pd.DataFrame(counts, columns=list(MAP_TYPES), index=pd.Index(keys, name="key"))
    out["maps"] = counts.sum(1)
    return out


def _fmt(v: float, percent: bool, digits: int) -> str:
    return f"{100 * v:.{max(digits - 2, 0)}f}%" if percent else f"{v:.{digits}f}"


def _mean_sd(v: pd.Series, percent: bool, digits: int) -> str:
    return _mean_sd_text(float(v.mean()), float(v.std()) if len(v) > 1 else float("nan"),
                         percent, digits)


def seed_comparison(per_seed: pd.DataFrame, a: str, b: str, *, what: str,
                    names: dict[str, str] | None = None, percent: bool = False,
                    digits: int = 2) -> str:
    """One sentence comparing columns ``a`` and ``b`` of a per-seed table (one row per
    seed) that states an order only where every seed agrees.

    >>> t = pd.DataFrame({"cnn": [0.6, 0.62, 0.58], "cnn_8conv": [0.3, 0.45, 0.32]})
    >>> seed_comparison(t, "cnn_8conv", "cnn", what="macro-F1")
    'cnn_8conv is below cnn in 3 of 3 seeds (macro-F1 0.36 ± 0.08 vs 0.60 ± 0.02).'
    >>> seed_comparison(t.assign(cnn=[0.2, 0.62, 0.58]), "cnn_8conv", "cnn", what="macro-F1")
    'no consistent order: cnn_8conv is above cnn in 1 of 3 seeds, below in 2 (macro-F1 0.36 ± 0.08 vs 0.47 ± 0.23).'
    """
    nm = {a: a, b: b, **(names or {})}
    d = per_seed[a] - per_seed[b]
    n, hi, lo = len(d), int((d > 0).sum()), int((d < 0).sum())
    values = (f"({what} {_mean_sd(per_seed[a], percent, digits)} vs "
              f"{_mean_sd(per_seed[b], percent, digits)})")
    if hi == n:
        return f"{nm[a]} is above {nm[b]} in {n} of {n} seeds {values}."
    if lo == n:
        return f"{nm[a]} is below {nm[b]} in {n} of {n} seeds {values}."
    ties = f", equal in {n - hi - lo}" if n - hi - lo else ""
    return (f"no consistent order: {nm[a]} is above {nm[b]} in {hi} of {n} seeds, "
            f"below in {lo}{ties} {values}.")


def seed_extremes(per_seed: pd.DataFrame, *, what: str, percent: bool = False,
                  digits: int = 2) -> str:
    """Which column of a per-seed table (one row per seed, one column per item, e.g. task)
    is lowest and which highest, with how many seeds agree.

    >>> t = pd.DataFrame({"CoLA": [0.16, 0.18], "MRPC": [0.59, 0.55], "RTE": [0.58, 0.57]})
    >>> seed_extremes(t, what="Heterogeneous share", percent=True)
    'Heterogeneous share lowest on CoLA in 2 of 2 seeds (17 ± 1%); highest on MRPC in 1 of 2 seeds, RTE in 1 (57 ± 3% and 57 ± 1%).'
    """
    n = len(per_seed)
    parts = []
    for word, idx in (("lowest", per_seed.idxmin(axis=1)), ("highest", per_seed.idxmax(axis=1))):
        counts = idx.value_counts(sort=False)
        counts = counts.sort_values(ascending=False, kind="stable")
        items = list(counts.items())
        first, k = items[0]
        text = f"{word} on {first} in {k} of {n} seeds"
        text += "".join(f", {t} in {c}" for t, c in items[1:])
        vals = " and ".join(_mean_sd(per_seed[t], percent, digits) for t, _ in items)
        parts.append(f"{text} ({vals})")
    return f"{what} " + "; ".join(parts) + "."


def mean_sd_pivot(summary: pd.DataFrame, index: str, columns: str, value: str, *,
                  percent: bool = False, digits: int = 2) -> pd.DataFrame:
    """A :func:`summarise_seeds` table as text for reading: ``index`` x ``columns``, cells
    ``"mean ± sd"`` of ``value`` (rows and columns in order of first appearance).

    >>> s = pd.DataFrame({"task": ["A", "A"], "type": ["V", "D"], "share_mean": [0.5, 0.25],
    ...                   "share_sd": [0.01, 0.02]})
    >>> mean_sd_pivot(s, "task", "type", "share", percent=True).to_dict("records")
    [{'V': '50 ± 1%', 'D': '25 ± 2%'}]
    """
    text = [_mean_sd_text(m, sd, percent, digits)
            for m, sd in zip(summary[f"{value}_mean"], summary[f"{value}_sd"], strict=True)]
    out = summary.assign(_text=text).pivot(index=index, columns=columns, values="_text")
    out = out.reindex(index=list(dict.fromkeys(summary[index])),
                      columns=list(dict.fromkeys(summary[columns])))
    out.columns.name = None
    return out


def _mean_sd_text(mean: float, sd: float, percent: bool, digits: int) -> str:
    if sd != sd:  # one seed: no sd
        return _fmt(mean, percent, digits)
    m, s = _fmt(mean, percent, digits).rstrip("%"), _fmt(sd, percent, digits)
    return f"{m} ± {s}"
