# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 05 · Clustering heads (Clark et al. 2019, Section 6) and attention-map types (Kovaleva et al. 2019, Section 4.1)
#
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bertology-compendium/attention-heads/blob/main/notebooks/05_head_clustering.ipynb)
#
# **Goals.**
#
# 1. *Clark Section 6.* Distance between two heads = Jensen-Shannon divergence between their
#    attention distributions, summed over every token of every Wikipedia segment; all pairs;
#    2-D metric MDS coloured by layer and marked by behaviour; are heads of one layer closer
#    to each other than to other layers, and heads of one behaviour closer than heads of
#    different behaviours (permutation tests)? How faithful is the 2-D picture (stress)? The
#    same for the random-weights control.
# 2. *Kovaleva Section 4.1.* Five map types (Vertical, Diagonal, Vertical+Diagonal, Block,
#    Heterogeneous; one example of each below, their Figure 1): a hand-labelled set of maps
#    drawn by a seeded stratified sample, a transparent rule classifier and two small CNNs
#    evaluated on held-out labels over several seeds, then the share of each type over all
#    heads for every GLUE dev set available locally (their Figure 2), with its spread across
#    seeds. Kovaleva et al. classified maps of BERT *fine-tuned* on each task; this run
#    classifies maps of the *pre-trained* model (no fine-tuning) for every task.
#
# Logic lives in `analysis_utils.analyses.clustering`, `analysis_utils.analyses.maptypes`
# (classifiers, seeds), `analysis_utils.data.labels` (labelled set), `analysis_utils.data.glue`
# and `analysis_utils.plotting.maptypes` (figures, contact sheets).

# %% tags=["parameters"]
model = "minilm"  # "minilm" (packaged all-MiniLM-L6-v2), a local folder, or a hub id
control_init = "random"  # the control: same architecture, every weight random (as notebook 01)
device = ""  # empty: CUDA when available, else CPU
seed = 0  # segments, MDS starts, permutations
n_segments = 1000  # the paper: 1,000 Wikipedia segments (the same ones as notebook 01)
max_tokens = 128
truncation = "truncate"
wikitext_splits = "valid,test"
smoothing = 0.001  # added to every attention weight before JS (the authors' released code)
js_threads = 1  # torch threads for the JS matrix (1 on a shared machine)
n_perm = 1000  # permutations for the same-layer test
mds_n_init = 4
thr_entropy = 3.8  # nats: "broad" head (Clark Figure 6)
thr_prev = 0.5  # mean attention to the previous token
thr_next = 0.5
thr_cls = 0.6  # mean attention to [CLS]
thr_sep = 0.6
thr_punct = 0.6  # mean attention to . and ,
syntax_margin = 10.0  # percentage points over the offset baseline to call a head "syntax"
n_folds = 5  # cross-validation folds over the labelled maps
seeds = "0,1,2,3,4"  # classifier seeds: fold split, CNN initial weights, batch order
block_grid = "0.9,0.95,0.99"  # candidate within-sentence shares for the Block rule
n_contact_sheets = 0  # contact sheets of the labelled set to write (0: all)
cnn_epochs = 150
cnn_size = 32
cnn_stages = 2  # the selected CNN: stages of two 3x3 conv layers (2 -> 4 conv layers)
glue_max_examples = 500  # per GLUE dev set for the type proportions (0: all)
recompute = False  # True: compute every heavy step here; False: read a saved run's evidence

# %%
# On Colab: install the package and its packaged model (does nothing elsewhere).
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "analysis_utils[models] @ "
                    "git+https://github.com/bertology-compendium/attention-heads"], check=True)

# %%
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from analysis_utils import papers, paths
from analysis_utils.analyses import clustering, maptypes, surface
from analysis_utils.data import glue, wikitext
from analysis_utils.data import labels as sheets
from analysis_utils.engine import attention
from analysis_utils.heads import head_label, head_labels, parse_head_label
from analysis_utils.plotting import maptypes as maptype_plots
from analysis_utils.publish import notebook, saved
from analysis_utils.publish.compare import EXACT, IGNORE, from_sd, within

lm, control, run = notebook.setup("05", globals(), precision=3)
print(saved.mode(run))
tok = lm.tokenizer
seed_list = [int(s) for s in seeds.split(",")]

# %% [markdown]
# ## Data and attention maps
#
# The Wikipedia segments are notebook 01's (`[CLS] paragraph-1 [SEP] paragraph-2 [SEP]`, at most
# 128 pieces, WikiText-2 valid+test, seed 0), so the attention cache is shared with it. Every
# pass below reads the cached maps one segment at a time (`clustering.stream`), so the
# kernel holds one segment's maps, never the 1.9 GB per model of the whole cache.
#
# **Saved evidence.** Three heavy steps each run in a function passed to `saved.step`: the
# maps' distances and per-head statistics, the classifiers' cross-validation, and the refit
# classifiers' counts over the GLUE maps. With `recompute = True`, as every profile of the
# papermill driver runs it, they run here; either way each value is saved beside the tables
# as `05_evidence_<step>.npz`, with the commit and device that computed it. With
# `recompute = False`, the notebook's own default (opened alone, e.g. on Binder or Colab), a
# saved file made with the same parameters, models and data is read instead, and each step
# prints which it did: the committed run's evidence ships in `results/`.

