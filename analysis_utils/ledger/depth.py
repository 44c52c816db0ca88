"""One depth convention for every claim about *where* in the network something happens
(issue 33, point 5), stated once here and used by every depth rule of the ledger.

Layers and heads are numbered from 1, as the papers do. Layer ``l`` of an ``L``-layer model
sits at relative depth ``l / L`` (its top). A range of BERT-base's layers, ``first`` to
``last`` of 12 (the papers' own words: "layers 6-10", "the last two layers"), covers the
depths ``(first - 1) / 12 < d <= last / 12``; this model's layers in that range are those
whose depth falls inside it (:func:`layers_at`). The papers' thirds ("early", "middle",
"deep"; "earlier" and "later" layers) are BERT-base's layers 1-4, 5-8 and 9-12, so the same
rule gives them (:func:`third`, :data:`THIRDS`).

On a 6-layer model (all-MiniLM-L6-v2) one layer is two of BERT-base's: layers 6-10 of 12 are
layers 3-5 of 6, and BERT-base's last two layers (11-12) are layer 6 alone, while *this*
model's last two layers are a third of it. A claim that names a count of layers ("the last
two layers") is tested on that many of this model's layers, and its row says what share of
the depth that is (:func:`share_note`).

>>> layers_at(6, 6, 10)
[3, 4, 5]
>>> layers_at(12, 6, 10)
[6, 7, 8, 9, 10]
>>> [third(layer, 6) for layer in range(1, 7)]
[0, 0, 1, 1, 2, 2]
"""

from __future__ import annotations

import math

from ..papers import BERT_BASE_LAYERS
from .readings import chosen, reading  # noqa: F401  (reading: the doctests below)

#: The papers' thirds as BERT-base layer ranges (1-based, inclusive).
THIRDS = {"early": (1, 4), "middle": (5, 8), "deep": (9, 12)}
_EPS = 1e-9


def _check(num_layers: int) -> int:
    if not isinstance(num_layers, int | float) or num_layers < 1 or int(num_layers) != num_layers:
        raise ValueError(f"num_layers must be a positive whole number, got {num_layers!r}")
    return int(num_layers)


def layers_at(num_layers: int, first: int, last: int) -> list[int]:
    """This model's layers (1-based) at the relative depths of BERT-base's layers ``first`` to
    ``last`` (1-based, inclusive): ``(first - 1) / 12 < l / L <= last / 12``. Never empty for
    a valid range: a range narrower than one of this model's layers gives the layer that
    holds its top."""
    L = _check(num_layers)
    if not 1 <= first <= last <= BERT_BASE_LAYERS:
        raise ValueError(f"a BERT-base layer range needs 1 <= first <= last <= "
                         f"{BERT_BASE_LAYERS}, got {first}-{last}")
    lo, hi = (first - 1) / BERT_BASE_LAYERS, last / BERT_BASE_LAYERS
    out = [ly for ly in range(1, L + 1) if lo + _EPS < ly / L <= hi + _EPS]
    return out or [min(L, max(1, math.ceil(hi * L - _EPS)))]


def third(layer: int, num_layers: int) -> int:
    """0, 1 or 2: the third of the depth (early, middle, deep) that layer ``layer`` (1-based)
    of ``num_layers`` falls in, by :data:`THIRDS` and :func:`layers_at`'s rule."""
    L = _check(num_layers)
    if not 1 <= layer <= L:
        raise ValueError(f"layer must lie in 1..{L} (1-based), got {layer}")
    return min(2, math.ceil(3 * layer / L - _EPS) - 1)


def thirds(num_layers: int) -> dict[str, list[int]]:
    """``{"early": [...], "middle": [...], "deep": [...]}``: this model's layers per third."""
    L = _check(num_layers)
    names = list(THIRDS)
    out: dict[str, list[int]] = {n: [] for n in names}
    for ly in range(1, L + 1):
        out[names[third(ly, L)]].append(ly)
    return out


def share_note(count: int, num_layers: int, words: str) -> str:
    """A model note for a claim that names a count of layers: ``"'the last two layers' are 2
    of this model's 6 layers (a third of its depth; 2 of 12 in BERT-base)"``."""
    L = _check(num_layers)
    frac = count / L
    named = {1 / 2: "half", 1 / 3: "a third", 1 / 4: "a quarter", 1 / 6: "a sixth"}
    share = next((v for k, v in named.items() if abs(frac - k) < _EPS), f"{100 * frac:.0f}%")
    return (f"'{words}' are {count} of this model's {L} layers ({share} of its depth; "
            f"{count} of {BERT_BASE_LAYERS} in BERT-base)")


# --- readings the papers leave open (issue 52): the ledger's multiverse runs a rule under each
# (:mod:`.readings`: "earlier/later" and "last two")


#: "Earlier" and "later" layers (Clark 3.1, 3.3) as BERT-base layer ranges (1-based,
#: inclusive) under each reading of :data:`.readings.READINGS`: the two halves of the depth
#: (1-6 and 7-12) or its first and last thirds (1-4 and 9-12). The rules and their criteria
#: both read them here.
EARLIER_LATER = {
    "halves": ((1, BERT_BASE_LAYERS // 2), (BERT_BASE_LAYERS // 2 + 1, BERT_BASE_LAYERS)),
    "thirds": (THIRDS["early"], THIRDS["deep"]),
}


def span(first_last: tuple[int, int]) -> str:
    """A BERT-base layer range as the criteria write it: ``(1, 6)`` -> ``"1-6"``."""
    first, last = first_last
    return f"{first}-{last}" if first != last else f"{first}"


def earlier_later(num_layers: int) -> tuple[list[int], list[int]]:
    """The earlier and the later layers under the reading in force: the halves of the depth
    (BERT-base's 1-6 and 7-12) or its first and last thirds (1-4 and 9-12).

    >>> earlier_later(6)
    ([1, 2, 3], [4, 5, 6])
    >>> with reading("earlier/later", "thirds"):
    ...     earlier_later(6)
    ([1, 2], [5, 6])
    """
    L = _check(num_layers)
    early, late = EARLIER_LATER[chosen("earlier/later")]
    return layers_at(L, *early), layers_at(L, *late)


def last_two(num_layers: int) -> list[int]:
    """"The last two layers" under the reading in force (1-based).

    >>> last_two(6)
    [5, 6]
    >>> with reading("last two", "BERT-base's 11-12 at relative depth"):
    ...     last_two(6)
    [6]
    """
    L = _check(num_layers)
    if chosen("last two") == "this model's last two":
        return list(range(max(1, L - 1), L + 1))
    return layers_at(L, BERT_BASE_LAYERS - 1, BERT_BASE_LAYERS)
