"""Quotes as a reader sees them: the registry's verbatim words with the residue of the papers'
source text taken out. Pure functions of a string; the registry keeps the verbatim text (its
tests check it against the papers), and only pages that *show* a quote call this.

Three kinds of residue, each a narrow pattern, each changed span reported by
:func:`display_edits` so a test can check that nothing else moved:

- ``label``: a LaTeX cross-reference that the papers' text conversion left as its bare key
  (Kovaleva: "fig:cosine shows that", "(see fig:disableheadsall)", "tab:glue-results shows")
  or as a command (``\\ref{fig:x}``, ``\\autoref{...}``). The number it stood for is not in the
  text, so it becomes an editor's bracket naming the kind: ``[Figure]``, ``[Table]``,
  ``[Section]``, ``[Equation]``, ``[Appendix]``. A ``\\label{...}`` is dropped.
- ``math``: inline LaTeX math made only of a few symbols (``$\\sim 8\\%$`` -> ``~8%``); math
  with anything else left in it stays as printed.
- ``hyphen``: a word split at a line or page break: a hyphen followed by a space, or by the
  registry's page-break join ``" [...] "``, then a lower-case word ("some- [...] times" ->
  "sometimes"). Hyphens inside words ("fine-tuning", "head-to-head") are never touched; a
  split after a compound's first element keeps its hyphen ("self- attention" ->
  "self-attention", "head-to- head" -> "head-to-head"); a suspended hyphen ("pre- and
  post-training") and a split before a hyphenated word ("attention- and-words") stay as
  printed.

>>> display_quote("fig:cosine shows that some- [...] times it is $\\\\sim 8\\\\%$.")
'[Figure] shows that sometimes it is ~8%.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: a label's prefix -> the bracket shown in its place
LABEL_KINDS = {"fig": "[Figure]", "tab": "[Table]", "sec": "[Section]", "eq": "[Equation]",
               "app": "[Appendix]"}
#: first elements of compounds written with a hyphen: a split after one keeps the hyphen
COMPOUND_FIRST = frozenset({"self", "non", "pre", "post", "multi", "cross", "fine", "semi",
                            "well", "half", "all", "anti", "task", "token", "head", "word",
                            "sentence", "layer", "fixed", "long", "short", "low", "high",
                            "state", "part", "out", "over", "under"})
#: words after a suspended hyphen ("pre- and post-training"): never joined
SUSPENDED = frozenset({"and", "or", "nor", "to", "as", "but", "versus", "vs", "than", "not"})
#: LaTeX math symbols shown as characters; ``prefix`` ones bind to what follows
_MATH = {r"\sim": ("~", True), r"\approx": ("\u2248", True), r"\times": ("\u00d7", False),
         r"\pm": ("\u00b1", True), r"\leq": ("\u2264", True), r"\le": ("\u2264", True),
         r"\geq": ("\u2265", True), r"\ge": ("\u2265", True), r"\%": ("%", False),
         r"\cdot": ("\u00b7", False)}

_KEY = r"[A-Za-z][A-Za-z0-9_]*(?:[-.:][A-Za-z0-9_]+)*"
_PREFIX = "|".join(LABEL_KINDS)
_LABEL_CMD = re.compile(r"\\label\{[^{}]*\}")
_REF_CMD = re.compile(r"\\(?:ref|autoref|cref|Cref|eqref|pageref)\{(?:(" + _PREFIX
                      + r")[:.-])?[^{}]*\}")
_REF_BARE = re.compile(r"(?<![\w:/.\\{-])(" + _PREFIX + r"):" + _KEY)
_MATH_SPAN = re.compile(r"\$([^$]{1,40})\$")
_MATH_CMD = re.compile(r"\\[A-Za-z]+|\\%")
_HYPHEN = re.compile(r"(?<![\w-])((?:[A-Za-z]+-)*)([A-Za-z]*[a-z])- (\[\.\.\.\] )?([a-z]+)"
                     r"(?![\w-])")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Edit:
    """One span of the (whitespace-normalised) quote and what is shown in its place."""

    start: int
    end: int
    before: str
    after: str
    kind: str  # "label" | "math" | "hyphen"


def _math(body: str) -> str | None:
    """The math ``body`` as plain characters, or ``None`` when it holds anything else."""
    out = []
    pos = 0
    for m in _MATH_CMD.finditer(body):
        out.append(body[pos:m.start()])
        sym = _MATH.get(m.group(0))
        if sym is None:
            return None
        out.append(sym[0] + ("\x00" if sym[1] else ""))
        pos = m.end()
    out.append(body[pos:])
    text = "".join(out)
    if re.search(r"[\\{}^_$]", text):
        return None
    text = re.sub(r"\x00\s*", "", text)
    return _SPACE.sub(" ", text).strip() or None


def _hyphen(m: re.Match) -> str | None:
    """What a line-break hyphen match is shown as, or ``None`` to leave it as printed."""
    compound, first, _, rest = m.groups()
    if rest in SUSPENDED or len(first) < 2 or len(rest) < 2:
        return None
    if compound or first.lower() in COMPOUND_FIRST:
        return f"{compound}{first}-{rest}"
    return f"{first}{rest}"


def display_edits(text: str) -> list[Edit]:
    """Every span :func:`display_quote` changes in ``text`` (whitespace-normalised first:
    offsets are into ``" ".join(text.split())``), in order, none overlapping."""
    text = _SPACE.sub(" ", text).strip()
    edits: list[Edit] = []

    def add(start: int, end: int, after: str, kind: str) -> None:
        if any(start < e.end and e.start < end for e in edits):
            return
        edits.append(Edit(start, end, text[start:end], after, kind))

    for m in _LABEL_CMD.finditer(text):
        add(m.start(), m.end(), "", "label")
    for m in _REF_CMD.finditer(text):
        add(m.start(), m.end(), LABEL_KINDS.get(m.group(1) or "", "[reference]"), "label")
    for m in _REF_BARE.finditer(text):
        add(m.start(), m.end(), LABEL_KINDS[m.group(1)], "label")
    for m in _MATH_SPAN.finditer(text):
        shown = _math(m.group(1))
        if shown is not None:
            add(m.start(), m.end(), shown, "math")
    for m in _HYPHEN.finditer(text):
        shown = _hyphen(m)
        if shown is not None:
            add(m.start(), m.end(), shown, "hyphen")
    return sorted(edits, key=lambda e: e.start)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` (whitespace-normalised) with each edit's span replaced by its ``after``."""
    text = _SPACE.sub(" ", text).strip()
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        if text[e.start:e.end] != e.before or e.start < pos:
            raise ValueError(f"edit {e} does not fit the text")
        out += [text[pos:e.start], e.after]
        pos = e.end
    out.append(text[pos:])
    return _SPACE.sub(" ", "".join(out)).strip()


def display_quote(text: str) -> str:
    """The quote as shown: whitespace normalised, LaTeX labels and references, simple inline
    math and line-break hyphenation undone (:func:`display_edits`); everything else verbatim.

    >>> display_quote("At the same time, tab:glue-results shows that fine-tuned BERT wins")
    'At the same time, [Table] shows that fine-tuned BERT wins'
    >>> display_quote("heads that be- [...] have similarly; self- attention; pre- and post-")
    'heads that behave similarly; self-attention; pre- and post-'
    """
    return apply_edits(text, display_edits(text))


__all__ = ["COMPOUND_FIRST", "Edit", "LABEL_KINDS", "SUSPENDED", "apply_edits", "display_edits",
           "display_quote"]
