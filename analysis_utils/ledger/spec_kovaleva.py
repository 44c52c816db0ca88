"""Kovaleva et al. 2019 claims as the ledger judges them (notebooks 06-07): one spec per claim.

Each :class:`~.core.Claim` here is a spec: the paper's words and section, the registry entries it
tests, the criterion, reference and test cells, formatted from the named parameters the rule
applies (no number is typed by hand: ``tests/test_ledger_words.py``), the readings it is run
under, and the rule itself, which lives in :mod:`.kovaleva` with the statistics it computes
(read through the module at call time, so a parameter changed there changes the rule and these
words together)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..papers import (
    KOVALEVA_DRIFT_EXCEPTION,
    KOVALEVA_FEATURE_INCREASE,
    KOVALEVA_FINETUNE_GAIN_MEAN,
    KOVALEVA_SECTION41,
    KOVALEVA_SECTION46,
    KOVALEVA_SECTIONS42_45,
    KOVALEVA_SINGLE_SEP_TASK,
    KOVALEVA_TABLE1,
)
from . import kovaleva as rules
from . import resample as rs
from . import words
from .core import (
    MIN_SEEDS,
    Claim,
    heterogeneous_band_words,
)


def _table1_mean_gain() -> float:
    """Table 1's mean over its tasks of pre-trained + fine-tuning minus random init +
    fine-tuning, each task's primary metric, in points."""
    gains = [rules._table1_effect(task, "finetuned", "random_finetuned") for task in KOVALEVA_TABLE1]
    return 100 * float(np.mean([g for g in gains if g is not None]))


def _negligible_words() -> str:
    """``"nouns and objects on MRPC, RTE, QQP; negation on QNLI"`` from the paper's table."""
    by: dict[tuple[str, ...], list[str]] = {}
    for f, on in KOVALEVA_FEATURE_INCREASE.items():
        by.setdefault(tuple(on), []).append({"noun": "nouns", "object": "objects"}.get(f, f))
    return "; ".join(f"{' and '.join(fs)} on {', '.join(on)}" for on, fs in by.items())


