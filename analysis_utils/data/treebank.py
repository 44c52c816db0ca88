"""CoNLL-U treebanks (UD English EWT; the trees under OntoGUM), and the package's one CoNLL-U path.

``read_conllu(path) -> list[Sentence]`` is the treebank reader. The layers below it are shared
with the OntoGUM coreference reader (``ontogum.read_ontogum``) and with
``python -m analysis_utils validate``, so a file is split, checked and parsed the same way
whichever of them reads it:

- :func:`iter_blocks`: blank-line separated blocks of ``(line number, text)``, decoded as UTF-8
  line by line (an undecodable byte is reported at its line, not as a bare UnicodeDecodeError).
- :func:`check_block`: the format checks: 10 tab-separated columns; word IDs 1, 2, ... in order,
  ranges ``N-M`` and empty nodes ``N.M``; integer HEAD in range; exactly one root; no cycle. It
  collects every problem of the block (as :class:`Problem`: line and message) instead of
  stopping at the first.
- :func:`scan_conllu`: every block checked and, when clean, parsed by the ``conllu`` package
  (:class:`ConlluBlock`: the TokenList plus the file line of each word); a file without any
  sentence is a problem too. Nothing is raised: callers decide.
- :func:`iter_conllu`: the strict form the readers use: the first problem raises
  :class:`CorpusFormatError` as ``file:line: what is wrong``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import conllu

from .errors import CorpusFormatError

__all__ = ["CorpusFormatError", "subsample", "Problem", "Block", "ConlluBlock", "Scanned", "Sentence",
           "iter_blocks", "check_block", "scan_conllu", "iter_conllu", "read_conllu"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file: the 1-based ``line`` it is on and what is wrong."""

    line: int
    message: str

    def format(self, path: str | os.PathLike) -> str:
        return f"{path}:{self.line}: {self.message}"


# --------------------------------------------------------------------------- CoNLL-U


@dataclass(frozen=True)
class Sentence:
    """One CoNLL-U sentence, as syntactic words (multiword tokens expanded, empty nodes skipped).

    ``heads`` follow UD: 1-based word index, 0 = root. ``multiword`` holds (first word index,
    last word index inclusive, surface form) with 0-based indices into ``words``. ``feats`` and
    ``misc`` are the ``conllu`` package's dicts (None for ``_``). ``line`` is the 1-based line of
    the sentence's first line (comments included) in ``source``.
    """

    sent_id: str
    text: str | None
    words: tuple[str, ...]
    upos: tuple[str, ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]
    feats: tuple[dict | None, ...]
    misc: tuple[dict | None, ...]
    multiword: tuple[tuple[int, int, str], ...]
    doc_id: str | None
    source: str
    line: int

    def __len__(self) -> int:
        return len(self.words)

    @property
    def root(self) -> int:
        """0-based index of the root word."""
        return self.heads.index(0)


@dataclass(frozen=True)
class Block:
    """A blank-line separated block: ``lines`` are ``(line number, text without newline)``;
    ``problems`` are the lines that were not UTF-8 (decoded with U+FFFD to keep going)."""

    first: int
    lines: tuple[tuple[int, str], ...]
    problems: tuple[Problem, ...] = ()

    def comment(self, key: str) -> str | None:
        """The value of a ``# key = value`` comment line of this block (None when absent)."""
        for _no, line in self.lines:
            if line.startswith("#") and "=" in line:
                k, v = line[1:].split("=", 1)
                if k.strip() == key:
                    return v.strip()
        return None


@dataclass(frozen=True)
class ConlluBlock:
    """A checked sentence block parsed by ``conllu``: ``tokens`` (with ``.metadata``), the
    syntactic ``words`` (integer IDs; ranges and empty nodes left out) with the file line of
    each (``word_lines``), their ``heads`` (0 = root) and ``multiword`` tokens as (first word,
    last word inclusive, surface form), 0-based."""

    block: Block
    tokens: conllu.TokenList
    words: tuple[dict, ...]
    word_lines: tuple[int, ...]
    heads: tuple[int, ...]
    multiword: tuple[tuple[int, int, str], ...]

    @property
    def first(self) -> int:
        return self.block.first


@dataclass(frozen=True)
class Scanned:
    """One step of :func:`scan_conllu`: a block with its problems, parsed (``sentence``) only when
    it has none. ``block`` is None for the problem of a file without any sentence."""

    block: Block | None
    sentence: ConlluBlock | None
    problems: tuple[Problem, ...]


_ID_INT = re.compile(r"^[1-9][0-9]*$")
_ID_RANGE = re.compile(r"^([1-9][0-9]*)-([1-9][0-9]*)$")
_ID_EMPTY = re.compile(r"^[0-9]+\.[1-9][0-9]*$")
_HEAD = re.compile(r"^-?[0-9]+$")
_COLUMNS = "ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC"
EMPTY_FILE = ("no sentences: the file is empty or has only blank lines (expected CoNLL-U "
              "sentence blocks separated by blank lines)")


