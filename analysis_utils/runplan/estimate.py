"""An estimate of what a profile's run plan costs, from floating-point operations (FLOPs): per
unit, on this CPU at the rate measured on the cache's own units, and on 1 or N GPUs at an
assumed throughput. Nothing here runs a model; nothing here was measured on a GPU.

**Work per unit** (:func:`plan_costs`), counted from the plan (:mod:`.units`) and the data, each
example at its own length in word pieces (the model's tokenizer, truncated to the plan's
``max_tokens``; padding is not counted: the Trainer's train and dev batches are grouped by
length, the final dev scoring and the study's batches sorted by length):

- a fine-tune: ``3 x epochs`` forward passes over its train examples (forward + backward,
  :data:`TRAIN_FACTOR`) and ``epochs + 1`` forward passes over its dev examples (scored after
  every epoch, then once more at the end);
- a study (notebook 07's measurements of one fine-tuned model): per disabling mode, the fast
  sweep of :func:`~analysis_utils.analyses.disabling.evaluate_changes` over the dev set (one
  plain pass, then each of the ``L x H`` heads and ``L`` layers run from its own layer up:
  :func:`sweep_layer_passes`); Michel et al.'s head importance, ``2`` forward passes per
  importance example (the backward pass reaches the attention maps and gates, no weight
  gradient: :data:`IMPORTANCE_FACTOR`); the pruning curves, one full forward pass per distinct
  set of heads removed (:func:`curve_passes`; counting the pass from layer 0 up is an upper
  bound: a set with no head in the lowest layers would start higher).

**Cost per sequence** (:func:`forward_flops`): a forward pass of one sequence of ``n`` pieces
through a BERT-family classifier with ``L`` layers, hidden size ``d``, feed-forward size ``f``
and ``C`` outputs costs

    F(n) = L * (2 n P + 4 n^2 d) + 2 (d^2 + d + d C + C),   P = 4 d^2 + 2 d f + 9 d + f

``P`` is the parameter count of one encoder layer (query, key, value and output maps with
their biases, the two feed-forward maps with theirs, two LayerNorms): each parameter is one
multiply-add per token (2 FLOPs; the usual ``2 N`` of Kaplan et al. 2020, Table 1, with ``N``
the non-embedding parameters). ``4 n^2 d`` is the attention itself (scores ``Q K^T`` and the
weighted sum of values, ``2 n^2 d`` each over all heads). The last term is the pooler and the
classifier on the first token. Embedding look-ups, softmax, GELU, LayerNorm arithmetic and the
optimiser step are left out (each well under 1% here). bert-base-uncased: ``P`` = 7,087,872,
``L P`` = 85.1 M; all-MiniLM-L6-v2: ``P`` = 1,774,464, ``L P`` = 10.6 M.

**Rate on this CPU** (:func:`measured_units`, :func:`fit_rate`): seconds per FLOP of every
complete unit the cache records (``finetune/*/result.json``: ``train_seconds``;
``disabling/*/result.json``: each study part's ``seconds``), its FLOPs counted as above from
the examples its key names (re-read and checked against the key's sha256; a record whose
examples cannot be rebuilt falls back to its recorded mean length). Reported as the median
with quartiles and extremes, per kind (fine-tune, study part): the records come from a
2-core machine shared with other jobs, so the spread is part of the result.

**On GPUs** (:func:`gpu_makespan`): a unit takes ``overhead + FLOPs / (T x share)`` seconds,
``T`` the sustained FLOP/s of one GPU (:data:`GPU_THROUGHPUT`, an assumption, see there),
``share`` the GPU the unit asks for (fine-tunes 0.5, two per GPU; studies 0.25, four per GPU:
``T`` is what the GPU delivers to the units sharing it, split between them); the units of a
wave are placed by greedy list scheduling, longest first (:func:`list_schedule`), on
``GPUs / share`` slots; the study wave starts when every fine-tune is done, as ``plan run``
runs them.

Example::

    >>> shape = Shape(layers=12, hidden=768, intermediate=3072, heads=12)
    >>> round(forward_flops(shape, [128]) / 1e9, 1)          # one 128-piece sequence, GFLOPs
    22.4
    >>> list_schedule([4, 3, 3, 2], slots=2)
    6.0
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import paths

__all__ = ["TRAIN_FACTOR", "IMPORTANCE_FACTOR", "H100_FP32_PEAK", "GPU_THROUGHPUT",
           "UNIT_OVERHEAD_S", "MIN_FIT_FLOPS", "Shape", "layer_flops", "head_flops", "forward_flops",
           "finetune_flops", "sweep_layer_passes", "sweep_flops", "curve_passes",
           "curve_flops", "importance_flops", "study_flops", "Rate", "fit_rate",
           "ModelInfo", "model_info", "sequence_lengths", "Examples", "Measured", "measured_units",
           "fit_rates", "UnitCost", "plan_costs", "list_schedule", "gpu_makespan",
           "cpu_seconds", "notebook_remainder", "read_provenance"]

#: A training step costs about three forward passes: the backward pass computes the gradient
#: of both the activations and the weights, each about as much as the forward pass.
TRAIN_FACTOR = 3.0
#: Head importance: a forward pass and a backward pass to the attention maps and head gates
#: only (``torch.autograd.grad`` on them: no weight gradient is computed).
IMPORTANCE_FACTOR = 2.0
#: NVIDIA H100 SXM5, FP32 (CUDA cores, no tensor cores), peak FLOP/s: 66.9 T (NVIDIA's H100
#: specifications; 51 T for the PCIe card). The package trains in float32 and PyTorch leaves
#: TF32 off for matrix products by default, so this, not the tensor-core figure, is the ceiling.
H100_FP32_PEAK = 66.9e12
#: Assumed sustained FP32 FLOP/s of one H100 on these units (eager attention, batches of 32
#: sequences of ~25-130 pieces, two to four units sharing the GPU): ``default`` 20 T (30% of
#: :data:`H100_FP32_PEAK`), ``low`` 10 T (15%: launch-bound small batches, or the PCIe card),
#: ``high`` 40 T (60%). An assumption, not a measurement: no GPU was available here.
GPU_THROUGHPUT: dict[str, float] = {"low": 10e12, "default": 20e12, "high": 40e12}
#: Assumed fixed seconds per unit on a GPU node besides its FLOPs: load the model, tokenise,
#: write a checkpoint per epoch (BERT-base weights and optimiser state, ~1.3 GB) and the final
#: weights (fine-tunes); load the fine-tuned model and tokenise (studies).
UNIT_OVERHEAD_S: dict[str, float] = {"finetune": 45.0, "study": 20.0}


# --- the cost of one pass ------------------------------------------------------------------


def feed_forward_size(config) -> int:
    """The feed-forward (intermediate) size of a model with ``config``: ``intermediate_size``
    where the config has it, else read from the model itself, built on the meta device (no
    weights, no memory): the one width that a linear map from the hidden size widens to
    (DistilBERT calls it ``hidden_dim``; no family-only name is read)."""
    size = getattr(config, "intermediate_size", None)
    if size is not None:
        return int(size)
    import torch
    from torch import nn
    from transformers import AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(config)
    d = int(config.hidden_size)
    widths = {m.out_features for m in model.modules()
              if isinstance(m, nn.Linear) and m.in_features == d and m.out_features != d}
    if len(widths) != 1:
        raise ValueError(f"{type(model).__name__}: cannot tell its feed-forward size (linear "
                         f"maps from hidden size {d} widen to {sorted(widths) or 'nothing'})")
    return widths.pop()


@dataclass(frozen=True)
class Shape:
    """What the FLOP count needs of a BERT-family encoder: ``layers``, ``hidden`` size,
    feed-forward ``intermediate`` size, attention ``heads``."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    name: str = ""

    @classmethod
    def from_config(cls, config, name: str = "") -> Shape:
        """From a ``transformers`` config: ``num_hidden_layers``, ``hidden_size`` and
        ``num_attention_heads`` (the names ``AutoConfig`` gives every family) and the
        feed-forward size (:func:`feed_forward_size`)."""
        return cls(int(config.num_hidden_layers), int(config.hidden_size),
                   feed_forward_size(config), int(config.num_attention_heads), name)


    @property
    def layer_params(self) -> int:
        """Parameters of one encoder layer: ``4 d^2 + 4 d`` (query, key, value, output maps),
        ``2 d f + f + d`` (feed-forward), ``4 d`` (two LayerNorms)."""
        d, f = self.hidden, self.intermediate
        return 4 * d * d + 2 * d * f + 9 * d + f

    @property
    def non_embedding_params(self) -> int:
        """Parameters of the encoder's layers (no embeddings, pooler or classifier)."""
        return self.layers * self.layer_params

    def head_params(self, num_labels: int) -> int:
        """Pooler (``d^2 + d``) and classifier (``d C + C``) parameters."""
        d = self.hidden
        return d * d + d + d * num_labels + num_labels


