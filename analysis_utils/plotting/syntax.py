"""Figures for Clark et al. Sections 4.2-4.3: per-relation accuracy heatmaps over layers x
heads (:mod:`.grid`), and Figure 5-style renderings of one head on one input.

Figure 5 style (:func:`attention_lines`): the words twice, in two columns; a line from word
``i`` on the left (the attending word) to word ``j`` on the right (the attended-to word), its
darkness the attention weight ``attn[i, j]``. Gold edges are drawn underneath as thick
coloured lines and their words are coloured, so a reader sees at a glance whether the
dark lines fall on them. Special tokens ([CLS]/[SEP]) stay in, in grey.

All functions return a ``matplotlib.figure.Figure`` built without pyplot; layers and heads
are labelled 1-based, as in the papers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..heads import head_label
from .grid import head_grids

GOLD_COLOUR = "#e66100"
PRED_COLOUR = "#1f5fbf"
DIRECTION_LABELS = {"dep2head": "dependent \u2192 head", "head2dep": "head \u2192 dependent"}


def _grid(n: int, ncols: int) -> tuple[int, int]:
    ncols = max(1, min(ncols, n))
    return int(np.ceil(n / ncols)), ncols


def relation_heatmaps(scores: pd.DataFrame, baselines: pd.DataFrame | None = None,
                      relations: Sequence[str] | None = None, ncols: int = 3,
                      suptitle: str = "", notes: Mapping[str, str] | None = None,
                      font_scale: float = 1.0, cell: float = 0.35) -> Figure:
    """One panel per relation: accuracy (%) of every head in the relation's best direction
    (the direction of its best head), on a shared 0-100 scale; a box marks the best head.
    The panel title gives the best head and, with ``baselines`` (``syntax.offset_baselines``
    output), the best fixed-offset baseline; ``notes`` adds a line per relation (e.g. the
    paper's row, ``syntax.paper_note``). ``font_scale`` and ``cell`` as in
    :func:`.grid.head_grids` (a figure read at a git host's width wants few columns and
    ``font_scale`` about 1.4).

    scores: ``syntax.score_heads`` output (layer/head 0-based, accuracy a fraction)."""
    from ..analyses.syntax import best_baseline, best_heads

    bh = best_heads(scores).set_index("relation")
    bb = best_baseline(baselines).set_index("relation") if baselines is not None else None
    relations = list(relations) if relations is not None else list(bh.index)
    L = int(scores["layer"].max()) + 1
    H = int(scores["head"].max()) + 1
    panels, marks = {}, {}
    for rel in relations:
        b = bh.loc[rel]
        sel = scores[(scores["relation"] == rel) & (scores["direction"] == b["direction"])]
        grid = np.full((L, H), np.nan)
        grid[sel["layer"].to_numpy(), sel["head"].to_numpy()] = 100 * sel["accuracy"].to_numpy()
        title = (f"{rel} (n={int(b['total'])}, {DIRECTION_LABELS[b['direction']]})\n"
                 f"best {head_label(b['layer'], b['head'])}: {100 * b['accuracy']:.1f}%")
        if bb is not None and rel in bb.index:
            title += (f"; offset {int(bb.loc[rel, 'offset']):+d}: "
                      f"{100 * bb.loc[rel, 'accuracy']:.1f}%")
        if notes and notes.get(rel):
            title += "\n" + notes[rel]
        panels[title] = grid
        marks[title] = (int(b["layer"]), int(b["head"]))
    return head_grids(panels, ncols=ncols, vmin=0, vmax=100, marks=marks, colorbar="shared",
                      colorbar_label="accuracy (%)", suptitle=suptitle, font_scale=font_scale,
                      cell=cell)


def attention_lines(words: Sequence[str], attn: np.ndarray, gold: Sequence[tuple[int, int]] = (),
                    is_special: Sequence[bool] | None = None, rows: Sequence[int] | None = None,
                    pred: Sequence[tuple[int, int]] = (),
                    ax=None, title: str = "", min_weight: float = 0.02,
                    left_label: str = "attending", right_label: str = "attended to"):
    """Figure 5-style rendering of one head on one input.

    words: ``(m,)`` labels of the word-level map positions (special tokens included).
    attn: ``(m, m)`` word-level map of one head (rows = from). gold: ``(from, to)`` map
    positions drawn as thick coloured lines (e.g. dependent -> gold head). rows: draw lines
    only from these positions (default: all). Lines lighter than ``min_weight`` are skipped.
    """
    attn = np.asarray(attn, dtype=float)
    m = len(words)
    if attn.shape != (m, m):
        raise ValueError(f"attn must be ({m}, {m}) for {m} words, got {attn.shape}")
    special = np.zeros(m, bool) if is_special is None else np.asarray(is_special, bool)
    if ax is None:
        fig = Figure(figsize=(3.6, 0.22 * m + 0.9))
        ax = fig.subplots()
    else:
        fig = ax.figure
    gold_words = {p for e in gold for p in e}
    for i, j in gold:
        ax.plot([0, 1], [i, j], color=GOLD_COLOUR, lw=4.5, alpha=0.45, solid_capstyle="round",
                zorder=1)
    focus = set(range(m)) if rows is None else {int(r) for r in rows}
    for i in range(m):
        # Lines from the focus rows in black; the others faint grey, for context only.
        colour, scale, z = ("black", 1.0, 3) if i in focus else ("#9a9a9a", 0.35, 2)
        for j in range(m):
            w = attn[i, j]
            if w >= min_weight:
                ax.plot([0, 1], [i, j], color=colour, lw=1.2, alpha=float(min(w, 1.0)) * scale,
                        zorder=z)
    for i, j in pred:
        ax.plot([0, 1], [i, j], color=PRED_COLOUR, lw=1.6, ls=(0, (4, 2)), zorder=4)
    for k, w in enumerate(words):
        colour = "grey" if special[k] else GOLD_COLOUR if k in gold_words else "black"
        weight = "bold" if k in gold_words else "normal"
        for x, ha in ((-0.03, "right"), (1.03, "left")):
            ax.text(x, k, w, ha=ha, va="center", fontsize=8, color=colour, fontweight=weight)
    ax.set_ylim(m - 0.5, -1.5)
    ax.set_xlim(-0.9, 1.9)
    ax.text(-0.03, -1.2, left_label, ha="right", va="center", fontsize=7, style="italic")
    ax.text(1.03, -1.2, right_label, ha="left", va="center", fontsize=7, style="italic")
    ax.axis("off")
    ax.set_title(title, fontsize=9)
    return fig


def attention_lines_grid(panels: Sequence[dict], ncols: int = 3, suptitle: str = "",
                         legend: str = "gold edge") -> Figure:
    """Several :func:`attention_lines` panels side by side; each dict holds its keyword
    arguments (``words``, ``attn``, ``gold``, ``is_special``, ``title``, ...)."""
    if not panels:
        raise ValueError("no panels to draw")
    nrows, ncols = _grid(len(panels), ncols)
    m = max(len(p["words"]) for p in panels)
    fig = Figure(figsize=(3.6 * ncols, nrows * (0.22 * m + 1.1)))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, p in zip(axes.flat, panels, strict=False):
        attention_lines(ax=ax, **p)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles = [Line2D([], [], color=GOLD_COLOUR, lw=4.5, alpha=0.45, label=legend),
               Line2D([], [], color="black", lw=1.2,
                      label="attention from the orange words (darker = more)"),
               Line2D([], [], color="#9a9a9a", lw=1.2, alpha=0.5,
                      label="attention from the other words")]
    if any(p.get("pred") for p in panels):
        handles.append(Line2D([], [], color=PRED_COLOUR, lw=1.6, ls=(0, (4, 2)),
                              label="the head's prediction"))
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97 if suptitle else 1))
    return fig


def map_labels(words: Sequence[str], is_special: Sequence[bool], word_pos: Sequence[int],
               special_labels: Sequence[str] = ("[CLS]", "[SEP]"),
               tokenizer=None) -> list[str]:
    """Labels of the word-level map positions: the words at ``word_pos``, special tokens
    named from ``special_labels`` (first special = the first label, the rest the last), or,
    given ``tokenizer``, by the model's own names (``<s>``/``</s>`` for MPNet)."""
    if tokenizer is not None:
        special_labels = (tokenizer.cls_token, tokenizer.sep_token)
    is_special = np.asarray(is_special, bool)
    out = [""] * len(is_special)
    for w, p in zip(words, word_pos, strict=True):
        out[int(p)] = w
    for k, p in enumerate(np.flatnonzero(is_special)):
        out[p] = special_labels[min(k, len(special_labels) - 1)]
    return out


# --- picking examples (deterministic; never chosen by whether the head is right) -----------

def pick_sentence(sentences: Sequence, relation: str, min_words: int = 8,
                  max_words: int = 18, min_instances: int = 2, poss_mode: str = "ud",
                  exclude: Sequence[int] = ()) -> int | None:
    """Index of the first sentence with ``min_words..max_words`` words and at least
    ``min_instances`` scored words of ``relation`` (``syntax.scoring_entries``), skipping
    indices in ``exclude``; when there is none, the same with one instance fewer, down to
    one; None when no sentence has the relation at all. Whether the head gets them right
    plays no part, so the examples are not cherry-picked."""
    from ..analyses.syntax import scoring_entries

    counts = {}
    for k, s in enumerate(sentences):
        if k in exclude or not min_words <= len(s.heads) <= max_words:
            continue
        c = sum(r == relation for _, _, r in scoring_entries(s, poss_mode))
        if c >= min_instances:
            return k
        counts.setdefault(c, k)  # first sentence with c instances
    best = max((c for c in counts if c >= 1), default=None)
    return None if best is None else counts[best]


def relation_edges(sentence, relation: str, word_pos: Sequence[int], direction: str,
                   poss_mode: str = "ud") -> list[tuple[int, int]]:
    """Gold edges of ``relation`` in one sentence as ``(from, to)`` map positions, oriented
    as the head reads them: dependent -> head for ``dep2head``, head -> dependent for
    ``head2dep``."""
    from ..analyses.syntax import scoring_entries

    word_pos = np.asarray(word_pos)
    out = []
    for dep, head, rel in scoring_entries(sentence, poss_mode):
        if rel == relation and head >= 0:
            e = (int(word_pos[dep]), int(word_pos[head]))
            out.append(e if direction == "dep2head" else e[::-1])
    return out


def pick_coref_window(windows: Sequence, max_span: int = 30,
                      min_mentions: int = 3) -> tuple[int, int, int] | None:
    """``(window index, first word, last word + 1)`` (window-local) of the first stretch of
    at most ``max_span`` words holding at least ``min_mentions`` evaluable mentions together
    with all their antecedents; None when no window has one."""
    from ..analyses.coref import evaluable_mentions

    for k, w in enumerate(windows):
        spans = []
        for m, heads in evaluable_mentions(w):
            spans.append((w.local(min(heads)), w.local(m.head_word)))
        spans.sort(key=lambda s: s[1])
        for a in range(len(spans)):
            group = [s for s in spans[a:] if s[1] - spans[a][0] < max_span and
                     s[0] >= spans[a][0]]
            if len(group) >= min_mentions:
                start = min(s[0] for s in group)
                end = max(s[1] for s in group) + 1
                return k, start, end
    return None
