"""Claims of Clark et al. 2019 (notebooks 01-05) and Kovaleva et al.'s Section 4.1 (05), each
with its criterion and reference fixed here, before any table is read."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pandas as pd

from ..analyses import gradients
from ..papers import (
    CLARK_FIGURE6,
    CLARK_SECTION3,
    CLARK_SECTION3_NUMBERS,
    CLARK_TABLE1,
    CLARK_TABLE2,
    CLARK_TABLE3,
    KOVALEVA_HETEROGENEOUS_RANGE,
    KOVALEVA_SECTION41,
    KOVALEVA_TASKS,
)
from . import depth, resample, stats
from .core import (
    MIN_SEEDS,
    Check,
    Claim,
    Outcome,
    Tables,
    heterogeneous_band,
    pct,
)

CLARK = "Clark et al. 2019"
KOVALEVA = "Kovaleva et al. 2019"
DASH = "\u2013"


# --- 01: surface patterns ----------------------------------------------------------------
# Every 01 rule resamples the Wikipedia *articles* the segments come from (issue 33): the
# segments are overlapping paragraph pairs of about 120 articles, not independent draws.
# Each segment's own statistics (example-weighted means over its attending tokens, as the
# per-head tables average them) are notebook 01's ``01_by_segment_{model,control}.npz``;
# a pooled mean over segments is the per-head table's value. Tests are two-sided; a "best
# head" is chosen inside every resample (max-over-heads). Rules return the resampled result
# and the paper's threshold as the null; the ledger core judges it at the family's level.

#: Notebook 01's per-segment statistics (written since 2026-11-27), one file per model.
SEGMENT_TABLE = "01_by_segment_{}.npz"
#: Resamples and seed of every 01 test.
RESAMPLES_01, SEED_01 = 10_000, 0
_C3 = CLARK_SECTION3_NUMBERS
#: Sizes the paper does not give, read here (each row's criterion says so): the smallest
#: difference of attention shares (points / 100) or entropies (nats) the ledger calls a
#: pattern, below which a ``no`` says the difference is negligible.
SHARE_MARGIN = 0.02
ENTROPY_MARGIN = 0.5  # nats: the band of the [CLS]-entropy rows (about 10% of ln 128 = 4.85)
ENTROPY_DIFF_MARGIN = 0.1  # nats: a difference of mean entropies between two halves
#: "little" attention (Section 3.1) read as below the paper's own bound for broad heads'
#: weight on any single word (3.3); "often" (Figure 2) read as at least a quarter of the heads;
#: "substantial" (3.2) as more than 10 points of all attention above uniform attention's.
LITTLE, OFTEN, SUBSTANTIAL = 0.10, 0.25, 0.10


_ART = (f"cluster bootstrap over the Wikipedia articles ({RESAMPLES_01:,} resamples; the "
        "segments are overlapping paragraph pairs of them), two-sided")
_MAXT = (f"max-over-heads over the Wikipedia articles ({RESAMPLES_01:,} resamples): the best "
         "head chosen inside every resample (studentised max-T, simultaneous interval), "
         "two-sided")


@functools.lru_cache(maxsize=4)
def _npz(path: str, mtime_ns: int) -> dict[str, np.ndarray]:
    """The arrays of one npz file, read once per version (every 01 rule reads the same)."""
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    for v in out.values():
        v.setflags(write=False)
    return out


class _Segments:
    """One model's per-segment statistics (:data:`SEGMENT_TABLE`): ``values(name)`` the
    ``(n, L, H)`` array of the segments with eligible tokens and their article codes."""

    def __init__(self, t: Tables, which: str):
        name = SEGMENT_TABLE.format(which)
        if not t.has(name):
            raise ValueError(f"this run saved no per-segment statistics ({name})")
        path = t.path / name
        self.z = _npz(str(path.resolve()), path.stat().st_mtime_ns)
        self.article = self.z["article"].astype(np.int64)
        self.names = self.z["article_names"]
        self.n = len(self.article)
        _, self.L, self.H = self.z["previous"].shape
        self.unit = f"{len(np.unique(self.article)):,} articles ({self.n:,} segments)"

    def values(self, name: str, layers: list[int] | None = None):
        """(segments with a value, L' x H) float64 and their articles; ``layers`` 1-based."""
        if name not in self.z:
            raise ValueError(f"{SEGMENT_TABLE.format('*')} holds no {name!r}")
        v = self.z[name].astype(np.float64)
        keep = self.z.get(f"count_{name}", np.ones(self.n)) > 0
        if layers is not None:
            v = v[:, [ly - 1 for ly in layers]]
        return v[keep].reshape(int(keep.sum()), -1), self.article[keep]

    def layer_shares(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(n, L): the segment's share per layer (mean over the layer's heads)."""
        v, art = self.values(name)
        return v.reshape(len(v), self.L, self.H).mean(-1), art

    def label(self, k: int, layers: list[int] | None = None) -> str:
        first = layers or list(range(1, self.L + 1))
        return f"{first[k // self.H]}-{k % self.H + 1}"


def _columns(L: int, H: int, layers) -> list[int]:
    """Flat (layer, head) columns of the 1-based ``layers``."""
    return [(ly - 1) * H + h for ly in layers for h in range(H)]


def _on_share_scale(r: resample.MaxOverHeads, null: float) -> resample.MaxOverHeads:
    """:func:`~.resample.max_over_heads` reports margins over ``null``; the same result with
    the heads' means themselves (margins plus ``null``), so that its ``interval_at`` and
    ``head_interval`` are on the share's scale and the Check's null is the paper's threshold
    (the p-value, standard errors and critical values do not move)."""
    return dataclasses.replace(r, estimate=r.estimate + null, lo=r.lo + null, hi=r.hi + null,
                               margins=r.margins + null, chosen_draws=r.chosen_draws + null)


def _sink_note(seg: _Segments) -> str:
    """The model note of the rows about [SEP]: where this model parks its attention, when it
    is not on [SEP] (all-MiniLM-L6-v2: [CLS], 37-41% in layers 2-5)."""
    cls, _ = seg.layer_shares("cls")
    sep, _ = seg.layer_shares("sep")
    c, s = cls.mean(0), sep.mean(0)
    if c.max() <= max(s.max(), 0.2):
        return ""
    layers = [ly for ly in range(1, seg.L + 1) if c[ly - 1] >= c.max() / 2]
    where = f"layers {layers[0]}-{layers[-1]}" if len(layers) > 1 else f"layer {layers[0]}"
    rng = [c[ly - 1] for ly in layers], [s[ly - 1] for ly in layers]
    return (f"model note: this model's attention sink is [CLS] ({100 * min(rng[0]):.0f}-"
            f"{100 * max(rng[0]):.0f}% of the attention in {where}), not [SEP] "
            f"({100 * min(rng[1]):.0f}-{100 * max(rng[1]):.0f}% there)")


def _best_head(column: str, threshold: float, direction: int = 1,
               layers: list[int] | None = None):
    """Rule: some head's mean ``column`` lies beyond ``threshold`` (``direction`` +1 above,
    -1 below): max-over-heads over the articles, the head chosen inside every resample (the
    largest, or the smallest for -1), two-sided; ``heads``: those whose simultaneous 95%
    interval clears the threshold."""
    def rule(t: Tables, which: str) -> Outcome:
        seg = _Segments(t, which)
        x, art = seg.values(column, layers)
        choose = "largest" if direction == 1 else "smallest"
        r = _on_share_scale(resample.max_over_heads(
            x, None, art, null=threshold, choose=choose, n_resamples=RESAMPLES_01,
            seed=SEED_01), threshold)
        ivs = [r.head_interval(k) for k in range(x.shape[1])]
        clear = [seg.label(k, layers) for k, (lo, hi) in enumerate(ivs)
                 if (lo > threshold if direction == 1 else hi < threshold)]
        raw = [seg.label(k, layers) for k, m in enumerate(r.margins)
               if direction * (m - threshold) > 0]
        what = "above" if direction == 1 else "below"
        value = (f"best head {seg.label(r.best, layers)} {pct(r.estimate)}; {len(raw)} "
                 f"head{'s' if len(raw) != 1 else ''} {what} {pct(threshold, 0)} as raw means"
                 + (f" ({', '.join(raw[:8])}{', ...' if len(raw) > 8 else ''})" if raw else ""))
        return Outcome(value=value, check=Check(result=r, null=threshold, direction=direction),
                       unit=seg.unit, heads=", ".join(clear), scale=100, suffix="%",
                       note=f"heads: the simultaneous 95% interval clears {pct(threshold, 0)}")
    return rule


def _with_note(rule, sink: bool = True):
    """``rule`` with the model note on the attention sink added to the model's row."""
    def wrapped(t: Tables, which: str) -> Outcome:
        o = rule(t, which)
        if sink and which == "model" and not o.untestable:
            try:
                sink_note = _sink_note(_Segments(t, which))
            except ValueError:  # no per-segment statistics: the row goes without the note
                sink_note = ""
            o.note = "; ".join(x for x in (o.note, sink_note) if x)
        return o
    return wrapped


