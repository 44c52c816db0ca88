"""Notebook parameters: read a notebook's ``parameters`` cell and check overrides against it.

Every override, from a profile (:mod:`analysis_utils.profiles`) or from ``-p name=value`` on the
command line, is checked before the driver touches any file:

- the **name** must be a parameter of the notebook (else an error with a "did you mean");
- the **type** follows the literal in the parameters cell (``max_sentences = 0`` -> an integer;
  an integer is accepted where the default is a float);
- the **value** must satisfy the rule declared for that name in :data:`CONSTRAINTS`, the one
  table of ranges and choices (a parameter means the same thing in every notebook that has it),
  and the pairs in :data:`ORDERED` must stay ordered.

>>> check_value("min_count", -5, 100)
Traceback (most recent call last):
...
analysis_utils.params.ParameterError: min_count=-5: expected an integer >= 0
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path


class ParameterError(ValueError):
    """An override that a notebook cannot take; the message says which and what is expected."""


@dataclass(frozen=True)
class Range:
    """A number in ``[lo, hi]`` (``lo_open``: strictly above ``lo``); ``None``: unbounded."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False

    def ok(self, value) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        if isinstance(value, float) and math.isnan(value):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return self.hi is None or value <= self.hi

    def __str__(self) -> str:
        lo, hi = _num(self.lo), _num(self.hi)
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{lo}, {hi}]"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {lo}"
        return f"<= {hi}" if self.hi is not None else "any number"


def _num(x) -> str:
    return str(x) if x is None or isinstance(x, int) else f"{x:g}"


@dataclass(frozen=True)
class Matches:
    """A string matching ``regex`` in full; ``expected`` says in words what that is."""

    regex: str
    expected: str

    def ok(self, value) -> bool:
        return isinstance(value, str) and re.fullmatch(self.regex, value) is not None

    def __str__(self) -> str:
        return self.expected


@dataclass(frozen=True)
class SeedList:
    """A comma-separated list of at least ``min_count`` distinct integer seeds in
    ``[0, 2**32)`` (numpy seeds are 32-bit), e.g. ``"0,1,2,3,4"``."""

    min_count: int = 2

    def ok(self, value) -> bool:
        if not isinstance(value, str) or not re.fullmatch(r"\d+(?:,\d+)*", value):
            return False
        seeds = [int(x) for x in value.split(",")]
        return (len(seeds) >= self.min_count and len(set(seeds)) == len(seeds)
                and all(x < 2**32 for x in seeds))

    def __str__(self) -> str:
        return (f"at least {self.min_count} distinct seeds in [0, 4294967295], "
                "comma-separated, e.g. '0,1,2,3,4'")


def one_of(*options: str) -> Matches:
    return Matches("|".join(re.escape(o) for o in options),
                   "one of " + ", ".join(repr(o) for o in options))


def list_of(*options: str) -> Matches:
    """A comma-separated list of ``options`` (e.g. ``"dev,test"``)."""
    item = "(?:" + "|".join(re.escape(o) for o in options) + ")"
    return Matches(f"{item}(?:,{item})*",
                   "a comma-separated list of " + ", ".join(repr(o) for o in options))


# GLUE task names as data.glue_metrics.TASKS spells them (not imported here: the driver
# checks parameters before loading scikit-learn; tests/test_params.py checks they agree).
GLUE_TASKS = ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI", "CoLA", "WNLI")
_TASK = "(?:" + "|".join(re.escape(t) for t in GLUE_TASKS) + ")"
_TASK_LIST = Matches(f"{_TASK}(?:,{_TASK})*",
                     "a comma-separated list of GLUE tasks, e.g. 'MRPC,RTE'")
_HEAD = r"[1-9]\d*-[1-9]\d*"  # a 1-based "layer-head" label, as the papers print it

COUNT = Range(0)  # 0 is meaningful: "all" or "none", as the parameters cell says
POSITIVE = Range(1)
SHARE = Range(0, 1)
POINTS = Range(0, 100)  # percentage points
_UNIT = r"(?:0(?:\.\d*)?|1(?:\.0*)?|\.\d+)"  # a decimal in [0, 1]

