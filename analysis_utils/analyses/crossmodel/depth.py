"""The relative-depth axis of notebook 08, and the paper's layers on it.

Models of different depth are put side by side on one **relative-depth** axis: layer ``l``
(1-based) of an ``L``-layer model sits at ``l / L`` (BERT-base's layer 7 of 12 at 0.58,
MiniLM's layer 3 of 6 at 0.5). The paper's layers are read from the words of
:data:`analysis_utils.papers.CLARK_SECTION3`, never typed here.
"""

from __future__ import annotations

import re

import numpy as np

from ...papers import BERT_BASE_LAYERS, CLARK_SECTION3


def relative_depth(layer, num_layers: int):
    """Layer ``layer`` (1-based) of a ``num_layers``-layer model as a share of its depth:
    ``layer / num_layers`` (the last layer is 1.0)."""
    return np.asarray(layer, dtype=float) / float(num_layers) if np.ndim(layer) else \
        float(layer) / float(num_layers)


def paper_layers(text: str) -> list[int]:
    """The layer numbers in a claim as :data:`papers.CLARK_SECTION3` words it:
    ``"4 heads (layers 2, 4, 7, 8)"`` -> ``[2, 4, 7, 8]``; ``"> 50% in layers 6-10"`` ->
    ``[6, 7, 8, 9, 10]``."""
    m = re.search(r"layers? ([\d,\s\-]+)", text)
    if not m:
        return []
    out = []
    for part in m.group(1).split(","):
        part = part.strip()
        if re.fullmatch(r"\d+-\d+", part):
            lo, hi = (int(x) for x in part.split("-"))
            out += list(range(lo, hi + 1))
        elif part.isdigit():
            out.append(int(part))
    return out


def paper_sep_band() -> tuple[float, float, float]:
    """Clark et al.'s [SEP] claim as numbers: (share, first relative depth, last relative
    depth), from ``CLARK_SECTION3["sep_share"]`` ("> 50% in layers 6-10" -> (0.5, 0.5,
    0.833))."""
    text = CLARK_SECTION3["sep_share"]
    share = float(re.search(r"(\d+(?:\.\d+)?)%", text).group(1)) / 100
    layers = paper_layers(text)
    return share, layers[0] / BERT_BASE_LAYERS, layers[-1] / BERT_BASE_LAYERS


def layer_runs(layers) -> str:
    """Layers as contiguous runs: ``[2, 3, 4, 6]`` -> ``"2-4, 6"``."""
    layers = sorted(int(x) for x in layers)
    out, start = [], None
    for k, x in enumerate(layers):
        if start is None:
            start = x
        if k + 1 == len(layers) or layers[k + 1] != x + 1:
            out.append(f"{start}-{x}" if x != start else str(x))
            start = None
    return ", ".join(out)
