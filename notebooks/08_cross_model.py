# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 08 · The same questions across models (Clark et al. 2019; Kovaleva et al. 2019, Section 4.1)
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bertology-compendium/attention-heads/blob/main/notebooks/08_cross_model.ipynb)
#
# **Goals.** Put side by side, for every model whose notebooks 01-05 have been run, its
# random-init control and the papers' BERT-base (12 layers x 12 heads):
#
# 1. which token is the attention sink, layer by layer (Clark Section 3.2, Figure 2);
# 2. previous- and next-token heads (Section 3.1);
# 3. attention entropy by layer (Section 3.3, Figure 4);
# 4. the best syntax head of each relation of Table 1, with its relative depth (Section 4.2);
# 5. the best coreference head and the baselines (Table 2);
# 6. the attention probes' UAS (Table 3);
# 7. whether heads of one layer cluster together (Section 6, Figure 6);
# 8. the attention-map type proportions (Kovaleva Section 4.1);
#
# and, beyond the papers, how much of the first token's and the separators'
# attention weight their attention *norms* carry (Kobayashi et al. 2020, from notebook 01).
#
# **Nothing heavy is computed here.** Each model's numbers are read from the tables its own
# notebooks 01-05 saved into a *run folder* (`results/` for the default profile,
# all-MiniLM-L6-v2; `results/base/` for the `base` profile, all-mpnet-base-v2); the model's
# name and shape come from that folder's `NN_provenance.json`. A folder that is missing, or
# lacks a table, is named below with the command that produces it.
#
# **One depth axis.** Models of different depth are compared at the same *relative depth*,
# layer / layers (the last layer is 1.0): BERT-base's layer 7 of 12 sits at 0.58, MiniLM's
# layer 3 of 6 at 0.50.
#
# **What differs from the papers, everywhere below.** The models are sentence encoders
# (all-MiniLM-L6-v2: 6 x 12, distilled; all-mpnet-base-v2: 12 x 12), not the masked-LM
# BERT-base of both papers. The data are open substitutes: Wikipedia text from WikiText for
# Section 3, UD English EWT (Universal Dependencies labels) instead of the WSJ Penn Treebank
# (Stanford Dependencies) for Tables 1 and 3, OntoGUM instead of CoNLL-2012 for Table 2, and
# the map types are those of the *pre-trained* models' maps, where Kovaleva et al. classified
# maps of BERT *fine-tuned* on each task. Each section repeats the deviation that applies to
# it. The paper's numbers come from `analysis_utils.papers`.
#
# Logic: `analysis_utils.analyses.crossmodel`; figures: `analysis_utils.plotting.crossmodel`.

# %% tags=["parameters"]
runs = "results,results/base"  # run folders (relative to the repository root) to compare
thr_prev = 0.5  # a previous-token head: more than this share on the previous token (paper: 50%)
thr_next = 0.5  # a next-token head: more than this share on the next token (paper: 50%)
norm_weight_min = 0.1  # attention norms: judge a class in layers where its weight share > this
norm_ratio_max = 0.5  # ... and call its norm share much smaller where norm / weight share < this

# %%
# On Colab: install the package (does nothing elsewhere).
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "analysis_utils @ "
                    "git+https://github.com/bertology-compendium/attention-heads"], check=True)

# %%
import pandas as pd
from IPython.display import Markdown, display

from analysis_utils import papers
from analysis_utils.analyses import crossmodel as cm
from analysis_utils.plotting import crossmodel as cm_plots
from analysis_utils.publish import notebook
from analysis_utils.publish.compare import EXACT, IGNORE, within

folders = cm.load_runs(runs)
run = notebook.setup_tables("08", globals(),
                            models={f.folder: f.identity for f in folders if f.identity})
colours = cm_plots.model_colours([cm.PAPER] + [f.label for f in folders])
compared = [f.label for f in folders if f.model]
print(f"run folders: {', '.join(f.folder for f in folders)}; models with tables: "
      f"{', '.join(compared) or 'none'}")


