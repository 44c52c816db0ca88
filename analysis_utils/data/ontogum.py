"""OntoGUM coreference (CoNLL-U with CorefUD ``Entity=`` brackets in MISC, gold UD trees):
documents, sentences and mentions with their head word, type, number, person and gender.

``read_ontogum(path)`` and ``read_ontogum_split(data_dir, split)`` raise
:class:`CorefFormatError` naming file, document, sentence and line. Conventions (head word,
type, agreement features) are described in ``analyses/coref.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import conllu
import numpy as np

MENTION_TYPES = ("pronoun", "proper", "nominal")

_PRONOUNS: dict[str, tuple[str | None, str | None, str | None]] = {}
for _words, _val in (
    ("i me my mine myself", ("Sing", "1", None)),
    ("we us our ours ourselves", ("Plur", "1", None)),
    ("you your yours", (None, "2", None)),
    ("yourself", ("Sing", "2", None)),
    ("yourselves", ("Plur", "2", None)),
    ("he him his himself", ("Sing", "3", "Masc")),
    ("she her hers herself", ("Sing", "3", "Fem")),
    ("it its itself", ("Sing", "3", "Neut")),
    ("they them their theirs themselves themself", ("Plur", "3", None)),
    ("this that", ("Sing", "3", None)),
    ("these those", ("Plur", "3", None)),
):
    for _w in _words.split():
        _PRONOUNS[_w] = _val
_APOSTROPHES = str.maketrans({"\u2019": "'"})


class CorefFormatError(ValueError):
    """Malformed coreference input; the message names the file, document, sentence, line."""


@dataclass(frozen=True)
class CorefSentence:
    """One sentence of a document (syntactic words; multiword-token lines skipped)."""

    sent_id: str
    words: tuple[str, ...]
    upos: tuple[str, ...]
    heads: tuple[int, ...]  # 1-based within the sentence, 0 = root
    deprels: tuple[str, ...]
    feats: tuple[dict | None, ...]
    start: int  # doc-level index of the first word
    line: int  # 1-based line of the first word line in the file

    def __len__(self) -> int:
        return len(self.words)


@dataclass(frozen=True)
class Mention:
    """A mention; ``start``/``end``/``head_word`` are doc-level word indices, end inclusive.
    ``sent_idx`` is the sentence of the first word, ``end_sent_idx`` of the last."""

    doc_id: str
    chain_id: str
    sent_idx: int
    start: int
    end: int
    head_word: int
    words: tuple[str, ...]
    type: str
    number: str | None
    person: str | None
    gender: str | None
    end_sent_idx: int = -1

    @property
    def head_text(self) -> str:
        return self.words[self.head_word - self.start]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    def __len__(self) -> int:
        return self.end - self.start + 1


@dataclass
class CorefDocument:
    doc_id: str
    sentences: list[CorefSentence]
    mentions: list[Mention]  # sorted by (start, -end)
    source: str = ""
    words: tuple[str, ...] = field(init=False)

    def __post_init__(self):
        self.words = tuple(w for s in self.sentences for w in s.words)

    @property
    def chains(self) -> dict[str, list[Mention]]:
        out: dict[str, list[Mention]] = {}
        for m in self.mentions:
            out.setdefault(m.chain_id, []).append(m)
        return out

    def __len__(self) -> int:
        return len(self.words)


# --- reading --------------------------------------------------------------------------------

_BRACKET = re.compile(r"\(([^()]+)\)|\(([^()]+)|([^()]+)\)")


def parse_entity(value: str) -> list[tuple[str, str]]:
    """``"(1(2)"`` -> ``[("open", "1"), ("single", "2")]``; ``"3)"`` -> ``[("close", "3")]``.
    Only the entity id (first ``-``-separated field) is kept. Raises ValueError on junk."""
    out, pos = [], 0
    while pos < len(value):
        m = _BRACKET.match(value, pos)
        if not m:
            raise ValueError(f"cannot parse Entity value {value!r} at character {pos}")
        single, opening, closing = m.groups()
        kind = "single" if single else "open" if opening else "close"
        out.append((kind, (single or opening or closing).split("-")[0]))
        pos = m.end()
    return out


def _check_tree(heads: Sequence[int]) -> str | None:
    n = len(heads)
    if any(h < 0 or h > n for h in heads):
        return "head index out of range"
    if sum(h == 0 for h in heads) != 1:
        return f"{sum(h == 0 for h in heads)} root words (need exactly 1)"
    for i in range(n):
        seen, j = set(), i
        while heads[j] != 0:
            if j in seen:
                return "cycle in the dependency tree"
            seen.add(j)
            j = heads[j] - 1
    return None


def _attributes(upos: str, form: str, feats: dict | None):
    feats = feats or {}
    number, person, gender = feats.get("Number"), feats.get("Person"), feats.get("Gender")
    if upos == "PRON":
        lex = _PRONOUNS.get(form.lower().translate(_APOSTROPHES), (None, None, None))
        number, person, gender = number or lex[0], person or lex[1], gender or lex[2]
    else:
        person = person or "3"
    if number not in ("Sing", "Plur"):
        number = None
    if gender not in ("Masc", "Fem", "Neut"):
        gender = None
    return number, person, gender


def mention_type(upos: str) -> str:
    return "pronoun" if upos == "PRON" else "proper" if upos == "PROPN" else "nominal"


class _DocBuilder:
    def __init__(self, doc_id: str, path: str, line: int):
        self.doc_id, self.path, self.line = doc_id, path, line
        self.sentences: list[CorefSentence] = []
        self.raw: list[tuple[str, int, int, int]] = []  # chain, start, end, order
        self.open: dict[str, list[tuple[int, str, int]]] = {}  # id -> [(start, sent, line)]
        self.n = 0

    def err(self, msg: str, sent_id: str | None, line: int) -> CorefFormatError:
        where = f"{self.path}:{line}: document {self.doc_id}"
        if sent_id is not None:
            where += f", sentence {sent_id}"
        return CorefFormatError(f"{where}: {msg}")

    def add_sentence(self, tl: conllu.TokenList, sent_id: str, word_lines: list[int],
                     first_line: int) -> None:
        words = [t for t, _ in zip(tl, word_lines, strict=True) if isinstance(t["id"], int)]
        lines = [ln for t, ln in zip(tl, word_lines, strict=True) if isinstance(t["id"], int)]
        if not words:
            raise self.err("sentence without word lines", sent_id, first_line)
        heads = []
        for t, ln in zip(words, lines, strict=True):
            if not isinstance(t["head"], int):
                raise self.err(f"word {t['id']} has no numeric head", sent_id, ln)
            heads.append(t["head"])
        if [t["id"] for t in words] != list(range(1, len(words) + 1)):
            raise self.err("word ids are not 1..n", sent_id, lines[0])
        problem = _check_tree(heads)
        if problem:
            raise self.err(f"bad tree: {problem}", sent_id, lines[0])
        for k, (t, ln) in enumerate(zip(words, lines, strict=True)):
            value = (t["misc"] or {}).get("Entity")
            if not value:
                continue
            try:
                brackets = parse_entity(value)
            except ValueError as e:
                raise self.err(str(e), sent_id, ln) from None
            i = self.n + k
            for kind, cid in brackets:
                if kind == "single":
                    self.raw.append((cid, i, i, len(self.raw)))
                elif kind == "open":
                    self.open.setdefault(cid, []).append((i, sent_id, ln))
                else:
                    stack = self.open.get(cid)
                    if not stack:
                        raise self.err(f"closing bracket '{cid})' without an open mention "
                                       f"of entity {cid}", sent_id, ln)
                    s, _, _ = stack.pop()
                    self.raw.append((cid, s, i, len(self.raw)))
        self.sentences.append(CorefSentence(
            sent_id=sent_id, words=tuple(t["form"] for t in words),
            upos=tuple(t["upos"] for t in words), heads=tuple(heads),
            deprels=tuple(t["deprel"] for t in words),
            feats=tuple(t["feats"] or None for t in words), start=self.n, line=lines[0]))
        self.n += len(words)

    def finish(self) -> CorefDocument:
        for cid, stack in self.open.items():
            if stack:
                s, sent_id, ln = stack[0]
                raise self.err(f"mention of entity {cid} opened here is never closed",
                               sent_id, ln)
        if not self.sentences:
            raise self.err("document without sentences", None, self.line)
        sent_of = np.concatenate([np.full(len(s), k) for k, s in enumerate(self.sentences)])
        flat_words = [w for s in self.sentences for w in s.words]
        flat_upos = [u for s in self.sentences for u in s.upos]
        flat_feats = [f for s in self.sentences for f in s.feats]
        flat_head = [(-1 if h == 0 else s.start + h - 1) for s in self.sentences
                     for h in s.heads]
        mentions = []
        for cid, s, e, order in self.raw:
            head = next(i for i in range(s, e + 1) if not (s <= flat_head[i] <= e))
            number, person, gender = _attributes(flat_upos[head], flat_words[head],
                                                 flat_feats[head])
            mentions.append((s, -e, order, Mention(
                doc_id=self.doc_id, chain_id=cid, sent_idx=int(sent_of[s]), start=s, end=e,
                head_word=head, words=tuple(flat_words[s:e + 1]),
                type=mention_type(flat_upos[head]), number=number, person=person,
                gender=gender, end_sent_idx=int(sent_of[e]))))
        mentions.sort(key=lambda x: x[:3])
        return CorefDocument(self.doc_id, self.sentences, [m for *_, m in mentions],
                             source=self.path)


def _blocks(lines: list[str]):
    """Yield (first line no., lines with their numbers) for each blank-line-separated block."""
    block: list[tuple[int, str]] = []
    for no, line in enumerate(lines, start=1):
        if line.strip():
            block.append((no, line))
        elif block:
            yield block
            block = []
    if block:
        yield block


def read_ontogum(path: str | Path) -> list[CorefDocument]:
    """Read a CoNLL-U file (or every ``*.conllu`` in a folder, sorted) into documents.

    Documents start at ``# newdoc id = ...`` (else the file stem). Coreference comes from
    ``Entity=`` in MISC (CorefUD brackets, ids only). Multiword-token and empty-node lines
    are skipped (coreference sits on syntactic words). Raises :class:`CorefFormatError`
    naming file, document, sentence and line on unmatched brackets, malformed trees or
    unparsable lines."""
    path = Path(path)
    if path.is_dir():
        return [d for f in sorted(path.glob("*.conllu")) for d in read_ontogum(f)]
    docs: list[CorefDocument] = []
    builder: _DocBuilder | None = None
    text = path.read_text(encoding="utf-8").splitlines()
    for n_sent, block in enumerate(_blocks(text)):
        first = block[0][0]
        try:
            tl = conllu.parse("\n".join(ln for _, ln in block) + "\n\n")[0]
        except Exception as e:  # conllu raises its own ParseException and ValueErrors
            raise CorefFormatError(f"{path}:{first}: cannot parse sentence block: {e}") from e
        doc_id = tl.metadata.get("newdoc id") or tl.metadata.get("newdoc")
        if builder is None or doc_id:
            if builder is not None:
                docs.append(builder.finish())
            builder = _DocBuilder(doc_id or path.stem, str(path), first)
        word_lines = [no for no, ln in block if not ln.startswith("#")]
        if len(word_lines) != len(tl):
            raise CorefFormatError(f"{path}:{first}: document {builder.doc_id}: token lines "
                                   "and parsed tokens disagree")
        sent_id = tl.metadata.get("sent_id", f"{builder.doc_id}#{n_sent + 1}")
        builder.add_sentence(tl, sent_id, word_lines, first)
    if builder is not None:
        docs.append(builder.finish())
    return docs


def read_ontogum_split(data_dir: str | Path, split: str) -> list[CorefDocument]:
    """The documents of ``ontogum/splits/ontogum.<split>.txt``, in that order."""
    root = Path(data_dir) / "ontogum"
    names = (root / "splits" / f"ontogum.{split}.txt").read_text().split()
    return [d for name in names for d in read_ontogum(root / "conllu" / f"{name}.conllu")]