# %%
articles, segset = wikitext.wikipedia_segments(tok, wikitext_splits, n=n_segments,
                                              max_tokens=max_tokens, seed=seed,
                                              policy=truncation)
segments = segset.segments
run.data.update({"wikitext-2": wikitext_splits, "segments": segset.report})
print(f"{segset.report['truncated']} of {len(segments)} segments truncated to {max_tokens}")
punct_ids = tok.convert_tokens_to_ids([".", ","])
special = lm.special_ids

# %% [markdown]
# ## Head distances: Jensen-Shannon divergence summed over all tokens
#
# For heads $i, j$: $d(i, j) = \sum_{\text{segments}} \sum_{\text{tokens } t} JS(A_i[t], A_j[t])$,
# where $A_i[t]$ is head $i$'s attention distribution from token $t$ (one row of its map) and
# JS is the Jensen-Shannon *divergence*, natural log (nats, between 0 and log 2 per token).
# **Smoothing:** as in the authors' released code, `smoothing` (0.001) is added to every
# attention weight and each row renormalised before the divergence. All $K(K-1)/2$ pairs of
# the $K$ = layers x heads heads (layer-major order: head $k$ = layer x heads + head), streamed
# over the cached maps one segment at a time.
#
# **What MDS embeds.** The summed divergence is the paper's formula (and, per the
# implementation notes, what the released code embeds), but it is not a metric (no triangle
# inequality), so metric MDS only approximates it. Its square root is: $\sqrt{JS}$ is a metric
# per token, and the square root of a sum of squared metrics is a metric again. MDS is fitted
# to that square root (`np.sqrt` of `clustering.js_distance_matrix`, whose `kind="distance"`
# gives the same); the ordering of pairs is unchanged, and the paper's text does not say
# which it embedded. The layer test uses the same matrix. Figure 6's caption speaks of the
# *average* divergence: dividing by the number of tokens (`reduction="mean"`) only rescales
# the matrix, so the MDS picture is the same.

# %%
def map_evidence():
    """Both models' maps (extracted once, then read from the cache), streamed twice each: the
    summed JS divergence of every pair of heads, then notebook 01's per-head statistics
    (relative position, token classes, entropy) for the behaviour labels below."""
    stores = notebook.attention_maps(segments, [lm, control], "segments")
    div, info, sfc = {}, {}, {}
    for lbl, st in zip(("model", "control"), stores, strict=True):
        div[lbl], info[lbl] = clustering.js_distance_matrix(
            clustering.stream(st), smoothing=smoothing, return_info=True, threads=js_threads)
        ex = ((a, np.asarray(s.input_ids))
              for a, s in zip(clustering.stream(st), segments, strict=True))
        sfc[lbl] = surface.surface_statistics(ex, special["cls"], special["sep"], punct_ids)
        print(f"{lbl}: peak memory so far {notebook.peak_rss_mb():,.0f} MB")
    return {"divergence": div, "info": info, "surface": sfc}


# heavy: computed here, or read from a saved run with these parameters (`recompute`)
ev = saved.step(run, "maps", map_evidence,
                "JS divergences and per-head statistics of both models")
dist, info = {lbl: np.sqrt(d) for lbl, d in ev["divergence"].items()}, ev["info"]
for lbl, div in ev["divergence"].items():
    print(f"{lbl}: {info[lbl]['n_examples']} segments, {info[lbl]['n_tokens']} tokens, "
          f"{len(div) * (len(div) - 1) // 2} head pairs in {info[lbl]['seconds']:.1f} s")
heads = clustering.head_index(lm.num_layers, lm.num_heads)
names = head_labels(lm.num_layers, lm.num_heads)
for lbl in dist:  # float64-accumulated sums: another CPU or BLAS moves them by float noise only
    run.table(pd.DataFrame(dist[lbl], columns=names).assign(head=names)[["head", *names]],
              f"js_distance_{lbl}", markdown=False, key=["head"],
              tolerance={"*": within(rel=1e-4, abs=1e-6)})

# %% [markdown]
# ## Behaviour labels for the plot
#
# Per-head statistics from `analysis_utils.analyses.surface` (notebook 01's definitions) with the
# thresholds of the parameters cell: entropy > `thr_entropy` nats is *broad*; mean attention
# > `thr_prev` / `thr_next` on the previous / next token; > `thr_cls`, `thr_sep`, `thr_punct`
# on [CLS], [SEP], `.`/`,`. When several fire, the largest value/threshold wins. Heads found
# by notebooks 02 and 03 (when their results exist) take precedence: *syntax* = best head of
# a dependency relation that beats its best fixed-offset baseline by at least `syntax_margin`
# points; *coreference* = best head for all mentions. (Layer and head are 1-based in the
# `surface` tables, as in the papers; the distance matrix rows are in the same layer-major order.)

