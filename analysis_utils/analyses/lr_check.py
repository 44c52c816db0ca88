"""Does the paper's learning rate suit the model fine-tuned here? A decision rule fixed before
the numbers (notebook 06): the default rate stays unless one other rate beats it on *every*
checked task by more than that task's seed spread at the default rate (largest minus smallest
seed), so a single lucky draw cannot move the default.

>>> rows = pd.DataFrame({"task": ["RTE", "RTE", "CoLA", "CoLA"], "lr": [5e-5, 1e-4] * 2,
...                      "value": [57.0, 61.0, 15.0, 20.0]})
>>> keep, why = decide(rows, 5e-5, {"RTE": 1.0, "CoLA": 2.0})
>>> keep, why.split(":")[0]
(False, 'switch to 0.0001')
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["decide", "gains"]


def gains(rows: pd.DataFrame, default_lr: float) -> pd.DataFrame:
    """Per task and other rate: its dev value minus the default rate's (points).

    rows: ``task``, ``lr``, ``value`` (one row per task and rate, the default included)."""
    if not np.isclose(rows["lr"], default_lr).any():
        raise ValueError(f"no row at the default rate {default_lr:g}: fit it first")
    base = rows[np.isclose(rows["lr"], default_lr)].set_index("task")["value"]
    other = rows[~np.isclose(rows["lr"], default_lr)].copy()
    other["gain"] = other["value"] - other["task"].map(base)
    return other[["task", "lr", "value", "gain"]].reset_index(drop=True)


def decide(rows: pd.DataFrame, default_lr: float,
           spread: Mapping[str, float]) -> tuple[bool, str]:
    """(keep the default, why). ``spread``: points between the best and worst seed of each task
    at the default rate; a task without one (fewer than 2 seeds) cannot justify a switch."""
    g = gains(rows, default_lr)
    tasks = sorted(set(rows["task"]))
    for lr, part in g.groupby("lr"):
        part = part.set_index("task")
        beats = [t for t in tasks if t in part.index and np.isfinite(spread.get(t, np.nan))
                 and part.loc[t, "gain"] > spread[t]]
        if len(beats) == len(tasks):
            return False, (f"switch to {lr:g}: it beats {default_lr:g} on every checked task "
                           "by more than the seed spread ("
                           + ", ".join(f"{t} {part.loc[t, 'gain']:+.1f} > {spread[t]:.1f}"
                                       for t in tasks) + ")")
    best = g.loc[g["gain"].idxmax()] if len(g) else None
    detail = (f"; the largest gain is {best['gain']:+.1f} points ({best['task']} at "
              f"{best['lr']:g}, seed spread there {spread.get(best['task'], np.nan):.1f})"
              if best is not None else "")
    return True, (f"keep {default_lr:g}: no other rate beats it on every checked task by more "
                  f"than the seed spread{detail}")