def claims06() -> list[Claim]:
    """Notebook 06's claims (Kovaleva et al. Sections 4.1-4.5, Table 1)."""
    s45 = KOVALEVA_SECTIONS42_45
    hb = ("hierarchical bootstrap: fine-tuning seeds and dev examples drawn with replacement "
          f"({rules.N_RESAMPLES:,} resamples), per task; judged per task")
    seeds = f"at least {MIN_SEEDS} fine-tuning seeds per task"
    pred, ex = (rules.PREDICTIONS,), (rules.BY_EXAMPLE,)
    out = [
        Claim("06", rules.KOVALEVA, "4.2", "the authors' FrameNet filter leaves 473 sentences",
              f"{s45['framenet_sentences']} sentences", "the count of the exact reading of the "
              "filter equals the paper's", "the paper's count", "exact count (no sampling)",
              rules._framenet_sentences, ("06_framenet_funnel.csv",), control=False,
              registry=("kovaleva-4.2-framenet-sentences",), about="data"),
        Claim("06", rules.KOVALEVA, "4.2, Figure 3", "a few heads stand out on FrameNet frame links", s45["framenet_standout"], "some head puts "
              "more attention between the target and its linked core elements than between the "
              "target and unlinked words as far away (its own per-head null), the best of all "
              "heads tested with its selection; notebook 06's own standouts (the heads 07 "
              "disables) shown beside it and judged as the other reading",
              "each head on unlinked words of the same "
              "sentences; the random-weights control under the same rule",
              "max-T over heads (studentised), FrameNet sentences resampled", rules._framenet_standout,
              (rules.FRAMENET,), registry=("kovaleva-4.2-two-heads",), reading="FrameNet heads"),
        Claim("06", rules.KOVALEVA, "Table 1", "pre-trained + fine-tuning beats random init + "
              "fine-tuning", "every task (Table 1)", "per task, the mean dev "
              "metric over pre-trained fine-tunes above that over random-init fine-tunes "
              f"(primary metric); every task; {seeds}", "random init + fine-tuning (the "
              "paper's own control); Table 1's difference as the paper's effect",
              hb + ", pre-trained and random-init seeds drawn separately", rules._beats_random, pred,
              control=False, registry=("kovaleva-4.3-random-init-lower",)),
        Claim("06", rules.KOVALEVA, "4.3, Table 1", "pre-training helps on average: the mean gain of "
              "pre-trained + fine-tuning over random init + fine-tuning", "no number (Table 1's "
              f"mean gain over its tasks {_table1_mean_gain():+.1f} points, primary metrics)",
              "the mean over the paper's tasks fine-tuned here of the gain (pre-trained "
              "fine-tunes' mean dev metric minus random-init fine-tunes', each task's primary "
              f"metric) above 0; the paper gives no size; tasks with {MIN_SEEDS} or more seeds "
              "of each init", "random init + fine-tuning (the paper's own control); Table 1's "
              "mean gain over the same tasks shown, not decisive", "hierarchical bootstrap per "
              f"task ({rules.N_RESAMPLES:,} resamples; fine-tuning seeds of each init drawn apart, dev "
              "examples drawn for both), tasks independent, the mean of their draws pooled in "
              "one test; two-sided", rules._pretraining_helps, pred, control=False,
              registry=("kovaleva-4.3-pretraining-helps",)),
        Claim("06", rules.KOVALEVA, "4.3, Table 1", "fine-tuned BERT beats pre-trained BERT without "
              "fine-tuning on every task", f"every task, {KOVALEVA_FINETUNE_GAIN_MEAN} points "
              "on average", "per task, the fine-tuned models' dev metric above that of the "
              "pre-trained encoder with an untrained task head (Table 1's first column as "
              f"notebook 06 reads it); every task; {seeds}", "the untrained-head baseline (the "
              "main reading) or the frozen-features head (the other)", hb,
              rules._finetuned_beats_pretrained, pred,
              control=False, registry=("kovaleva-4.3-finetuned-beats-pretrained",),
              reading="no fine-tuning"),
        Claim("06", rules.KOVALEVA, "4.3, Table 1", "on STS-B and QNLI, random init + fine-tuning "
              "scores below the pre-trained model without fine-tuning", "STS-B 2.9 vs. 33.1, "
              "QNLI 49.5 vs. 52.8", "per task (STS-B, QNLI), the random-init fine-tunes' dev "
              "metric below the untrained-head baseline's; " + seeds, "the untrained-head "
              "baseline (the main reading) or the frozen-features head (the other)", hb,
              rules._random_below_pretrained,
              pred, control=False, registry=("kovaleva-4.3-random-init-below-pretrained",),
              reading="no fine-tuning"),
        Claim("06", rules.KOVALEVA, "4.3, Figure 5", "the last two layers change most with "
              "fine-tuning", s45["drift_layers"], "per task, the smaller "
              "mean drift (1 - cosine to the pre-trained maps, mean over heads) of the last two "
              f"layers above the largest of the other layers; every task but "
              f"{', '.join(KOVALEVA_DRIFT_EXCEPTION)}; " + seeds,
              "0: the last two layers tie with another", hb + "; the statistic min(last two) - "
              "max(others) recomputed on every resample", rules._drift_last_two, ex, control=False,
              registry=("kovaleva-4.3-last-two-layers",), reading="last two"),
        Claim("06", rules.KOVALEVA, "4.5, Figure 7", "last-layer [CLS] attends most to [SEP] "
              "(punctuation on STS-B, RTE, QNLI)", s45["last_layer_cls"], "per task, the "
              "last layer's [CLS] weight on the paper's type above that on every other type; "
              "every task; " + seeds, "the next type", hb + "; the statistic (the paper's "
              "type minus the largest other) recomputed on every resample", rules._cls_last_layer,
              ex, control=False,
              registry=("kovaleva-4.5-cls-attends-sep", "kovaleva-4.5-punctuation")),
        Claim("06", rules.KOVALEVA, "4.4, Figure 6", "earlier layers attend to [CLS], later layers "
              "to [SEP], on every task", s45["cls_sep_stripes"], "per task, the slope over "
              "layers of the [CLS] score below 0 and that of the [SEP] score above 0; every "
              "task; " + seeds, "a slope of 0 (no trend with depth)", hb,
              rules._cls_early_sep_late, ex, control=False,
              registry=("kovaleva-4.4-cls-early-sep-late",)),
        Claim("06", rules.KOVALEVA, "4.4, Figure 6", "[SEP] weights are larger on SST-2 (one [SEP]) "
              "than on the other tasks", "SST-2 above the pair tasks", "the mean [SEP] score "
              f"(over layers, heads and inputs) of {KOVALEVA_SINGLE_SEP_TASK}'s fine-tuned "
              "models above each other paper task's; " + seeds, "each other task's score", hb + ", each task's "
              "examples drawn on their own", rules._sst2_sep, ex, control=False,
              registry=("kovaleva-4.4-sst2-sep",)),
        Claim("06", rules.KOVALEVA, "4.4, Figure 6", "vertical stripes come from attention to [CLS] "
              "and [SEP], not to linguistic features", "predominantly [CLS]/[SEP]", "per task, "
              "the best [CLS]/[SEP] head's score above the best linguistic-feature head's; "
              "every task; " + seeds, "the best linguistic-feature head", hb + "; each type's "
              "best head chosen inside every resample", rules._vertical_is_special, ex,
              control=False, registry=("kovaleva-4.4-vertical-is-special-tokens",)),
        Claim("06", rules.KOVALEVA, "4.4", "attention to linguistic features is negligible next to "
              "[CLS] and [SEP]", "negligible", f"per task, the best head on the features the "
              f"sentence names ({_negligible_words()}) scores below {rules.NEGLIGIBLE:.0%} of the "
              "best [CLS]/[SEP] head; every one of those tasks that was fine-tuned; "
              + seeds, f"{rules.NEGLIGIBLE:.0%} of the best [CLS]/[SEP] head", hb + "; each "
              "type's best head chosen inside every resample", rules._features_negligible, ex,
              control=False, registry=("kovaleva-4.4-features-negligible",),
              reading="negligible+negligible tasks"),
        Claim("06", rules.KOVALEVA, "4.4", "fine-tuning raises some heads' attention to nouns and "
              "objects (MRPC, RTE, QQP) and to negation (QNLI)", "some heads, per task",
              "per task and feature, some head's score higher in the fine-tuned model than in "
              f"the pre-trained one; every task and feature named, in every seed; {seeds}; "
              f"a rise below {float(rules.FEATURE_MARGIN):g} is negligible", "the same head of the pre-trained "
              "model", "per fine-tuning seed, max-T over heads (studentised), dev examples "
              "resampled", rules._feature_heads_increase, ex, control=False,
              registry=("kovaleva-4.4-feature-heads-increase",)),
        Claim("06", rules.KOVALEVA, "4.4", "the [CLS]/[SEP] stripes come from pre-training, not "
              "fine-tuning", "the stripes are there before fine-tuning", "per task, the "
              "fine-tuned models' [CLS] + [SEP] score (mean over layers, heads and inputs) "
              f"rises less than {rules.STRIPE_MARGIN:.0%} over the pre-trained model's (a drop "
              "agrees: the stripes were there before); every task; " + seeds,
              "the pre-trained model on the same inputs", hb + "; one-sided "
              "non-superiority (the 1 - 2a interval's upper end below the margin, a the "
              "family's level)", rules._stripes_from_pretraining,
              ex, control=False, registry=("kovaleva-4.4-stripes-from-pretraining",)),
        Claim("06", rules.KOVALEVA, "4.5", "the best verb-subject and noun-pronoun heads are "
              "diagonal heads", "diagonal heads", "per task and relation, the best relation "
              f"head puts more than {rules.DIAGONAL_SHARE:.0%} of its attention on the previous and "
              "next word; every task and relation; " + seeds, f"{rules.DIAGONAL_SHARE:.0%} on "
              "adjacent words", hb + "; the best head chosen inside every resample",
              rules._relation_diagonal, ex, control=False,
              registry=("kovaleva-4.5-relation-heads-diagonal",), reading="diagonal"),
        Claim("06", rules.KOVALEVA, "4.1, Figure 2", "Heterogeneous maps of fine-tuned models make "
              "up 32-61%", KOVALEVA_SECTION41["heterogeneous_share"], "every paper task's share "
              f"within {heterogeneous_band_words()} in every CNN seed; {seeds}, and the rule "
              "holds in every one",
              "none: the map types of the random-weights control are not classified",
              "none (descriptive)", rules._heterogeneous_finetuned,
              ("06_type_proportions_by_seed.csv",), control=False,
              registry=("kovaleva-4.1-heterogeneous-range",)),
    ]
    # the one rule whose note states a level for the whole family: it takes the family's
    # size, known once the list is built
    return [dataclasses.replace(c, rule=rules.features_negligible_in(len(out)))
            if c.rule is rules._features_negligible else c for c in out]


