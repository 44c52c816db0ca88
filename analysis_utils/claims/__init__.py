"""The claims registry: every empirical claim of Clark et al. 2019 and Kovaleva et al. 2019 in
the sections notebooks 01-07 cover, each with the paper's sentence verbatim, the notebook that
measures it, the criterion in the paper's own terms, the unit that was sampled, and the ledger
rows (``results/08_claims.csv``) that test it, if any.

The data are ``registry.toml`` beside this module (its header documents every field). This
module reads and validates them; ``python -m analysis_utils.claims`` prints the counts, the
entries the ledger tests, the gap list (testable entries no ledger row tests yet) and the
untestable entries with their reasons. No notebook imports this package.

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
>>> [e.id for e in entries if e.pending][:2]                # doctest: +SKIP
['clark-3.1-current-token', 'clark-3.1-positional-early']
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields
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
_LEDGER_REF = re.compile(r"^(0[1-7]): (\S.*)$")


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
    ledger_claims: tuple[str, ...]
    ledger_mismatch: str
    note: str

    @property
    def tested(self) -> bool:
        """Some ledger row tests it."""
        return bool(self.ledger_claims)

    @property
    def pending(self) -> bool:
        """Testable here, but no ledger row tests it yet: the gap list."""
        return self.testable == "yes" and not self.ledger_claims

    @property
    def untestable(self) -> bool:
        return self.testable == "untestable"


FIELDS = tuple(f.name for f in fields(Entry))
_LISTS = ("notebooks", "ledger_claims")


class RegistryError(ValueError):
    """The registry breaks a rule; the message names the entry and the fix."""


def ledger_key(notebook: str, claim: str) -> str:
    """How a registry entry names a ledger row: ``"02: a head tracks det better ..."``
    (the row's notebook, zero-padded, and its claim text)."""
    return f"{int(notebook):02d}: {claim}"


def parse_ledger_key(key: str) -> tuple[str, str]:
    """``"02: claim text"`` -> ``("02", "claim text")``; anything else raises."""
    m = _LEDGER_REF.match(key)
    if not m:
        raise RegistryError(f"ledger reference {key!r} is not 'NN: claim text' (NN 01-07)")
    return m.group(1), m.group(2)


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
    """The registry's entries, validated."""
    return parse(Path(path).read_text(encoding="utf-8"))


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
        for ref in e.ledger_claims:
            try:
                nb, _ = parse_ledger_key(ref)
            except RegistryError as err:
                out.append(f"{who}: {err}")
                continue
            if nb not in e.notebooks:
                out.append(f"{who}: ledger row {ref!r} is from notebook {nb}, which is not in "
                           f"notebooks {list(e.notebooks)}")
        if len(set(e.ledger_claims)) != len(e.ledger_claims):
            out.append(f"{who}: a ledger row is listed twice")
        if e.ledger_mismatch.strip() and not e.ledger_claims:
            out.append(f"{who}: ledger_mismatch without ledger_claims (a mismatch note "
                       "describes rows that test the entry)")
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


def ledger_keys(ledger) -> set[str]:
    """The ``"NN: claim"`` keys of a ledger table (``results/08_claims.csv`` read by pandas,
    with ``notebook`` read as text or number)."""
    return {ledger_key(str(nb), str(c)) for nb, c in zip(ledger["notebook"], ledger["claim"],
                                                         strict=True)}


def unregistered(entries: list[Entry], keys: set[str]) -> list[str]:
    """Ledger keys that no registry entry lists: rows without a quote."""
    listed = {k for e in entries for k in e.ledger_claims}
    return sorted(keys - listed)


def dangling(entries: list[Entry], keys: set[str]) -> list[str]:
    """``"<id>: <ref>"`` for every ledger reference that is not a row of the ledger."""
    return [f"{e.id}: {ref}" for e in entries for ref in e.ledger_claims if ref not in keys]


def frame(entries: list[Entry] | None = None):
    """The registry as a pandas table (lists joined by ``"; "``)."""
    import pandas as pd

    entries = load() if entries is None else entries
    rows = [{f: ("; ".join(getattr(e, f)) if f in _LISTS else getattr(e, f)) for f in FIELDS}
            for e in entries]
    return pd.DataFrame(rows, columns=list(FIELDS))


__all__ = ["Entry", "FIELDS", "KINDS", "LEDGER_PAPER", "NOTEBOOKS", "PAPER_FILES", "PAPERS_ENV",
           "REGISTRY", "RegistryError", "SOURCES", "TESTABLE", "check_quotes", "dangling",
           "find_quote", "frame", "ledger_key", "ledger_keys", "load", "normalise",
           "paper_texts", "papers_dir", "parse", "parse_ledger_key", "problems",
           "unregistered"]