# %%
# the committed default-run results of notebooks 02/03 (the smoke profile's own are toy-sized)
results_dir = paths.RESULTS_DIR
extra = {}  # 0-based (layer, head) -> label
syn_path, coref_path = results_dir / "02_table1_model.csv", results_dir / "03_best_head_by_group.csv"
if syn_path.exists():
    t1 = pd.read_csv(syn_path)
    for h in t1.loc[(t1.accuracy - t1.baseline) >= syntax_margin, "head"]:
        extra[parse_head_label(h)] = "syntax"
if coref_path.exists():
    h = pd.read_csv(coref_path).query("breakdown == 'all'")["best_head"].iloc[0]
    extra[parse_head_label(h)] = "coreference"
print("syntax / coreference heads:", {head_label(*lh): v for lh, v in extra.items()} or "none")
thresholds = dict(entropy=thr_entropy, prev=thr_prev, next=thr_next, cls=thr_cls, sep=thr_sep,
                  punct=thr_punct)

stats, behaviour = {}, {}
for lbl, sfc in ev["surface"].items():
    rel = sfc["relative_position"].rename(columns={"previous": "prev"})
    stats[lbl] = rel.merge(sfc["token_class"], on=["layer", "head"]).merge(sfc["entropy"],
                                                                          on=["layer", "head"])
    behaviour[lbl] = clustering.behaviour_labels(  # the surface frames count from 1
        stats[lbl], thresholds,
        extra={(la + 1, h + 1): v for (la, h), v in extra.items()} if lbl == "model" else None)
    stats[lbl]["behaviour"] = behaviour[lbl]
    run.table(stats[lbl], f"head_behaviour_{lbl}", key=["layer", "head"],
              tolerance={"*": within(rel=1e-4, abs=1e-6)},
              caption=f"Per-head statistics and behaviour label; {lbl}")
print(f"peak memory so far {notebook.peak_rss_mb():,.0f} MB")
pd.DataFrame({lbl: b.value_counts() for lbl, b in behaviour.items()}).fillna(0).astype(int)

# %% [markdown]
# ## MDS embedding, layer separation and stress
#
# The layer test permutes layer labels over the heads: the heads are the population the claim
# is about, so the permutation null is the right reference. Each permutation's same-layer /
# other-layer ratio is saved (`05_separation_null.csv`): their spread is the test's standard
# error, from which the claims ledger reads the smallest effect it could detect.
# The same test with **behaviour labels** in place of layers asks whether heads that behave
# alike sit together (Clark et al.: "several clear clusters of heads that behave similarly,
# often corresponding to behaviors we have already discussed"): over the heads with a
# surface behaviour (the thresholds above, without the syntax / coreference labels of
# notebooks 02-03), mean distance between heads of the same behaviour over that between
# heads of different behaviours, behaviour labels permuted over those heads. It needs at
# least two behaviours with two heads or more.

# %%
sep_rows, beh_rows, null_rows, coords = [], [], [], {}
for lbl, lm_ in (("model", lm), ("control", control)):
    coords[lbl], stress = clustering.mds_embedding(dist[lbl], seed=seed, n_init=mds_n_init)
    sepr = clustering.layer_separation(dist[lbl], heads["layer"], n_perm=n_perm, seed=seed,
                                       return_null=True)
    null_rows.append(pd.DataFrame({"model": lbl, "grouping": "layer",
                                   "permutation": np.arange(1, n_perm + 1),
                                   "ratio": sepr.pop("null_ratio")}))
    p_text = clustering.format_p(sepr["p_value"], n_perm)
    sep_rows.append({"model": lbl, **sepr, "p": p_text, "stress": stress})
    # surface behaviour only, in the distance matrix's layer-major order (stats count from 1)
    k = (stats[lbl]["layer"] - 1) * lm.num_heads + stats[lbl]["head"] - 1
    surface_only = clustering.behaviour_labels(stats[lbl], thresholds).to_numpy()[np.argsort(k)]
    behr = clustering.behaviour_separation(dist[lbl], surface_only, n_perm=n_perm, seed=seed,
                                           return_null=True)
    null_rows.append(pd.DataFrame({"model": lbl, "grouping": "behaviour",
                                   "permutation": np.arange(1, n_perm + 1),
                                   "ratio": behr.pop("null_ratio")}))
    beh_rows.append({"model": lbl, **behr, "p": clustering.format_p(behr["p_value"], n_perm)
                     if behr["testable"] else "untestable (fewer than two behaviours with "
                                                  "two heads or more)"})
    fig = maptype_plots.mds_plot(coords[lbl], heads["layer"], behaviour[lbl], heads=heads["head"],
                                 title=f"Heads of {lm_.label}: MDS of sqrt(summed JS divergence)\n"
                                       f"stress {stress:.2f}; same-layer / other-layer distance "
                                       f"{sepr['ratio']:.2f} ({p_text})")
    run.figure(fig, f"mds_{lbl}")
# both separation tests' tolerances: a float-noise change of the distances can move a few
# permutations across the observed statistic (p by a few / (n_perm + 1))
separation_tolerance = {
    "within": within(rel=1e-4), "between": within(rel=1e-4),
    "diff": within(rel=1e-4, abs=1e-6), "ratio": within(abs=1e-3),
    "p_value": within(abs=0.01), "p": IGNORE,
    "null_mean": within(abs=1e-3), "null_std": within(abs=1e-3, rel=1e-3),
    "null_ratio_mean": within(abs=1e-3), "null_ratio_sd": within(abs=1e-3)}