def claims() -> list[Claim]:
    """Every claim of notebooks 06-07 that the ledger judges."""
    s46 = KOVALEVA_SECTION46
    return [
        *claims06(),
        Claim("07", rules.KOVALEVA, "4.6, Figure 8", "disabling some single head improves every task",
              "every task, best +0.1 to +1.2 points", "per task and fine-tuning seed, the "
              "largest single-head gain's simultaneous interval (max-T over the model's heads, "
              "two-sided) lies above 0; 'no' where it excludes the paper's best gain ("
              + ", ".join(f"{t} {g:+g}" for t, g in s46["best_head_gain"].items())
              + " points); every task, in every seed",
              "the model intact (the best of its heads under the null: max-T)",
              "per model: dev examples resampled, max-T over the heads (gains and drops "
              "corrected alike); judged per task over the seeds", rules._some_head_improves,
              ("07_disabling.csv",), control=False,
              registry=("kovaleva-4.6-detrimental-heads", "kovaleva-4.6-every-task-some-head")),
        Claim("07", rules.KOVALEVA, "4.6, Figure 8", "disabling some heads helps while disabling others "
              "hurts", "some heads help, others hurt", "per task and seed, under one two-sided "
              "max-T over the heads, the largest gain's interval lies above 0 and the largest "
              "drop's below 0; both, on every task, in every seed", "the model intact",
              "per model: dev examples resampled, max-T over the heads; judged per task and "
              "side over the seeds", rules._help_and_hurt, ("07_disabling.csv",), control=False,
              registry=("kovaleva-4.6-some-help-others-hurt",)),
        Claim("07", rules.KOVALEVA, "4.6, Figure 8", "the best single-head gain is +0.1 points on "
              "STS-B and +1.2 on MRPC", "+0.1 (STS-B) to +1.2 points (MRPC)", "per task the "
              "paper sizes and seed, the largest single-head gain lies within the metric's "
              f"equivalence margin ({rules._metric_margin_words(rules._metrics(s46['best_head_gain']))}) of "
              "the paper's (the 1 - 2a simultaneous interval); 'no' "
              "where its interval lies beyond that band", "the paper's gain +- the margin",
              "per model: dev examples resampled, max-T over the heads; equivalence (two "
              "one-sided tests) on the largest gain", rules._gain_range, ("07_disabling.csv",),
              control=False, registry=("kovaleva-4.6-gain-range",)),
        Claim("07", rules.KOVALEVA, "4.6, Figure 8", "disabling a random head helps on average (MRPC, "
              "RTE)", "MRPC and RTE", "per task, the mean change over all single-head "
              "disablings, pooled over the fine-tuning seeds, lies above 0; the paper gives no "
              f"size for the average, so 'no' needs its interval below {rules._GAIN:g} points, the "
              "smallest single-head gain the paper reports (the metric's "
              f"{rules._metric_margin_words(rules._metrics(s46['random_head_helps']), '-')} equivalence "
              "margin is the other specification)", "0 change", "hierarchical bootstrap (seeds and dev examples) of the "
              "mean over heads of disabled minus intact", rules._random_head_helps,
              ("07_disabling.csv",), control=False,
              registry=("kovaleva-4.6-random-head-helps",)),
        Claim("07", rules.KOVALEVA, "4.6, Figure 9", "disabling a whole layer can improve the task",
              "yes (RTE layer 1 +3.2)", "for some task, in every seed, the largest layer "
              "gain's simultaneous interval (max-T over the model's layers, two-sided) lies "
              "above 0", "the model intact (the best of its layers under the null: max-T)",
              "per model: dev examples resampled, max-T over the layers; judged per task over "
              "the seeds, some task", rules._layer_improves, ("07_disabling.csv",), control=False,
              registry=("kovaleva-4.6-layer-improves",)),
        Claim("07", rules.KOVALEVA, "4.6, Figure 9", "disabling layer 1 improves RTE",
              f"+{s46['layer1_rte_gain']} points", "the change of RTE accuracy "
              f"when the {words.ordinal(rules.RTE_LAYER)} layer is disabled, pooled over the "
              "fine-tuning seeds, lies above 0; 'no' where its interval excludes "
              f"{s46['layer1_rte_gain']:+g} points", "0 change",
              f"hierarchical bootstrap (seeds and dev examples), layer {rules.RTE_LAYER} disabled vs. "
              "intact, seeds paired", rules._rte_layer1, ("07_disabling.csv",), control=False,
              registry=("kovaleva-4.6-rte-layer1",)),
        Claim("07", rules.KOVALEVA, "5 (Discussion)", "disabling single heads or a whole layer is not "
              "detrimental", "not detrimental", "per task and seed, no single-head and no "
              "whole-layer disabling lowers the dev metric beyond the metric's equivalence "
              "margin (simultaneous 1 - 2a intervals over all heads and layers); every task, in "
              "every seed", "0 change, less than the margin below it",
              "per model: dev examples resampled, max-T over heads and layers together; "
              "one-sided non-inferiority on the change that reaches lowest", rules._not_detrimental,
              ("07_disabling.csv",), control=False, registry=("kovaleva-5-not-detrimental",)),
        Claim("07", rules.KOVALEVA, "5 (Discussion)", "STS-B and RTE rely on the same heads",
              "the same 2 heads (4-1, 2-12)", "the Spearman correlation of the per-head changes "
              "of STS-B and RTE (seed means) lies above 0", "0 correlation",
              "each task's seeds and dev examples resampled on their own, the correlation on "
              "every resample", rules._same_heads, ("07_disabling.csv",), control=False,
              registry=("kovaleva-5-sts-rte-same-heads",)),
        Claim("07", rules.KOVALEVA, "Abstract", "the same head matters differently for different "
              "tasks", "varying impact across tasks", "the per-head changes correlate more "
              "between fine-tuning seeds of one task than between tasks (mean Spearman, the "
              "difference above 0)", "equal correlation within and between tasks",
              "each task's dev examples resampled (shared by its seeds), the correlations on "
              "every resample", rules._varying_impact, ("07_disabling.csv",), control=False,
              registry=("kovaleva-abstract-varying-impact",)),
        Claim("07", rules.KOVALEVA, "4.2, 5 (Discussion)", "the FrameNet heads are not important for "
              "the tasks", "2 heads, no drop", "per task and seed, disabling either FrameNet "
              "head lowers the dev metric by less than the metric's equivalence margin "
              f"({rules._metric_margin_words(list(rs.EQUIVALENCE_MARGINS))}; the 1 - 2a simultaneous "
              "interval over the FrameNet heads, its lower end); every task, in every seed",
              "0 change, less than the margin below it", "per model: dev examples resampled, "
              "max-T over the FrameNet heads notebook 07 disables, one-sided non-inferiority", rules._framenet_unimportant,
              ("07_framenet_heads_disabling.csv",), control=False,
              registry=("kovaleva-5-framenet-heads-unimportant",)),
        Claim("07", rules.KOVALEVA, "5 (Discussion)", "the heads STS-B and RTE rely on attend to words "
              "in both sentences", "high weights for words in both sentences",
              "in the heads both tasks rely on, attention between tokens of a word shared by "
              "the two sentences is higher than between other cross-sentence pairs", "none",
              "none: the attention maps it needs are not saved", rules._shared_words,
              ("07_disabling.csv",), control=False, registry=("kovaleva-5-shared-words",)),
    ]
