"""Clark et al. 2019 claims as the ledger judges them (notebooks 01-05): one spec per claim.

Each :class:`~.core.Claim` here is a spec: the paper's words and section, the registry entries it
tests, the criterion, reference and test cells, formatted from the named parameters the rule
applies (no number is typed by hand: ``tests/test_ledger_words.py``), the readings it is run
under, and the rule itself, which lives in :mod:`.clark` with the statistics it computes
(``rules._best_head``, ``rules.LITTLE``: read through the module at call time, so a parameter
changed there changes the rule and these words together)."""

from __future__ import annotations

import math

from ..analyses.syntax import SD_TO_UD
from ..papers import (
    BERT_BASE_LAYERS,
    CLARK_FIGURE6,
    CLARK_SECTION3,
    CLARK_SECTION3_NUMBERS,
    CLARK_TABLE1,
    CLARK_TABLE2,
    CLARK_TABLE3,
    KOVALEVA_SECTION41,
)
from . import clark as rules
from . import core, depth, readings, spec, words
from .core import (
    Claim,
    heterogeneous_band_words,
    pct,
)
from .resample import (
    EQUIVALENCE_MARGINS,
)

_ART = (f"cluster bootstrap over the Wikipedia articles ({rules.RESAMPLES_01:,} resamples; the "
        "segments are overlapping paragraph pairs of them), two-sided")


_MAXT_01 = (f"max-over-heads over the Wikipedia articles ({rules.RESAMPLES_01:,} resamples): the best "
         "head chosen inside every resample (studentised max-T, simultaneous interval), "
         "two-sided")


def _halves_words() -> str:
    """The main reading's earlier layers as BERT-base's (``"1-6"``), the words the criteria
    use for "the earlier half of the depth" (:data:`.depth.EARLIER_LATER`)."""
    return depth.span(depth.EARLIER_LATER[readings.READINGS["earlier/later"][0]][0])


_SENTENCES = (f"EWT documents resampled, {rules.RESAMPLES_02:,} times (its sentences come clustered "
              "in documents, so the document is the sampling unit)")


_NO_MAPS = ("Distances + GloVe", "Right-branching")


_CONTROL = "the random-weights control, same rule"


#: The level (``Check.level``) each SHARE_MARGIN rule states, in the criterion's words.
_LATER_SHARE = "the later half's own mean share"


_OTHERS_TO_SEP = "the other tokens' own share to [SEP]"


_CLASSES_SHARE = "the three classes' own mean share"


def _share_margin_words(level: str) -> str:
    """The smallest effect of interest of a rule with :data:`.clark.SHARE_MARGIN` and a level, as
    :func:`.spec.margin_choices` applies it: the convention's points, or, where they exceed
    :data:`.spec.LEVEL_CAP` of the level, :data:`.spec.SCALED_FRACTION` of the level."""
    return (f"within the smallest effect of interest, {words.points(rules.SHARE_MARGIN)} points or, "
            f"where that is more than {words.fraction(spec.LEVEL_CAP)} of {level}, "
            f"{words.fraction(spec.SCALED_FRACTION)} of that share (the row's specification names "
            "the one used)")