def _lengths(lengths) -> np.ndarray:
    return np.asarray(lengths, dtype=np.float64).reshape(-1)


def layer_flops(shape: Shape, lengths) -> float:
    """FLOPs of one encoder layer's forward pass over sequences of ``lengths`` pieces:
    ``sum(2 n P + 4 n^2 d)``."""
    n = _lengths(lengths)
    return float(2 * shape.layer_params * n.sum() + 4 * shape.hidden * (n * n).sum())


def head_flops(shape: Shape, num_labels: int, passes: int) -> float:
    """FLOPs of ``passes`` runs of the pooler and classifier (one token each)."""
    return float(2 * shape.head_params(num_labels) * passes)


def forward_flops(shape: Shape, lengths, num_labels: int = 2) -> float:
    """FLOPs of one forward pass of the classifier over sequences of ``lengths`` pieces
    (module docstring: ``sum F(n)``)."""
    return shape.layers * layer_flops(shape, lengths) + head_flops(
        shape, num_labels, len(_lengths(lengths)))


def finetune_flops(shape: Shape, train_lengths, dev_lengths, *, epochs: int,
                   num_labels: int = 2, dev_passes: int | None = None) -> dict[str, float]:
    """``{"train": ..., "dev": ...}`` FLOPs of one fine-tune: :data:`TRAIN_FACTOR` x
    ``epochs`` forward passes over the train examples, ``dev_passes`` (default ``epochs + 1``:
    after each epoch and at the end) over the dev examples."""
    passes = epochs + 1 if dev_passes is None else dev_passes
    return {"train": TRAIN_FACTOR * epochs * forward_flops(shape, train_lengths, num_labels),
            "dev": passes * forward_flops(shape, dev_lengths, num_labels)}


