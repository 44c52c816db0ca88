"""GLUE dev sets (Kovaleva et al. 2019, Section 4.1 inputs): a small typed reader and encoder.

- :func:`read_glue` ``(task, split="dev") -> list[GlueExample]``: one record per data row,
  ``GlueExample(text_a, text_b | None, label)``, read from ``<data>/glue/<TASK>/<split>.tsv``
  (``$BERTOLOGY_DATA_DIR``, see ``paths.data_dir``) after ``manifest.require`` has checked it
  against the checksummed manifest; :func:`read_glue_file` reads a file of your own. Columns
  per task follow the GLUE distribution (:data:`TASKS`); CoLA has no header line, MRPC's
  header starts with a BOM. Rows are split on tabs only (no CSV quoting: texts contain bare
  ``"``).
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
from ..engine.wordmaps import segment_ids
from .errors import GlueFormatError
from .manifest import manifest_entries, require

__all__ = ["TASKS", "GlueExample", "EncodedInput", "EncodedSet", "GlueFormatError",
           "available_tasks", "glue_path", "read_glue", "read_glue_file", "encode"]


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


def _relpath(task: str, split: str) -> str:
    return f"glue/{task}/{split}.tsv"


def available_tasks(split: str = "dev", data_dir: str | os.PathLike | None = None) -> list[str]:
    """The tasks of :data:`TASKS` to use for ``split``, in :data:`TASKS` order: those whose file
    the data manifest lists (all six dev sets), which :func:`read_glue` then requires, so a
    missing or corrupt one fails loudly instead of dropping out of the results, plus any
    other one present locally (e.g. QNLI train added by hand)."""
    listed = {e.path for e in manifest_entries("glue")}
    return [t for t in TASKS
            if _relpath(t, split) in listed or glue_path(t, split, data_dir).exists()]


def read_glue(task: str, split: str = "dev", data_dir: str | os.PathLike | None = None,
              max_examples: int | None = None) -> list[GlueExample]:
    """Read one task file of the gold data into :class:`GlueExample` records (file order).

    The file goes through :func:`manifest.require`: a missing file raises ``DataMissingError``
    and one whose size or sha256 differs from the manifest ``DataCorruptError``, both naming
    the command that restores it. max_examples: keep only the first ``max_examples`` rows
    (None: all). Format errors as in :func:`read_glue_file`.
    """
    glue_path(task, split, data_dir)  # unknown task -> ValueError before any file access
    return read_glue_file(require(_relpath(task, split), data_dir=data_dir), task,
                          max_examples=max_examples)


def read_glue_file(path: str | os.PathLike, task: str,
                   max_examples: int | None = None) -> list[GlueExample]:
    """Read a GLUE TSV at any ``path`` laid out like ``task``'s file (no manifest check: for
    files of your own; :func:`read_glue` reads the gold data).

    Raises :class:`GlueFormatError` as ``file:line: what is wrong`` for a row with the wrong
    column count, an unparsable label, bytes that are not UTF-8, or a file without data rows.
    """
    spec = TASKS.get(task)
    if spec is None:
        raise ValueError(f"unknown GLUE task {task!r}; this reader knows {sorted(TASKS)}")
    path = Path(path)
    out: list[GlueExample] = []
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if no == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise GlueFormatError(f"{path}:{no}: not UTF-8 text: byte "
                                      f"0x{raw[err.start]:02x} at column {err.start + 1} cannot "
                                      f"be decoded") from None
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
    if not out:
        raise GlueFormatError(f"{path}:1: no data rows (expected "
                              f"{'a header line, then ' if spec.header else ''}rows of "
                              f"{spec.n_cols} tab-separated columns)")
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
        tt = enc.get("token_type_ids") if "token_type_ids" in tokenizer.model_input_names else None
        inputs.append(EncodedInput(
            input_ids=ids,
            token_type_ids=(tuple(int(t) for t in tt) if tt is not None
                            else tuple(segment_ids(ids, tokenizer.sep_token_id).tolist())),
            tokens=tuple(tokenizer.convert_ids_to_tokens(list(ids))),
            truncated=full > max_tokens))
    lengths = [len(x) for x in inputs]
    report = {"n": len(inputs), "pairs": sum(ex.text_b is not None for ex in examples),
              "truncated": sum(x.truncated for x in inputs),
              "mean_length": float(sum(lengths) / len(lengths)) if lengths else 0.0,
              "max_length": max(lengths, default=0), "max_tokens": max_tokens}
    return EncodedSet(inputs=inputs, report=report)