def claims() -> list[Claim]:
    """Every claim of notebooks 01-05 that the ledger judges."""
    out: list[Claim] = []
    c3 = CLARK_SECTION3
    n3 = CLARK_SECTION3_NUMBERS
    seg_needs = ("01_per_head_model.csv",)
    positional = n3["positional_share"]
    for direction, key, rid in (("previous", "previous", "clark-3.1-previous-token-heads"),
                                ("next", "next", "clark-3.1-next-token-heads")):
        out.append(Claim(
            "01", rules.CLARK, "3.1", f"some heads put > 50% of their attention on the {direction} "
            "token", c3[key], f"the best head's mean share on the {direction} token > "
            f"{pct(positional, 0)} (the paper counts {len(n3[f'{key}_heads'])} such heads, in "
            f"layers {', '.join(map(str, n3[f'{key}_heads']))}: the count is shown in this_run "
            "and heads, not tested); the paper gives no share beyond the threshold, so `no` "
            f"needs the best head's upper bound below {pct(positional, 0)}", f"{_CONTROL}; "
            f"chance: uniform attention gives about 1/n per token ({pct(1 / rules.SEGMENT_PIECES)} "
            f"at {rules.SEGMENT_PIECES})", f"{_MAXT_01}; null: the threshold",
            rules._best_head(direction, positional), seg_needs, registry=(rid,)))
    out.append(Claim(
        "01", rules.CLARK, "3.1", "most heads put little attention on the current token",
        "most heads (no number)", f"more than half of the heads put < {pct(rules.LITTLE, 0)} of "
        "their attention on the current token ('little' read as the paper's own bound for "
        "broad heads' weight on any single word, 3.3): the share of the head ranked K/2 + 1 "
        f"from the bottom < {pct(rules.LITTLE, 0)}", f"{_CONTROL}; uniform attention gives 1/n "
        f"(about {pct(1 / rules.SEGMENT_PIECES, 0)}), also 'little'",
        f"{_ART}; statistic: that head's pooled share", rules._current_little, seg_needs,
        registry=("clark-3.1-current-token",)))
    out.append(Claim(
        "01", rules.CLARK, "3.1", "heads on the next or previous token sit especially in the "
        "earlier layers", f"previous-token heads in layers {', '.join(map(str, n3['previous_heads']))}"
        f", next-token heads in layers {', '.join(map(str, n3['next_heads']))} (of 12)",
        "each head's share on "
        "the previous or next token (the larger), mean over the heads of the earlier half of "
        f"the depth (BERT-base's layers {_halves_words()}) above the later half's; the paper "
        f"gives no size: `no` also when the gap lies {_share_margin_words(_LATER_SHARE)}",
        _CONTROL, f"{_ART}; statistic: the difference of the halves' means", rules._positional_early,
        seg_needs, registry=("clark-3.1-positional-early",), reading="earlier/later"))
    out.append(Claim(
        "01", rules.CLARK, "3.2", "a substantial amount of attention goes to a few tokens ([CLS], "
        "[SEP], periods and commas)", "substantial (no number; Figure 2)", "the share of all "
        "attention on [CLS], [SEP], '.' and ',' exceeds what uniform attention gives them "
        f"(their count / n per segment) by more than {words.points(rules.SUBSTANTIAL)} points "
        f"('substantial' read as {words.fraction(rules.SUBSTANTIAL)} of all attention; the paper "
        "gives no number)", f"{_CONTROL}; uniform attention: 0 points by construction", f"{_ART}; per segment: share minus its uniform share, "
        "paired", rules._with_note(rules._few_tokens), seg_needs, registry=("clark-3.2-few-tokens",),
        reading="substantial"))
    out.append(Claim(
        "01", rules.CLARK, "3.2, Figure 2", "often more than half of a head's attention goes to "
        "[CLS], [SEP], periods and commas", "often (no fraction)", f"at least "
        f"{words.fraction(rules.OFTEN)} of the heads put > {pct(rules._C3['half_to_special'], 0)} on the "
        f"four tokens together ('often' read as {words.fraction(rules.OFTEN)}; the paper gives no "
        f"fraction): the share of the head ranked K/{1 / rules.OFTEN:g} from the top > "
        f"{pct(rules._C3['half_to_special'], 0)}", f"{_CONTROL}; uniform attention gives them their "
        "count / n per segment", f"{_ART}; statistic: that head's pooled share", rules._with_note(rules._half_to_special), seg_needs,
        registry=("clark-3.2-fig2-half-to-special",), reading="often"))
    out.append(Claim(
        "01", rules.CLARK, "3.2", "over half of the attention goes to [SEP] in the middle layers",
        c3["sep_share"], f"mean share to [SEP] > {pct(rules._C3['sep_share'], 0)} over the layers "
        f"at BERT-base's depths {depth.span(rules._C3['sep_layers'])} (ledger.depth); the paper "
        "gives no share beyond the threshold",
        f"{_CONTROL}; chance: 1/n per token", f"{_ART}; statistic: the band's mean share",
        rules._with_note(rules._sep_band), seg_needs, registry=("clark-3.2-sep-layers-6-10",)))
    out.append(Claim(
        "01", rules.CLARK, "3.2", "some heads put > 90% of [SEP]'s attention on [SEP]",
        c3["sep_to_sep"], f"the best head's mean [SEP]->[SEP] share > "
        f"{pct(rules._C3['sep_to_sep'], 0)} (the paper: the heads processing [SEP] attend 'almost "
        "entirely' to the [SEP] tokens; read as the heads most on [SEP], i.e. the best of all "
        "heads, chosen inside every resample)", _CONTROL,
        f"{_MAXT_01}; null: the threshold", rules._with_note(rules._best_head("sep_to_sep", n3["sep_to_sep"])),
        seg_needs, registry=("clark-3.2-sep-to-sep-90",)))
    out.append(Claim(
        "01", rules.CLARK, "3.2, Figure 2", "heads attend to [SEP] more from [SEP] than from other "
        "tokens", "most heads (Figure 2, bottom)", "per head, the [SEP]->[SEP] share above the "
        "other tokens' share to [SEP], in more than half of the heads: the difference of the "
        "head ranked K/2 + 1 from the top > 0; the paper gives no size: `no` also when it lies "
        f"{_share_margin_words(_OTHERS_TO_SEP)}", f"{_CONTROL}; uniform attention: 0",
        f"{_ART}; per segment and head: the two shares' difference, paired",
        rules._with_note(rules._sep_from_sep), seg_needs, registry=("clark-3.2-fig2-sep-from-sep",)))
    out.append(Claim(
        "01", rules.CLARK, "3.2, Figure 2", "[CLS] peaks early, [SEP] in the middle, ./, deep",
        c3["layer_order"], "each token class's mean share in the paper's third of the depth "
        "(early / middle / deep, ledger.depth) above its mean share in either other third, "
        "all three: the smallest of the three gaps > 0; the paper gives no size: `no` also "
        f"when it lies {_share_margin_words(_CLASSES_SHARE)}", _CONTROL,
        f"{_ART}; statistic: the smallest gap", rules._with_note(rules._layer_order),
        ("01_per_head_model.csv",), registry=("clark-3.2-fig2-layer-order",)))
    out.append(Claim(
        "01", rules.CLARK, "3.2, Figure 3", "gradients through attention to [SEP] are small",
        c3["sep_gradient"], f"|grad| ratio [SEP] / other < {rules.GRADIENT_THRESHOLD:g} in the "
        f"layers from {rules._C3['gradient_from_layer']}/{BERT_BASE_LAYERS} on, through the "
        "checkpoint's own masked-LM head ('very small' read as below "
        f"{words.fraction(rules.GRADIENT_THRESHOLD)}; the paper gives no number)", "chance: a ratio of 1 ([SEP] no different from other "
        "tokens); the random-weights control has no masked-LM head", "bootstrap of the pooled "
        f"ratio over the Wikipedia articles ({rules.RESAMPLES_01:,} resamples), two-sided",
        rules._with_note(rules._gradient), ("01_paper_vs_run.csv",), control=False,
        registry=("clark-3.2-gradient-sep", "clark-3.2-no-op")))
    out.append(Claim(
        "01", rules.CLARK, "3.2", "periods and commas are the most common tokens after 'the'",
        "'.' and ',' (no counts)", "in the segments, '.' and ',' are the two most frequent "
        "word pieces once 'the' (and the special tokens) are set aside: the smaller of their "
        "counts above the largest other piece's", "the largest other word piece's count "
        "in the same segments (no control: a property of the text and the tokenizer, which "
        "the control shares)", f"{_ART}; statistic: the smaller count minus "
        "the largest other count, per segment", rules._punct_most_common, seg_needs, control=False,
        registry=("clark-3.2-punct-most-common",), about="data"))
    out.append(Claim(
        "01", rules.CLARK, "3.3, Figure 4", "very broad heads sit especially in the lower layers",
        "lower layers (no number)", f"of the broadest {words.fraction(rules.BROADEST, False)} of "
        "heads (by mean entropy, chosen again in every resample), more in the earlier half of "
        f"the depth (BERT-base's layers {_halves_words()}) than in the later half; the other "
        "reading: the mean entropy of all heads of the earlier half above the later half's, "
        f"`no` also when the gap lies within {float(rules.ENTROPY_DIFF_MARGIN):g} nats",
        f"{_CONTROL}; uniform attention: ln n in every layer", f"{_ART}; per segment: the "
        "halves' difference", rules._broad_lower, seg_needs,
        registry=("clark-3.3-broad-lower-layers",), reading="earlier/later+broad heads"))
    out.append(Claim(
        "01", rules.CLARK, "3.3, Figure 4", "layer-1 heads attend broadly (<= ~10% on any word)",
        c3["broad_layer1"], f"the broadest layer-{rules.BROAD_LAYER} head's mean "
        f"maximum weight < {pct(n3['broad_max_weight'], 0)} (the paper gives no size beyond "
        "the bound)", f"{_CONTROL}; chance: uniform attention gives 1/n", f"{_MAXT_01} over "
        "the layer's heads (the smallest chosen); null: the bound",
        rules._best_head("max_weight", n3["broad_max_weight"], direction=-1, layers=[rules.BROAD_LAYER]),
        seg_needs, registry=("clark-3.3-broad-10-percent",)))
    out.append(Claim(
        "01", rules.CLARK, "3.3", "in most layers the entropy from [CLS] is very close to that of "
        "all tokens", "very close (no number)", "per layer |mean entropy from [CLS] - mean "
        f"entropy| within {float(rules.ENTROPY_MARGIN):g} nats ('very close' read as the "
        "[CLS]-entropy rows' "
        "band; the paper gives no number) in more than half of the layers: the layer ranked "
        "L/2 + 1 from the bottom, a no-effect claim (1 - 2a interval inside the band: yes; the "
        "interval beyond it: no)", f"{_CONTROL}; uniform attention: 0 by construction",
        f"{_ART}; statistic: that layer's gap", rules._cls_entropy_close, seg_needs,
        registry=("clark-3.3-cls-entropy-close",)))
    out.append(Claim(
        "01", rules.CLARK, "3.3", "entropy of [CLS]'s attention in the last layer",
        c3["cls_entropy_last"], f"the last layer's mean entropy from [CLS] within "
        f"{float(rules.ENTROPY_MARGIN):g} nats of {n3['cls_entropy_last']:g}, a no-effect claim (the "
        "paper's claim is that it is high, 'very broad'; the number is what is tested)",
        f"{_CONTROL}; uniform attention over {rules.SEGMENT_PIECES} pieces gives ln "
        f"{rules.SEGMENT_PIECES} = {math.log(rules.SEGMENT_PIECES):.2f} nats", f"{_ART}; the 1 - 2a interval against the band",
        rules._cls_entropy, seg_needs, registry=("clark-3.3-cls-entropy-last",)))
    out.append(Claim(
        "01", rules.CLARK, "4.1", "words split into several word pieces", c3["split_words"],
        "none: a property of the tokenizer", "none", "none", rules._split_words,
        ("01_paper_vs_run.csv",), control=False, registry=("clark-4.1-split-words",),
        about="data"))
    out += _claims_02() + _claims_03()
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
        control = better in rules._CONTROL_PROBE and worse in _NO_MAPS
        out.append(Claim(
            "04", rules.CLARK, "5, Table 3", claim, f"{t3[better]} vs. {t3[worse]} "
            f"({t3[better] - t3[worse]:+d})", "dev UAS (argmax, punctuation excluded) of the "
            "first probe above the second's, mean over probe seeds; Table 3's difference is "
            "the paper's effect", "the same comparison with the random-init attention + GloVe "
            "probe in place of the trained one (the random-weights control's maps)" if control
            else "none beyond the compared probe", "hierarchical bootstrap of the UAS "
            "difference: probe seeds drawn apart for each probe, EWT dev documents drawn "
            "together (the same sentences are scored); two-sided interval at the family's "
            "level", rules._probe(better, worse), ("04_table3_seeds.csv",), control=control,
            registry=reg))
    out.append(Claim(
        "04", rules.CLARK, "5", "syntactic knowledge is distributed across heads: the "
        "attention-only probe beats the best single head", f"probe {t3['Attention only']} vs. "
        f"best head {CLARK_TABLE1['All'][1]} (Tables 3 and 1, on different words)",
        "on the same EWT dev words (not punctuation, not the root), the attention-only probe's "
        "accuracy (all heads combined; a lower bound, its root counted right) above the best "
        "single head-direction's (02, the best of 2 x L x H); the paper gives no size",
        "the best single head", f"EWT documents resampled, {rules.PROBE_RESAMPLES:,} times; the "
        "best head chosen inside every resample; the probe's score the mean over its training runs; "
        "two-sided",
        rules._distributed, (rules.DEV_TABLE, rules.BY_WORD.format("model")), control=False,
        registry=("clark-5-distributed",)))
    out.append(Claim(
        "05", rules.CLARK, "6, Figure 6", "heads of the same layer have similar attention",
        CLARK_FIGURE6["same_layer_closer"], "same-layer / other-layer mean JS distance < "
        f"{rules.NO_SEPARATION:g}",
        _CONTROL, "permutation test of layer labels over the heads (the population the claim "
        "is about), inverted for its interval; two-sided", rules._separation("layer"),
        ("05_layer_separation.csv",), registry=("clark-6-same-layer",)))
    out.append(Claim(
        "05", rules.CLARK, "6, Figure 6", "heads that behave alike form clusters",
        "several clear clusters, often corresponding to the behaviours of Sections 3-4 "
        "(Figure 6, qualitative)", "over the heads with a surface behaviour (broad, previous, "
        "next, [CLS], [SEP], ./,), mean JS distance between heads of the same behaviour / "
        f"between heads of different behaviours below {rules.NO_SEPARATION:g} by more than "
        f"{rules.CLEAR_CLUSTERS:g} ('clear' clusters, a convention), at least two behaviours with "
        "two heads",
        _CONTROL, "permutation test of behaviour labels over the labelled heads, inverted for "
        "its interval; two-sided", rules._separation("behaviour"), ("05_layer_separation.csv",),
        registry=("clark-6-behaviour-clusters",), reading="behaviours"))
    out.append(Claim(
        "05", rules.KOVALEVA, "4.1, Figure 2", "the map types recur across heads and tasks",
        "'consistently repeated across different heads and tasks'", "every type in every "
        "task, with shares that vary little between tasks", "none", "none (descriptive)",
        rules._types_repeated, ("05_type_proportions_by_seed.csv",), control=False,
        registry=("kovaleva-4.1-types-repeated",)))
    out.append(Claim(
        "05", rules.KOVALEVA, "4.1, Figure 2", "Heterogeneous maps make up 32-61% across tasks",
        KOVALEVA_SECTION41["heterogeneous_share"], f"every paper task's share within "
        f"{heterogeneous_band_words()} (the paper's range +- "
        f"{words.points(core.HETEROGENEOUS_WIDENING)} points), in every classifier seed", "none: the map types of the random-weights control are not "
        "classified", "none (descriptive)", rules._heterogeneous_pretrained,
        ("05_type_proportions_by_seed.csv",), control=False,
        registry=("kovaleva-4.1-heterogeneous-range",)))
    return out