def sweep_layer_passes(layers: int, heads: int) -> int:
    """Encoder-layer passes per example of one fast disabling sweep: the plain pass (``L``),
    then each of the ``L x H`` single heads and ``L`` whole layers from its own layer up
    (layer ``l``, 0-based, costs ``L - l``): ``L + (H + 1) L (L + 1) / 2``. (Without the fast
    path, ``fast=False``: ``L (1 + L H + L)``.)"""
    return layers + (heads + 1) * layers * (layers + 1) // 2


def sweep_flops(shape: Shape, dev_lengths, num_labels: int = 2) -> float:
    """FLOPs of one disabling sweep (one mode) over the dev examples: the layer passes of
    :func:`sweep_layer_passes`, and the classifier head once per pass (``1 + L H + L``)."""
    n_dev = len(_lengths(dev_lengths))
    changes = 1 + shape.layers * shape.heads + shape.layers
    return (sweep_layer_passes(shape.layers, shape.heads) * layer_flops(shape, dev_lengths)
            + head_flops(shape, num_labels, changes * n_dev))


def curve_passes(n_heads: int, step: float, n_random: int, importance: bool = True) -> int:
    """Full forward passes of the pruning curves: one plain pass, then each distinct set of
    heads removed (every order, importance and ``n_random`` random, at each step strictly
    between none and all; all heads removed is one set, whatever the order)."""
    from ..analyses.disabling import pruning_steps

    steps = pruning_steps(n_heads, step)
    orders = n_random + (1 if importance else 0)
    middle = [k for k in steps if 0 < k < n_heads]
    return 1 + orders * len(middle) + (1 if orders and n_heads in steps else 0)