def _sep_band(t: Tables, which: str) -> Outcome:
    """[SEP]'s mean share over the layers at BERT-base's depths 6-10 (:mod:`.depth`)."""
    seg = _Segments(t, which)
    layers = depth.layers_at(seg.L, *_C3["sep_layers"])
    x, art = seg.values("sep", layers)
    r = resample.cluster_bootstrap(x.mean(1), art, null=_C3["sep_share"],
                                   n_resamples=RESAMPLES_01, seed=SEED_01)
    return Outcome(value=f"{pct(r.estimate)} (layers {layers[0]}-{layers[-1]} of {seg.L})",
                   check=Check(result=r, null=_C3["sep_share"]), unit=seg.unit, scale=100,
                   suffix="%")


_ORDER = (("cls", "[CLS]", "early"), ("sep", "[SEP]", "middle"), ("punct", "./,", "deep"))


def _third_gaps(means: np.ndarray, L: int) -> np.ndarray:
    """(..., 3L) pooled layer shares of [CLS], [SEP], ./, -> (..., 3): per token class, its
    mean share over the layers of the paper's third minus the largest mean share of the
    other two thirds (:func:`.depth.thirds`)."""
    thirds = depth.thirds(L)
    gaps = []
    for i, (_tok, _name, third) in enumerate(_ORDER):
        m = means[..., i * L:(i + 1) * L]
        by = {k: m[..., [ly - 1 for ly in v]].mean(-1) for k, v in thirds.items()}
        others = np.max(np.stack([by[k] for k in thirds if k != third], -1), -1)
        gaps.append(by[third] - others)
    return np.stack(gaps, -1)


def _layer_order(t: Tables, which: str) -> Outcome:
    """[CLS] early, [SEP] middle, ./, deep: the smallest of the three gaps (each class's
    share in its third minus its largest share in another third) above 0, articles
    resampled (all three at once: the smallest gap is above 0 exactly when each is)."""
    seg = _Segments(t, which)
    if any(not v for v in depth.thirds(seg.L).values()):
        return Outcome(value=DASH, untestable=f"a {seg.L}-layer model has no layer in some "
                                              "third of the depth")
    shares = [seg.layer_shares(tok) for tok, _, _ in _ORDER]
    x, art = np.concatenate([s for s, _ in shares], 1), shares[0][1]
    L = seg.L
    r = resample.cluster_bootstrap(x, art, null=0.0, n_resamples=RESAMPLES_01, seed=SEED_01,
                                   statistic=lambda m: _third_gaps(m, L).min(-1))
    gaps = _third_gaps(x.mean(0), L)
    parts = []
    for i, (_tok, name, third) in enumerate(_ORDER):
        peak = int(np.argmax(x[:, i * L:(i + 1) * L].mean(0))) + 1
        where = ("early", "middle", "deep")[depth.third(peak, L)]
        parts.append(f"{name} peaks L{peak} ({where}), {third} third "
                     f"{100 * gaps[i]:+.1f} points")
    return Outcome(value="; ".join(parts), check=Check(result=r, null=0.0,
                                                       margin=SHARE_MARGIN),
                   unit=seg.unit, scale=100, suffix=" points",
                   note="the smallest of the three gaps is tested")


def _order_stat(m: np.ndarray, rank: int) -> np.ndarray:
    """The ``rank``-th smallest (0-based) of the last axis."""
    return np.partition(m, rank, axis=-1)[..., rank]


def _current_little(t: Tables, which: str) -> Outcome:
    """Most heads put little (< 10%) attention on the current token: the share of the head
    ranked ``K // 2 + 1`` from the bottom (more than half of the heads lie at or below it)."""
    seg = _Segments(t, which)
    x, art = seg.values("current")
    k = x.shape[1] // 2
    r = resample.cluster_bootstrap(x, art, null=LITTLE, n_resamples=RESAMPLES_01,
                                   seed=SEED_01, statistic=lambda m: _order_stat(m, k))
    below = int((x.mean(0) < LITTLE).sum())
    return Outcome(value=f"{below} of {x.shape[1]} heads below {pct(LITTLE, 0)}; the "
                         f"{k + 1}th-smallest head {pct(r.estimate)}",
                   check=Check(result=r, null=LITTLE, direction=-1), unit=seg.unit,
                   scale=100, suffix="%")


def _halves(L: int) -> tuple[list[int], list[int]]:
    """The earlier and later half of the depth (BERT-base's layers 1-6 and 7-12)."""
    half = depth.BERT_BASE_LAYERS // 2
    return depth.layers_at(L, 1, half), depth.layers_at(L, half + 1, depth.BERT_BASE_LAYERS)


def _positional_early(t: Tables, which: str) -> Outcome:
    """Heads on the previous or next token sit especially early: each head's positional
    share (the larger of its previous- and next-token means), mean over the earlier half's
    heads minus the later half's."""
    seg = _Segments(t, which)
    prev, art = seg.values("previous")
    nxt, _ = seg.values("next")
    K = prev.shape[1]
    early, late = _halves(seg.L)
    ce, cl = _columns(seg.L, seg.H, early), _columns(seg.L, seg.H, late)

    def stat(m):
        pos = np.maximum(m[..., :K], m[..., K:])
        return pos[..., ce].mean(-1) - pos[..., cl].mean(-1)

    r = resample.cluster_bootstrap(np.concatenate([prev, nxt], 1), art, null=0.0,
                                   n_resamples=RESAMPLES_01, seed=SEED_01, statistic=stat)
    pos = np.maximum(prev.mean(0), nxt.mean(0))
    return Outcome(value=f"layers {early[0]}-{early[-1]}: {pct(pos[ce].mean())}, layers "
                         f"{late[0]}-{late[-1]}: {pct(pos[cl].mean())} "
                         f"({100 * r.estimate:+.1f} points)",
                   check=Check(result=r, null=0.0, margin=SHARE_MARGIN), unit=seg.unit,
                   scale=100, suffix=" points")