def not_run(question: str) -> None:
    """Say which run folders cannot answer ``question``, and how to produce what is missing."""
    lines = cm.gaps(folders, question)
    if lines:
        display(Markdown("\n".join(f"- {line}" for line in lines)))


# %% [markdown]
# ## What each run folder holds
#
# One row per folder of `runs`: the model its provenance names, its shape, whether every
# table this notebook reads from notebooks 01-05 is there, and which random-init control each
# notebook used (notebooks 01 and 05 randomise every weight; 02-04 keep the pre-trained
# embeddings, as Clark et al.'s random-init probe baseline did).

# %%
# NBVAL_CHECK_OUTPUT
for line in cm.gaps(folders, "claims"):
    print(line)
notebook.table_view(cm.availability(folders), index="folder")

# %% [markdown]
# ### Where the runs were not made alike
#
# Every parameter and data description of notebooks 01-05 that differs between the runs, from
# their provenance: the model itself, and whatever a profile changed (e.g. the `base`
# profile's fewer probe seeds, fewer norm segments and fewer GLUE examples, which its CPU
# budget forced), and what follows from the tokenizer (segment lengths, words split into
# pieces). Each is a deviation between the models' numbers below.

# %%
run_differences = cm.differences(folders)
if run_differences.empty:
    print("fewer than two runs with tables: nothing to compare")
else:
    display(notebook.table_view(run_differences, index=["notebook", "kind", "name"]))

# %% [markdown]
# ### What the models were trained on
#
# Neither model is the masked-LM BERT-base of both papers. Where it bears on a result (a
# frozen-[CLS] baseline, the [CLS]-attention premise of Kovaleva's Figure 7, the sentence-pair
# tasks, a masked-LM gradient), read it against the model card shipped with the weights,
# quoted here in its own words:

# %%
display(Markdown(cm.training_notes(folders)))

# %% [markdown]
# ## 1. Which token is the attention sink, by layer (Clark Section 3.2, Figure 2)
#
# Per layer, the share of all attention on the *first token* (`[CLS]` in BERT-style models,
# `<s>` in MPNet), on the *separators* (`[SEP]`, `</s>`), and on periods and commas; the
# sink is the largest of the three (the rest of the tokens, "other", are many tokens, not
# one). "x control" is that share over the random-init control's share of the same class in
# the same layer (the control attends about uniformly). The paper: early layers attend to
# `[CLS]`, middle layers to `[SEP]` (over half of all attention in layers 6-10, i.e. relative
# depth 0.50-0.83), deep layers to periods and commas. Deviation: segments of WikiText's
# Wikipedia articles, not the paper's own Wikipedia sample; each model's own tokenizer, so
# segments differ in length between models.

# %%
not_run("sink")
sink = cm.sink_by_layer(folders)
_ = run.table(sink, "sink_by_layer", key=["model", "weights", "layer"],
              tolerance={"*": within(abs=1e-3), "x control": within(rel=0.01)},
              caption="Share of each layer's attention per token class, and the sink, per model "
                      "(notebook 01's tables)")
notebook.table_view(pd.concat([pd.DataFrame([cm.paper_sink_row()]), cm.sink_summary(sink)]),
                    index="model")

# %%
fig = cm_plots.sink_profiles(
    sink, colours, paper_band=cm.paper_sep_band(), paper_notes=cm.paper_sink_notes(),
    titles=cm.role_names(folders),
    title="Where each layer's attention goes (solid: pre-trained; dashed: random-init control)")
_ = run.figure(fig, "sink_profiles")

# %% [markdown]
# ## 2. Previous- and next-token heads (Clark Section 3.1)
#
# Heads that put more than `thr_prev` (`thr_next`) of their attention on the previous (next)
# token, per model and control, as a count, a share of all the model's heads, and which
# (head, relative depth). The paper's heads are named by layer only. A 6-layer model has half
# as many heads as BERT-base, so compare the shares.

# %%
not_run("positional")
positional = cm.positional_heads(folders, thr_prev=thr_prev, thr_next=thr_next)
_ = run.table(positional, "positional_heads",
              key=["model", "weights", "direction", "k"],
              tolerance={"share": within(abs=1e-3), "relative depth": EXACT},
              caption=f"Heads above {thr_prev:g} on the previous / {thr_next:g} on the next token")