def iter_blocks(path: str | os.PathLike) -> Iterator[Block]:
    """Blank-line separated blocks of a file, with 1-based line numbers (a leading BOM is dropped).

    Lines that are not UTF-8 are decoded with replacement characters and reported in the
    block's ``problems``, so a caller can report every one and go on. A NUL byte means binary
    data: it is reported once and ends the file."""
    lines: list[tuple[int, str]] = []
    problems: list[Problem] = []
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            nul = raw.find(b"\0")
            if nul >= 0:  # binary data: one problem for the file, not one per "line"
                problems.append(Problem(no, f"binary data (a NUL byte at column {nul + 1}): this "
                                            f"is not a CoNLL-U text file; nothing after this "
                                            f"line was read"))
                yield Block(lines[0][0] if lines else no, tuple(lines), tuple(problems))
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start]
                problems.append(Problem(no, f"not UTF-8 text: byte 0x{byte:02x} at column "
                                            f"{exc.start + 1} cannot be decoded (is this a "
                                            f"binary file? CoNLL-U files are UTF-8)"))
                line = raw.decode("utf-8", "replace")
            if no == 1 and line.startswith("\ufeff"):
                line = line[1:]
            line = line.rstrip("\r\n")
            if line.strip() == "":
                if lines:
                    yield Block(lines[0][0], tuple(lines), tuple(problems))
                    lines, problems = [], []
            else:
                lines.append((no, line))
    if lines:
        yield Block(lines[0][0], tuple(lines), tuple(problems))


def _tree_problems(heads: list[int], lines: list[int]) -> list[Problem]:
    """Root and cycle problems of a sentence whose heads are all in 0..n."""
    out = []
    roots = [i for i, h in enumerate(heads) if h == 0]
    if not roots:
        out.append(Problem(lines[0], "sentence has no root (expected exactly one word with "
                                     "HEAD 0)"))
    elif len(roots) > 1:
        out.append(Problem(lines[roots[1]], f"more than one root (words "
                                            f"{', '.join(str(r + 1) for r in roots)} have HEAD 0; "
                                            f"expected exactly one)"))
    state = [0] * len(heads)  # 0 unseen, 1 on the current path, 2 done
    for start in range(len(heads)):
        path = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = heads[i] - 1
        if i >= 0 and state[i] == 1:
            cycle = path[path.index(i):]
            out.append(Problem(lines[i], f"cycle in the dependency tree through words "
                                         f"{' -> '.join(str(c + 1) for c in cycle)} -> {i + 1} "
                                         f"(expected every word to reach the root)"))
        for j in path:
            state[j] = 2
    return out


# what check_block learnt about a well-formed block: word lines, heads, multiword ranges
_Words = tuple[list[int], list[int], list[tuple[int, int, str, int]]]


def check_block(block: Block) -> tuple[_Words | None, list[Problem]]:
    """The CoNLL-U format checks of one block: ``((word lines, heads, multiword), [])`` when it is
    a well-formed sentence, else ``(None, problems)`` with every problem found.

    Line checks (columns, IDs, HEAD syntax) run on every line; the range and tree checks run
    only when the IDs and heads could all be read, since a numbering error would make them
    report nonsense. After a wrong word ID the expected ID restarts from the one found, so one
    missing word is one problem, not one per following line. ``multiword`` items are
    ``(first, last, form, line)`` with 1-based word IDs."""
    problems = list(block.problems)
    if problems:  # undecodable bytes: the columns of this block cannot be trusted
        return None, problems
    word_lines: list[int] = []
    heads: list[int] = []
    multiword: list[tuple[int, int, str, int]] = []
    expected = 1
    for no, line in block.lines:
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            problems.append(Problem(no, f"{len(cols)} tab-separated columns, expected 10 "
                                        f"({_COLUMNS})"))
            if _ID_INT.match(cols[0]):  # still a word: the next ID follows it
                expected = int(cols[0]) + 1
            continue
        tid = cols[0]
        if _ID_INT.match(tid):
            if int(tid) != expected:
                problems.append(Problem(no, f"word ID {tid}, expected {expected} (word IDs must "
                                            f"run 1, 2, ... in order)"))
            expected = int(tid) + 1
            if _HEAD.match(cols[6]):
                heads.append(int(cols[6]))
            else:
                problems.append(Problem(no, f"HEAD {cols[6]!r} is not an integer (expected 0 for "
                                            f"the root or a word ID)"))
                heads.append(-1)
            word_lines.append(no)
        elif m := _ID_RANGE.match(tid):
            a, b = int(m.group(1)), int(m.group(2))
            if b < a:
                problems.append(Problem(no, f"multiword range {tid} ends before it starts"))
            multiword.append((a, b, cols[1], no))
        elif _ID_EMPTY.match(tid):
            continue
        else:
            problems.append(Problem(no, f"ID {tid!r} is not a word ID, a range N-M or an empty "
                                        f"node N.M"))
    if problems:
        return None, problems
    if not word_lines:
        return None, [Problem(block.first, "sentence has no word lines")]
    n = len(heads)
    for h, no in zip(heads, word_lines, strict=True):
        if not 0 <= h <= n:
            problems.append(Problem(no, f"HEAD {h} out of range (expected 0..{n} for a sentence of "
                                        f"{n} words)"))
    for a, b, _form, no in multiword:
        if b > n:
            problems.append(Problem(no, f"multiword range {a}-{b} exceeds the {n} words"))
    if all(0 <= h <= n for h in heads):
        problems += _tree_problems(heads, word_lines)
    if problems:
        return None, problems
    return (word_lines, heads, multiword), []