def curve_flops(shape: Shape, dev_lengths, *, step: float, n_random: int,
                num_labels: int = 2) -> float:
    """FLOPs of the pruning curves over the dev examples (:func:`curve_passes` forward
    passes, each from layer 0 up: an upper bound)."""
    passes = curve_passes(shape.layers * shape.heads, step, n_random)
    return passes * forward_flops(shape, dev_lengths, num_labels)


def importance_flops(shape: Shape, lengths, num_labels: int = 2) -> float:
    """FLOPs of Michel et al.'s head importance over ``lengths``: :data:`IMPORTANCE_FACTOR`
    forward passes."""
    return IMPORTANCE_FACTOR * forward_flops(shape, lengths, num_labels)


def study_flops(shape: Shape, settings, dev_lengths, importance_lengths,
                num_labels: int = 2) -> dict[str, float]:
    """``{part: FLOPs}`` of a study with ``settings``
    (:class:`~analysis_utils.analyses.disabling_study.StudySettings`), parts named as the
    study's cache entries: ``sweep-<mode>`` per mode, ``importance``, ``curves`` when asked."""
    out = {f"sweep-{m}": sweep_flops(shape, dev_lengths, num_labels) for m in settings.modes}
    out["importance"] = importance_flops(shape, importance_lengths, num_labels)
    if settings.curves:
        out["curves"] = curve_flops(shape, dev_lengths, step=settings.prune_step,
                                    n_random=settings.n_random_orders, num_labels=num_labels)
    return out


# --- the rate measured here ----------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """Seconds per FLOP over ``n`` recorded units: ``median``, quartiles ``q1`` / ``q3``,
    extremes ``low`` / ``high`` (of the per-unit ratios) and ``pooled`` (total seconds / total
    FLOPs, which the largest units dominate)."""

    median: float
    q1: float
    q3: float
    low: float
    high: float
    pooled: float
    n: int

    @property
    def flops_per_second(self) -> float:
        return 1.0 / self.median


def fit_rate(samples: Sequence[tuple[float, float]]) -> Rate:
    """The :class:`Rate` of ``(seconds, FLOPs)`` samples (ValueError when there is none)."""
    good = [(s, f) for s, f in samples if f > 0 and s > 0]
    if not good:
        raise ValueError("no recorded unit to learn a rate from")
    ratios = np.array([s / f for s, f in good])
    q1, med, q3 = np.percentile(ratios, [25, 50, 75])
    return Rate(median=float(med), q1=float(q1), q3=float(q3), low=float(ratios.min()),
                high=float(ratios.max()),
                pooled=sum(s for s, _ in good) / sum(f for _, f in good), n=len(good))


@dataclass(frozen=True)
class ModelInfo:
    """A model's :class:`Shape`, its tokenizer and where both came from (``source``)."""

    name: str
    shape: Shape
    tokenizer: object
    source: str


#: Models whose shape is known without their files: bert-base-uncased is ``BertConfig()``'s
#: defaults, with the uncased 30,522-piece vocabulary all-MiniLM-L6-v2 ships
#: (:func:`~analysis_utils.engine.models.save_bert_base_shape` builds the same).
_KNOWN_SHAPES = {"bert-base-uncased": (12, 768, 3072, 12),
                 "google-bert/bert-base-uncased": (12, 768, 3072, 12)}