separation = pd.DataFrame(sep_rows)
run.table(separation, "layer_separation", key=["model"],
          # SMACOF from random starts: float noise can pick a nearby optimum
          tolerance={**separation_tolerance, "stress": within(abs=0.01)},
          caption="Mean sqrt-JS distance between heads of the same layer vs of different layers, "
                  f"permutation test ({n_perm} layer relabellings), Kruskal stress-1 of the 2-D MDS")
behaviour_sep = pd.DataFrame(beh_rows)
run.table(behaviour_sep, "behaviour_separation", key=["model"], tolerance=separation_tolerance,
          caption="Mean sqrt-JS distance between heads of the same surface behaviour vs of "
                  f"different behaviours, over the heads with a behaviour; permutation test "
                  f"({n_perm} relabellings)")
run.table(pd.concat(null_rows, ignore_index=True), "separation_null", markdown=False,
          key=["model", "grouping", "permutation"],
          tolerance={"ratio": within(abs=1e-3)},  # the same relabellings; float noise only
          caption="Permutation null of the same-group / other-group distance ratio")
display(behaviour_sep[["model", "heads", "groups", "labels", "ratio", "p"]])
separation

# %% [markdown]
# Reading the figure: each point is a head, colour = layer, marker = behaviour (a plain
# circle: none of the thresholds fired); labels `layer-head` (1-based) are drawn where they do
# not overlap, heads with a behaviour first. Stress-1 (Kruskal) measures how much of the
# distance matrix the 2-D picture loses: about 0.05 good, 0.1 fair, 0.2 poor.

# %% [markdown]
# ## Attention-map types: the hand-labelled set
#
# Kovaleva et al. sort self-attention maps into five types: **Vertical** (attention to the
# `[CLS]`/`[SEP]` columns), **Diagonal** (previous / next token), **Vertical+Diagonal** (a
# mix), **Block** (attention within each sentence of a two-sentence input) and
# **Heterogeneous** (none of these). They hand-labelled about 400 maps of BERT fine-tuned on
# each task and trained a CNN with 8 convolutional layers (F1 0.86); neither the labels nor
# the classifier were released, so both are rebuilt here, on maps of the pre-trained model.
# The per-map statistics the rule classifier reads are defined in `maptypes.head_statistics`.
#
# Which maps were labelled was fixed before any classifier existed: `sheets.sample_label_set`
# draws, for each source (Wikipedia segments and the six GLUE dev sets here) and each layer,
# 5 distinct heads with one random example each (seed 0), 7 x 6 x 5 = 210 maps. They were
# labelled from contact sheets, written below as files (linked, not shown: same maps, same
# colour scaling; here the label is printed under the id). Each map has its own colour scale
# (`(a / max) ** 0.5`); a red line marks the start of the second sentence of two-sentence
# inputs.
#
# **Honest caveats.** One annotator (the author of this notebook, an AI assistant), one pass, 210 maps (the paper: about 400,
# annotators not stated). The sheets group maps by source and layer in id order, so the
# annotator could infer the layer from the position: not blind to layer. The map types are
# not crisp: many maps mix a weak [CLS] column with a faint diagonal or many stripes; the
# labeller's notes in the CSV record such doubts. Block maps are rare in this model (3 of 210),
# so no classifier can be evaluated on Block.

# %%
# the labels name (layer, head) positions of the labelled model's maps; on another model those
# positions are other heads, so the guard trains on the labelled model's maps and says so
training = sheets.training_set(lm, max_tokens=max_tokens)
labels_lm = training.model
run.models["labels"] = training.identity
if training.transfer:
    print(training.transfer)
labels, label_maps, label_ids = training.labels, training.maps, training.inputs
label_special = labels_lm.special_ids
label_stats = pd.DataFrame([maptypes.map_statistics(m, x.input_ids, x.token_type_ids,
                                                    label_special["cls"], label_special["sep"],
                                                    punct_ids)
                            for m, x in zip(label_maps, label_ids, strict=True)])
balance = sheets.class_balance(labels["label"])
run.table(balance, "label_balance", key=["label"], tolerance={"share": EXACT},
          caption=f"Class balance of the {len(labels)} hand-labelled maps")
print(pd.crosstab(labels["source"], labels["label"]))
balance

# %% [markdown]
# One labelled map of each type (Kovaleva et al.'s Figure 1), picked by a rule fixed in
# advance (`sheets.example_per_type`: the map of that type whose length is closest to 40
# tokens), with its source and head:

# %%
bounds = [int(np.argmax(np.asarray(x.token_type_ids))) if any(x.token_type_ids) else None
          for x in label_ids]
picked = sheets.example_per_type(labels, [len(m) for m in label_maps])
fig = maptype_plots.contact_sheet(
    [label_maps[i] for i in picked.values()],
    [f"{t}\n#{labels.id[i]} {labels.source[i]}, head "
     f"{head_label(labels.layer[i], labels['head'][i])}, n={len(label_maps[i])}"
     for t, i in picked.items()],
    boundaries=[bounds[i] for i in picked.values()], ncols=len(picked), cell=2.3,
    title=f"One hand-labelled map per type ({labels_lm.label}); each on its own scale, "
          "(a / max) ** 0.5")
