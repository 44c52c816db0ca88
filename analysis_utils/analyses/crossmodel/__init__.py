"""Notebook 08: the same questions across models, read from each model's saved tables.

Nothing here touches a model or an attention map: every function reads the CSV tables that
notebooks 01-05 wrote into a *run folder* (``results/`` for the default profile,
``results/base/`` for the ``base`` profile, ...) and returns tidy pandas frames, one row per
model (and per layer, head, relation or claim), so that models of different depth can be put
side by side on one **relative-depth** axis: layer ``l`` (1-based) of an ``L``-layer model sits
at ``l / L`` (BERT-base's layer 7 of 12 at 0.58, MiniLM's layer 3 of 6 at 0.5).

A run folder names its model in its ``NN_provenance.json`` files (name, layers, heads,
tokenizer); a folder that does not exist, or lacks a table, is never dropped silently:
:func:`gaps` says which table is missing and which command produces it.

>>> runs = load_runs("results,results/base")                         # doctest: +SKIP
>>> positional_heads(runs)                                          # doctest: +SKIP

The paper's BERT-base numbers come from :mod:`analysis_utils.papers`, never from here.

Modules, each importing only those above it in this list; every public name is re-exported
here, so ``from analysis_utils.analyses import crossmodel as cm`` reaches them all:

- ``runs``: the run folders (:class:`RunFolder`, :func:`load_runs`), what each lacks
  (:func:`gaps`, :func:`usable`, :func:`availability`) and how their provenance differs;
  :data:`PAPER`, :data:`DASH`, :data:`ROLES`;
- ``depth``: the relative-depth axis and the paper's layers on it;
- ``surface``: notebook 01, the attention sink, previous / next-token heads, entropy;
- ``norms``: notebook 01's attention norms (Kobayashi et al. 2020);
- ``linguistic``: notebooks 02-04, the best syntax and coreference heads, probe UAS;
- ``clustering``: notebook 05, same-layer clustering and map-type shares;
- ``overview``: what draws on several of them: the heads' depths, the recap sentences.
"""

from .clustering import clustering_ratio, map_type_note, map_type_proportions, map_type_view
from .depth import layer_runs, paper_layers, paper_sep_band, relative_depth
from .linguistic import coref_best_heads, probe_training_note, probe_uas, syntax_best_heads
from .norms import NORM_TARGETS, discounted_layers, norm_findings, norms_by_layer
from .overview import head_depths, recap
from .runs import (
    COLUMNS,
    DASH,
    NEEDS,
    PAPER,
    ROLES,
    RunFolder,
    availability,
    differences,
    gaps,
    load_run,
    load_runs,
    profile_for,
    role_names,
    training_notes,
    usable,
)
from .surface import (
    entropy_by_layer,
    entropy_claims,
    paper_sink_notes,
    paper_sink_row,
    positional_heads,
    positional_summary,
    sink_by_layer,
    sink_summary,
)

__all__ = [
    # runs
    "PAPER", "DASH", "NEEDS", "COLUMNS", "ROLES", "RunFolder", "role_names", "profile_for",
    "load_run", "load_runs", "differences", "training_notes", "gaps", "usable", "availability",
    # depth
    "relative_depth", "paper_layers", "paper_sep_band", "layer_runs",
    # surface
    "sink_by_layer", "paper_sink_notes", "paper_sink_row", "sink_summary", "positional_heads",
    "positional_summary", "entropy_by_layer", "entropy_claims",
    # norms
    "NORM_TARGETS", "norms_by_layer", "discounted_layers", "norm_findings",
    # linguistic
    "syntax_best_heads", "coref_best_heads", "probe_uas", "probe_training_note",
    # clustering
    "clustering_ratio", "map_type_proportions", "map_type_view", "map_type_note",
    # overview
    "head_depths", "recap",
]