notebook.table_view(cm.positional_summary(positional, folders),
                    digits={"of all heads (%)": 1})

# %% [markdown]
# ## 3. Entropy by layer (Clark Section 3.3, Figure 4)
#
# Mean attention entropy of each layer's heads, in nats and as a share of the control's (a
# random-init model attends about uniformly, so the share removes the segment length, which
# differs between tokenizers: uniform attention over n tokens has entropy log n), and the
# entropy of the attention *from* the first token. The paper: broad heads in layer 1 (at most
# about 10% on any word), and 3.89 nats from `[CLS]` in the last layer; nats depend on the
# segment lengths, so that number is comparable only roughly.

# %%
not_run("entropy")
entropy = cm.entropy_by_layer(folders)
_ = run.table(entropy, "entropy_by_layer", key=["model", "layer"],
              tolerance={"*": within(abs=1e-3)},
              caption="Mean attention entropy per layer (nats), model and control")
paper_cls = float(papers.CLARK_SECTION3["cls_entropy_last"].split()[0])
fig = cm_plots.entropy_profiles(entropy, colours, paper_cls_last=paper_cls,
                                title="Attention entropy on one relative-depth axis")
_ = run.figure(fig, "entropy_profiles")
notebook.table_view(entropy[["model", "layer", "relative depth", "entropy", "control entropy",
                             "entropy / control", "entropy from first token", "max weight"]],
                    digits=2)

# %% [markdown]
# The paper's two entropy claims beside each model and its control:

# %%
notebook.table_view(cm.entropy_claims(folders), digits=2, index=["model", "weights"])

# %% [markdown]
# ## 4. Best syntax head per relation of Table 1 (Clark Section 4.2)
#
# For each relation of the paper's Table 1, each model's best single head for its UD
# counterpart (accuracy of the head's most-attended word as the relation's other end, best
# direction), its relative depth, the best fixed-offset baseline and the margin in points,
# and the best head of the model's random-init control; the paper's BERT-base row first.
# Deviation: UD English EWT (dev + test) with UD labels, not WSJ with Stanford Dependencies;
# `prep` has no UD counterpart (UD attaches prepositions to the noun, as `case`, which stands
# for `pobj`). The paper's `auxpass` row looks like a slip (its authors' notebook: 94.1 vs.
# 82.5), as notebook 02 notes.

# %%
not_run("syntax")
syntax = cm.syntax_best_heads(folders)
_ = run.table(syntax, "syntax_best_heads", key=["paper relation", "model"],
              tolerance={"accuracy": within(abs=0.05, rel=0.01), "margin": within(abs=0.1),
                         "control accuracy": within(abs=0.05, rel=0.01), "baseline": EXACT},
              caption="Best head per Table 1 relation, relative depth, accuracy and baseline (%)")
notebook.table_view(syntax, digits={"relative depth": 2, "accuracy": 1, "baseline": 1,
                                    "margin": 1, "control accuracy": 1},
                    index=["paper relation", "model"])

# %% [markdown]
# ## 5. Coreference: best head and baselines (Clark Table 2)
#
# Antecedent selection accuracy (%) of each model's best head, overall and by mention type,
# its relative depth, the control's best head, and the three baselines run on the same
# mentions, with the best head's margin over each (points). Deviation: OntoGUM (dev + test)
# instead of CoNLL-2012, so the baselines differ between the paper and this data; compare each
# model's margins over the baselines of its own row.

# %%
not_run("coref")
coref = cm.coref_best_heads(folders)
_ = run.table(coref, "coref_best_heads", key=["model"],
              tolerance={"*": within(abs=0.05, rel=0.01), "relative depth": EXACT},
              caption="Best coreference head, baselines and margins (%, points)")
notebook.table_view(coref.drop(columns=[f"best head {c}" for c in ("pronoun", "proper",
                                                                 "nominal")]),
                    digits={"relative depth": 2}, index="model")