_ = run.figure(fig, "maptype_examples", dpi=100)

# %%
abbrev = {"Vertical": "V", "Diagonal": "D", "Vertical+Diagonal": "V+D", "Block": "B",
          "Heterogeneous": "H"}
sheet_links = []
for k in range(0, len(labels) if n_contact_sheets == 0 else 30 * n_contact_sheets, 30):
    sub = labels.iloc[k:k + 30]
    fig = maptype_plots.contact_sheet([label_maps[i] for i in sub.index],
                               [f"#{r.id} {r.source} n={len(label_maps[i])}: {abbrev[r.label]}"
                                for i, r in zip(sub.index, sub.itertuples(), strict=True)],
                               boundaries=[bounds[i] for i in sub.index], ncols=6, cell=1.9,
                               title=f"Hand-labelled maps #{k}-#{k + len(sub) - 1}: id, source, length, "
                                     "label (V vertical, D diagonal, V+D both, B block, H heterogeneous)\n"
                                     "each map on its own scale, (a / max) ** 0.5; red line: start of the "
                                     "second sentence")
    png = run.figure(fig, f"maptype_contact_sheet_{k // 30 + 1}", dpi=90, show=False)
    sheet_links.append(f"[maps #{k}-#{k + len(sub) - 1}]({run.figure_link(png)})")
display(Markdown("Contact sheets of the labelled set (files in `figures/`): "
                 + ", ".join(sheet_links)))

# %% [markdown]
# ## Rule classifier and two CNNs, evaluated on held-out labels, over several seeds
#
# Every labelled map is held out exactly once: `n_folds`-fold stratified cross-validation. In
# each fold the rule thresholds (`maptypes.RuleClassifier`, grid search for the best macro-F1;
# the Block rule only considers a within-sentence share of at least 0.9, because a uniform map
# over a long first sentence and a short second one already scores about 0.8) and two CNNs
# (`maptypes.train_cnn`, on maps pooled to `cnn_size` x `cnn_size`, class-balanced loss) are
# fitted on the other folds only; the scores are on the out-of-fold predictions. The two CNNs:
#
# - `cnn_8conv`: **8 conv layers** (4 stages of two 3x3 convolutions), the depth of Kovaleva
#   et al.'s CNN, trained like the other (same epochs and input size), not tuned;
# - `cnn`: **4 conv layers** (`cnn_stages` = 2 stages), `cnn_epochs` epochs. This setting was
#   picked after trying four (2 or 4 stages, 60-150 epochs, 16 or 32 pixels) on seed 0's
#   folds, so its score is somewhat optimistic (no nested cross-validation).
#
# **Seeds.** Each seed in `seeds` drives the fold split, the CNNs' initial weights and their
# batch order (`maptypes.out_of_fold`); the rule classifier's grid search itself is
# deterministic, so its spread comes from the folds alone. One seed is one draw: a rerun on
# another CPU moves a CNN's score by as much as the seeds do, so the tables give mean and
# sd over seeds and the text states only orders that hold in every seed. The paper reports
# "F1 0.86" without saying which average; macro and weighted F1 and accuracy are all shown.

# %%
cnn_settings = {"cnn": dict(n_stages=cnn_stages, epochs=cnn_epochs, size=cnn_size),
                "cnn_8conv": dict(n_stages=4, epochs=cnn_epochs, size=cnn_size)}
clf_names = {"rules": "the rule classifier", "cnn": "the 4-conv CNN",
             "cnn_8conv": "the 8-conv CNN (the paper's depth)"}
y = labels["label"].to_numpy(dtype=object)
rule_grid = {**maptypes.DEFAULT_GRID, "block": tuple(float(v) for v in block_grid.split(","))}


def cv_evidence():
    """Out-of-fold scores of the rules and both CNNs, per seed, and what each fit cost."""
    t0 = time.perf_counter()
    by_seed, cost = maptypes.cross_validate_seeds(
        label_stats, label_maps, y, seed_list, n_folds=n_folds, grid=rule_grid,
        cnns=cnn_settings)
    return {"scores": by_seed, "cost": cost, "seconds": time.perf_counter() - t0}


ev = saved.step(run, "cv", cv_evidence,
                f"cross-validation, {len(seed_list)} seeds x {n_folds} folds")
scores_by_seed, cv_cost, cv_seconds = ev["scores"], ev["cost"], ev["seconds"]
per_clf = cv_cost.groupby("classifier", sort=False)["seconds"].sum()
print(f"{len(seed_list)} seeds x {n_folds} folds in {cv_seconds:.0f} s "
      f"({cv_seconds / len(seed_list):.0f} s per seed): "
      + ", ".join(f"{k} {v:.0f} s" for k, v in per_clf.items()))
