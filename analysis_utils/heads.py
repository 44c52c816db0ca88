"""Naming attention heads as the papers do: ``"layer-head"``, both 1-based (``"7-6"``).

Arrays and most tables index heads 0-based (``attn[layer, head]``); every label a reader
sees goes through :func:`head_label`, so the base is converted in exactly one place.

>>> head_label(6, 5)
'7-6'
>>> parse_head_label("7-6")
(6, 5)
>>> head_labels(2, 2)
['1-1', '1-2', '2-1', '2-2']
"""

from __future__ import annotations


def head_label(layer: int, head: int) -> str:
    """0-based ``(layer, head)`` -> the papers' 1-based ``"layer-head"`` label."""
    layer, head = int(layer), int(head)
    if layer < 0 or head < 0:
        raise ValueError(f"layer and head are 0-based indices, got ({layer}, {head})")
    return f"{layer + 1}-{head + 1}"


def parse_head_label(label: str) -> tuple[int, int]:
    """The inverse of :func:`head_label`: ``"7-6"`` -> 0-based ``(6, 5)``."""
    try:
        layer, head = (int(x) for x in str(label).split("-"))
    except ValueError:
        raise ValueError(f"a head label reads 'layer-head', 1-based (e.g. '7-6'), "
                         f"got {label!r}") from None
    if layer < 1 or head < 1:
        raise ValueError(f"head labels are 1-based, got {label!r}")
    return layer - 1, head - 1


def head_labels(num_layers: int, num_heads: int) -> list[str]:
    """Labels of all heads in layer-major order (entry ``k = layer * num_heads + head``, the
    order of ``attn.reshape(layers * heads, n, n)``)."""
    return [head_label(k // num_heads, k % num_heads) for k in range(num_layers * num_heads)]
