"""What a model was trained on, read from the model card shipped with its weights.

The committed runs use sentence encoders, not the masked-LM BERT-base of both papers, and
where that bears on a result (a frozen [CLS] baseline, [CLS] attention, sentence-pair tasks,
a masked-LM gradient) the reader needs the card's own words: its base model, its objective
and the data it was tuned on.

>>> card = training_card("minilm")                               # doctest: +SKIP
>>> card["objective"][:40]                                        # doctest: +SKIP
'contrastive learning objective: given a '
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["training_card", "card_path"]


def card_path(model: str) -> Path | None:
    """The README.md model card beside the weights of ``model`` (``"minilm"``, ``"mpnet"``
    or a local folder), or None where no card ships with it (hub ids are not fetched)."""
    from .assemble import AssemblyError, model_folder
    from .models import ModelError, minilm_path

    try:
        if model == "minilm":
            folder = minilm_path()
        elif model == "mpnet":
            folder = model_folder()
        else:
            folder = Path(model)
    except (AssemblyError, ModelError):  # not installed here: no card to read
        return None
    card = folder / "README.md"
    return card if card.is_file() else None


def _sentence(text: str, pattern: str) -> str:
    m = re.search(rf"[^.]*{pattern}[^.]*\.", text, re.I | re.S)
    return re.sub(r"\s+", " ", m.group(0)).strip() if m else ""


def training_card(model: str) -> dict | None:
    """``{"card": file name, "base model": ..., "objective": ..., "pairs": ..., "datasets":
    [...]}`` from the model card of ``model``, or None where none ships with the weights.
    Each value is the card's own text (a sentence or its front-matter list), not a summary."""
    path = card_path(model)
    if path is None:
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    front = re.match(r"---\n(.*?)\n---", text, re.S)
    datasets = []
    if front:
        block = re.search(r"^datasets:\n((?:- .*\n?)+)", front.group(1), re.M)
        if block:
            datasets = [d[2:].strip() for d in block.group(1).splitlines() if d.startswith("- ")]
    base = re.search(r"pretrained \[`([^`]+)`\]", text)
    return {"card": path.name,
            "base model": base.group(1) if base else "",
            "objective": _sentence(text, r"contrastive learning objective:"),
            "pairs": _sentence(text, r"total number of sentence pairs"),
            "datasets": datasets}