def _point_words(margin: float) -> str:
    """A margin on an accuracy (0-1) in points: ``"1 point"``, ``"2 points"``."""
    n = words.points(margin)
    return f"{n} point" + ("" if n == "1" else "s")


_MAXT_02 = (f"max-T over the 2 x L x H head-directions (the best chosen inside each of "
            f"{rules.RESAMPLES_02:,} resamples of documents), paired with the baseline on the same "
            "words; two-sided")


def _claims_02() -> list[Claim]:
    out: list[Claim] = []
    needs = (rules.BY_WORD.format("model"),)
    for rel, (head, acc, base, off, _dir) in CLARK_TABLE1.items():
        if rel == "All":
            continue
        bold = rel in rules.BOLD
        out.append(Claim(
            "02", rules.CLARK, "4.2, Table 1",
            f"a head tracks {rel} {'substantially ' if bold else ''}better than the best fixed "
            "offset",
            f"{head}: {acc:.1f} vs. {base:.1f} (offset {off:+d}; {acc - base:+.1f})"
            + (" (bold)" if bold else ""),
            "the best head-direction's accuracy above the best fixed offset's on the same "
            "words" + (f", fixing more than {rules.SUBSTANTIAL_ERROR_SHARE:.3f} of the baseline's "
                       f"errors (the statistic: head - baseline - {rules.SUBSTANTIAL_ERROR_SHARE:.3f}"
                       " x (1 - baseline), above 0): the paper bolds it as 'substantially outperforming' the "
                       "baseline, read as more than the largest share of a row it does not "
                       "bold (the relations where BERT 'only slightly improves'); the other "
                       f"reading: more than {100 * float(rules._points_bar(rel)):.1f} points, "
                       + (f"{rel}'s own margin in Table 1 (below the largest unbolded margin, "
                          f"{100 * rules.NOT_MUCH:.1f})" if rel in readings.SMALL_BOLD
                          else "the largest unbolded margin") if bold
                       else " (margin > 0)"),
            f"{_CONTROL} (its own best head); BERT-base's margin is shown beside the interval "
            "and decides nothing" + (" (the claim's size is the share of the baseline's "
                                     "errors, not BERT-base's points)" if bold
                                     else " (a claim of direction)"),
            f"{_SENTENCES}; {_MAXT_02}", rules._syntax(rel), needs,
            registry=(f"clark-4.2-table1-{rel}",) + (("clark-4.2-specialised-heads",)
                                                      if bold else ()),
            reading="+".join(x for x in ("substantially" if bold else "",
                                         "mark" if rel == "mark" else "") if x)))
    a = CLARK_TABLE1["All"]
    out.append(Claim(
        "02", rules.CLARK, "4.2, Table 1", "no single head does well at syntax overall: the best is "
        "not much better than right-branching",
        f"{a[0]}: {a[1]:.1f} vs. right-branching {a[2]:.1f} ({a[1] - a[2]:+.1f})",
        f"the best head's margin over right-branching (offset {rules.RIGHT_BRANCHING:+d}) on all "
        "words lies within "
        f"+-{100 * rules.NOT_MUCH:.1f} points (the 1 - 2a interval, a the family's level; the largest margin of a Table 1 row "
        "the paper does not bold)", "none: a claim of no (large) effect; random attention "
        "meets it trivially, so the control's verdict would say nothing",
        f"{_SENTENCES}; {_MAXT_02}; equivalence (TOST) on the simultaneous interval",
        rules._no_single_head, needs, control=False, registry=("clark-4.2-no-single-head-overall",)))
    out.append(Claim(
        "02", rules.CLARK, "1 (restating 4.2)", "heads find direct objects, determiners, objects of "
        "prepositions and possessives with > 75% accuracy",
        "dobj 86.8, det 94.3, pobj 76.3, poss 80.5", "for each of " + ", ".join(
            r if SD_TO_UD[r] == r else f"{r} ({SD_TO_UD[r]})" for r in rules.OVER_75)
        + f": the best head-direction's accuracy > {pct(rules.OVER_75_ACCURACY, 0)}, all "
        f"{words.count(len(rules.OVER_75))}", f"{_CONTROL} (its own best heads)",
        f"{_SENTENCES}; per relation, max-T over the 2 x L x H head-directions against "
        f"{pct(rules.OVER_75_ACCURACY, 0)}",
        rules._over_75, needs, registry=("clark-1-relations-over-75",)))
    out.append(Claim(
        "02", rules.CLARK, "4.2", "for every relation of Table 1 but pobj the dependent attends to "
        "the head, not the other way round", "every row dep2head but pobj (head2dep)",
        "per relation, the best dep2head head-direction above the best head2dep one on the "
        "same words (UD case, the paper's pobj reversed: dep2head too), every relation; the "
        "paper gives no size: `no` also when the gap lies within "
        f"{_point_words(EQUIVALENCE_MARGINS['accuracy'])}",
        f"{_CONTROL}", f"{_SENTENCES}; per relation, the difference of the two directions' "
        "best heads, each chosen inside every resample, paired on the same words",
        rules._direction, needs, registry=("clark-4.2-direction",)))
    out.append(Claim(
        "02", rules.CLARK, "4.2", "for many relations BERT only slightly improves over the simple "
        "baseline", "6 of the 10 most common relations unbolded, +0.2 to +13.0",
        f"at least {words.fraction(1 / rules.MANY_OF)} of the relations with >= min_count words "
        f"have a best-head margin over their best offset below {100 * rules.NOT_MUCH:.1f} points "
        f"(the ceil(R/{rules.MANY_OF})-th smallest margin below it)", "none: a claim that effects are small, which random attention "
        "meets trivially (the control's verdict would say nothing)",
        f"{_SENTENCES}; each relation's best head fixed on all sentences",
        rules._only_slightly, needs, control=False, registry=("clark-4.2-only-slightly",),
        reading="many"))
    out.append(Claim(
        "02", rules.CLARK, "3.2", "in the direct-object head, words that are not nouns mostly "
        "attend to [SEP]", "head 8-10 (no number)", "in this model's best obj head, words "
        f"other than {'/'.join(rules._NOUNS)} put > {pct(rules.MOSTLY, 0)} of their attention on [SEP] "
        "(mean over words; 'mostly' read as a majority)", f"{_CONTROL} (its own best obj head)",
        f"{_SENTENCES}; the mean share against {pct(rules.MOSTLY, 0)}",
        rules._non_nouns_to_sep, needs, registry=("clark-3.2-head-8-10-non-nouns",),
        reading="mostly+no-op token"))
    out.append(Claim(
        "02", rules.CLARK, "4.1, footnote 3", "ignoring [SEP] and [CLS] does not significantly "
        "change most heads' accuracy", "no number", "the median head-direction's accuracy "
        "lost on all words when [CLS]/[SEP] are kept as candidates lies within "
        f"{_point_words(EQUIVALENCE_MARGINS['accuracy'])} (the 1 - 2a interval, a the "
        "family's level)", "none: a claim of no effect (the control's verdict would say "
        "nothing)", f"{_SENTENCES}; the median over the 2 x L x H head-directions of the "
        "paired loss; equivalence (TOST)", rules._ignore_special, needs, control=False,
        registry=("clark-4.1-ignore-special",)))
    t1 = [v[0] for r, v in CLARK_TABLE1.items() if r != "All"]
    out.append(Claim(
        "02", rules.CLARK, "1 (summing up 4.2)", "no single head does well at many relations, but "
        "particular heads do remarkably well at particular relations", f"Table 1: "
        f"{len(set(t1))} distinct best heads for {len(t1)} relations (most often "
        f"{max(set(t1), key=t1.count)}, best for {max(t1.count(h) for h in t1)})",
        "over the Table 1 relations with a UD counterpart and >= min_count words (R of them), "
        "each head's margin over each relation's best fixed offset; 'many' and 'particular' "
        f"read as {words.fraction(1 / rules.MANY_OF)} of the relations (q = ceil(R/{rules.MANY_OF})), "
        f"'well' as a margin above {rules._well_bars_words()} (the largest margin of a "
        "Table 1 row the paper does not bold, or a bold row's own where smaller, as the bold "
        "rows read 'substantially' in points), 'remarkably well' as a lead above "
        f"{100 * rules.NOT_MUCH:.1f} points. Both parts: (1) no head well at many: over the "
        "heads, the largest q-th largest margin above its relation's bar, below 0; (2) "
        "particular heads on particular "
        "relations: each relation's best head's margin on it minus that head's median margin "
        f"on the other relations, the q-th largest over the relations, above "
        f"{100 * rules.NOT_MUCH:.1f} points", f"{_CONTROL} (its own best heads)",
        f"{_SENTENCES}; every relation's best head chosen inside every resample; two-sided "
        "intervals at the family's level, judged per part", rules._particular_heads, needs,
        registry=("clark-1-particular-heads",), reading="many+well"))
    out.append(Claim(
        "02", rules.CLARK, "5", "syntax is learned as a by-product of self-supervised training: "
        "trained heads beat random-weights heads", "no number (from Tables 1 and 3)",
        "per Table 1 relation (UD counterpart, >= min_count words), the model's best "
        "head-direction's accuracy above the random-weights control's best on the same words; "
        "'some aspects' read as some relation; the paper gives no size: `no` also when the gap "
        f"lies within {_point_words(EQUIVALENCE_MARGINS['accuracy'])}", "the random-weights "
        "control itself (the claim's own comparison)", f"{_SENTENCES}; per relation, the "
        "difference of the two models' best heads, each chosen inside every resample, paired "
        "on the same words", rules._by_product, needs + (rules.BY_WORD.format("control"),), control=False,
        registry=("clark-5-by-product",)))
    return out


