"""GLUE dev sets (Kovaleva et al. 2019, Section 4.1 inputs): a small typed reader and encoder.

- :func:`read_glue` ``(task, split="dev") -> list[GlueExample]``: one record per data row,
  ``GlueExample(text_a, text_b | None, label)``, read from ``<data>/glue/<TASK>/<split>.tsv``
  (``$BERTOLOGY_DATA_DIR``, see ``paths.data_dir``). Columns per task follow the GLUE
  distribution (:data:`TASKS`); CoLA has no header line, MRPC's header starts with a BOM.
  Rows are split on tabs only (no CSV quoting: texts contain bare ``"``).
- :func:`encode` ``(examples, tokenizer, max_tokens=128) -> EncodedSet``: the model's own
  format, ``[CLS] a [SEP]`` or ``[CLS] a [SEP] b [SEP]`` with token-type ids, truncated to
  ``max_tokens`` pieces (``longest_first``); ``EncodedSet.report`` counts the truncated inputs.

Example::

    >>> from analysis_utils import glue
    >>> ex = glue.read_glue("RTE")          # doctest: +SKIP
    >>> ex[0].text_b                         # doctest: +SKIP
    'Christopher Reeve had an accident.'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import paths

__all__ = ["TASKS", "GlueExample", "EncodedInput", "EncodedSet", "GlueFormatError",
           "available_tasks", "glue_path", "read_glue", "encode"]


class GlueFormatError(ValueError):
    """A GLUE file breaks its format; the message names the file and line."""


@dataclass(frozen=True)
class _Spec:
    header: bool
    n_cols: int
    a: int
    b: int | None
    label: int
    label_type: type


#: Column layout of each task's dev/train TSV (0-based column indices).
TASKS: dict[str, _Spec] = {
    "CoLA": _Spec(header=False, n_cols=4, a=3, b=None, label=1, label_type=int),
    "SST-2": _Spec(header=True, n_cols=2, a=0, b=None, label=1, label_type=int),
    "MRPC": _Spec(header=True, n_cols=5, a=3, b=4, label=0, label_type=int),
    "RTE": _Spec(header=True, n_cols=4, a=1, b=2, label=3, label_type=str),
    "STS-B": _Spec(header=True, n_cols=10, a=7, b=8, label=9, label_type=float),
    "QNLI": _Spec(header=True, n_cols=4, a=1, b=2, label=3, label_type=str),
}


@dataclass(frozen=True)
class GlueExample:
    """One GLUE row: ``text_b`` is None for single-sentence tasks (CoLA, SST-2); ``label`` is an
    int (CoLA, SST-2, MRPC), a str (RTE, QNLI) or a float score (STS-B)."""

    text_a: str
    text_b: str | None
    label: int | str | float


@dataclass(frozen=True)
class EncodedInput:
    """An encoded example: ids with special tokens, token types, piece strings."""

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class EncodedSet:
    inputs: list[EncodedInput]
    report: dict

    def __len__(self) -> int:
        return len(self.inputs)

    def __iter__(self):
        return iter(self.inputs)

    def __getitem__(self, i: int) -> EncodedInput:
        return self.inputs[i]


def glue_path(task: str, split: str = "dev", data_dir: str | os.PathLike | None = None) -> Path:
    """``<data>/glue/<task>/<split>.tsv`` (not checked for existence)."""
    if task not in TASKS:
        raise ValueError(f"unknown GLUE task {task!r}; this reader knows {sorted(TASKS)}")
    return paths.data_dir(data_dir) / "glue" / task / f"{split}.tsv"


def available_tasks(split: str = "dev", data_dir: str | os.PathLike | None = None) -> list[str]:
    """The tasks of :data:`TASKS` whose ``split`` file exists locally, in :data:`TASKS` order."""
    return [t for t in TASKS if glue_path(t, split, data_dir).exists()]


def read_glue(task: str, split: str = "dev", data_dir: str | os.PathLike | None = None,
              max_examples: int | None = None) -> list[GlueExample]:
    """Read one GLUE task file into :class:`GlueExample` records (file order).

    max_examples: keep only the first ``max_examples`` rows (None: all).
    Raises FileNotFoundError naming the fetch command when the file is missing, and
    :class:`GlueFormatError` naming file and line for a row with the wrong column count or
    an unparsable label.
    """
    spec = TASKS.get(task)
    path = glue_path(task, split, data_dir)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; set $BERTOLOGY_DATA_DIR or run "
                                "`python -m analysis_utils fetch-data glue`")
    out: list[GlueExample] = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for no, line in enumerate(fh, start=1):
            if no == 1 and spec.header:
                continue
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) != spec.n_cols:
                raise GlueFormatError(f"{path}:{no}: expected {spec.n_cols} tab-separated "
                                      f"columns for {task}, got {len(cols)}")
            try:
                label = spec.label_type(cols[spec.label].strip())
            except ValueError as err:
                raise GlueFormatError(f"{path}:{no}: bad label {cols[spec.label]!r} "
                                      f"({spec.label_type.__name__} expected)") from err
            out.append(GlueExample(text_a=cols[spec.a].strip(),
                                   text_b=None if spec.b is None else cols[spec.b].strip(),
                                   label=label))
            if max_examples is not None and len(out) >= max_examples:
                break
    return out


def encode(examples: list[GlueExample], tokenizer, max_tokens: int = 128) -> EncodedSet:
    """Encode examples with the model's tokenizer: single sentences when ``text_b`` is None,
    else text pairs (token-type ids 0/1), truncated ``longest_first`` to ``max_tokens``.

    ``report``: ``n, pairs, truncated, mean_length, max_length, max_tokens``; an input counts
    as truncated when its untruncated encoding is longer than ``max_tokens``.
    """
    inputs: list[EncodedInput] = []
    for ex in examples:
        args = (ex.text_a,) if ex.text_b is None else (ex.text_a, ex.text_b)
        full = len(tokenizer(*args, truncation=False, verbose=False)["input_ids"])
        enc = tokenizer(*args, truncation="longest_first" if full > max_tokens else False,
                        max_length=max_tokens, return_token_type_ids=True)
        ids = tuple(int(i) for i in enc["input_ids"])
        tt = enc.get("token_type_ids")
        inputs.append(EncodedInput(
            input_ids=ids,
            token_type_ids=tuple(int(t) for t in tt) if tt is not None else (0,) * len(ids),
            tokens=tuple(tokenizer.convert_ids_to_tokens(list(ids))),
            truncated=full > max_tokens))
    lengths = [len(x) for x in inputs]
    report = {"n": len(inputs), "pairs": sum(ex.text_b is not None for ex in examples),
              "truncated": sum(x.truncated for x in inputs),
              "mean_length": float(sum(lengths) / len(lengths)) if lengths else 0.0,
              "max_length": max(lengths, default=0), "max_tokens": max_tokens}
    return EncodedSet(inputs=inputs, report=report)
