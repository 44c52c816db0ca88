"""The model matrix (issue 44): tiny randomly initialised encoders of several families and
shapes (``tests/matrix_models.py``: BERT 4 x 4 and 12 layers x 2 heads, DistilBERT, a
RoBERTa-family model with a BPE tokenizer trained offline, ALBERT, ELECTRA, MPNet), each run
through notebooks 01-08 by the driver, as ``run --profile smoke -p model=FOLDER`` does, at the
smoke profile's sizes cut further by :data:`CUTS` (a tiny model's forward passes are cheap; a
notebook's cost is its fixed work, so the cuts keep the matrix inside a CI budget).

Every notebook either runs or states in the rendered notebook what it cannot do for that model
(:data:`STATED`: the sentence each notebook prints, checked here); it never crashes. On any
model but the labelled all-MiniLM-L6-v2, notebooks 05 and 06 train their map-type classifier
on MiniLM's labelled maps (its weights' sha256 in the provenance) and say so.

Tiers: :data:`FAST` (BERT 4 x 4 and DistilBERT through 01-08) runs in ``make test``; the rest
of the matrix is marked ``slow`` (``make test-all``). Caches: a temporary cache root per
session (random weights are keyed by their hash, but no entry from an earlier run may make a
notebook pass), with only the model-independent FrameNet corpus folder linked from the real
cache, as in ``test_paper_profile.py``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from matrix_models import MATRIX, build

from analysis_utils import paths, profiles
from analysis_utils.data import labels as sheets
from analysis_utils.publish import pipeline

pytestmark = [pytest.mark.gold_data]

NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08")
# The default tier (`make test`): what issue 44 found broken, at the least cost. DistilBERT's
# 01 (its masked-LM head and norms), and 06 on a random BERT of MiniLM's shape (6 x 12, so the
# hand labels' positions exist there and only the guard keeps 06 off other heads' maps). 07's
# sweep over 72 heads doubled the subset's time (4.1 min measured beside other jobs, 2.0 min
# without it): its seed-agreement schema has a unit test (tests/test_disabling.py), and 07
# runs on every model of the matrix, with 01-08, in the slow tier.
FAST = {"distilbert-3x4": ("01",), "bert-6x12": ("06",)}
# 06 and 07 share one fine-tuning plan (07 loads 06's models from the cache): MRPC with two
# seeds, so 07's seed-agreement table (issue 44's crash) is built.
FINETUNE_PLAN = {"tasks": "MRPC", "seeds": "42,43", "multi_seed_tasks": "MRPC",
                 "train_subsets": "MRPC:8", "batch_size": 8, "max_dev": 8, "epochs": 1}
CUTS: dict[str, dict] = {
    "01": {"n_segments": 6, "n_grad_segments": 2, "n_norm_segments": 4, "mlm_steps": 5,
           "mlm_texts": 12},
    "02": {"max_sentences": 16, "min_count": 5},
    "03": {"max_documents": 1},
    "04": {"max_train": 24, "max_dev": 12, "max_test": 12, "min_count": 5},
    "05": {"n_segments": 6, "n_perm": 50, "glue_max_examples": 1, "cnn_epochs": 1},
    "06": {**FINETUNE_PLAN, "n_examples": 8, "padded_examples": 4, "glue_max_examples": 2,
           "cnn_epochs": 1, "framenet_max_sentences": 8, "lr_check": "1e-4",
           "lr_check_tasks": "MRPC", "random_init": 1},
    "07": {**FINETUNE_PLAN, "modes": "uniform", "n_boot": 50, "importance_examples": 8,
           "prune_step": 0.5, "n_random_orders": 1},
}
# What a notebook must say, in its rendered outputs, where it cannot do a part as the paper
# did for these models: none ships a masked-LM head (01 fits one on the frozen encoder and
# says so, with its quality), and no map of them was hand-labelled (05 and 06 transfer
# MiniLM's labels). Every family ran every other part in the runs measured for issue 44.
STATED = {"01": "masked-LM head: fitted on the frozen encoder",
          "05": "The hand labels are of all-MiniLM-L6-v2's maps",
          "06": "The hand labels are of all-MiniLM-L6-v2's maps"}


def _matrix_params():
    for name, prefixes in FAST.items():
        yield pytest.param(name, prefixes, id=f"{name}-{'-'.join(prefixes)}")
    for name in MATRIX:
        yield pytest.param(name, NOTEBOOKS, marks=pytest.mark.slow, id=f"{name}-all")


@pytest.fixture(scope="module")
def matrix_root(tmp_path_factory):
    """The session's models, cache and outputs: ``{"models", "cache", "out"}`` folders."""
    if not (paths.data_dir() / "ud-english-ewt").is_dir():
        pytest.skip(f"gold data not found in {paths.data_dir()}: set {paths.DATA_ENV} (CI "
                    "points it at ../shared/data) or run `python -m analysis_utils fetch-data`")
    real_framenet = paths.cache_dir() / "framenet-1.7"
    root = tmp_path_factory.mktemp("matrix")
    cache = root / "cache"
    cache.mkdir()
    real_framenet.mkdir(parents=True, exist_ok=True)
    (cache / "framenet-1.7").symlink_to(real_framenet, target_is_directory=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(paths.CACHE_ENV, str(cache))
        yield {"models": root / "models", "cache": cache, "out": root / "out"}
    for child in cache.iterdir():
        if child.is_symlink():
            child.unlink()  # never into the real cache
        elif child.name != pipeline.FAILED:
            shutil.rmtree(child, ignore_errors=True)


def _outputs_text(rendered: Path) -> str:
    nb = json.loads(rendered.read_text())
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            parts.extend("".join(v) if isinstance(v, list) else str(v)
                         for k, v in out.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


@pytest.mark.parametrize(("name", "prefixes"), list(_matrix_params()))
def test_model_runs_the_notebooks(matrix_root, name, prefixes):
    _, layers, heads = MATRIX[name]
    folder = matrix_root["models"] / name
    if not folder.is_dir():
        build(name, folder)
    out = matrix_root["out"] / f"{name}-{'-'.join(prefixes)}"
    times = {}
    for prefix in prefixes:
        t0 = time.perf_counter()
        if prefix == "08":  # no model of its own: this run beside the committed default run
            extra = {"runs": f"results,{out / 'results'}"}
        else:
            extra = {**profiles.PROFILES["smoke"].get(prefix, {}), **CUTS[prefix],
                     "model": str(folder)}
        (rendered,) = pipeline.run("smoke", only=[prefix], output_dir=out, extra=extra)
        times[prefix] = time.perf_counter() - t0
        prov = json.loads((out / "results" / f"{prefix}_provenance.json").read_text())
        if prefix == "08":
            assert any((m.get("num_layers"), m.get("num_heads")) == (layers, heads)
                       for m in prov["models"].values()), "08 does not show this model"
            continue
        ident = prov["models"]["model"]
        assert (ident["num_layers"], ident["num_heads"]) == (layers, heads), prefix
        if prefix in STATED:
            assert STATED[prefix] in _outputs_text(rendered), \
                f"{prefix} on {name}: what it could not do as the paper did is not stated"
        if prefix in ("05", "06"):
            # the map-type classifier learnt from the labelled model's maps
            assert prov["models"]["labels"]["weights_sha256"] == \
                sheets.LABELLED_WEIGHTS_SHA256, prefix
            assert prov["models"]["labels"]["init"] == "pretrained", prefix
    print(f"\n{name}: " + ", ".join(f"{p} {t:.0f} s" for p, t in times.items())
          + f"; total {sum(times.values()):.0f} s")