@lru_cache(maxsize=8)
def model_info(model: str) -> ModelInfo:
    """Shape and tokenizer of ``model`` (a plan's model name: ``minilm``, a folder, a hub id)
    from its local files (never downloaded); for bert-base-uncased without local files, its
    known shape and the packaged uncased tokenizer."""
    from transformers import AutoConfig, AutoTokenizer

    from ..engine.models import minilm_path, quiet_loading, resolve_source

    name, source = resolve_source(model)
    with quiet_loading(True):
        try:
            config = AutoConfig.from_pretrained(source, local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
            return ModelInfo(name, Shape.from_config(config, name), tokenizer,
                             "its own config and tokenizer")
        except (OSError, ValueError):
            known = _KNOWN_SHAPES.get(name.lower())
            if known is None:
                raise
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    return ModelInfo(name, Shape(*known, name=name), tokenizer,
                     "BertConfig() defaults and the packaged uncased tokenizer (not downloaded)")


def sequence_lengths(examples, tokenizer, max_tokens: int) -> np.ndarray:
    """Pieces per example as the models see them (``[CLS] a [SEP] b [SEP]``, truncated to
    ``max_tokens``: :func:`~analysis_utils.data.glue.encode`'s lengths)."""
    examples = list(examples)
    out = np.zeros(len(examples), dtype=np.int64)
    singles = [i for i, ex in enumerate(examples) if ex.text_b is None]
    pairs = [i for i, ex in enumerate(examples) if ex.text_b is not None]
    if singles:
        enc = tokenizer([examples[i].text_a for i in singles], truncation=False,
                        verbose=False)["input_ids"]
        out[singles] = [len(x) for x in enc]
    if pairs:
        enc = tokenizer([examples[i].text_a for i in pairs], [examples[i].text_b for i in pairs],
                        truncation=False, verbose=False)["input_ids"]
        out[pairs] = [len(x) for x in enc]
    return np.minimum(out, max_tokens)


class Examples:
    """GLUE splits read once from ``data_dir`` (default ``$BERTOLOGY_DATA_DIR``), and the
    lengths of a selection of examples tokenised once per tokenizer."""

    def __init__(self, data_dir=None):
        self.data_dir = data_dir
        self._splits: dict = {}
        self._lengths: dict = {}

    def split(self, task: str, split: str) -> list:
        from ..training.glue_data import read_task

        if (task, split) not in self._splits:
            self._splits[(task, split)] = read_task(task, split, self.data_dir)
        return self._splits[(task, split)]

    def select(self, task: str, split: str, first: int | None = None,
               subset: int | None = None, seed: int = 0) -> list:
        """The first ``first`` rows, or a seeded ``subset`` (``glue_data.subsample``)."""
        from ..training.glue_data import subsample

        rows = self.split(task, split)
        if first:
            return rows[:first]
        return subsample(rows, subset, seed)[0]

    def lengths(self, examples, tokenizer, max_tokens: int) -> np.ndarray:
        from ..training.glue_data import examples_digest

        key = (getattr(tokenizer, "name_or_path", id(tokenizer)), max_tokens,
               examples_digest(examples))
        if key not in self._lengths:
            self._lengths[key] = sequence_lengths(examples, tokenizer, max_tokens)
        return self._lengths[key]


def _num_labels(task: str) -> int:
    from ..training.glue_data import task_spec

    return task_spec(task).num_labels


@dataclass(frozen=True)
class Measured:
    """One recorded unit of the cache: ``kind`` (``finetune`` / ``study``), ``part`` (a
    study part, ``""`` for a fine-tune), ``task``, ``model``, ``device`` kind (``cpu`` /
    ``cuda`` / ``unknown``), ``seconds``, ``flops`` and ``exact`` (False: lengths from the
    record's mean, its examples could not be rebuilt)."""

    kind: str
    part: str
    task: str
    model: str
    device: str
    seconds: float
    flops: float
    exact: bool


def _checked(data: Examples, rows_of: Callable[[], list], sha: str | None):
    """``rows_of()`` when its digest is ``sha`` (else None: the record's examples differ)."""
    from ..training.glue_data import examples_digest

    try:
        rows = rows_of()
    except Exception:  # noqa: BLE001 - a missing or changed data file: not rebuilt
        return None
    return rows if sha is not None and examples_digest(rows) == sha else None


def _finetune_measured(rec: dict, data: Examples, info_of) -> Measured:
    ki = rec["key_inputs"]
    task, st = ki["task"], ki["settings"]
    info = info_of(ki["model"]["name"])
    tr, dv = ki["train"], ki["dev"]
    train = _checked(data, lambda: data.select(task, "train", subset=tr.get("max_n"),
                                               seed=tr.get("subset_seed") or 0), tr["sha256"])
    dev = _checked(data, lambda: data.select(task, "dev", first=dv.get("max_n")), dv["sha256"])
    exact = train is not None and dev is not None
    if exact:
        train_len = data.lengths(train, info.tokenizer, st["max_length"])
        dev_len = data.lengths(dev, info.tokenizer, st["max_length"])
    else:
        train_len = np.full(tr["n"], rec["train_encoding"]["mean_length"])
        dev_len = np.full(dv["n"], rec["dev_encoding"]["mean_length"])
    passes = st["epochs"] * bool(st.get("eval_each_epoch", True)) + 1
    flops = sum(finetune_flops(info.shape, train_len, dev_len, epochs=st["epochs"],
                               num_labels=_num_labels(task), dev_passes=passes).values())
    return Measured("finetune", "", task, info.name, str(rec["device"]).split(":")[0],
                    float(rec["train_seconds"]), flops, exact)


def _study_measured(rec: dict, finetuned: dict | None, data: Examples, info_of) -> Measured:
    ki = rec["key_inputs"]
    task, part = ki["task"], ki["part"]
    if finetuned is None:
        raise KeyError(f"no fine-tuning record for {ki['finetuned']}")
    info = info_of(finetuned["key_inputs"]["model"]["name"])
    device = str(finetuned.get("device", "unknown")).split(":")[0]
    shape, labels, max_tokens = info.shape, _num_labels(task), ki["max_tokens"]
    if part == "importance":
        ex = ki["examples"]
        rows = _checked(data, lambda: data.select(task, "train", subset=ex["n"], seed=0),
                        ex["sha256"]) if ki.get("split") == "train" else \
            _checked(data, lambda: data.select(task, "dev", first=ex["n"]), ex["sha256"])
        if rows is None:  # another seed or split: the split's own mean length stands in
            whole = data.lengths(data.split(task, ki.get("split", "train")), info.tokenizer,
                                 max_tokens)
            lengths = np.full(ex["n"], whole.mean())
        else:
            lengths = data.lengths(rows, info.tokenizer, max_tokens)
        flops = importance_flops(shape, lengths, labels)
    else:
        dv = ki["dev"]
        rows = _checked(data, lambda: data.select(task, "dev", first=dv["n"]), dv["sha256"])
        if rows is None:
            rows = _checked(data, lambda: data.split(task, "dev"), dv["sha256"])
        lengths = (data.lengths(rows, info.tokenizer, max_tokens) if rows is not None
                   else np.full(dv["n"], data.lengths(data.split(task, "dev"), info.tokenizer,
                                                      max_tokens).mean()))
        if part == "sweep":
            flops = sweep_flops(shape, lengths, labels)
        elif part == "curves":
            flops = curve_flops(shape, lengths, step=ki["prune_step"],
                                n_random=ki["n_random_orders"], num_labels=labels)
        else:
            raise KeyError(f"unknown study part {part!r}")
    name = part + (f"-{ki['mode']}" if part == "sweep" else "")
    return Measured("study", name, task, info.name, device, float(rec["seconds"]), flops,
                    rows is not None)


def measured_units(cache_dir: str | os.PathLike | None = None,
                   data_dir: str | os.PathLike | None = None,
                   info_of: Callable[[str], ModelInfo] | None = None) -> list[Measured]:
    """Every complete fine-tune and study part the cache records, with its FLOPs (module
    docstring), in path order; an entry that cannot be read or counted is left out.
    ``info_of``: model name -> :class:`ModelInfo` (default :func:`model_info`)."""
    from ..analyses.disabling_study import SUBDIR
    from ..training.finetune_cache import CACHE_SUBDIR

    info_of = info_of or model_info
    root = paths.cache_dir(cache_dir)
    data = Examples(data_dir)
    finetuned: dict[str, dict] = {}
    out = []
    for result in sorted((root / CACHE_SUBDIR).glob("*/result.json")):
        try:
            rec = json.loads(result.read_text())
            if rec["key"] != result.parent.name:
                continue  # a folder being written (<key>.tmp-<pid>), not an entry
            finetuned[rec["key"]] = rec
            out.append(_finetune_measured(rec, data, info_of))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged or foreign entry says nothing about rates
    for result in sorted((root / SUBDIR).glob("*/result.json")):
        try:
            rec = json.loads(result.read_text())
            if rec["key"] != result.parent.name:
                continue
            out.append(_study_measured(rec, finetuned.get(rec["key_inputs"]["finetuned"]),
                                       data, info_of))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


#: Recorded units below this many FLOPs are not fitted: the smoke profile's fine-tunes (64
#: examples, one epoch: 0.2-0.3 TFLOP) spend most of their seconds loading and tokenising.
MIN_FIT_FLOPS = 1e12


def fit_rates(measured: Sequence[Measured], device: str = "cpu",
              min_flops: float = MIN_FIT_FLOPS) -> dict[str, Rate]:
    """``{"finetune": Rate, "study": Rate, "all": Rate}`` over the ``device`` records of at
    least ``min_flops`` FLOPs (a kind without such records is left out)."""
    mine = [m for m in measured if m.device == device and m.flops >= min_flops]
    out = {}
    for kind in ("finetune", "study"):
        samples = [(m.seconds, m.flops) for m in mine if m.kind == kind]
        if samples:
            out[kind] = fit_rate(samples)
    if mine:
        out["all"] = fit_rate([(m.seconds, m.flops) for m in mine])
    return out


# --- the plan's units ----------------------------------------------------------------------


@dataclass(frozen=True)
class UnitCost:
    """One unit of a plan with its work: ``label``, ``kind`` (``finetune`` / ``study``),
    ``task``, ``flops`` (total), ``parts`` ``{name: FLOPs}``, ``gpu_share`` and ``examples``
    ``{split: (examples, mean pieces)}``."""

    label: str
    kind: str
    task: str
    flops: float
    parts: dict = field(default_factory=dict)
    gpu_share: float = 1.0
    examples: dict = field(default_factory=dict)


def _described(lengths: np.ndarray) -> tuple[int, float]:
    return len(lengths), float(lengths.mean()) if len(lengths) else 0.0


def plan_costs(profile: str = "default", extra: dict | None = None,
               data_dir: str | os.PathLike | None = None,
               data: Examples | None = None) -> list[UnitCost]:
    """The FLOPs of every unit of ``profile``'s plan (:func:`.units.build`, then
    :func:`.units.build_studies`, in that order), counted from the examples each reads."""
    from . import units

    data = data or Examples(data_dir)
    out = []
    for u in units.build(profile, extra, data_dir):
        info, task, st = model_info(u.model), u.run.task, u.settings
        train = data.select(task, "train", subset=u.run.max_train, seed=u.subset_seed)
        dev = data.select(task, "dev", first=u.max_dev or None)
        train_len = data.lengths(train, info.tokenizer, st.max_length)
        dev_len = data.lengths(dev, info.tokenizer, st.max_length)
        parts = finetune_flops(info.shape, train_len, dev_len, epochs=st.epochs,
                               num_labels=_num_labels(task),
                               dev_passes=st.epochs * st.eval_each_epoch + 1)
        out.append(UnitCost(u.label, "finetune", task, sum(parts.values()), parts,
                            u.gpu_share, {"train": _described(train_len),
                                          "dev": _described(dev_len)}))
    for s in units.build_studies(profile, extra, data_dir):
        f, st = s.finetune, s.settings
        info, task = model_info(f.model), f.run.task
        dev = data.select(task, "dev", first=st.max_dev or None)
        imp = dev if st.importance_split == "dev" else data.select(
            task, "train", subset=st.importance_examples or None, seed=st.importance_seed)
        dev_len = data.lengths(dev, info.tokenizer, st.max_tokens)
        imp_len = data.lengths(imp, info.tokenizer, st.max_tokens)
        parts = study_flops(info.shape, st, dev_len, imp_len, _num_labels(task))
        out.append(UnitCost(s.label, "study", task, sum(parts.values()), parts, s.gpu_share,
                            {"dev": _described(dev_len), "importance": _described(imp_len)}))
    return out


# --- from FLOPs to time --------------------------------------------------------------------


def list_schedule(durations: Sequence[float], slots: int, order: str = "longest") -> float:
    """Makespan of greedy list scheduling of ``durations`` on ``slots`` identical slots: each
    job, in turn, starts on the slot that frees first. ``order``: ``longest`` first (LPT) or
    ``given`` (as listed, as ``plan run`` submits them)."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    if order not in ("longest", "given"):
        raise ValueError(f"order must be 'longest' or 'given', got {order!r}")
    jobs = sorted(durations, reverse=True) if order == "longest" else list(durations)
    free = [0.0] * slots
    for d in jobs:
        heapq.heappush(free, heapq.heappop(free) + float(d))
    return max(free)


def gpu_makespan(costs: Sequence[UnitCost], gpus: int, throughput: float,
                 overhead: dict[str, float] | None = None, order: str = "longest",
                 share: float | None = None) -> dict[str, float]:
    """``{"finetune": s, "study": s, "total": s}``: the wall time of each wave on ``gpus``
    GPUs of ``throughput`` FLOP/s (module docstring), the study wave after the fine-tunes.
    ``overhead``: fixed seconds per unit by kind (default :data:`UNIT_OVERHEAD_S`);
    ``share``: the GPUs every unit asks for instead of its own (``plan run --gpus-per-unit``);
    ``order``: :func:`list_schedule`'s."""
    overhead = UNIT_OVERHEAD_S if overhead is None else overhead
    out = {}
    for kind in ("finetune", "study"):
        wave = [c for c in costs if c.kind == kind]
        shares = {c.gpu_share if share is None else share for c in wave}
        if len(shares) > 1:
            raise ValueError(f"{kind} units ask for different GPU shares {sorted(shares)}")
        if not wave:
            out[kind] = 0.0
            continue
        unit_share = shares.pop()
        slots = max(1, int(gpus / unit_share + 1e-9))  # how many fit, as Ray packs them
        speed = throughput * min(unit_share, 1.0)  # a unit runs on one GPU at most
        durations = [overhead.get(kind, 0.0) + c.flops / speed for c in wave]
        out[kind] = list_schedule(durations, slots, order)
    out["total"] = out["finetune"] + out["study"]
    return out


def cpu_seconds(costs: Sequence[UnitCost], rates: dict[str, Rate],
                which: str = "median") -> float:
    """Seconds on this CPU, one unit after the other: each unit's FLOPs x the rate of its kind
    (``which``: a :class:`Rate` field, ``median``, ``q1``, ``low``...; a kind without records
    takes the ``all`` rate)."""
    total = 0.0
    for c in costs:
        rate = rates.get(c.kind) or rates["all"]
        total += c.flops * getattr(rate, which)
    return total


def notebook_remainder(provenance: dict[str, dict], unit_seconds: dict[str, float]
                       ) -> dict[str, dict[str, float]]:
    """The notebooks' own time outside the plan's units: per notebook ``{"wall": recorded wall
    time, "units": the seconds of that run's units it computed itself, "rest": wall - units
    (0 at least)}``. ``provenance``: ``{notebook: its NN_provenance.json}``; ``unit_seconds``:
    ``{notebook: estimated seconds}``."""
    out = {}
    for nb, prov in sorted(provenance.items()):
        wall = float(prov["wall_time_s"])
        units_s = float(unit_seconds.get(nb, 0.0))
        out[nb] = {"wall": wall, "units": units_s, "rest": max(0.0, wall - units_s)}
    return out


def read_provenance(results_dir: str | os.PathLike, notebooks: Sequence[str]
                    ) -> dict[str, dict]:
    """``{notebook: provenance}`` of the committed run in ``results_dir`` (missing ones left
    out)."""
    out = {}
    for nb in notebooks:
        path = Path(results_dir) / f"{nb}_provenance.json"
        if path.is_file():
            out[nb] = json.loads(path.read_text())
    return out
