"""CoNLL-U treebanks (UD English EWT; the trees under OntoGUM): ``read_conllu(path) ->
list[Sentence]``, parsed with the ``conllu`` package and validated (10 columns, integer heads in
range, exactly one root, no cycle); errors are ``CorpusFormatError`` naming file and line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import conllu


class CorpusFormatError(ValueError):
    """A corpus file breaks its format; the message names the file, the line and what was expected."""


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


_ID_INT = re.compile(r"^[1-9][0-9]*$")
_ID_RANGE = re.compile(r"^([1-9][0-9]*)-([1-9][0-9]*)$")
_ID_EMPTY = re.compile(r"^[0-9]+\.[1-9][0-9]*$")


def _blocks(path: Path):
    """Yield (first line number, [(line number, text)]) per blank-line separated block."""
    block: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as fh:
        for no, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if line.strip() == "":
                if block:
                    yield block[0][0], block
                    block = []
            else:
                block.append((no, line))
    if block:
        yield block[0][0], block


def _validate_tree(heads: list[int], lines: list[int], where) -> None:
    n = len(heads)
    roots = [i for i, h in enumerate(heads) if h == 0]
    if not roots:
        raise CorpusFormatError(f"{where(lines[0])}: sentence has no root (expected exactly one word "
                                f"with HEAD 0)")
    if len(roots) > 1:
        raise CorpusFormatError(f"{where(lines[roots[1]])}: more than one root (words "
                                f"{', '.join(str(r + 1) for r in roots)} have HEAD 0; expected exactly one)")
    state = [0] * n  # 0 unseen, 1 on current path, 2 reaches the root
    for start in range(n):
        path = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = heads[i] - 1
        if i >= 0 and state[i] == 1:
            cycle = path[path.index(i):]
            raise CorpusFormatError(f"{where(lines[i])}: cycle in the dependency tree through words "
                                    f"{' -> '.join(str(c + 1) for c in cycle)} -> {i + 1} "
                                    f"(expected every word to reach the root)")
        for j in path:
            state[j] = 2


def _parse_block(path: Path, first: int, block, doc_id, where) -> tuple[Sentence, str | None]:
    word_lines: list[int] = []
    heads: list[int] = []
    mw_raw: list[tuple[int, int, str, int]] = []
    for no, line in block:
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CorpusFormatError(f"{where(no)}: {len(cols)} tab-separated columns, expected 10 "
                                    f"(ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC)")
        tid = cols[0]
        if _ID_INT.match(tid):
            expected = len(word_lines) + 1
            if int(tid) != expected:
                raise CorpusFormatError(f"{where(no)}: word ID {tid}, expected {expected} "
                                        f"(word IDs must run 1, 2, ... in order)")
            try:
                head = int(cols[6])
            except ValueError:
                raise CorpusFormatError(f"{where(no)}: HEAD {cols[6]!r} is not an integer "
                                        f"(expected 0 for the root or a word ID)") from None
            word_lines.append(no)
            heads.append(head)
        elif m := _ID_RANGE.match(tid):
            a, b = int(m.group(1)), int(m.group(2))
            if b < a:
                raise CorpusFormatError(f"{where(no)}: multiword range {tid} ends before it starts")
            mw_raw.append((a, b, cols[1], no))
        elif _ID_EMPTY.match(tid):
            continue
        else:
            raise CorpusFormatError(f"{where(no)}: ID {tid!r} is not a word ID, a range N-M or an "
                                    f"empty node N.M")
    if not word_lines:
        raise CorpusFormatError(f"{where(first)}: sentence has no word lines")
    n = len(heads)
    for h, no in zip(heads, word_lines, strict=True):
        if not 0 <= h <= n:
            raise CorpusFormatError(f"{where(no)}: HEAD {h} out of range (expected 0..{n} for a "
                                    f"sentence of {n} words)")
    for a, b, _form, no in mw_raw:
        if b > n:
            raise CorpusFormatError(f"{where(no)}: multiword range {a}-{b} exceeds the {n} words")
    _validate_tree(heads, word_lines, where)

    text = "\n".join(line for _no, line in block) + "\n\n"
    try:
        parsed = conllu.parse(text)
    except Exception as exc:  # conllu raises ParseException and assorted ValueErrors
        raise CorpusFormatError(f"{where(first)}: the conllu parser rejected the sentence starting "
                                f"here: {exc}") from exc
    if len(parsed) != 1:
        raise CorpusFormatError(f"{where(first)}: expected one sentence in this block, the conllu "
                                f"parser found {len(parsed)}")
    tl = parsed[0]
    meta = tl.metadata
    if "newdoc id" in meta:
        doc_id = meta["newdoc id"]
    elif "newdoc" in meta:
        doc_id = None
    words = [t for t in tl if isinstance(t["id"], int)]
    sent = Sentence(
        sent_id=meta.get("sent_id") or f"{path.name}:{first}",
        text=meta.get("text"),
        words=tuple(t["form"] for t in words),
        upos=tuple(t["upos"] for t in words),
        heads=tuple(heads),
        deprels=tuple(t["deprel"] for t in words),
        feats=tuple(t["feats"] for t in words),
        misc=tuple(t["misc"] for t in words),
        multiword=tuple((a - 1, b - 1, form) for a, b, form, _no in mw_raw),
        doc_id=doc_id,
        source=str(path),
        line=first,
    )
    return sent, doc_id


def read_conllu(path: str | os.PathLike) -> list[Sentence]:
    """All sentences of a CoNLL-U file, validated; raises ``CorpusFormatError`` with file:line."""
    path = Path(path)

    def where(no: int) -> str:
        return f"{path}:{no}"

    out: list[Sentence] = []
    doc_id: str | None = None
    try:
        for first, block in _blocks(path):
            sent, doc_id = _parse_block(path, first, block, doc_id, where)
            out.append(sent)
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(f"{path}: not UTF-8 ({exc})") from exc
    return out
