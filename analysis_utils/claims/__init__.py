"""The claims registry: every empirical claim of Clark et al. 2019 and Kovaleva et al. 2019 in
the sections notebooks 01-07 cover, each with the paper's sentence verbatim, the notebook that
measures it, the criterion in the paper's own terms and the unit that was sampled.

The data are ``registry.toml`` beside this module (its header documents every field). This
module reads and validates them; the ledger's ``quote`` column is read from here
(:func:`quotes`), so notebooks import this package through :mod:`analysis_utils.ledger`:
importing it reads nothing (the registry is read on first use; the papers' texts only by
:func:`paper_texts`, which the tests call). Which ledger rows test an entry is said by the
ledger's claims (``Claim.registry``), not here: :mod:`.coverage` derives it.
``python -m analysis_utils claims`` prints the counts, the entries the ledger tests, the gap
list (testable entries no ledger row tests yet) and the untestable entries with their reasons.

Quotes are checked against the papers' texts (:func:`check_quotes`), which live outside the
repository, in ``../shared/papers/`` beside it or wherever ``$BERTOLOGY_PAPERS_DIR`` points.
Matching normalises whitespace only (:func:`normalise`): every run of spaces, tabs and line
breaks becomes one space (tables' tabs and the markdown's line breaks included). Hyphenation
is not undone: the texts' few line-end hyphens stand before a figure, a footnote or a page
break (Clark: "that be-", then Figure 6's caption, then "have similarly"), and one is a real
hyphen ("The attention-" / "and-words"), so joining would corrupt it. A quote of pieces that
such a break splits joins them with ``" [...] "``; each piece must be found verbatim, in
order. Everything else (curly or straight quotes, backticks, ``<b>`` tags, LaTeX, the texts'
typos) must match character for character.

Kovaleva et al.'s text carries no section numbers; the registry uses the arXiv numbering, as
the ledger does: 4.1 self-attention patterns, 4.2 relation-specific heads, 4.3 change after
fine-tuning, 4.4 attention to linguistic features, 4.5 token-to-token attention, 4.6 disabling
heads, 5 Discussion, 6 Conclusion.

>>> entries = load()                                        # doctest: +SKIP
>>> quotes()["clark-3.1-current-token"]                     # doctest: +SKIP
'We find that most heads put little attention on the current token.'
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

REGISTRY = Path(__file__).with_name("registry.toml")
REPO_ROOT = Path(__file__).resolve().parents[2]
PAPERS_ENV = "BERTOLOGY_PAPERS_DIR"
#: paper key -> its text's file name in the papers folder
PAPER_FILES = {"clark2019": "clark2019_what_does_bert_look_at.md",
               "kovaleva2019": "kovaleva2019_dark_secrets_of_bert.md"}
#: paper key -> how the ledger's ``paper`` column names it
LEDGER_PAPER = {"clark2019": "Clark et al. 2019", "kovaleva2019": "Kovaleva et al. 2019"}
SOURCES = ("text", "table", "caption")
KINDS = ("finding", "negative", "exception", "hedged", "ordering", "descriptive",
         "interpretation")
TESTABLE = ("yes", "untestable")
NOTEBOOKS = tuple(f"{i:02d}" for i in range(1, 8))
PIECE_SEPARATOR = " [...] "
MIN_QUOTE_WORDS = 3
_ID = re.compile(r"^(clark|kovaleva)-[a-z0-9][a-z0-9.-]*$")


@dataclass(frozen=True)
class Entry:
    """One claim of the registry; fields as documented in ``registry.toml``'s header."""

    id: str
    paper: str
    section: str
    source: str
    kind: str
    quote: str
    claim: str
    notebooks: tuple[str, ...]
    criterion: str
    unit: str
    scope: str
    testable: str
    untestable_reason: str
    ledger_mismatch: str
    note: str

    @property
    def untestable(self) -> bool:
        return self.testable == "untestable"


FIELDS = tuple(f.name for f in fields(Entry))
_LISTS = ("notebooks",)


class RegistryError(ValueError):
    """The registry breaks a rule; the message names the entry and the fix."""


