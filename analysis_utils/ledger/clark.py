"""Claims of Clark et al. 2019 (notebooks 01-05) and Kovaleva et al.'s Section 4.1 (05), each
with its criterion and reference fixed here, before any table is read."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analyses import gradients
from ..analyses.significance import holm
from ..papers import (
    BERT_BASE_LAYERS,
    CLARK_FIGURE6,
    CLARK_SECTION3,
    CLARK_TABLE1,
    CLARK_TABLE2,
    CLARK_TABLE3,
    KOVALEVA_HETEROGENEOUS_RANGE,
    KOVALEVA_SECTION41,
    KOVALEVA_TASKS,
)
from . import resample, stats
from .core import (
    ALPHA,
    MIN_SEEDS,
    Check,
    Claim,
    Outcome,
    Tables,
    heterogeneous_band,
    pct,
    span,
)

CLARK = "Clark et al. 2019"
KOVALEVA = "Kovaleva et al. 2019"
DASH = "\u2013"


def _n_segments(t: Tables) -> int:
    n = t.params("01").get("n_segments")
    if not n:
        raise ValueError("01_provenance.json records no n_segments: re-run notebook 01")
    return int(n)


# --- 01: surface patterns ----------------------------------------------------------------

def _strong_heads(column: str, threshold: float):
    """Rule: heads whose mean ``column`` exceeds ``threshold``: Hoeffding per head over the
    text segments, Holm over all heads."""
    def rule(t: Tables, which: str) -> Outcome:
        d = t.read(f"01_per_head_{which}.csv")
        n = _n_segments(t)
        p = np.array([stats.hoeffding_p(v, threshold, n) for v in d[column]])
        adj = holm(p)
        sel = adj < ALPHA
        labels = [f"{int(r.layer)}-{int(r.head)}" for r in d.itertuples()]
        shown = [f"{lab} {100 * v:.0f}%" for lab, v, s in zip(labels, d[column], sel,
                                                              strict=True) if s]
        k = int(sel.sum())
        top = int(np.argmax(d[column].to_numpy()))
        value = (f"{k} head{'s' if k != 1 else ''}" + (f" ({', '.join(shown)})" if shown else
                 f" (max {labels[top]} {100 * d[column].iloc[top]:.1f}%)"))
        return Outcome(value=value, effect=k >= 1, p=float(np.nanmin(adj)),
                       heads=", ".join(lab for lab, s in zip(labels, sel, strict=True) if s))
    return rule


def _band_layers(num_layers: int, first: int, last: int) -> list[int]:
    """Layers of an ``num_layers`` model at the relative depths of BERT-base's ``first``
    to ``last`` (1-based)."""
    lo, hi = first / BERT_BASE_LAYERS, last / BERT_BASE_LAYERS
    return [ly for ly in range(1, num_layers + 1) if lo - 1e-9 <= ly / num_layers <= hi + 1e-9]


def _sep_band(t: Tables, which: str) -> Outcome:
    d = t.read("01_layer_token_class_shares.csv")
    layers = _band_layers(t.num_layers, 6, 10)
    m = float(d[d["layer"].isin(layers)][f"{which} sep"].mean())
    n = _n_segments(t)
    lo, hi = stats.hoeffding_interval(m, n)
    return Outcome(value=f"{pct(m)} (layers {layers[0]}-{layers[-1]} of {t.num_layers})",
                   effect=m > 0.5, p=stats.hoeffding_p(m, 0.5, n),
                   interval=span(max(lo, 0), hi, 100, 1, "%"))


_THIRDS = {"cls": ("early", 0), "sep": ("middle", 1), "punct": ("deep", 2)}


def _third(layer: int, num_layers: int) -> int:
    return min(2, int(math.ceil(3 * layer / num_layers)) - 1)


def _layer_order(t: Tables, which: str) -> Outcome:
    d = t.read("01_layer_token_class_shares.csv")
    L = t.num_layers
    parts, ok, chance = [], [], 1.0
    for tok, (_name, third) in _THIRDS.items():
        layer = int(d.loc[d[f"{which} {tok}"].idxmax(), "layer"])
        hit = _third(layer, L) == third
        ok.append(hit)
        chance *= sum(_third(x, L) == third for x in range(1, L + 1)) / L
        parts.append(f"{ {'cls': '[CLS]', 'sep': '[SEP]', 'punct': './,'}[tok]} L{layer}"
                     f" ({['early', 'middle', 'deep'][_third(layer, L)]})")
    return Outcome(value="; ".join(parts), effect=all(ok), p=chance if all(ok) else 1.0)


def _paper_vs_run_row(t: Tables, start: str) -> pd.Series:
    d = t.read("01_paper_vs_run.csv")
    row = d[d["claim"].str.startswith(start)]
    if row.empty:
        raise ValueError(f"01_paper_vs_run.csv has no claim starting {start!r}: re-run 01")
    return row.iloc[0]


#: Notebook 01's per-segment sums behind Figure 3 (written since 2026-11-26).
GRADIENT_TABLE = "01_gradient_by_segment.csv"
GRADIENT_THRESHOLD = 0.5


def _layers(spec: str) -> list[int]:
    """``"3-6"`` -> ``[3, 4, 5, 6]``; ``"6"`` -> ``[6]``."""
    first, _, last = str(spec).partition("-")
    return list(range(int(first), int(last or first) + 1))


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
    if not t.has(GRADIENT_TABLE):
        return Outcome(value=value, untestable=f"this run saved no per-segment gradients "
                                               f"({GRADIENT_TABLE}); re-run notebook 01")
    seg = t.read(GRADIENT_TABLE)
    seg = seg[seg["layer"].isin(_layers(r["layers of this model"]))
              & seg["target"].isin(["[SEP]", "other"])]
    cube = {col: seg.pivot_table(index="segment", columns=["layer", "target"], values=col,
                                 aggfunc="sum").sort_index(axis=1) for col in
            ("sum_abs_grad", "n_weights")}
    n, n_layers = len(cube["sum_abs_grad"]), cube["sum_abs_grad"].shape[1] // 2
    sums, counts = (cube[c].to_numpy(dtype=float).reshape(n, n_layers, 2)
                    for c in ("sum_abs_grad", "n_weights"))
    sep, other = 0, 1  # sorted targets: "[SEP]" < "other"

    def ratio(w=None) -> float:
        return gradients.pooled_ratio(sums, counts, sep, other, w)

    p, lo, hi = stats.bootstrap_below(ratio, n, GRADIENT_THRESHOLD)
    return Outcome(value=value, effect=ratio() < GRADIENT_THRESHOLD, p=p,
                   interval=span(lo, hi, 1, 2, "x"), note=f"{n} segments resampled")


def _broad_layer1(t: Tables, which: str) -> Outcome:
    d = t.read(f"01_per_head_{which}.csv")
    first = d[d["layer"] == 1]
    i = int(np.argmin(first["max_weight"].to_numpy()))
    m = float(first["max_weight"].iloc[i])
    n = _n_segments(t)
    p = stats.bonferroni(stats.hoeffding_p(-m, -0.10, n), len(first))
    return Outcome(value=f"{pct(m)} (head 1-{int(first['head'].iloc[i])})", effect=m < 0.10,
                   p=p, heads=f"1-{int(first['head'].iloc[i])}")


def _cls_entropy(t: Tables, which: str) -> Outcome:
    d = t.read(f"01_per_head_{which}.csv")
    m = float(d[d["layer"] == t.num_layers]["entropy_cls"].mean())
    width = math.log(int(t.params("01").get("max_tokens", 128)))
    lo, hi = stats.hoeffding_interval(m, _n_segments(t), width)
    target = float(CLARK_SECTION3["cls_entropy_last"].split()[0])
    return Outcome(value=f"{m:.2f} nats (layer {t.num_layers})", effect=True,
                   passes=target - 0.5 <= lo and hi <= target + 0.5,
                   interval=span(lo, hi, 1, 2, " nats"))


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

_HOEFF = ("one-sided Hoeffding bound over the text segments (a segment's mean share lies "
          "in [0, 1]; distribution-free, conservative)")
_CONTROL = "the random-weights control, same rule"


def claims() -> list[Claim]:
    """Every claim of notebooks 01-05 that the ledger judges."""
    out: list[Claim] = []
    c3 = CLARK_SECTION3
    for direction, key in (("previous", "previous"), ("next", "next")):
        out.append(Claim(
            "01", CLARK, "3.1", f"heads put > 50% of their attention on the {direction} token",
            c3[key], "at least one head's mean share > 50%, Holm over all heads", f"{_CONTROL}; "
            "chance: uniform attention gives about 1/n per token (0.8% at 128), 0 heads",
            f"{_HOEFF}, per head", _strong_heads(direction, 0.5),
            ("01_per_head_model.csv",)))
    out.append(Claim(
        "01", CLARK, "3.2", "over half of the attention goes to [SEP] in the middle layers",
        c3["sep_share"], "mean share to [SEP] > 50% in the layers at BERT-base's relative "
        "depths 6/12-10/12", f"{_CONTROL}; chance: 1/n per token", _HOEFF, _sep_band,
        ("01_layer_token_class_shares.csv",)))
    out.append(Claim(
        "01", CLARK, "3.2", "heads put > 90% of [SEP]'s attention on [SEP]", c3["sep_to_sep"],
        "at least one head's mean [SEP]->[SEP] share > 90%, Holm over all heads",
        _CONTROL, f"{_HOEFF}, per head", _strong_heads("sep_to_sep", 0.9),
        ("01_per_head_model.csv",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 2", "[CLS] peaks early, [SEP] in the middle, ./, deep",
        c3["layer_order"], "the layer with the most attention to each token falls in the "
        "paper's third of the depth (early / middle / deep), all three",
        f"{_CONTROL}; chance: each peak in its third with probability (layers in that third) "
        "/ L, about (1/3)^3 = 0.037 for all three",
        "probability of the full order under peaks placed uniformly over the layers",
        _layer_order, ("01_layer_token_class_shares.csv",)))
    out.append(Claim(
        "01", CLARK, "3.2, Figure 3", "gradients through attention to [SEP] are small",
        c3["sep_gradient"], "|grad| ratio [SEP] / other < 0.5 in the layers from 5/12 on, "
        "through the checkpoint's own masked-LM head",
        "chance: a ratio of 1 ([SEP] no different from other tokens); the random-weights "
        "control has no masked-LM head", "one-sided bootstrap over the text segments (2,000 "
        "resamples) of the pooled ratio", _gradient, ("01_paper_vs_run.csv",), control=False))
    out.append(Claim(
        "01", CLARK, "3.3, Figure 4", "layer-1 heads attend broadly (<= ~10% on any word)",
        c3["broad_layer1"], "the broadest layer-1 head's mean maximum weight < 10%",
        f"{_CONTROL}; chance: uniform attention gives 1/n", f"{_HOEFF}, Bonferroni over the "
        "layer's heads", _broad_layer1, ("01_per_head_model.csv",)))
    out.append(Claim(
        "01", CLARK, "3.3", "entropy of [CLS]'s attention in the last layer",
        c3["cls_entropy_last"], "the 95% interval of the mean entropy lies within 0.5 nats of "
        "3.89", f"{_CONTROL}; uniform attention over 128 pieces gives ln 128 = 4.85 nats",
        "Hoeffding interval over the text segments (entropy lies in [0, ln n])", _cls_entropy,
        ("01_per_head_model.csv",)))
    out.append(Claim(
        "01", CLARK, "4.1", "words split into several word pieces", c3["split_words"],
        "none: a property of the tokenizer", "none", "none", _split_words,
        ("01_paper_vs_run.csv",), control=False))
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
