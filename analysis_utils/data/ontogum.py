"""OntoGUM coreference (CoNLL-U with CorefUD ``Entity=`` brackets in MISC, gold UD trees):
documents, sentences and mentions with their head word, type, number, person and gender.

``read_ontogum(path)`` reads any file; ``read_ontogum_split(data_dir, split)`` reads the gold
data through the checksummed manifest (``manifest.require``). The CoNLL-U layer (blocks, line
numbers, the 10-column/ID/HEAD/tree checks, the ``conllu`` parse) is the treebank reader's
(``treebank.scan_conllu``); this module adds documents and ``Entity=`` brackets. Errors are
:class:`CorefFormatError` (a ``treebank.CorpusFormatError``) as ``file:line: document D,
sentence S: what is wrong``; ``check_ontogum(path)`` collects every problem instead of raising.
Conventions (head word, type, agreement features) are described in ``analyses/coref.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import treebank
from .errors import CorpusFormatError
from .manifest import require
from .treebank import Problem

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


class CorefFormatError(CorpusFormatError):
    """Malformed coreference input, as ``file:line: document D, sentence S: what is wrong``."""


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
    """Collects one document's sentences and bracket spans. Every problem goes to ``report``
    (which raises in the readers and collects in ``check_ontogum``)."""

    def __init__(self, doc_id: str, path: str, line: int, report: Callable[[Problem], None]):
        self.doc_id, self.path, self.line, self.report = doc_id, path, line, report
        self.sentences: list[CorefSentence] = []
        self.raw: list[tuple[str, int, int, int]] = []  # chain, start, end, order
        self.open: dict[str, list[tuple[int, str, int]]] = {}  # id -> [(start, sent, line)]
        self.n = 0
        self.complete = True  # False once a malformed sentence was skipped (check_ontogum)
        self.document: CorefDocument | None = None

    def problem(self, msg: str, sent_id: str | None, line: int) -> None:
        where = f"document {self.doc_id}"
        if sent_id is not None:
            where += f", sentence {sent_id}"
        self.report(Problem(line, f"{where}: {msg}"))

    def add_entities(self, entities: list[tuple[int, int, str]], sent_id: str) -> None:
        """Match the ``Entity=`` brackets of one sentence: (word index in it, line, value)."""
        for k, ln, value in entities:
            try:
                brackets = parse_entity(value)
            except ValueError as e:
                self.problem(str(e), sent_id, ln)
                continue
            i = self.n + k
            for kind, cid in brackets:
                if kind == "single":
                    self.raw.append((cid, i, i, len(self.raw)))
                elif kind == "open":
                    self.open.setdefault(cid, []).append((i, sent_id, ln))
                else:
                    stack = self.open.get(cid)
                    if not stack:
                        self.problem(f"closing bracket '{cid})' without an open mention of entity "
                                     f"{cid}", sent_id, ln)
                        continue
                    s, _, _ = stack.pop()
                    self.raw.append((cid, s, i, len(self.raw)))

    def add_sentence(self, s: treebank.ConlluBlock, sent_id: str) -> None:
        """A sentence that passed the shared CoNLL-U checks (so its tree is well formed)."""
        entities = []
        for k, (t, ln) in enumerate(zip(s.words, s.word_lines, strict=True)):
            value = (t["misc"] or {}).get("Entity")
            if value:
                entities.append((k, ln, value))
        self.add_entities(entities, sent_id)
        self.sentences.append(CorefSentence(
            sent_id=sent_id, words=tuple(t["form"] for t in s.words),
            upos=tuple(t["upos"] for t in s.words), heads=s.heads,
            deprels=tuple(t["deprel"] for t in s.words),
            feats=tuple(t["feats"] or None for t in s.words), start=self.n, line=s.word_lines[0]))
        self.n += len(s.words)

    def skip_sentence(self, block: treebank.Block, sent_id: str) -> None:
        """A sentence that failed the CoNLL-U checks (already reported): its brackets are still
        matched, read from the raw MISC column, so one bad tree does not turn every mention
        around it into a bracket error; the document gets no mentions."""
        entities, k = [], 0
        for no, line in block.lines:
            cols = line.split("\t")
            if line.startswith("#") or not _WORD_ID.match(cols[0]):
                continue
            if len(cols) == 10:
                entities += [(k, no, item[len("Entity="):]) for item in cols[9].split("|")
                             if item.startswith("Entity=") and item != "Entity="]
            k += 1
        self.add_entities(entities, sent_id)
        self.n += k
        self.complete = False

    def finish(self) -> None:
        for cid, stack in self.open.items():
            for _s, sent_id, ln in stack:
                self.problem(f"mention of entity {cid} opened here is never closed", sent_id, ln)
        self.open = {}
        if not self.complete:
            return
        if not self.sentences:
            self.problem("document without sentences", None, self.line)
            return
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
        self.document = CorefDocument(self.doc_id, self.sentences, [m for *_, m in mentions],
                                      source=self.path)


_WORD_ID = re.compile(r"^[1-9][0-9]*$")


def _scan(path: Path, report: Callable[[Problem], None]) -> tuple[list[_DocBuilder], int, int]:
    """Read one CoNLL-U file through the shared CoNLL-U path (``treebank.scan_conllu``) into
    document builders; returns them with the number of sentences and words."""
    builders: list[_DocBuilder] = []
    builder: _DocBuilder | None = None
    n_words = n_sent = 0
    for n_sent, scanned in enumerate(treebank.scan_conllu(path), start=1):
        block, sentence = scanned.block, scanned.sentence
        if block is None:  # a file without sentences
            report(scanned.problems[0])
            return builders, 0, 0
        meta = sentence.tokens.metadata if sentence is not None else None
        if meta is not None:
            doc_id = meta.get("newdoc id") or meta.get("newdoc")
        else:
            doc_id = block.comment("newdoc id") or block.comment("newdoc")
        if builder is None or doc_id:
            if builder is not None:
                builder.finish()
            builder = _DocBuilder(doc_id or path.stem, str(path), block.first, report)
            builders.append(builder)
        default_id = f"{builder.doc_id}#{n_sent}"
        if sentence is None:
            sent_id = block.comment("sent_id") or default_id
            for p in scanned.problems:
                builder.problem(p.message, sent_id, p.line)
            builder.skip_sentence(block, sent_id)
        else:
            builder.add_sentence(sentence, meta.get("sent_id", default_id))
            n_words += len(sentence.words)
    if builder is not None:
        builder.finish()
    return builders, n_sent, n_words


def read_ontogum(path: str | Path) -> list[CorefDocument]:
    """Read a CoNLL-U file (or every ``*.conllu`` in a folder, sorted) into documents.

    Documents start at ``# newdoc id = ...`` (else the file stem). Coreference comes from
    ``Entity=`` in MISC (CorefUD brackets, ids only). Multiword-token and empty-node lines
    are skipped (coreference sits on syntactic words). The CoNLL-U is split, checked and
    parsed by the treebank reader's code (``treebank.scan_conllu``). Raises
    :class:`CorefFormatError` (a ``CorpusFormatError``) as ``file:line: document D, sentence S:
    what is wrong`` on the first malformed line, tree or bracket, and on an empty file.

    This reads any path as given; ``read_ontogum_split`` reads the gold data through the
    checksummed manifest."""
    path = Path(path)
    if path.is_dir():
        return [d for f in sorted(path.glob("*.conllu")) for d in read_ontogum(f)]

    def fail(problem: Problem) -> None:
        raise CorefFormatError(problem.format(path))

    builders, _, _ = _scan(path, fail)
    return [b.document for b in builders]


@dataclass
class CorefCheck:
    """What :func:`check_ontogum` found in one file: every problem, and its counts."""

    path: str
    problems: list[Problem]
    sentences: int
    words: int
    documents: int
    mentions: int


def check_ontogum(path: str | Path) -> CorefCheck:
    """Check a CoNLL-U file with coreference brackets the way :func:`read_ontogum` reads it, but
    collect every problem instead of raising at the first (``python -m analysis_utils validate
    --coref``). Counts cover the whole file (mentions: matched bracket pairs)."""
    path = Path(path)
    problems: list[Problem] = []
    builders, n_sent, n_words = _scan(path, problems.append)
    return CorefCheck(path=str(path), problems=problems, sentences=n_sent, words=n_words,
                      documents=len(builders), mentions=sum(len(b.raw) for b in builders))


SPLITS = ("train", "dev", "test")


def read_ontogum_split(data_dir: str | Path | None, split: str) -> list[CorefDocument]:
    """The documents of ``ontogum/splits/ontogum.<split>.txt``, in that order.

    The split list and every document go through :func:`manifest.require`: a missing or corrupt
    file (size or sha256 differs from the manifest) raises ``DataMissingError`` /
    ``DataCorruptError`` naming the command that restores it, before anything is parsed."""
    if split not in SPLITS:
        raise ValueError(f"unknown OntoGUM split {split!r}; expected one of {SPLITS}")
    split_list = require(f"ontogum/splits/ontogum.{split}.txt", data_dir=data_dir)
    names = split_list.read_text(encoding="utf-8").split()
    files = [require(f"ontogum/conllu/{name}.conllu", data_dir=data_dir) for name in names]
    return [d for f in files for d in read_ontogum(f)]