def ledger_key(notebook: str, claim: str) -> str:
    """How the registry's printout names a ledger row: ``"02: a head tracks det better ..."``
    (the row's notebook, zero-padded, and its claim text)."""
    return f"{int(notebook):02d}: {claim}"


def _entry(raw: dict, where: str) -> Entry:
    missing = [f for f in FIELDS if f not in raw]
    extra = [k for k in raw if k not in FIELDS]
    if missing or extra:
        raise RegistryError(f"{where}: " + "; ".join(
            ([f"missing field(s) {missing}"] if missing else [])
            + ([f"unknown field(s) {extra} (fields: {list(FIELDS)})"] if extra else [])))
    vals = {}
    for f in FIELDS:
        v = raw[f]
        if f in _LISTS:
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise RegistryError(f"{where}: {f} must be a list of strings, got {v!r}")
            vals[f] = tuple(v)
        else:
            if not isinstance(v, str):
                raise RegistryError(f"{where}: {f} must be a string, got {v!r}")
            vals[f] = v
    return Entry(**vals)


def parse(text: str) -> list[Entry]:
    """Entries of a registry's TOML text, each checked by :func:`problems` (raises
    :class:`RegistryError` listing every problem)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RegistryError(f"the registry is not valid TOML: {err}") from None
    if set(data) != {"claim"} or not isinstance(data["claim"], list):
        raise RegistryError("the registry must hold only [[claim]] tables")
    entries = [_entry(raw, f"[[claim]] #{i + 1} ({raw.get('id', 'no id')})")
               for i, raw in enumerate(data["claim"])]
    errs = problems(entries)
    if errs:
        raise RegistryError("the claims registry has problems:\n- " + "\n- ".join(errs))
    return entries


def load(path: str | Path = REGISTRY) -> list[Entry]:
    """The registry's entries, validated (read again only when the file changes)."""
    p = Path(path)
    st = p.stat()
    return list(_load(str(p.resolve()), st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> tuple[Entry, ...]:
    return tuple(parse(Path(path).read_text(encoding="utf-8")))


def quotes(path: str | Path = REGISTRY) -> dict[str, str]:
    """``{entry id: the paper's words}``: the ledger's ``quote`` column."""
    return {e.id: normalise(e.quote) for e in load(path)}


def display_quotes(path: str | Path = REGISTRY) -> dict[str, str]:
    """``{entry id: the paper's words as shown}``: :func:`quotes` with the source text's
    residue taken out (LaTeX labels, simple inline math, line-break hyphens:
    :func:`.display.display_quote`). For pages that show a quote; the ledger keeps
    :func:`quotes`, verbatim."""
    from .display import display_quote

    return {e.id: display_quote(e.quote) for e in load(path)}


def problems(entries: list[Entry]) -> list[str]:
    """Every rule an entry breaks, as ``"<id>: what is wrong (how to fix)"``; empty when valid.
    Quotes are checked separately (:func:`check_quotes`: the papers live outside the repo)."""
    out: list[str] = []
    seen: set[str] = set()
    for e in entries:
        who = e.id or "<no id>"
        if not _ID.match(e.id):
            out.append(f"{who}: id must look like 'clark-4.2-direction' (lower case, "
                       "starting clark- or kovaleva-)")
        if e.id in seen:
            out.append(f"{who}: duplicate id (ids must be unique)")
        seen.add(e.id)
        if e.paper not in PAPER_FILES:
            out.append(f"{who}: paper {e.paper!r} is not one of {sorted(PAPER_FILES)}")
        elif not e.id.startswith(e.paper.removesuffix("2019") + "-"):
            out.append(f"{who}: id must start with '{e.paper.removesuffix('2019')}-' "
                       f"for paper {e.paper}")
        if e.source not in SOURCES:
            out.append(f"{who}: source {e.source!r} is not one of {SOURCES}")
        if e.kind not in KINDS:
            out.append(f"{who}: kind {e.kind!r} is not one of {KINDS}")
        if e.testable not in TESTABLE:
            out.append(f"{who}: testable {e.testable!r} is not one of {TESTABLE}")
        for f in ("section", "quote", "claim", "criterion", "unit", "scope"):
            if not getattr(e, f).strip():
                out.append(f"{who}: {f} is empty")
        if e.quote.strip() and len(e.quote.split()) < MIN_QUOTE_WORDS:
            out.append(f"{who}: quote has fewer than {MIN_QUOTE_WORDS} words (quote the "
                       "sentence, or the table row, that states the claim)")
        if e.testable == "untestable" and not e.untestable_reason.strip():
            out.append(f"{who}: untestable without untestable_reason (say why no test here "
                       "can decide)")
        if e.testable == "yes" and e.untestable_reason.strip():
            out.append(f"{who}: untestable_reason given but testable = 'yes' (empty it, or "
                       "set testable = 'untestable')")
        bad = [n for n in e.notebooks if n not in NOTEBOOKS]
        if bad or len(set(e.notebooks)) != len(e.notebooks):
            out.append(f"{who}: notebooks {list(e.notebooks)} must be distinct values of "
                       f"{NOTEBOOKS}")
        if PIECE_SEPARATOR.strip() in e.quote and PIECE_SEPARATOR not in normalise(e.quote):
            out.append(f"{who}: write the piece separator as {PIECE_SEPARATOR!r}")
    return out


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Whitespace only: every run of whitespace (spaces, tabs, line breaks) becomes one
    space; ends stripped. Nothing else changes (hyphens at line ends stay)."""
    return _SPACE.sub(" ", text).strip()


def papers_dir() -> Path:
    """``$BERTOLOGY_PAPERS_DIR``, else ``../shared/papers`` beside the repository."""
    env = os.environ.get(PAPERS_ENV)
    return Path(env) if env else REPO_ROOT.parent / "shared" / "papers"


def paper_texts(folder: str | Path | None = None) -> dict[str, str]:
    """``{paper key: normalised text}``; a missing file raises, naming the folder setting."""
    folder = Path(folder) if folder is not None else papers_dir()
    out = {}
    for key, name in PAPER_FILES.items():
        p = folder / name
        if not p.is_file():
            raise FileNotFoundError(f"{p} is missing: point ${PAPERS_ENV} at the folder that "
                                    f"holds {sorted(PAPER_FILES.values())}")
        out[key] = normalise(p.read_text(encoding="utf-8"))
    return out


def find_quote(quote: str, text: str) -> tuple[bool, str]:
    """Whether ``quote`` (pieces joined by ``" [...] "``, in order) is in the normalised
    ``text``; when not, the part of the first missing piece that does match, to say where
    it departs."""
    pos = 0
    for piece in normalise(quote).split(PIECE_SEPARATOR.strip()):
        piece = piece.strip()
        i = text.find(piece, pos)
        if i < 0:
            lo, hi = 0, len(piece)
            while lo < hi:  # the longest prefix of the piece found in the text
                mid = (lo + hi + 1) // 2
                if text.find(piece[:mid], pos) >= 0:
                    lo = mid
                else:
                    hi = mid - 1
            return False, (f"matches up to {piece[:lo][-40:]!r}, then the text differs at "
                           f"{piece[lo:lo + 30]!r}")
        pos = i + len(piece)
    return True, ""


def check_quotes(entries: list[Entry], texts: dict[str, str]) -> list[str]:
    """``"<id>: ..."`` for every quote not found verbatim in its paper's text."""
    out = []
    for e in entries:
        ok, why = find_quote(e.quote, texts[e.paper])
        if not ok:
            out.append(f"{e.id}: quote not found in {PAPER_FILES[e.paper]}: {why}")
    return out


def frame(entries: list[Entry] | None = None):
    """The registry as a pandas table (lists joined by ``"; "``)."""
    import pandas as pd

    entries = load() if entries is None else entries
    rows = [{f: ("; ".join(getattr(e, f)) if f in _LISTS else getattr(e, f)) for f in FIELDS}
            for e in entries]
    return pd.DataFrame(rows, columns=list(FIELDS))


__all__ = ["Entry", "FIELDS", "KINDS", "LEDGER_PAPER", "NOTEBOOKS", "PAPER_FILES", "PAPERS_ENV",
           "REGISTRY", "RegistryError", "SOURCES", "TESTABLE", "check_quotes", "display_quotes",
           "find_quote", "frame", "ledger_key", "load", "normalise", "paper_texts",
           "papers_dir", "parse", "problems", "quotes"]