# %% [markdown]
# ## 6. Attention probes (Clark Table 3)
#
# UAS (%, punctuation excluded) of each probe on EWT dev, mean ± sd over training seeds;
# "Random-init attention + GloVe" uses the random-init control's maps. Deviation: the paper's
# numbers are on WSJ dev with Stanford Dependencies; a public reproduction with BERT-base on
# EWT dev is shown beside them. "Attention + GloVe, no bias" is the paper's exact probe
# (notebook 04 adds the bias-term variant).

# %%
not_run("probes")
uas = cm.probe_uas(folders)
_ = run.table(uas, "probe_uas", key=["probe", "model"],
              tolerance={"uas": within(abs=0.5), "sd": within(abs=0.5, rel=1.0)},
              caption="Attention-probe UAS per model (EWT dev; the paper: WSJ dev)")
if note := cm.probe_training_note(folders):
    display(Markdown(f"**Not a like-for-like comparison.** {note}"))
uas_view = uas.assign(cell=[f"{u:.1f}" + (f" ± {s:.1f}" if s == s else "")
                            for u, s in zip(uas["uas"], uas["sd"], strict=True)])
uas_view.pivot(index="probe", columns="model", values="cell").reindex(
    index=list(dict.fromkeys(uas["probe"])), columns=list(dict.fromkeys(uas["model"]))
).fillna(cm.DASH)

# %% [markdown]
# ## 7. Do heads of one layer cluster together? (Clark Section 6, Figure 6)
#
# The mean Jensen-Shannon distance between heads of the same layer over that between heads of
# different layers (below 1: same-layer heads are closer), with its permutation p-value, for
# the pre-trained weights and the random-init control; and the Kruskal stress of the 2-D MDS.
# The paper shows this only as a picture (Figure 6); the ratio and test are this
# compendium's.

# %%
not_run("clustering")
clustering = cm.clustering_ratio(folders)
_ = run.table(clustering, "clustering_ratio", key=["model", "weights"],
              tolerance={"ratio": within(abs=1e-3), "p_value": within(abs=0.01),
                         "stress": within(abs=0.01), "p": IGNORE},
              caption="Same-layer / other-layer JS distance ratio per model")
notebook.table_view(clustering, digits={"ratio": 3, "p_value": 3, "stress": 2,
                                        "permutations": 0})

# %% [markdown]
# ## 8. Attention-map types (Kovaleva Section 4.1)
#
# The share of maps of each type (notebook 05's classifier, mean over its seeds), averaged
# over the GLUE tasks of the paper that each run classified, with the lowest and highest
# task. Deviation: these are maps of the *pre-trained* model on each task's inputs; the paper
# classified maps of BERT fine-tuned on each task (its Heterogeneous share: 32% on MRPC to 61%
# on QQP). QQP and MNLI are not in the local data.

# %%
not_run("maptypes")
maptypes = cm.map_type_proportions(folders)
_ = run.table(maptypes, "map_type_proportions", key=["model", "type"],
              tolerance={"share": within(abs=0.02), "lowest": within(abs=0.03),
                         "highest": within(abs=0.03)},
              caption="Attention-map type shares, mean over the paper's tasks, per model")
display(Markdown(cm.map_type_note(folders)))
cm.map_type_view(maptypes)

# %% [markdown]
# ## Attention norms across models (beyond the papers)
#
# Neither paper has these numbers. A head's output at a token is `sum_j a_ij f(x_j)`, where
# `f(x_j)` is the attended token's vector through the head's value and output projections, so
# a large weight `a_ij` on a token whose `f(x_j)` is short moves the output little (Kobayashi
# et al. 2020, "Attention is not only a weight"). Notebook 01 measures, per layer (mean over
# its heads), each token class's share of the attention *weights* and its share of the
# weighted *norms* `||a_ij f(x_j)||`, in the model and in its random-weights control (see
# notebook 01's norms section for how). Below, for each model on the relative-depth axis:
# the first token's (`[CLS]`, `<s>`) and the separators' (`[SEP]`, `</s>`) weight share
# (solid) and norm share (dashed), the control faint. A class gets **much more weight than
# norm share** in a layer where its weight share is above `norm_weight_min` (by default 10%;
# the dotted line) and its norm share is less than `norm_ratio_max` (by default 0.5) times its
# weight share; the sentences under the figure are generated from the table by that rule. Kobayashi et al. report this for BERT-base (the
# weight on `[SEP]` and punctuation goes with small norms), but their figures are not in this
# compendium's reference set (`analysis_utils.papers`), so there is no paper column and no
# paper line: compare the models with each other and with their controls, not with BERT-base.
# Deviation: each model's own tokenizer and WikiText segments, as in section 1.