run.table(scores_by_seed, "classifier_scores_by_seed", key=["classifier", "seed", "class"],
          # one trained draw per row: another CPU moves it as much as a seed does, so only
          # the summary over seeds (classifier_scores) is compared
          tolerance={"precision": IGNORE, "recall": IGNORE, "f1": IGNORE},
          caption=f"Out-of-fold per-class scores per seed, {n_folds}-fold CV over {len(y)} "
                  "hand-labelled maps")
scores = maptypes.summarise_seeds(scores_by_seed, ["classifier", "class"],
                                  ["precision", "recall", "f1"]).merge(
    scores_by_seed.groupby(["classifier", "class"], sort=False)["support"].first().reset_index())
run.table(scores, "classifier_scores", key=["classifier", "class"],
          tolerance={**{f"{v}_{s}": from_sd(f"{v}_sd", k=k, abs=0.03)
                        for v in ("precision", "recall", "f1")
                        for s, k in (("mean", 2), ("min", 3), ("max", 3))},
                     "*_sd": within(abs=0.03, rel=1.0)},
          caption=f"Out-of-fold per-class scores, {n_folds}-fold CV over {len(y)} hand-labelled "
                  f"maps: mean, sd, min and max over seeds {seeds}")
order = list(maptypes.MAP_TYPES) + ["macro avg", "weighted avg", "accuracy"]
maptypes.mean_sd_pivot(scores, "class", "classifier", "f1").loc[order]

# %% [markdown]
# **Which classifier for the proportions.** Decided before looking at the GLUE proportions:
# the one with the higher out-of-fold *macro*-F1 (every type counts equally), averaged over
# seeds; on a tie the rule classifier, because its decisions can be read. `cnn_8conv` is not
# a candidate. The chosen classifier is then refitted on all labelled maps, once per seed
# (for the rules, the same thresholds every time). The fitted rules are printed whatever is
# chosen.

# %%
macro_by_seed = scores_by_seed[scores_by_seed["class"] == "macro avg"].pivot(
    index="seed", columns="classifier", values="f1")
macro = macro_by_seed.mean()
chosen_clf = "cnn" if macro["cnn"] > macro["rules"] else "rules"
print(f"chosen: {chosen_clf} (out-of-fold macro-F1 over {len(seed_list)} seeds: "
      + ", ".join(f"{k} {macro[k]:.3f}" for k in clf_names) + ")")
rules_all = maptypes.RuleClassifier(grid=rule_grid).fit(label_stats, y)
print("rules fitted on all labels:\n" + rules_all.rules())
print(f"refitted on all labels once per seed ({len(seed_list)} seeds) in the next cell's step")

# %% [markdown]
# ## Type proportions over all heads per GLUE task (Kovaleva Figure 2)
#
# Each GLUE dev set available locally (MNLI and QQP are not in the local bundle) is encoded as
# single sentences (CoLA, SST-2) or sentence pairs, at most 128 pieces (truncations counted),
# its first `glue_max_examples` rows; every map of every head of every example is classified,
# by the chosen classifier of every seed (`maptypes.count_types`, streamed one example at a
# time). Bars: mean share over seeds; error bars: smallest to largest seed. The grey band is
# Kovaleva et al.'s range of the Heterogeneous share over their tasks, measured on fine-tuned
# BERT-base: not the same model, so a guide, not a target. CoLA was not among their tasks.

# %%
def glue_evidence():
    """The chosen classifier refitted on all labels once per seed, then every map of every
    head of every GLUE dev example classified by each, per task."""
    t0 = time.perf_counter()
    final = {s: (maptypes.train_cnn(label_maps, y, seed=s, threads=1, **cnn_settings["cnn"])
                 if chosen_clf == "cnn" else rules_all) for s in seed_list}
    refit_s, t1 = time.perf_counter() - t0, time.perf_counter()
    rows = []
    for task in glue.available_tasks():
        enc = glue.encode(glue.read_glue(task, max_examples=glue_max_examples or None), tok,
                          max_tokens=max_tokens)
        st = attention.extract_attention(lm, enc.inputs, desc=f"maps {task}", progress=False)
        counts = maptypes.count_types(final, clustering.stream(st), enc.inputs,
                                      cls_id=special["cls"], sep_id=special["sep"],
                                      punct_ids=punct_ids)
        for s, row in counts.iterrows():
            rows.append({"task": task, "seed": s, "examples": len(enc),
                         "truncated": enc.report["truncated"], "maps": int(row["maps"]),
                         **(row[list(maptypes.MAP_TYPES)] / row["maps"]).to_dict()})
    print(f"peak memory so far {notebook.peak_rss_mb():,.0f} MB")
    return {"proportions": pd.DataFrame(rows), "refit_seconds": refit_s,
            "glue_seconds": time.perf_counter() - t1}


ev = saved.step(run, "glue", glue_evidence,
                f"{chosen_clf} refits and GLUE map types, {len(seed_list)} seeds")
proportions_by_seed = ev["proportions"]
refit_seconds, glue_seconds = ev["refit_seconds"], ev["glue_seconds"]
print(f"refitted on all labels in {refit_seconds:.0f} s; GLUE maps classified by "
      f"{len(seed_list)} {chosen_clf} classifiers in {glue_seconds:.0f} s")
