"""Which ledger rows test which registry entries, derived from the ledger's claims.

Each ledger :class:`~analysis_utils.ledger.core.Claim` names the registry entries it tests
(``Claim.registry``, ids of ``registry.toml``); the registry itself lists no ledger rows. From
the declared claims (:func:`analysis_utils.ledger.claims`). It lives in the ledger, which
imports the registry (:mod:`analysis_utils.claims`, for its ``quote`` column); the registry
imports nothing of the ledger:

- :func:`rows_by_entry`: ``{entry id: ["NN: claim", ...]}``, the rows that test each entry;
- :func:`tested` / :func:`pending`: an entry some row tests / a testable entry no row tests
  yet (the gap list);
- :func:`unregistered`: ledger rows that name no entry (rows without a quote);
- :func:`problems`: rows that name an id the registry lacks, an entry of the other paper, or
  an entry whose notebooks do not include the row's;
- :func:`orphan_notes`: entries whose ``ledger_mismatch`` note describes rows no longer there.

>>> rows = rows_by_entry()                                     # doctest: +SKIP
>>> rows["clark-3.1-previous-token-heads"]                     # doctest: +SKIP
['01: heads put > 50% of their attention on the previous token']
"""

from __future__ import annotations

from collections.abc import Sequence

from ..claims import LEDGER_PAPER, Entry, ledger_key

#: The ledger's own notebook: rows made from untestable entries that no notebook measures.
LEDGER_NOTEBOOK = "08"


def declared() -> list:
    """Every claim the ledger judges (:func:`analysis_utils.ledger.claims`)."""
    from . import claims  # the package's function (imported late: the package imports this)

    return claims()


def rows_by_entry(claims: Sequence | None = None) -> dict[str, list[str]]:
    """``{entry id: ["NN: claim", ...]}``: the ledger rows (``claims``, default
    :func:`declared`) that name each entry, in ledger order."""
    claims = declared() if claims is None else claims
    out: dict[str, list[str]] = {}
    for c in claims:
        for i in c.registry:
            key = ledger_key(c.notebook, c.claim)
            if key not in out.setdefault(i, []):
                out[i].append(key)
    return out


def tested(e: Entry, rows: dict[str, list[str]]) -> bool:
    """Some ledger row tests ``e`` (an untestable entry's own row, reading ``untestable``,
    counts)."""
    return bool(rows.get(e.id))


def pending(e: Entry, rows: dict[str, list[str]]) -> bool:
    """Testable here, but no ledger row tests it yet: the gap list."""
    return e.testable == "yes" and not rows.get(e.id)


def unregistered(claims: Sequence | None = None) -> list[str]:
    """``"NN: claim"`` of every ledger row that names no registry entry (so has no quote)."""
    claims = declared() if claims is None else claims
    return [ledger_key(c.notebook, c.claim) for c in claims if not c.registry]


def problems(entries: list[Entry], claims: Sequence | None = None) -> list[str]:
    """Every way the ledger's claims and the registry disagree, as one line each: an id the
    registry lacks, an entry of the other paper, a row whose notebook is not one of the
    entry's."""
    claims = declared() if claims is None else claims
    by_id = {e.id: e for e in entries}
    out = []
    for c in claims:
        key = ledger_key(c.notebook, c.claim)
        if len(set(c.registry)) != len(c.registry):
            out.append(f"{key}: names a registry entry twice")
        for i in c.registry:
            e = by_id.get(i)
            if e is None:
                out.append(f"{key}: names registry entry {i!r}, which the registry lacks")
                continue
            if LEDGER_PAPER[e.paper] != c.paper:
                out.append(f"{key}: is a claim of {c.paper}, but entry {i} is of "
                           f"{LEDGER_PAPER[e.paper]}")
            if c.notebook not in e.notebooks and not (
                    c.notebook == LEDGER_NOTEBOOK and not e.notebooks):
                out.append(f"{key}: is notebook {c.notebook}'s, which is not in entry {i}'s "
                           f"notebooks {list(e.notebooks)}")
    return out


def orphan_notes(entries: list[Entry], rows: dict[str, list[str]]) -> list[str]:
    """Entries whose ``ledger_mismatch`` note describes rows that test them, though no ledger
    row names them (a stale note, or a Claim that forgot its ``registry`` id)."""
    return [f"{e.id}: ledger_mismatch describes rows that test it, but no ledger row names it "
            "(update the note, or name the entry in the Claim that tests it)"
            for e in entries if e.ledger_mismatch.strip() and not rows.get(e.id)]


__all__ = ["LEDGER_NOTEBOOK", "declared", "orphan_notes", "pending", "problems", "rows_by_entry",
           "tested", "unregistered"]