# One rule per parameter name, for every notebook that has that name. A test checks that every
# numeric parameter of every notebook has a rule and that every default satisfies its rule.
CONSTRAINTS: dict[str, Range | Matches | SeedList] = {
    # shared by several notebooks
    "model": Matches(r"\S+", "a model name, local folder or hub id (not empty)"),
    "control_init": one_of("pretrained", "random", "random_keep_embeddings"),  # models.INITS
    "device": Matches(r"|cpu|cuda(?::\d+)?|mps",
                      "'' (CUDA when available, else CPU), 'cpu', 'cuda', 'cuda:N' or 'mps'"),
    "seed": Range(0, 2**32 - 1),  # numpy seeds are 32-bit
    "max_pieces": COUNT,  # 0: the model's maximum input length
    "min_count": COUNT,
    # 01 surface patterns / 05 head clustering (the same segments)
    "n_segments": POSITIVE,
    "max_tokens": POSITIVE,
    "truncation": one_of("truncate", "skip"),
    "wikitext_splits": list_of("train", "valid", "test"),
    "mlm_steps": POSITIVE,
    "mlm_texts": POSITIVE,
    "n_grad_segments": POSITIVE,
    "n_norm_segments": POSITIVE,
    # 02 syntax heads
    "ewt_splits": list_of("train", "dev", "test"),
    "max_sentences": COUNT,
    "poss_mode": one_of("clark", "ud"),
    "min_offset": Range(),
    "max_offset": Range(),
    "wide_margin": POINTS,
    "n_examples": COUNT,
    # 03 coreference
    "ontogum_splits": list_of("train", "dev", "test"),
    "max_documents": COUNT,
    "min_group": COUNT,  # mentions; smaller groups are listed, not scored
    # 04 probes
    "max_train": COUNT,
    "max_dev": COUNT,
    "max_test": COUNT,
    "lr": Range(0, lo_open=True),
    "epochs": POSITIVE,
    "distance_hidden": POSITIVE,
    "num_threads": POSITIVE,
    "seeds": SeedList(2),  # training seeds of 04's probes and 05's classifiers; two give an sd
    # 05 head clustering
    "smoothing": Range(0),
    "js_threads": POSITIVE,
    "n_perm": POSITIVE,
    "mds_n_init": POSITIVE,
    "thr_entropy": Range(0),  # nats
    "thr_prev": SHARE,
    "thr_next": SHARE,
    "thr_cls": SHARE,
    "thr_sep": SHARE,
    "thr_punct": SHARE,
    "syntax_margin": POINTS,
    "n_folds": Range(2),
    "block_grid": Matches(f"{_UNIT}(?:,{_UNIT})*",
                          "a comma-separated list of shares in [0, 1], e.g. '0.9,0.95'"),
    "n_contact_sheets": COUNT,
    "cnn_epochs": POSITIVE,
    "cnn_size": POSITIVE,
    "cnn_stages": POSITIVE,
    "glue_max_examples": COUNT,
    # 06-07: fine-tuning (Kovaleva et al.) and what is measured on the fine-tuned models
    "tasks": _TASK_LIST,
    "multi_seed_tasks": Matches(f"|{_TASK_LIST.regex}", "'' or " + _TASK_LIST.expected),
    "train_subsets": Matches(f"|{_TASK}:[1-9][0-9]*(?:,{_TASK}:[1-9][0-9]*)*",
                             "'' (full train sets) or TASK:N entries, e.g. 'SST-2:8000,CoLA:4000'"),
    "subset_seed": Range(0, 2**32 - 1),
    "batch_size": POSITIVE,
    "warmup_ratio": Range(0, 0.99),
    "frozen_C": Range(0, lo_open=True),
    "padded_examples": POSITIVE,
    "random_init": COUNT,  # random-init fine-tunes per task (0: none)
    # numerics of the fine-tunes (training.trainer.PRECISIONS); part of the fine-tuning key
    # unless float32 (issue 34)
    "precision": one_of("float32", "tf32", "bf16"),
    "feature_level": one_of("word", "piece"),
    "maptype_seeds": SeedList(1),
    "framenet_direction": one_of("both", "target_to_element", "element_to_target"),
    "framenet_level": one_of("word", "piece"),
    "framenet_max_sentences": COUNT,
    "n_sd": Range(0, lo_open=True),
    "lr_check": Matches(r"|(?:\d+(?:\.\d*)?(?:e-?\d+)?)(?:,\d+(?:\.\d*)?(?:e-?\d+)?)*",
                        "'' or comma-separated learning rates, e.g. '1e-4,2e-5'"),
    "lr_check_tasks": Matches(f"|{_TASK_LIST.regex}", "'' or " + _TASK_LIST.expected),
    # 07 head disabling
    "n_boot": POSITIVE,
    "alpha": Range(0, 1, lo_open=True),
    "modes": list_of("uniform", "zero"),  # analyses.disabling.MODES
    "prune_mode": one_of("uniform", "zero"),
    "prune_step": Range(0, 1, lo_open=True),  # must also divide 1 (disabling.pruning_steps)
    "n_random_orders": POSITIVE,  # the reference: at least one
    "importance_split": one_of("train", "dev"),
    "importance_examples": COUNT,
    "framenet_heads": Matches(f"(?:{_HEAD}(?:,{_HEAD})*)?",
                              "'' (find them here) or 1-based head labels, e.g. '3-2,5-10'"),
    "framenet_k": POSITIVE,
    "framenet_n_sd": Range(0),
    # 08 the same questions across models
    "runs": Matches(r"[^,\s][^,]*(?:,[^,\s][^,]*)*",
                    "a comma-separated list of run folders relative to the repository root, "
                    "e.g. 'results,results/base'"),
    "norm_weight_min": SHARE,  # a class's weight share above which its norm share is judged
    "norm_ratio_max": Range(0, lo_open=True),  # norm share / weight share below this: "much"
}