run.table(proportions_by_seed, "type_proportions_by_seed", key=["task", "seed"],
          tolerance={t: IGNORE for t in maptypes.MAP_TYPES},  # one draw each; see the summary
          caption=f"Share of each map type over all heads x examples per GLUE dev set and seed "
                  f"({chosen_clf} classifier)")
long = proportions_by_seed.melt(id_vars=["task", "seed"], value_vars=list(maptypes.MAP_TYPES),
                                var_name="type", value_name="share")
proportions = maptypes.summarise_seeds(long, ["task", "type"], ["share"])
run.table(proportions, "type_proportions", key=["task", "type"],
          tolerance={"share_mean": from_sd("share_sd", k=2, abs=0.02),
                     "share_min": from_sd("share_sd", k=3, abs=0.02),
                     "share_max": from_sd("share_sd", k=3, abs=0.02),
                     "share_sd": within(abs=0.02, rel=1.0)},
          caption=f"Share of each map type over all heads x examples per GLUE dev set "
                  f"({chosen_clf} classifier): mean, sd, min and max over seeds {seeds}")
lo, hi = papers.KOVALEVA_HETEROGENEOUS_RANGE["low"], papers.KOVALEVA_HETEROGENEOUS_RANGE["high"]
fig = maptype_plots.type_proportions_plot(
    proportions, maptypes.MAP_TYPES,
    paper_range={"type": "Heterogeneous", "low": lo[1], "high": hi[1],
                 "label": f"Kovaleva et al.\nHeterogeneous range\n{lo[1]:.0%} ({lo[0]}) to "
                          f"{hi[1]:.0%} ({hi[0]}),\nfine-tuned BERT-base"},
    title=f"Attention-map types per GLUE dev set, {lm.label} (pre-trained)\n"
          f"{chosen_clf} classifier, mean over {len(seed_list)} seeds (bars: min to max); "
          f"first {glue_max_examples or 'all'} dev examples per task")
run.figure(fig, "type_proportions")
maptypes.mean_sd_pivot(proportions, "task", "type", "share", percent=True)

# %% [markdown]
# ## Deviations from the papers, in plain words
#
# - **Model.** all-MiniLM-L6-v2 (6 layers x 12 heads, a sentence encoder distilled from a BERT)
#   instead of BERT-base (12 x 12); the `paper` profile runs bert-base-uncased.
# - **Pre-trained, not fine-tuned.** Kovaleva et al. labelled and classified maps of BERT
#   fine-tuned on each GLUE task (one model per task); here every task's maps come from the
#   same pre-trained model, so differences between tasks come from the inputs alone.
# - **What MDS embeds.** The square root of the summed JS divergence (a metric); the paper's
#   figure does not say. Pair ordering, and so the layer test's conclusion, is the same up to
#   the monotone transform.
# - **Control.** Every weight random (notebook 01's control), not Clark's "random init with
#   pretrained embeddings"; Clark's Figure 6 has no control.
# - **Labels.** 210 maps, one annotator, labelled from contact sheets (not blind to layer);
#   the paper's ~400 labels were not released. Block maps are nearly absent in this model, so
#   the Block type cannot be learned or evaluated.
# - **Classifier.** The CNN that classifies the GLUE maps (when it wins) has 4 conv layers,
#   not the paper's 8; the 8-conv one is scored beside it. The 4-conv setting was chosen on
#   seed 0's folds; the paper gives neither its CNN's training details nor its F1 average.
#   Scores and proportions are means over `seeds`, not one training run.
# - **Tasks.** MNLI and QQP are missing from the local GLUE bundle, and CoLA (excluded by
#   Kovaleva et al.) is included; the Heterogeneous range in the paper-vs-run table is taken
#   over the tasks both share. At most `glue_max_examples` examples per dev set (the paper: up
#   to 1,000).
#
# ## Recap
#
# Whether heads of one layer sit together (and whether random weights do the same, i.e.
# whether position in the network alone explains it), how faithful the 2-D picture is, how
# well map types can be recognised from one annotator's labels, and how the types are spread
# over the GLUE tasks. The conclusions about the classifiers and the proportions, generated
# from the per-seed tables (`maptypes.seed_comparison`, `maptypes.seed_extremes`), state an
# order only where every seed agrees:

# %%
shared_tasks = [t for t in proportions_by_seed["task"].unique() if t in papers.KOVALEVA_TASKS]
het_by_seed = proportions_by_seed.pivot(index="seed", columns="task", values="Heterogeneous")
findings = [
    maptypes.seed_comparison(macro_by_seed, "cnn_8conv", "cnn", what="macro-F1", names=clf_names),
    maptypes.seed_comparison(macro_by_seed, "cnn", "rules", what="macro-F1", names=clf_names),
    maptypes.seed_extremes(het_by_seed[shared_tasks],
                           what=f"Over {', '.join(shared_tasks)}, the Heterogeneous share "
                                f"({chosen_clf} classifier) is", percent=True),
]
display(Markdown("\n".join(f"- {f[0].upper()}{f[1:]}" for f in findings)))

# %% [markdown]
# What a rerun on another machine must reproduce exactly (counts and the data description;
# the trained and stochastic numbers are in the tables above, compared within tolerances):