def _few_tokens(t: Tables, which: str) -> Outcome:
    """A substantial amount of attention goes to [CLS], [SEP], . and ,: their share of all
    attention (every head and layer) minus what uniform attention gives them, per segment."""
    seg = _Segments(t, which)
    got, uni = 0.0, 0.0
    for tok in ("cls", "sep", "punct"):
        v, art = seg.values(tok)
        got = got + v.mean(1)
        uni = uni + seg.z[f"uniform_{tok}"].astype(np.float64)
    r = resample.cluster_bootstrap(got - uni, art, null=SUBSTANTIAL,
                                   n_resamples=RESAMPLES_01, seed=SEED_01)
    return Outcome(value=f"{pct(got.mean())} of all attention vs. {pct(uni.mean())} under "
                         f"uniform attention ({100 * r.estimate:+.1f} points)",
                   check=Check(result=r, null=SUBSTANTIAL), unit=seg.unit, scale=100,
                   suffix=" points")


def _half_to_special(t: Tables, which: str) -> Outcome:
    """Often more than half of a head's attention goes to [CLS], [SEP], . and ,: the share
    of the head ranked ``ceil(K / 4)`` from the top (a quarter of the heads lie at or above)."""
    seg = _Segments(t, which)
    parts = [seg.values(tok) for tok in ("cls", "sep", "punct")]
    x, art = sum(v for v, _ in parts), parts[0][1]
    K = x.shape[1]
    rank = K - math.ceil(OFTEN * K)
    r = resample.cluster_bootstrap(x, art, null=_C3["half_to_special"],
                                   n_resamples=RESAMPLES_01, seed=SEED_01,
                                   statistic=lambda m: _order_stat(m, rank))
    above = int((x.mean(0) > _C3["half_to_special"]).sum())
    return Outcome(value=f"{above} of {K} heads above 50%; the {K - rank}th-largest head "
                         f"{pct(r.estimate)}", check=Check(result=r, null=_C3["half_to_special"]),
                   unit=seg.unit, scale=100, suffix="%")