# (low, high): where a notebook has both, low <= high after the overrides.
ORDERED: tuple[tuple[str, str], ...] = (("min_offset", "max_offset"),)

NOT_LITERAL = object()  # a parameters-cell value that is not a literal: its type is not checked


def read_parameters(source: str | Path) -> dict[str, object]:
    """The names and default values of the one ``parameters``-tagged cell of a jupytext
    notebook source, in order (a value that is not a literal is :data:`NOT_LITERAL`)."""
    import jupytext

    nb = jupytext.read(source)
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise ParameterError(f"{Path(source).name}: expected exactly one cell tagged "
                             f"'parameters', found {len(tagged)}")
    out: dict[str, object] = {}
    for node in ast.parse(tagged[0].source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                out[target.id] = ast.literal_eval(value)
            except ValueError:
                out[target.id] = NOT_LITERAL
    return out


def _type_name(default) -> str:
    if isinstance(default, bool):
        return "True or False"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, str):
        return "a string"
    return f"a {type(default).__name__}"


def _typed(name: str, value, default):
    """``value`` as the type of ``default`` (an int becomes a float where the default is one)."""
    if default is NOT_LITERAL or default is None:
        return value
    bad = ParameterError(f"{name}={value!r}: expected {_type_name(default)} "
                         f"(the default is {default!r})")
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        value = float(value)
    elif not isinstance(value, type(default)):
        raise bad
    return value


def check_value(name: str, value, default):
    """``value`` typed as ``default`` and checked against ``CONSTRAINTS[name]``; raises
    :class:`ParameterError` naming the parameter and what it expects."""
    typed = _typed(name, value, default)
    rule = CONSTRAINTS.get(name)
    if rule is not None and not rule.ok(typed):
        kind = (_type_name(default) + " ") if isinstance(rule, Range) and \
            default is not NOT_LITERAL else ""
        raise ParameterError(f"{name}={value!r}: expected {kind}{rule}")
    return typed


def parse_text(name: str, text: str, default):
    """The value of ``-p name=text`` for a parameter whose default is ``default``: text stays
    text where the default is a string; otherwise a Python literal (``True``/``true`` for
    booleans). Checked with :func:`check_value`."""
    if isinstance(default, str):
        value = text
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            value = ast.literal_eval(text)
    elif isinstance(default, bool) and text.lower() in ("true", "false"):
        value = text.lower() == "true"
    else:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            if default is NOT_LITERAL or default is None:
                value = text
            else:
                raise ParameterError(f"{name}={text!r}: expected {_type_name(default)} "
                                     f"(the default is {default!r})") from None
    return check_value(name, value, default)


def did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_ordered(values: dict) -> None:
    """The pairs of :data:`ORDERED` present in ``values`` (defaults merged with overrides)."""
    for low, high in ORDERED:
        lo, hi = values.get(low), values.get(high)
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            raise ParameterError(f"{low}={values[low]!r} is above {high}={values[high]!r}")