def _claims_03() -> list[Claim]:
    out: list[Claim] = []
    t2 = CLARK_TABLE2
    h = t2["head 5-4"]
    needs = (rules.BY_MENTION.format("model"),)
    test = (f"documents (OntoGUM's sampling unit) resampled, {rules.RESAMPLES_02:,} times; max-T "
            "over the L x H heads (the best chosen inside each resample), paired with the "
            "system on the same mentions; two-sided")
    for claim, system, null, below, reg in (
            ("the best head beats head-word match by over 10 points", "head_match",
             rules.OVER_STRING_MATCH, "", "clark-4.3-over-10-points"),
            (f"the best head comes within {words.points(rules.CLOSE_TO)} points of the rule-based "
             "system", "rule_based", -rules.CLOSE_TO, "close to", "clark-4.3-close-to-rule-based"),
            ("the best head beats the nearest mention", "nearest", 0.0, "",
             "clark-4.3-table2-nearest")):
        out.append(Claim(
            "03", rules.CLARK, "4.3, Table 2", claim,
            f"5-4 {h[0]}% vs. {t2[system][0]}% ({h[0] - t2[system][0]:+d})",
            f"the best head's antecedent accuracy minus {system}'s "
            + (f"above {100 * null:+g} points" if null else "above 0")
            + (" ('close' read as within that far below it; the paper gives no number)"
               if below else ""),
            f"{_CONTROL} (its own best head)", test, rules._coref(system, null, below), needs,
            registry=(reg,), reading=below))
    out.append(Claim(
        "03", rules.CLARK, "4.3, Table 2", "the best head is particularly good with nominal mentions",
        f"5-4 {h[3]}% vs. head match {t2['head_match'][3]}% on nominal mentions "
        f"({h[3] - t2['head_match'][3]:+d}; all mentions {h[0] - t2['head_match'][0]:+d})",
        "the best head's lead over head-word match larger on nominal mentions than on all "
        "mentions", f"{_CONTROL} (its own best head)",
        f"documents resampled, {rules.RESAMPLES_02:,} times; the head chosen on all mentions; "
        "two-sided",
        rules._coref_nominal, needs, registry=("clark-4.3-nominal",)))
    out.append(Claim(
        "03", rules.CLARK, "4.3", "coreference links are usually longer than syntactic dependencies",
        "stated as background, no number", "a link (mention to nearest antecedent, in words) "
        f"longer than a dependency arc in more than {words.fraction(rules.USUALLY)} of all link-arc "
        "pairs (ties half)",
        "none: a property of the corpora, the control reads the same words",
        f"OntoGUM and EWT documents resampled apart, {rules.RESAMPLES_02:,} times; two-sided",
        rules._links_longer, (rules.BY_MENTION.format("model"), rules.BY_WORD.format("model")), control=False,
        registry=("clark-4.3-coref-links-longer",), about="data", reading="usually"))
    return out