def _sep_from_sep(t: Tables, which: str) -> Outcome:
    """Heads attend to [SEP] more from [SEP] than from other tokens, in most heads: per head
    the [SEP]->[SEP] share minus the other tokens' share to [SEP] (paired within each
    segment), the difference of the head ranked ``K // 2 + 1`` from the top."""
    seg = _Segments(t, which)
    a, art = seg.values("sep_to_sep")
    keep = seg.z["count_sep_to_sep"] > 0
    b = seg.z["rest_to_sep"].astype(np.float64)[keep].reshape(len(a), -1)
    d = a - b
    K = d.shape[1]
    rank = K - (K // 2 + 1)
    r = resample.cluster_bootstrap(d, art, null=0.0, n_resamples=RESAMPLES_01, seed=SEED_01,
                                   statistic=lambda m: _order_stat(m, rank))
    more = int((d.mean(0) > 0).sum())
    return Outcome(value=f"{more} of {K} heads attend more to [SEP] from [SEP]; the "
                         f"{K - rank}th-largest difference {100 * r.estimate:+.1f} points",
                   check=Check(result=r, null=0.0, margin=SHARE_MARGIN), unit=seg.unit,
                   scale=100, suffix=" points")


def _broad_lower(t: Tables, which: str) -> Outcome:
    """Very broad heads sit especially in the lower layers: mean entropy of the earlier
    half's heads minus the later half's."""
    seg = _Segments(t, which)
    x, art = seg.values("entropy")
    early, late = _halves(seg.L)
    ce, cl = _columns(seg.L, seg.H, early), _columns(seg.L, seg.H, late)
    r = resample.cluster_bootstrap(x[:, ce].mean(1) - x[:, cl].mean(1), art, null=0.0,
                                   n_resamples=RESAMPLES_01, seed=SEED_01)
    m = x.mean(0)
    return Outcome(value=f"layers {early[0]}-{early[-1]}: {m[ce].mean():.2f} nats, layers "
                         f"{late[0]}-{late[-1]}: {m[cl].mean():.2f} ({r.estimate:+.2f})",
                   check=Check(result=r, null=0.0, margin=ENTROPY_DIFF_MARGIN),
                   unit=seg.unit, suffix=" nats", digits=2)


def _cls_entropy_close(t: Tables, which: str) -> Outcome:
    """In most layers the entropy from [CLS] is very close to that of all tokens: per layer
    |mean entropy from [CLS] - mean entropy|, the layer ranked ``L // 2 + 1`` from the
    bottom (more than half of the layers lie at or below it), within the margin."""
    seg = _Segments(t, which)
    e_cls, art = seg.layer_shares("entropy_cls")
    e_all, art2 = seg.layer_shares("entropy")
    if len(e_cls) != len(e_all) or np.any(art != art2):
        raise ValueError("entropy and entropy_cls cover different segments")
    L = seg.L
    rank = L // 2

    def stat(m):
        return _order_stat(np.abs(m[..., :L] - m[..., L:]), rank)

    r = resample.cluster_bootstrap(np.concatenate([e_cls, e_all], 1), art, null=0.0,
                                   n_resamples=RESAMPLES_01, seed=SEED_01, statistic=stat)
    gap = np.abs(e_cls.mean(0) - e_all.mean(0))
    return Outcome(value="|[CLS] - all| per layer: " + ", ".join(
        f"L{ly} {g:.2f}" for ly, g in enumerate(gap, 1)) + " nats",
        check=Check(result=r, kind="no effect", null=0.0, margin=ENTROPY_MARGIN),
        unit=seg.unit, suffix=" nats", digits=2)


def _cls_entropy(t: Tables, which: str) -> Outcome:
    """The last layer's mean entropy from [CLS] within 0.5 nats of the paper's 3.89."""
    seg = _Segments(t, which)
    x, art = seg.values("entropy_cls", [seg.L])
    target = _C3["cls_entropy_last"]
    r = resample.cluster_bootstrap(x.mean(1), art, null=target, n_resamples=RESAMPLES_01,
                                   seed=SEED_01)
    return Outcome(value=f"{r.estimate:.2f} nats (layer {seg.L})",
                   check=Check(result=r, kind="no effect", null=target,
                               margin=ENTROPY_MARGIN),
                   unit=seg.unit, suffix=" nats", digits=2,
                   note="model note: the paper ties the broad last layer to next-sentence "
                        "prediction, an objective the sentence encoders here were not "
                        "trained with (they were trained on sentence pairs)")


def _punct_most_common(t: Tables, which: str) -> Outcome:
    """'.' and ',' are the two most frequent word pieces of the segments once 'the' is set
    aside: the smaller of their counts per segment minus the largest count of any other
    piece (of the 20 most frequent), articles resampled."""
    seg = _Segments(t, which)
    if "piece_counts" not in seg.z:
        raise ValueError(f"{SEGMENT_TABLE.format(which)} holds no piece counts")
    toks = [str(x) for x in seg.z["piece_tokens"]]
    if "." not in toks or "," not in toks:
        raise ValueError("'.' or ',' is not among the counted pieces")
    counts = seg.z["piece_counts"].astype(np.float64)
    ip, ic = toks.index("."), toks.index(",")
    rest = [i for i, x in enumerate(toks) if x not in (".", ",", "the")]

    def stat(m):
        return np.minimum(m[..., ip], m[..., ic]) - m[..., rest].max(-1)

    r = resample.cluster_bootstrap(counts, seg.article, null=0.0, n_resamples=RESAMPLES_01,
                                   seed=SEED_01, statistic=stat)
    total = counts.sum(0)
    order = [toks[i] for i in np.argsort(-total, kind="stable")[:5]]
    runner = toks[rest[int(np.argmax(total[rest]))]]
    return Outcome(value=f"most frequent pieces: {', '.join(order)}; '.' {int(total[ip]):,}, "
                         f"',' {int(total[ic]):,}, next {runner!r} "
                         f"{int(total[rest].max()):,}",
                   check=Check(result=r, null=0.0), unit=seg.unit, suffix=" per segment",
                   digits=2, note="a property of the text and the tokenizer, not of "
                                  "attention: the control shares both, so it is not run")


#: Notebook 01's per-segment sums behind Figure 3 (written since 2026-11-26; with each
#: segment's article since 2026-11-27).
GRADIENT_TABLE = "01_gradient_by_segment.csv"
GRADIENT_THRESHOLD = 0.5


def _layers(spec: str) -> list[int]:
    """``"3-6"`` -> ``[3, 4, 5, 6]``; ``"6"`` -> ``[6]``."""
    first, _, last = str(spec).partition("-")
    return list(range(int(first), int(last or first) + 1))


def _paper_vs_run_row(t: Tables, start: str) -> pd.Series:
    d = t.read("01_paper_vs_run.csv")
    row = d[d["claim"].str.startswith(start)]
    if row.empty:
        raise ValueError(f"01_paper_vs_run.csv has no claim starting {start!r}: re-run 01")
    return row.iloc[0]


def _gradient(t: Tables, which: str) -> Outcome:
    d = t.read("01_paper_vs_run.csv")
    if not d["claim"].str.startswith("|grad|").any():
        return Outcome(value=DASH, untestable="not computed for this model: notebook 01 "
                                              "says why (its interventions need BERT's "
                                              "attention module)")
    r = _paper_vs_run_row(t, "|grad| of the MLM loss w.r.t. attention to [SEP]")
    value = f"x{float(r['model']):.2f} (layers {r['layers of this model']})"
    if str(r.get("from", "")) != gradients.OWN_HEAD:
        return Outcome(value=value, untestable=(
            "notebook 01 routes the gradient through a masked-LM head fitted here on a model "
            "never trained to predict masked tokens, so a small ratio would not mean what the "
            "paper's does; a checkpoint with its own head (bert-base-uncased) is tested"))
    seg = t.read(GRADIENT_TABLE) if t.has(GRADIENT_TABLE) else None
    if seg is None or "article" not in seg.columns:
        return Outcome(value=value, untestable=f"this run saved no per-segment gradients "
                                               f"with their articles ({GRADIENT_TABLE}); "
                                               "re-run notebook 01")
    seg = seg[seg["layer"].isin(_layers(r["layers of this model"]))
              & seg["target"].isin(["[SEP]", "other"])]
    cube = {col: seg.pivot_table(index="segment", columns=["layer", "target"], values=col,
                                 aggfunc="sum").sort_index(axis=1) for col in
            ("sum_abs_grad", "n_weights")}
    n, n_layers = len(cube["sum_abs_grad"]), cube["sum_abs_grad"].shape[1] // 2
    sums, counts = (cube[c].to_numpy(dtype=float).reshape(n, n_layers, 2)
                    for c in ("sum_abs_grad", "n_weights"))
    arts = seg.groupby("segment")["article"].first().reindex(cube["sum_abs_grad"].index)
    names, codes = np.unique(arts.astype(str).to_numpy(), return_inverse=True)
    sep, other = 0, 1  # sorted targets: "[SEP]" < "other"
    draws = np.concatenate([gradients.pooled_ratio(sums, counts, sep, other, w[:, codes])
                            for w in resample.resample_counts(len(names), RESAMPLES_01,
                                                              SEED_01)])
    est = gradients.pooled_ratio(sums, counts, sep, other)
    res = resample.from_draws(draws, est, null=GRADIENT_THRESHOLD, n_clusters=len(names))
    return Outcome(value=value, check=Check(result=res, null=GRADIENT_THRESHOLD, direction=-1),
                   unit=f"{len(names):,} articles ({n:,} segments)", suffix="x", digits=2)


def _split_words(t: Tables, which: str) -> Outcome:
    r = _paper_vs_run_row(t, "words split")
    return Outcome(value=pct(float(r["model"]) / 100),
                   untestable="a property of the tokenizer and the text, not of attention; "
                              "the random-weights control shares the tokenizer")


# --- 02: syntax heads --------------------------------------------------------------------

def _head_row(scores: pd.DataFrame, relation: str, head: str, direction: str) -> pd.Series:
    layer, h = (int(x) for x in head.split("-"))
    m = scores[(scores["relation"] == relation) & (scores["layer"] == layer - 1)
               & (scores["head"] == h - 1) & (scores["direction"] == direction)]
    if m.empty:
        raise ValueError(f"02_head_scores has no row for {relation} {head} {direction}")
    return m.iloc[0]


def _syntax(rel: str):
    def rule(t: Tables, which: str) -> Outcome:
        if which == "model":
            pv = t.read("02_paper_vs_run.csv").set_index("paper relation")
            here = pv.loc[rel, "relation here"]
            if here in (DASH, "") or pd.isna(pv.loc[rel, "accuracy"]):
                return Outcome(value=DASH, untestable=(
                    f"no UD relation stands for the paper's {rel} (UD attaches prepositions "
                    "to their noun as case)" if rel == "prep" else
                    f"no UD relation here stands for {rel}"))
        else:
            pv = t.read("02_paper_vs_run.csv").set_index("paper relation")
            here = pv.loc[rel, "relation here"]
            if here in (DASH, ""):
                return Outcome(value=DASH, untestable="no counterpart relation")
        table = t.read(f"02_table1_{which}.csv").set_index("relation")
        if here not in table.index:
            return Outcome(value=DASH, untestable=f"{here} is not in 02_table1_{which}.csv")
        r = table.loc[here]
        s = _head_row(t.read(f"02_head_scores_{which}.csv"), here, r["head"], r["direction"])
        m = 2 * t.num_layers * t.num_heads
        p = stats.bonferroni(stats.binom_greater(int(s["correct"]), int(s["total"]),
                                                 r["baseline"] / 100), m)
        return Outcome(value=f"{here} {r['head']}: {r['accuracy']:.1f} vs. {r['baseline']:.1f} "
                             f"({r['accuracy'] - r['baseline']:+.1f})",
                       effect=r["accuracy"] > r["baseline"], p=p, heads=r["head"],
                       note=f"n = {int(s['total'])} words")
    return rule


# --- 03: coreference ---------------------------------------------------------------------

def _coref(system: str, group: str, margin: float = 0.0):
    breakdown = "all" if group == "All" else "type"

    def rule(t: Tables, which: str) -> Outcome:
        d = t.read(f"03_head_scores_{which}.csv")
        d = d[(d["breakdown"] == breakdown) & (d["group"] == group)]
        b = t.read("03_baselines.csv")
        b = b[(b["system"] == system) & (b["breakdown"] == breakdown) & (b["group"] == group)]
        if d.empty or b.empty:
            raise ValueError(f"03 tables lack {system} / {group}: re-run notebook 03")
        best = d.loc[d["accuracy"].idxmax()]
        base = float(b["accuracy"].iloc[0])
        k, n = int(best["correct"]), int(best["total"])
        head = f"{int(best['layer']) + 1}-{int(best['head']) + 1}"
        p = stats.bonferroni(stats.binom_greater(k, n, base - margin), len(d))
        return Outcome(value=f"head {head} {pct(k / n)} vs. {pct(base)} "
                             f"({100 * (k / n - base):+.1f})",
                       effect=k / n > base - margin, p=p, heads=head,
                       note=f"n = {n} mentions")
    return rule


# --- 04: probes --------------------------------------------------------------------------

#: Notebook 04's per-sentence dev counts (written since 2026-11-27): probe, seed (blank for
#: right-branching), sentence, document, correct, scored.
DEV_TABLE = "04_dev_by_sentence.csv"
PROBE_RESAMPLES = 10_000
_CONTROL_PROBE = {"Attention + GloVe": "Random-init attention + GloVe"}
_NO_MAPS = ("Distances + GloVe", "Right-branching")


def _dev_counts(d: pd.DataFrame, probe: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(counts (S, n, 2), sentence ids (n,), documents (n,))`` of ``probe`` in
    :data:`DEV_TABLE`: per seed (one row for right-branching), each dev sentence's correct and
    scored words, sentences in their order."""
    part = d[d["probe"] == probe]
    if part.empty:
        raise ValueError(f"{DEV_TABLE} has no rows of {probe!r}: re-run notebook 04")
    sentences = np.sort(part["sentence"].unique())
    seeds = part["seed"].fillna(-1).to_numpy()
    out = []
    for s in np.unique(seeds):
        g = part[seeds == s].set_index("sentence").reindex(sentences)
        if g[["correct", "scored"]].isna().any().any():
            raise ValueError(f"{DEV_TABLE}: {probe!r} seed {s} lacks some dev sentences")
        out.append(g[["correct", "scored"]].to_numpy(dtype=float))
    docs = part.drop_duplicates("sentence").set_index("sentence").loc[sentences, "document"]
    return np.stack(out), sentences, docs.to_numpy()


def _probe(better: str, worse: str):
    """Rule: dev UAS of ``better`` minus ``worse`` (fractions; shown x 100 as points), a
    hierarchical bootstrap over probe seeds (drawn apart for the two probes, which were trained
    apart) and EWT dev documents (one draw for both: the same sentences are scored), judged
    against Table 3's difference. On the control, the random-init probe stands in for the
    trained attention + GloVe one."""
    def rule(t: Tables, which: str) -> Outcome | None:
        better_ = better if which == "model" else _CONTROL_PROBE.get(better)
        if better_ is None:
            return None
        seeds = t.read("04_table3_seeds.csv")
        if not t.has(DEV_TABLE):
            means = seeds.groupby("probe")["dev argmax"].mean()
            shown = DASH if better_ not in means or worse not in means else (
                f"{better_} {means[better_]:.1f} vs. {worse} {means[worse]:.1f}")
            return Outcome(value=shown, untestable=f"this run saved no per-sentence dev counts "
                                                   f"({DEV_TABLE}); re-run notebook 04")
        d = t.read(DEV_TABLE)
        a, sent_a, docs = _dev_counts(d, better_)
        b, sent_b, _ = _dev_counts(d, worse)
        if not np.array_equal(sent_a, sent_b):
            raise ValueError(f"{DEV_TABLE}: {better_} and {worse} are scored on different "
                             "dev sentences")
        ua = a[..., 0].sum(1) / a[..., 1].sum(1)  # each seed's dev UAS (fraction)
        ub = b[..., 0].sum(1) / b[..., 1].sum(1)
        value = (f"{better_} {100 * ua.mean():.1f} vs. {worse} {100 * ub.mean():.1f} "
                 f"({100 * (ua.mean() - ub.mean()):+.1f})")
        trained = [len(x) for x, name in ((a, better_), (b, worse)) if name != "Right-branching"]
        n_seeds = min(trained)
        if n_seeds < MIN_SEEDS:
            return Outcome(value=value, seeds=str(n_seeds),
                           untestable=f"{n_seeds} probe seeds; {MIN_SEEDS} needed")
        r = resample.hierarchical_bootstrap(
            np.zeros(len(sent_a)), a, resample.RATIO, preds_b=b, paired_seeds=False,
            clusters=docs, n_resamples=PROBE_RESAMPLES, seed=0)
        paper = (CLARK_TABLE3[better] - CLARK_TABLE3[worse]) / 100
        n_docs = len(np.unique(docs))
        seed_text = " and ".join(str(k) for k in sorted(set(trained))) + " probe seeds"
        note = (f"Table 3's difference {100 * paper:+.0f} points (BERT-base, WSJ/SD dev; here "
                f"UD EWT dev, {t.model}); probe seeds drawn with replacement apart for each "
                f"probe, EWT documents drawn together; {n_seeds} seeds give a coarse seed level "
                f"(a draw of {n_seeds} takes only {math.comb(2 * n_seeds - 1, n_seeds)} "
                "distinct multisets), and the seeds are optimiser noise on one dev set, the "
                "documents the sample"
                + ("; right-branching is deterministic (one row, no seed level)"
                   if "Right-branching" in (better_, worse) else ""))
        return Outcome(value=value, check=Check(result=r, kind="effect", null=0.0,
                                                paper_effect=paper, direction=1),
                       unit=f"{seed_text} x {len(sent_a):,} dev sentences ({n_docs} documents)",
                       seeds=str(n_seeds), note=note, scale=100, suffix=" points", digits=1)
    return rule


# --- 05: clustering and map types --------------------------------------------------------

#: Notebook 05's permutation nulls of the same-group / other-group ratio (written since
#: 2026-11-27): model, grouping ("layer" | "behaviour"), permutation, ratio.
NULL_TABLE = "05_separation_null.csv"


def _permutation_result(ratio: float, null_ratios: np.ndarray, n_heads: int):
    """The permutation test of a same-group / other-group ratio as a :class:`~.resample.
    Resampled`, so that the ledger draws its interval at the family's level and its MDE.

    The heads are the population the claim is about (this model's heads, not a sample of
    heads), so the permutation of group labels is the right test, not a bootstrap. The
    null ratios, shifted to the estimate (``r* - 1 + ratio``), are read as "basic" draws:
    the interval ``[ratio + 1 - q_hi(r*), ratio + 1 - q_lo(r*)]`` excludes 1 exactly when
    the observed ratio lies beyond the null's ``alpha / 2`` quantile (the two-sided
    permutation test at ``alpha``), the p-value is the two-sided permutation p, and the
    standard error is the null ratios' sd (the MDE's)."""
    null = np.asarray(null_ratios, dtype=float)
    if len(null) < 2 or not np.all(np.isfinite(null)):
        raise ValueError(f"{NULL_TABLE}: the permutation null is empty or undefined")
    return resample.from_draws(null - 1.0 + ratio, ratio, null=1.0, alternative="two-sided",
                               interval="basic", n_clusters=n_heads)


def _separation(grouping: str):
    """Rule: the same-group / other-group mean distance ratio of notebook 05 (groups: layers
    or surface behaviours) below 1, judged by its permutation test."""
    table = {"layer": "05_layer_separation.csv", "behaviour": "05_behaviour_separation.csv"}[
        grouping]

    def rule(t: Tables, which: str) -> Outcome:
        if not t.has(table):
            return Outcome(value=DASH, untestable=f"this run saved no {table}; re-run "
                                                  "notebook 05")
        d = t.read(table).set_index("model").loc[which]
        n_perm = int(d["n_perm"])
        heads = (t.num_layers or 0) * (t.num_heads or 0)
        labels = ""
        if grouping == "behaviour":
            heads = int(d["heads"])
            labels = d["labels"] if isinstance(d["labels"], str) else "none"
            if str(d["testable"]).strip().lower() != "true":
                return Outcome(value=f"{heads} heads with a behaviour ({labels})",
                               untestable="fewer than two surface behaviours with two heads or "
                                          "more: no clusters to compare")
        value = f"ratio {d['ratio']:.3f}"
        if "null_ratio_mean" in d.index:
            value += (f" (permutation null {d['null_ratio_mean']:.3f} \u00b1 "
                      f"{d['null_ratio_sd']:.3f})")
        if grouping == "behaviour":
            value += f"; {heads} heads with a behaviour ({labels})"
        if not t.has(NULL_TABLE):
            return Outcome(value=value, untestable=f"this run saved no permutation null "
                                                   f"({NULL_TABLE}); re-run notebook 05")
        null = t.read(NULL_TABLE)
        null = null[(null["model"] == which) & (null["grouping"] == grouping)]
        r = _permutation_result(float(d["ratio"]), null["ratio"].to_numpy(), heads)
        what = "layer" if grouping == "layer" else "surface behaviour"
        note = (f"{n_perm} permutations of the {what} labels over {heads} heads: the heads are "
                "the population the claim is about, so a permutation test, not a bootstrap; "
                "its interval is the permutation test inverted (null ratios shifted to the "
                "estimate), its standard error the null ratios' sd")
        if grouping == "behaviour":
            note += ("; behaviours overlap with layers (broad heads gather in the first "
                     "layers), so part of the effect may be the layers'")
        return Outcome(value=value, check=Check(result=r, kind="effect", null=1.0,
                                                paper_effect=None, direction=-1),
                       unit=f"{heads} heads ({n_perm} permutations of their {what} labels)",
                       note=note, scale=1.0, suffix="", digits=3)
    return rule


def _types_repeated(t: Tables, which: str) -> Outcome:
    d = t.read("05_type_proportions_by_seed.csv")
    types = [c for c in ("Vertical", "Diagonal", "Vertical+Diagonal", "Block", "Heterogeneous")
             if c in d.columns]
    means = d.groupby("task")[types].mean()  # each task's share, mean over classifier seeds
    found = sum(bool((means[c] > 0).all()) for c in types)
    value = (f"{found} of {len(types)} types in every task ({len(means)} tasks); share over "
             "tasks: " + ", ".join(f"{c} {pct(means[c].min(), 0)}-{pct(means[c].max(), 0)}"
                                   for c in types))
    note = ""
    if t.has("05_classifier_scores.csv"):
        sc = t.read("05_classifier_scores.csv")
        sc = sc[sc["class"] == "macro avg"].set_index("classifier")["f1_mean"]
        note = "held-out macro-F1 " + ", ".join(f"{k} {v:.2f}" for k, v in sc.items())
    return Outcome(value=value, note=note, untestable=(
        "'consistently repeated' gives neither a size nor a null to test against (it describes "
        "Figure 2), and notebook 05 classifies the pre-trained model's maps, so its tasks "
        "differ only in their inputs (the paper: one fine-tuned model per task), with no "
        "per-head or per-example types saved and a classifier well below the paper's F1 0.86 "
        "(Block is barely labelled); notebook 06 classifies fine-tuned maps"))


def _heterogeneous_pretrained(t: Tables, which: str) -> Outcome:
    d = t.read("05_type_proportions_by_seed.csv")
    d = d[d["task"].isin(KOVALEVA_TASKS)]
    parts, per_seed = heterogeneous_band(d, "seed")
    tasks = ", ".join(sorted(d["task"].unique()))
    note = f"pre-trained maps of {tasks} here (fine-tuned maps in the paper)"
    if str(t.model).startswith("all-mpnet"):
        note += ("; the CNNs were trained on all-MiniLM-L6-v2's labelled maps and applied to "
                 "this model: that transfer is not measured")
    inside = sum(per_seed)
    # A share inside a published range is a description, not an effect: with no null (the
    # control's maps are not classified, and no chance level exists for a 5-way share) no
    # verdict could be backed by a reference, so none is drawn; the seeds' ranges are shown.
    unt = (f"a range match with no reference to beat (the random-weights control's maps are "
           f"not classified); {inside} of {len(per_seed)} CNN seeds fall inside the band")
    return Outcome(value="; ".join(parts), seeds=str(len(per_seed)), note=note, untestable=unt)


# --- the claims, criteria fixed before any number ----------------------------------------

_CONTROL = "the random-weights control, same rule"


def claims() -> list[Claim]:
    """Every claim of notebooks 01-05 that the ledger judges."""
    out: list[Claim] = []
    c3 = CLARK_SECTION3
    n3 = CLARK_SECTION3_NUMBERS
    seg_needs = ("01_per_head_model.csv",)
    for direction, key, rid in (("previous", "previous", "clark-3.1-previous-token-heads"),
                                ("next", "next", "clark-3.1-next-token-heads")):
        out.append(Claim(
            "01", CLARK, "3.1", f"some heads put > 50% of their attention on the {direction} "
            "token", c3[key], f"the best head's mean share on the {direction} token > 50% "
            f"(the paper counts {len(n3[f'{key}_heads'])} such heads, in layers "
            f"{', '.join(map(str, n3[f'{key}_heads']))}: the count is shown in this_run and "
            "heads, not tested); the paper gives no share beyond the threshold, so `no` needs "
            "the best head's upper bound below 50%", f"{_CONTROL}; chance: uniform attention "
            "gives about 1/n per token (0.8% at 128)", f"{_MAXT}; null: the threshold",
            _best_head(direction, n3["positional_share"]), seg_needs, registry=(rid,)))
    out.append(Claim(
        "01", CLARK, "3.1", "most heads put little attention on the current token",
        "most heads (no number)", "more than half of the heads put < 10% of their attention "
        "on the current token ('little' read as the paper's own bound for broad heads' weight "
        "on any single word, 3.3): the share of the head ranked K/2 + 1 from the bottom "
        "< 10%", f"{_CONTROL}; uniform attention gives 1/n (about 1%), also 'little'",
        f"{_ART}; statistic: that head's pooled share", _current_little, seg_needs,
        registry=("clark-3.1-current-token",)))
    out.append(Claim(
        "01", CLARK, "3.1", "heads on the next or previous token sit especially in the "
        "earlier layers", f"previous-token heads in layers {', '.join(map(str, n3['previous_heads']))}"
        f", next-token heads in layers {', '.join(map(str, n3['next_heads']))} (of 12)",
        "each head's share on "
        "the previous or next token (the larger), mean over the heads of the earlier half of "
        "the depth (BERT-base's layers 1-6) above the later half's; the paper gives no size: "
        f"`no` also when the gap lies within {100 * SHARE_MARGIN:.0f} points",
        _CONTROL, f"{_ART}; statistic: the difference of the halves' means", _positional_early,
        seg_needs, registry=("clark-3.1-positional-early",)))
    out.append(Claim(
        "01", CLARK, "3.2", "a substantial amount of attention goes to a few tokens ([CLS], "
        "[SEP], periods and commas)", "substantial (no number; Figure 2)", "the share of all "
        "attention on [CLS], [SEP], '.' and ',' exceeds what uniform attention gives them "
        "(their count / n per segment) by more than 10 points ('substantial' read as a tenth "
        "of all attention; the paper gives no number)", f"{_CONTROL}; uniform attention: 0 "
        "points by construction", f"{_ART}; per segment: share minus its uniform share, "
        "paired", _with_note(_few_tokens), seg_needs, registry=("clark-3.2-few-tokens",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 2", "often more than half of a head's attention goes to "
        "[CLS], [SEP], periods and commas", "often (no fraction)", "at least a quarter of the "
        "heads put > 50% on the four tokens together ('often' read as a quarter; the paper "
        "gives no fraction): the share of the head ranked K/4 from the top > 50%",
        f"{_CONTROL}; uniform attention: about 12% on them", f"{_ART}; statistic: that head's "
        "pooled share", _with_note(_half_to_special), seg_needs,
        registry=("clark-3.2-fig2-half-to-special",)))
    out.append(Claim(
        "01", CLARK, "3.2", "over half of the attention goes to [SEP] in the middle layers",
        c3["sep_share"], "mean share to [SEP] > 50% over the layers at BERT-base's depths "
        "6-10 (ledger.depth); the paper gives no share beyond the threshold",
        f"{_CONTROL}; chance: 1/n per token", f"{_ART}; statistic: the band's mean share",
        _with_note(_sep_band), seg_needs, registry=("clark-3.2-sep-layers-6-10",)))
    out.append(Claim(
        "01", CLARK, "3.2", "some heads put > 90% of [SEP]'s attention on [SEP]",
        c3["sep_to_sep"], "the best head's mean [SEP]->[SEP] share > 90% (the paper: the heads "
        "processing [SEP] attend 'almost entirely' to the [SEP] tokens; read as the heads most "
        "on [SEP], i.e. the best of all heads, chosen inside every resample)", _CONTROL,
        f"{_MAXT}; null: the threshold", _with_note(_best_head("sep_to_sep", n3["sep_to_sep"])),
        seg_needs, registry=("clark-3.2-sep-to-sep-90",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 2", "heads attend to [SEP] more from [SEP] than from other "
        "tokens", "most heads (Figure 2, bottom)", "per head, the [SEP]->[SEP] share above the "
        "other tokens' share to [SEP], in more than half of the heads: the difference of the "
        "head ranked K/2 + 1 from the top > 0; the paper gives no size: `no` also when it lies "
        f"within {100 * SHARE_MARGIN:.0f} points", f"{_CONTROL}; uniform attention: 0",
        f"{_ART}; per segment and head: the two shares' difference, paired",
        _with_note(_sep_from_sep), seg_needs, registry=("clark-3.2-fig2-sep-from-sep",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 2", "[CLS] peaks early, [SEP] in the middle, ./, deep",
        c3["layer_order"], "each token class's mean share in the paper's third of the depth "
        "(early / middle / deep, ledger.depth) above its mean share in either other third, "
        "all three: the smallest of the three gaps > 0; the paper gives no size: `no` also "
        f"when it lies within {100 * SHARE_MARGIN:.0f} points", _CONTROL,
        f"{_ART}; statistic: the smallest gap", _with_note(_layer_order),
        ("01_per_head_model.csv",), registry=("clark-3.2-fig2-layer-order",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 3", "gradients through attention to [SEP] are small",
        c3["sep_gradient"], "|grad| ratio [SEP] / other < 0.5 in the layers from 5/12 on, "
        "through the checkpoint's own masked-LM head ('very small' read as below half; the "
        "paper gives no number)", "chance: a ratio of 1 ([SEP] no different from other "
        "tokens); the random-weights control has no masked-LM head", "bootstrap of the pooled "
        f"ratio over the Wikipedia articles ({RESAMPLES_01:,} resamples), two-sided",
        _with_note(_gradient), ("01_paper_vs_run.csv",), control=False,
        registry=("clark-3.2-gradient-sep", "clark-3.2-no-op")))
    out.append(Claim(
        "01", CLARK, "3.2", "periods and commas are the most common tokens after 'the'",
        "'.' and ',' (no counts)", "in the segments, '.' and ',' are the two most frequent "
        "word pieces once 'the' (and the special tokens) are set aside: the smaller of their "
        "counts above the largest other piece's", "none: a property of the text and the "
        "tokenizer, which the control shares", f"{_ART}; statistic: the smaller count minus "
        "the largest other count, per segment", _punct_most_common, seg_needs, control=False,
        registry=("clark-3.2-punct-most-common",)))
    out.append(Claim(
        "01", CLARK, "3.3, Figure 4", "very broad heads sit especially in the lower layers",
        "lower layers (no number)", "mean attention entropy of the heads of the earlier half "
        "of the depth (BERT-base's layers 1-6) above the later half's; the paper gives no "
        f"size: `no` also when the gap lies within {ENTROPY_DIFF_MARGIN} nats",
        f"{_CONTROL}; uniform attention: ln n in every layer", f"{_ART}; per segment: the "
        "halves' difference", _broad_lower, seg_needs,
        registry=("clark-3.3-broad-lower-layers",)))
    out.append(Claim(
        "01", CLARK, "3.3, Figure 4", "layer-1 heads attend broadly (<= ~10% on any word)",
        c3["broad_layer1"], "the broadest layer-1 head's mean maximum weight < 10% (the "
        "paper gives no size beyond the bound)", f"{_CONTROL}; chance: uniform attention gives "
        "1/n", f"{_MAXT} over the layer's heads (the smallest chosen); null: the bound",
        _best_head("max_weight", n3["broad_max_weight"], direction=-1, layers=[1]),
        seg_needs, registry=("clark-3.3-broad-10-percent",)))
    out.append(Claim(
        "01", CLARK, "3.3", "in most layers the entropy from [CLS] is very close to that of "
        "all tokens", "very close (no number)", "per layer |mean entropy from [CLS] - mean "
        f"entropy| within {ENTROPY_MARGIN} nats ('very close' read as the [CLS]-entropy rows' "
        "band; the paper gives no number) in more than half of the layers: the layer ranked "
        "L/2 + 1 from the bottom, a no-effect claim (90% interval inside the band: yes; the "
        "interval beyond it: no)", f"{_CONTROL}; uniform attention: 0 by construction",
        f"{_ART}; statistic: that layer's gap", _cls_entropy_close, seg_needs,
        registry=("clark-3.3-cls-entropy-close",)))
    out.append(Claim(
        "01", CLARK, "3.3", "entropy of [CLS]'s attention in the last layer",
        c3["cls_entropy_last"], f"the last layer's mean entropy from [CLS] within "
        f"{ENTROPY_MARGIN} nats of 3.89, a no-effect claim (the paper's claim is that it is "
        "high, 'very broad'; the number is what is tested)", f"{_CONTROL}; uniform attention "
        "over 128 pieces gives ln 128 = 4.85 nats", f"{_ART}; 90% interval against the band",
        _cls_entropy, seg_needs, registry=("clark-3.3-cls-entropy-last",)))
    out.append(Claim(
        "01", CLARK, "4.1", "words split into several word pieces", c3["split_words"],
        "none: a property of the tokenizer", "none", "none", _split_words,
        ("01_paper_vs_run.csv",), control=False, registry=("clark-4.1-split-words",)))
    for rel, (head, acc, base, _off, _dir) in CLARK_TABLE1.items():
        out.append(Claim(
            "02", CLARK, "4.2, Table 1", f"a head tracks {rel} better than the best fixed "
            "offset", f"{head}: {acc:.1f} vs. {base:.1f} ({acc - base:+.1f})",
            "the best head's accuracy above the best fixed-offset baseline on the same words",
            f"{_CONTROL} (its own best head); chance: the offset baseline's accuracy",
            "one-sided exact binomial test against the baseline's accuracy, Bonferroni over "
            "the 2 x L x H head-directions searched (paired per-word data are not saved, so "
            "McNemar, which would be sharper, is not used)", _syntax(rel),
            ("02_paper_vs_run.csv", "02_table1_model.csv", "02_head_scores_model.csv")))
    t2 = CLARK_TABLE2
    for claim, system, group, margin, paper in (
            ("the best head beats head-word match", "head_match", "All", 0.0,
             f"5-4 {t2['head 5-4'][0]}% vs. {t2['head_match'][0]}%"),
            ("the best head comes within 5 points of the rule-based system", "rule_based",
             "All", 0.05, f"5-4 {t2['head 5-4'][0]}% vs. {t2['rule_based'][0]}%"),
            ("the best head beats head-word match on nominal mentions", "head_match",
             "nominal", 0.0, f"5-4 {t2['head 5-4'][3]}% vs. {t2['head_match'][3]}%"),
            ("the best head beats the nearest mention", "nearest", "All", 0.0,
             f"5-4 {t2['head 5-4'][0]}% vs. {t2['nearest'][0]}%")):
        out.append(Claim(
            "03", CLARK, "4.3, Table 2", claim, paper,
            f"the best head's antecedent accuracy above {system}"
            + (f" minus {100 * margin:.0f} points" if margin else ""),
            f"{_CONTROL} (its own best head); chance: the baseline system",
            "one-sided exact binomial test against the system's accuracy, Bonferroni over the "
            "L x H heads searched", _coref(system, group, margin),
            ("03_head_scores_model.csv", "03_baselines.csv")))
    t3 = CLARK_TABLE3
    for claim, better, worse, reg in (
            ("attention only beats right-branching", "Attention only", "Right-branching",
             ("clark-5-table3-attn-beats-right-branching",)),
            ("attention only beats distances + GloVe", "Attention only", "Distances + GloVe",
             ("clark-5-table3-attn-beats-distances",)),
            ("attention + GloVe beats distances + GloVe", "Attention + GloVe",
             "Distances + GloVe", ("clark-5-attn-glove-beats-baselines",)),
            ("trained attention beats random-init attention (+ GloVe)", "Attention + GloVe",
             "Random-init attention + GloVe", ("clark-5-attn-glove-beats-baselines",)),
            ("attention + GloVe beats right-branching", "Attention + GloVe", "Right-branching",
             ("clark-5-attn-glove-beats-baselines",)),
            ("random-init attention + GloVe beats right-branching",
             "Random-init attention + GloVe", "Right-branching",
             ("clark-5-table3-random-init-beats-right-branching",)),
            ("distances + GloVe beats random-init attention + GloVe", "Distances + GloVe",
             "Random-init attention + GloVe", ("clark-5-table3-distances-beats-random-init",)),
            ("adding the input words helps: attention + GloVe beats attention only",
             "Attention + GloVe", "Attention only", ("clark-5-words-help",))):
        # the control swaps in the random-init maps against a baseline that reads no maps
        control = better in _CONTROL_PROBE and worse in _NO_MAPS
        out.append(Claim(
            "04", CLARK, "5, Table 3", claim, f"{t3[better]} vs. {t3[worse]} "
            f"({t3[better] - t3[worse]:+d})", "dev UAS (argmax, punctuation excluded) of the "
            "first probe above the second's, mean over probe seeds; Table 3's difference is "
            "the paper's effect", "the same comparison with the random-init attention + GloVe "
            "probe in place of the trained one (the random-weights control's maps)" if control
            else "none beyond the compared probe", "hierarchical bootstrap of the UAS "
            "difference: probe seeds drawn apart for each probe, EWT dev documents drawn "
            "together (the same sentences are scored); two-sided interval at the family's "
            "level", _probe(better, worse), ("04_table3_seeds.csv",), control=control,
            registry=reg))
    out.append(Claim(
        "05", CLARK, "6, Figure 6", "heads of the same layer have similar attention",
        CLARK_FIGURE6["same_layer_closer"], "same-layer / other-layer mean JS distance < 1",
        _CONTROL, "permutation test of layer labels over the heads (the population the claim "
        "is about), inverted for its interval; two-sided", _separation("layer"),
        ("05_layer_separation.csv",), registry=("clark-6-same-layer",)))
    out.append(Claim(
        "05", CLARK, "6, Figure 6", "heads that behave alike form clusters",
        "several clear clusters, often corresponding to the behaviours of Sections 3-4 "
        "(Figure 6, qualitative)", "over the heads with a surface behaviour (broad, previous, "
        "next, [CLS], [SEP], ./,), mean JS distance between heads of the same behaviour / "
        "between heads of different behaviours < 1, at least two behaviours with two heads",
        _CONTROL, "permutation test of behaviour labels over the labelled heads, inverted for "
        "its interval; two-sided", _separation("behaviour"), ("05_layer_separation.csv",),
        registry=("clark-6-behaviour-clusters",)))
    out.append(Claim(
        "05", KOVALEVA, "4.1, Figure 2", "the map types recur across heads and tasks",
        "'consistently repeated across different heads and tasks'", "every type in every "
        "task, with shares that vary little between tasks", "none", "none (descriptive)",
        _types_repeated, ("05_type_proportions_by_seed.csv",), control=False,
        registry=("kovaleva-4.1-types-repeated",)))
    lo, hi = KOVALEVA_HETEROGENEOUS_RANGE["low"], KOVALEVA_HETEROGENEOUS_RANGE["high"]
    out.append(Claim(
        "05", KOVALEVA, "4.1, Figure 2", "Heterogeneous maps make up 32-61% across tasks",
        KOVALEVA_SECTION41["heterogeneous_share"], f"every paper task's share within "
        f"{100 * lo[1] - 5:.0f}-{100 * hi[1] + 5:.0f}% (the paper's range +- 5 points), in every "
        "classifier seed", "none: the map types of the random-weights control are not "
        "classified", "none (descriptive)", _heterogeneous_pretrained,
        ("05_type_proportions_by_seed.csv",), control=False,
        registry=("kovaleva-4.1-heterogeneous-range",)))
    return out