# %%
# NBVAL_CHECK_OUTPUT
print(f"segments: {info['model']['n_examples']}, tokens: {info['model']['n_tokens']}, "
      f"heads: {len(heads)}, head pairs: {len(heads) * (len(heads) - 1) // 2}, "
      f"permutations: {n_perm}")
print("labelled maps per source and type:")
print(pd.crosstab(labels["source"], labels["label"]).to_string())
print(f"seeds: {seed_list}; folds: {n_folds}")
print(proportions_by_seed.groupby("task", sort=False)[["examples", "truncated", "maps"]]
      .first().to_string())

# %% [markdown]
# ## Paper vs. this run

# %%
m_sep = separation.set_index("model")
m_beh = behaviour_sep.set_index("model")
vert_share = float((labels["label"] == "Vertical").mean())
kov = papers.KOVALEVA_SECTION41
f1 = maptypes.mean_sd_pivot(scores, "classifier", "class", "f1")  # "mean ± sd" text
het = maptypes.mean_sd_pivot(proportions, "task", "type", "share", percent=True)["Heterogeneous"]
het_mean = proportions[proportions["type"] == "Heterogeneous"].set_index("task")["share_mean"]
lo_task, hi_task = het_mean[shared_tasks].idxmin(), het_mean[shared_tasks].idxmax()
comparison = pd.DataFrame([
    ["Clark S6", "same-layer heads closer than other-layer heads",
     papers.CLARK_FIGURE6["same_layer_closer"],
     f"ratio {m_sep.loc['model', 'ratio']:.3f}, {m_sep.loc['model', 'p']}"],
    ["Clark S6", "same, random-weights control", "not reported",
     f"ratio {m_sep.loc['control', 'ratio']:.3f}, {m_sep.loc['control', 'p']}"],
    ["Clark S6", "same-behaviour heads closer than other-behaviour heads",
     "several clear clusters of heads that behave similarly (Figure 6, qualitative)",
     f"ratio {m_beh.loc['model', 'ratio']:.3f}, {m_beh.loc['model', 'p']}"
     if m_beh.loc["model", "testable"] else m_beh.loc["model", "p"]],
    ["Clark S6", "Kruskal stress of the 2-D MDS (model / control)", "not reported",
     f"{m_sep.loc['model', 'stress']:.2f} / {m_sep.loc['control', 'stress']:.2f}"],
    ["Kovaleva 4.1", "maps classified", kov["maps_of"], f"pre-trained {lm.label}, all tasks"],
    ["Kovaleva 4.1", "hand-labelled maps", kov["labelled_maps"], f"{len(labels)} (one annotator)"],
    ["Kovaleva 4.1", "share of Vertical among labelled maps", kov["vertical_share"],
     f"{vert_share:.0%}"],
    ["Kovaleva 4.1", "classifier F1 (held-out, macro / weighted)", kov["classifier_f1"],
     "; ".join(f"{name} {f1.loc[k, 'macro avg']} / {f1.loc[k, 'weighted avg']}" for k, name in
               (("cnn_8conv", "8-conv CNN"), ("cnn", "4-conv CNN"), ("rules", "rules")))
     + f" (mean ± sd over {len(seed_list)} seeds)"],
    ["Kovaleva 4.1", "Heterogeneous share across tasks", kov["heterogeneous_share"],
     f"{het[lo_task]} ({lo_task}) to {het[hi_task]} ({hi_task}) over {', '.join(shared_tasks)}; "
     f"{chosen_clf} classifier, mean ± sd over {len(seed_list)} seeds"],
], columns=["section", "quantity", "paper", "this run"])
run.table(comparison, "paper_vs_run", key=["section", "quantity"],
          # the numbers in "this run" are compared in their own tables, within tolerances
          tolerance={"this run": IGNORE},
          caption=f"Paper vs. this run ({lm.label})")
print(f"cost of the seeds: cross-validation {cv_seconds:.0f} s, refits {refit_seconds:.0f} s, "
      f"GLUE classification {glue_seconds:.0f} s for {len(seed_list)} seeds")
_ = run.finish()
Markdown(comparison.to_markdown(index=False))

# %% [markdown]
# ## Verdicts
#
# Whether each claim held is decided in one place, the claims ledger, not by the tables above
# (they state numbers only). Each claim's criterion, reference and test are fixed in
# `analysis_utils/ledger/clark.py` before any number is read; the same rule runs on the
# random-weights control (`reference_value`), and p-values are Holm-corrected over this
# notebook's claims (`p_adjusted`). The ledger stage gathers every notebook's rows for both models
# into `results/08_claims.csv`; `untestable` says why in `note`.
#
# **The verdicts are not computed here.** This notebook measures; every claim is judged after
# the notebooks, in one stage of its own (`python -m analysis_utils ledger`, run by
# `make reproduce`), from the tables this notebook has just saved. Its rows for this notebook
# are in `results/05_verdicts.md` (the base model's in `results/base/05_verdicts.md`;
# both models together in `results/08_claims.csv`), and the book shows each claim on a page
# of its own, linked from this notebook's page. A change to a verdict rule re-runs that stage
# in minutes and never this notebook.