# %%
not_run("norms")
norm_layers = cm.norms_by_layer(folders)
# notebook 01's numbers, copied: its tolerance (float32 forward passes)
_ = run.table(norm_layers, "norms_by_layer", key=["model", "weights", "layer", "target"],
              tolerance={"*": within(abs=1e-3)},
              caption="Attention weight share vs norm share (Kobayashi et al. 2020) per layer and "
                      "token class, model and random-init control (notebook 01's tables)")
fig = cm_plots.norm_profiles(
    norm_layers, colours, titles=cm.role_names(folders), weight_min=norm_weight_min,
    title="Weight share (solid) vs norm share (dashed) of the first token and the separators "
          "(faint: random-init control)")
_ = run.figure(fig, "norm_profiles")
findings = cm.norm_findings(norm_layers, weight_min=norm_weight_min, ratio_max=norm_ratio_max)
display(Markdown(f"Much more weight than norm share: weight share above {100 * norm_weight_min:g}% "
                 f"and norm / weight below {norm_ratio_max:g}.\n\n"
                 + ("\n".join(f"- {line}" for line in findings)
                    or "No run folder has notebook 01's attention norms.")))

# %% [markdown]
# ## The models on one relative-depth axis
#
# Where each behaviour's heads sit: the previous- and next-token heads (section 2), the best
# head of each Table 1 relation (section 4) and the best coreference head (section 5), each
# model in its colour, the paper's BERT-base heads as black crosses (its positional heads are
# known by layer only). Then the whole-model numbers: probes, same-layer clustering, map
# types.

# %%
fig = cm_plots.depth_map(cm.head_depths(positional, syntax, coref), colours,
                         title="Where the heads are (relative depth = layer / layers)")
_ = run.figure(fig, "head_depths")
het = papers.KOVALEVA_HETEROGENEOUS_RANGE
fig = cm_plots.summary_panels(uas, clustering, maptypes, colours,
                              paper_het=(het["low"][1], het["high"][1]),
                              title="Probes, same-layer clustering and map types per model")
_ = run.figure(fig, "summary_panels")

# %% [markdown]
# ## The claims ledger is a stage of its own
#
# Every claim of either paper that notebooks 01-07 check is judged after the notebooks, by
# `python -m analysis_utils ledger` (run by `make reproduce`), from the tables those notebooks
# saved: `results/08_claims.csv` holds every row of both models, and each notebook's own rows
# are `results/NN_verdicts.md` (`results/base/NN_verdicts.md`). This notebook measures and
# compares; it computes no verdict, so a change to a verdict rule re-runs that stage in
# minutes and never this notebook. The book's findings page and claim pages show the
# verdicts with the test behind each.

# %% [markdown]
# ## Recap
#
# Generated from the tables above (the verdicts are the ledger stage's, not this notebook's):

# %%
display(Markdown("\n".join(f"- {line}" for line in cm.recap(sink, positional, syntax))))

# %% [markdown]
# - A model whose run folder is missing appears in none of the tables; the lines at the top of
#   each section say which and how to produce it.
# - Relative depth compares layers at the same *share* of the network; it does not say that
#   layer 3 of 6 does what layer 6 of 12 does, only where to look.
# - Attention weights are not explanations: these tables say where attention goes, not what a
#   model uses. The attention norms (beyond the papers) are one step towards the second: a
#   heavily weighted token with a short transformed vector contributes little to the head's
#   output.

# %%
_ = run.finish()