def _parser_problem(block: Block, exc: Exception) -> Problem:
    """The ``conllu`` package rejected a block that passed :func:`check_block`: find the line."""
    for no, line in block.lines:
        if line.startswith("#"):
            continue
        try:
            conllu.parse(line + "\n\n")
        except Exception as line_exc:  # noqa: BLE001 - conllu raises assorted exception types
            return Problem(no, f"the conllu parser rejected this line: {line_exc}")
    return Problem(block.first, f"the conllu parser rejected the sentence starting here: {exc}")


def _parse(block: Block, word_lines, heads, multiword) -> tuple[ConlluBlock | None, Problem | None]:
    text = "\n".join(line for _no, line in block.lines) + "\n\n"
    try:
        parsed = conllu.parse(text)
    except Exception as exc:  # noqa: BLE001 - conllu raises ParseException and assorted ValueErrors
        return None, _parser_problem(block, exc)
    if len(parsed) != 1:
        return None, Problem(block.first, f"expected one sentence in this block, the conllu parser "
                                          f"found {len(parsed)}")
    tokens = parsed[0]
    words = tuple(t for t in tokens if isinstance(t["id"], int))
    if len(words) != len(word_lines):
        return None, Problem(block.first, f"the conllu parser found {len(words)} words in this "
                                          f"sentence, the line checks {len(word_lines)}")
    return ConlluBlock(block=block, tokens=tokens, words=words, word_lines=tuple(word_lines),
                       heads=tuple(heads),
                       multiword=tuple((a - 1, b - 1, form) for a, b, form, _no in multiword)), None


def scan_conllu(path: str | os.PathLike) -> Iterator[Scanned]:
    """Every block of a CoNLL-U file, checked (:func:`check_block`) and, when clean, parsed.

    Never raises for the file's content (only ``OSError`` when it cannot be opened); a file
    without any block yields one :class:`Scanned` with ``block`` None and the empty-file problem.
    """
    seen = False
    for block in iter_blocks(path):
        seen = True
        checked, problems = check_block(block)
        if problems:
            yield Scanned(block, None, tuple(problems))
            continue
        sentence, problem = _parse(block, *checked)
        yield Scanned(block, sentence, () if problem is None else (problem,))
    if not seen:
        yield Scanned(None, None, (Problem(1, EMPTY_FILE),))


def iter_conllu(path: str | os.PathLike, error: type[CorpusFormatError] = CorpusFormatError,
                context: Callable[[Block | None], str] | None = None) -> Iterator[ConlluBlock]:
    """The sentences of a CoNLL-U file, checked and parsed; the first problem raises ``error``
    (:class:`CorpusFormatError` or a subclass) as ``file:line: [context]what is wrong``.
    ``context(block)`` may prefix the message, e.g. with the document and sentence."""
    for scanned in scan_conllu(path):
        if scanned.problems:
            p = scanned.problems[0]
            prefix = context(scanned.block) if context else ""
            raise error(Problem(p.line, prefix + p.message).format(path))
        yield scanned.sentence


def read_conllu(path: str | os.PathLike) -> list[Sentence]:
    """All sentences of a CoNLL-U file, validated; raises ``CorpusFormatError`` with file:line
    (also for a file with no sentence at all, and for bytes that are not UTF-8)."""
    path = Path(path)
    out: list[Sentence] = []
    doc_id: str | None = None
    for s in iter_conllu(path):
        meta = s.tokens.metadata
        if "newdoc id" in meta:
            doc_id = meta["newdoc id"]
        elif "newdoc" in meta:
            doc_id = None
        out.append(Sentence(
            sent_id=meta.get("sent_id") or f"{path.name}:{s.first}",
            text=meta.get("text"),
            words=tuple(t["form"] for t in s.words),
            upos=tuple(t["upos"] for t in s.words),
            heads=s.heads,
            deprels=tuple(t["deprel"] for t in s.words),
            feats=tuple(t["feats"] for t in s.words),
            misc=tuple(t["misc"] for t in s.words),
            multiword=s.multiword,
            doc_id=doc_id,
            source=str(path),
            line=s.first,
        ))
    return out


def subsample(items: list, n: int, seed: int) -> list:
    """``n`` of ``items`` drawn without replacement with ``seed``, kept in corpus order (all
    of them when ``n`` is 0 or at least their number). A seeded draw over the whole file, so a
    capped run sees every genre of the treebank, not only its first documents."""
    if not n or n >= len(items):
        return list(items)
    import numpy as np

    idx = np.sort(np.random.default_rng(seed).choice(len(items), size=n, replace=False))
    return [items[int(i)] for i in idx]
