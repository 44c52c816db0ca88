"""Leave-one-fine-tuning-seed-out: a run folder's tables with one seed's entries removed.

Notebooks 06 and 07 fine-tune every task under several seeds (``seeds`` in their parameters;
the random-init arm under the first ``random_init`` of them) and save per-seed entries in a few
layouts. :func:`drop_seed` writes a copy of a run folder in which every entry of one
fine-tuning seed is gone, in both arms, and nothing else changed, so the ledger's own rules can
judge 06-07 again without it (:func:`verdicts_without`). The layouts, each named here once:

- a CSV column ``seed`` holding the fine-tuning seed (:data:`SEED_COLUMN_TABLES`); the pairs
  ``seed_a`` / ``seed_b`` (a pair is dropped when either is the seed);
- ``06_type_proportions_by_seed.csv``, whose ``seed`` is the map-type CNN's: the fine-tuning
  seed is in ``model`` (``fine-tuned s42``);
- ``06_dev_predictions.npz``: ``pred_<task>_<init>_<seed>`` of the two arms (``pretrained``,
  ``random``; the baselines' ``untrained_42`` and ``frozen_0`` are not fine-tuning draws);
- ``06_by_example.npz``: per task, ``models_<task>`` names the models along the first axis of
  the arrays beside it (``fine-tuned s42``), ``seeds_<task>`` the seeds along the first axis of
  ``drift_<task>`` and ``increase_<task>_<feature>``;
- ``07_predictions_<task>.npz``: ``pred_<seed>_<mode>``.

A 06/07 file the rules read that is in none of these layouts is refused (:func:`drop_seed`
raises), so a new per-seed table cannot slip through unfiltered. Files of other notebooks and
06/07 files without per-seed entries are linked unchanged.

>>> verdicts_without(Path("results"), 43)          # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

NOTEBOOKS = ("06", "07")
#: The fine-tuned arms whose seeds are left out; 06's baselines (``untrained_42``: a head
#: trained on the frozen encoder, ``frozen_0``) carry seeds of their own and stay.
ARMS = ("pretrained", "random")
#: 06/07 CSVs whose ``seed`` column is the fine-tuning seed.
SEED_COLUMN_TABLES = ("06_finetune_runs.csv", "06_training_curves.csv", "07_disabling.csv",
                      "07_framenet_heads_disabling.csv", "07_importance.csv",
                      "07_mode_agreement.csv", "07_models.csv", "07_pruning_curves.csv",
                      "07_pruning_summary.csv", "07_summary.csv")
#: 06/07 CSVs of pairs of fine-tuning seeds.
SEED_PAIR_TABLES = ("07_importance_seed_agreement.csv", "07_seed_agreement.csv")
#: 06/07 CSVs that name the fine-tuned model in ``model`` (``fine-tuned s42``); their own
#: ``seed``, where present, is another seed (the map-type CNN's).
SEED_MODEL_TABLES = ("06_type_proportions_by_seed.csv",)
#: 06/07 files with no per-seed entries, or only aggregates that the rules never read (they
#: are computed again by the notebooks, not by the ledger).
NO_SEED_FILES = ("06_framenet_by_sentence.npz", "06_framenet_funnel.csv",
                 "06_framenet_heads.csv", "06_framenet_heads_control.csv",
                 "06_framenet_readings.csv", "07_framenet_heads.csv", "06_baselines.csv",
                 "06_lr_check.csv", "06_drift_padding.csv")
#: 06/07 files of seed means and other aggregates over seeds. No rule of the ledger reads
#: them (a test holds it to that), so they are linked as they are; a rule that started to
#: read one would judge the left-out build on every seed.
AGGREGATE_FILES = ("06_table1.csv", "06_type_proportions.csv", "06_cls_last_layer.csv",
                   "06_drift_by_layer.csv", "06_drift_cosine.csv", "06_feature_attention.csv",
                   "06_feature_best_heads.csv", "06_relation_heads.csv", "06_paper_vs_run.csv",
                   "07_paper_vs_run.csv")


def model_label(seed: int) -> str:
    """How notebook 06 names a fine-tuned model of ``seed`` (``fine-tuned s42``)."""
    return f"fine-tuned s{int(seed)}"


def finetune_seeds(folder: str | Path) -> list[int]:
    """The fine-tuning seeds notebook 06 ran with (its ``seeds`` parameter), ascending; []
    when the folder holds no 06 provenance."""
    prov = Path(folder) / "06_provenance.json"
    if not prov.is_file():
        return []
    text = str(json.loads(prov.read_text()).get("parameters", {}).get("seeds", ""))
    return sorted(int(s) for s in text.split(",") if s.strip())


def drop_rows(df: pd.DataFrame, name: str, seed: int) -> pd.DataFrame:
    """Table ``name`` without the rows of fine-tuning seed ``seed`` (the layouts above)."""
    if name in SEED_COLUMN_TABLES:
        return df[df["seed"].astype(int) != int(seed)]
    if name in SEED_PAIR_TABLES:
        keep = (df["seed_a"].astype(int) != int(seed)) & (df["seed_b"].astype(int) != int(seed))
        return df[keep]
    if name in SEED_MODEL_TABLES:
        return df[df["model"].astype(str) != model_label(seed)]
    raise ValueError(f"{name}: no known layout of fine-tuning seeds; name it in "
                     "analysis_utils/ledger/seeds_left_out.py")


def drop_arrays(z: dict[str, np.ndarray], name: str, seed: int) -> dict[str, np.ndarray]:
    """The arrays of npz file ``name`` without fine-tuning seed ``seed`` (the layouts above)."""
    s = int(seed)
    if name == "06_dev_predictions.npz":  # the two arms only: the baselines' seeds are theirs
        return {k: v for k, v in z.items()
                if not (k.startswith("pred_") and k.rsplit("_", 1)[1] == str(s)
                        and k.rsplit("_", 2)[1] in ARMS)}
    if name.startswith("07_predictions_"):
        return {k: v for k, v in z.items()
                if not (k.startswith("pred_") and k.split("_")[1] == str(s))}
    if name == "06_by_example.npz":
        return _drop_by_example(z, s)
    raise ValueError(f"{name}: no known layout of fine-tuning seeds; name it in "
                     "analysis_utils/ledger/seeds_left_out.py")


#: ``06_by_example.npz``: arrays along the models of ``models_<task>`` (pre-trained first),
#: arrays along the fine-tuning seeds of ``seeds_<task>`` (``increase_<task>_<feature>``: one
#: per feature), and arrays shared by every task.
BY_MODEL = ("cls", "sep", "clslast", "top", "tophead", "rel", "reladj", "relhead")
BY_SEED = ("drift", "increase")
SHARED = ("clslast_targets", "top_groups", "relations")


def _drop_by_example(z: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """``06_by_example.npz`` without fine-tuning seed ``seed``; a key of no known layout is
    refused (a new per-seed array must be named here, not copied with all its seeds)."""
    tasks = [k[len("models_"):] for k in z if k.startswith("models_")]
    out = {}
    for k, v in z.items():
        if k in SHARED:
            out[k] = v
            continue
        task = next((t for t in sorted(tasks, key=len, reverse=True)
                     if k.endswith(f"_{t}") or f"_{t}_" in k), None)
        prefix = k.split(f"_{task}")[0] if task else None
        if task is None or prefix not in (*BY_MODEL, *BY_SEED, "models", "seeds"):
            raise ValueError(f"06_by_example.npz: array {k!r} has no known layout of "
                             "fine-tuning seeds; name it in analysis_utils/ledger/"
                             "seeds_left_out.py")
        if prefix in ("models", *BY_MODEL):
            models = [str(m) for m in z[f"models_{task}"]]
            keep = [i for i, m in enumerate(models) if m != model_label(seed)]
        else:
            seeds = [int(x) for x in z[f"seeds_{task}"]]
            keep = [i for i, x in enumerate(seeds) if x != int(seed)]
        if prefix not in ("models", "seeds") and len(v) != len(
                z[f"models_{task}"] if prefix in BY_MODEL else z[f"seeds_{task}"]):
            raise ValueError(f"06_by_example.npz: {k!r} has {len(v)} rows, not one per "
                             f"{'model' if prefix in BY_MODEL else 'seed'} of {task}")
        out[k] = v[keep]
    return out


def _classify(name: str) -> str:
    if name in SEED_COLUMN_TABLES or name in SEED_PAIR_TABLES or name in SEED_MODEL_TABLES:
        return "csv"
    if name in ("06_dev_predictions.npz", "06_by_example.npz") or (
            name.startswith("07_predictions_") and name.endswith(".npz")):
        return "npz"
    if name in NO_SEED_FILES or name in AGGREGATE_FILES:
        return "link"
    if name.endswith((".md", ".json", ".png", ".svg")) or "_verdicts" in name:
        return "link"
    raise ValueError(f"{name}: a file of notebook {name[:2]} in no known layout of "
                     "fine-tuning seeds; name it in analysis_utils/ledger/seeds_left_out.py")


def drop_seed(src: str | Path, dst: str | Path, seed: int) -> Path:
    """Write into ``dst`` (created) the run folder ``src`` with fine-tuning seed ``seed``
    removed from every 06/07 file; other files are linked. Returns ``dst``."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(src.iterdir()):
        if not p.is_file():
            continue
        target = dst / p.name
        kind = _classify(p.name) if p.name[:2] in NOTEBOOKS else "link"
        if kind == "csv":
            drop_rows(pd.read_csv(p), p.name, seed).to_csv(target, index=False)
        elif kind == "npz":
            with np.load(p) as z:
                arrays = drop_arrays({k: z[k] for k in z.files}, p.name, seed)
            np.savez(target, **arrays)
        else:
            os.symlink(p.resolve(), target)
    return dst


def verdicts_without(folder: str | Path, seed: int,
                     notebooks: Sequence[str] = NOTEBOOKS) -> pd.DataFrame:
    """The ledger rows of ``notebooks`` judged on ``folder`` with fine-tuning seed ``seed``
    left out (the ledger's columns; ``model`` as on the full folder)."""
    from . import claims, evaluate
    from .core import Tables

    with tempfile.TemporaryDirectory(prefix=f"seed{seed}-out-") as tmp:
        t = Tables(drop_seed(folder, Path(tmp) / Path(folder).name, seed))
        return evaluate([c for c in claims() if c.notebook in notebooks], t, multiverse=False)
