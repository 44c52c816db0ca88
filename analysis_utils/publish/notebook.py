"""What every numbered notebook does first, in one call.

>>> lm, control, run = notebook.setup("01", globals())  # doctest: +SKIP

:func:`setup` collects the parameters (the names assigned in the notebook's cell tagged
``parameters``, with the values in effect, papermill's injected ones included) for the
provenance record, seeds numpy, sets display options, loads the model and its control and
opens the output record (:class:`NotebookRun`, a :class:`~analysis_utils.publish.report.Run`).
:func:`attention_maps` extracts (or reads from the cache) the maps of both models for the same
inputs.

Besides what :meth:`report.Run.finish` records, the provenance names the device kind the
notebook's models ran on (``device_kind``: ``cpu`` / ``cuda`` / ``mps``; ``device`` says
``cpu (2 cores)`` or the GPU's name), the numeric ``precision`` of its fine-tunes (the
notebook's ``precision`` parameter, float32 where it has none) and ``cpu_only``
(:data:`CPU_ONLY`): what the notebook computes on the CPU even when CUDA is present, so a
GPU rerun's reader knows which numbers the GPU could have changed (issue 34).
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .. import paths
from ..engine.memory import peak_rss_mb  # noqa: F401  (notebooks print notebook.peak_rss_mb())
from . import report

PARAMETERS_TAG = "parameters"

#: Per notebook, what it computes on the CPU even when CUDA is present: everything else that
#: touches a model (attention extraction, fine-tuning, gradients, norms, head disabling) runs
#: on the model's device. Read from the code (the analyses these notebooks call put no
#: tensor on a device: numpy, scikit-learn, or torch tensors made on the CPU), not measured:
#: no notebook has run on CUDA yet (:data:`CPU_ONLY_NOTE`).
CPU_ONLY: dict[str, tuple[str, ...]] = {
    "01": ("surface statistics from the stored maps (relative position, token classes, "
           "[SEP] shares, entropy; numpy)", "the claims ledger's resampling"),
    "02": ("word-level maps and each relation's head scores and offset baselines from the "
           "stored maps (numpy)", "the claims ledger's resampling"),
    "03": ("coreference head scores and the rule baselines from the stored maps (numpy)",
           "the claims ledger's resampling"),
    "04": ("the probes' training and prediction (torch on the CPU, num_threads threads)",
           "the right-branching baseline and the per-seed summaries",
           "the claims ledger's resampling"),
    "05": ("the Jensen-Shannon distance matrix (torch on the CPU, js_threads threads)",
           "MDS and the layer-separation permutation test (scikit-learn, numpy)",
           "behaviour labels", "the map-type classifiers' cross-validation and refit (the "
           "CNN in torch on the CPU, scikit-learn)", "map-type counts over GLUE maps",
           "the claims ledger's resampling"),
    "06": ("drift cosines and attention features from the stored maps (numpy)",
           "the map-type CNN (torch on the CPU) and the type counts",
           "the frozen-features baseline's classifier (scikit-learn; its features are "
           "extracted on the model's device)", "FrameNet scores (numpy)",
           "the claims ledger's resampling"),
    "07": ("paired bootstraps, Holm and BH over the heads (numpy)",
           "seed agreement (Spearman)", "FrameNet head scores (numpy)",
           "the claims ledger's resampling"),
    "08": ("everything: it reads the saved tables of earlier runs and loads no model",),
}
CPU_ONLY_NOTE = "read from the code, not verified on CUDA"


def cpu_only(prefix: str) -> list[str]:
    """:data:`CPU_ONLY` of notebook ``prefix`` (``["not verified on CUDA"]`` for one it does
    not list)."""
    return list(CPU_ONLY.get(prefix, ("not verified on CUDA",)))


@dataclass
class NotebookRun(report.Run):
    """:class:`report.Run` whose provenance also names ``device_kind``, ``precision`` and
    ``cpu_only`` (module docstring), after ``device``."""

    device_kind: str = "cpu"
    precision: str = "float32"
    cpu_only: list = field(default_factory=list)

    def finish(self) -> Path:
        path = super().finish()
        prov = json.loads(path.read_text())
        extra = {"device_kind": self.device_kind, "precision": self.precision,
                 "cpu_only": list(self.cpu_only), "cpu_only_note": CPU_ONLY_NOTE}
        out: dict = {}
        for k, v in prov.items():
            out[k] = v
            if k == "device":
                out.update(extra)
        out.update({k: v for k, v in extra.items() if k not in out})
        from ..engine import atomic

        atomic.write_text(path, json.dumps(out, indent=2, default=str) + "\n")
        return path


def _run(prefix: str, params: dict, models: dict, device_kind: str) -> NotebookRun:
    return NotebookRun(prefix=prefix, params=dict(params), models=dict(models),
                       device_kind=device_kind,
                       precision=str(params.get("precision") or "float32"),
                       cpu_only=cpu_only(prefix))


class Setup(NamedTuple):
    """What :func:`setup` returns: unpack as ``lm, control, run = setup(...)``."""

    lm: object  # engine.models.LoadedModel
    control: object  # the same architecture, initialised as the notebook's control_init says
    run: report.Run


def notebook_source(prefix: str) -> Path | None:
    """The percent-format source ``notebooks/NN_*.py`` of notebook ``prefix``, or None when
    the package is installed without its notebooks (e.g. on Colab)."""
    found = sorted(paths.NOTEBOOKS_DIR.glob(f"{prefix}_*.py"))
    if len(found) > 1:
        raise ValueError(f"several notebooks with prefix {prefix}: {[p.name for p in found]}")
    return found[0] if found else None


def _assigned_names(source: str) -> list[str]:
    names = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def parameter_names(source: str | Path) -> list[str]:
    """Names assigned in the cell tagged ``parameters`` of a notebook (percent-format ``.py``
    or ``.ipynb``), in order."""
    import jupytext

    nb = jupytext.read(source)
    cells = [c for c in nb.cells if PARAMETERS_TAG in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{source}: expected exactly one cell tagged {PARAMETERS_TAG!r}, "
                         f"found {len(cells)}")
    return _assigned_names(cells[0].source)


def _is_literal_cell(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    for node in body:
        if not (isinstance(node, ast.Assign)
                and all(isinstance(t, ast.Name) for t in node.targets)):
            return False
        try:
            ast.literal_eval(node.value)
        except ValueError:
            return False
    return bool(body)


def history_parameter_names(history: Sequence[str]) -> list[str]:
    """Parameter names from a kernel's input history (IPython's ``In``), for a notebook
    whose source is not on disk: the names assigned by cells made only of ``name = literal``
    lines (the parameters cell, and papermill's injected cell), in order."""
    names: list[str] = []
    for source in history:
        if source and _is_literal_cell(source):
            names += [n for n in _assigned_names(source) if n not in names]
    return names


def collect_parameters(prefix: str, namespace: Mapping,
                       names: Sequence[str] | None = None) -> dict:
    """``{name: value}`` for the notebook's parameters, values taken from ``namespace`` (the
    notebook's ``globals()``), so overrides that papermill injected are recorded as run.

    names: default, those of the parameters cell of ``notebooks/NN_*.py``; when the source
    is not on disk (the package installed without its notebooks), those of the literal-only
    cells in the kernel's history (``In``).
    """
    if names is None:
        source = notebook_source(prefix)
        if source is not None:
            names = parameter_names(source)
        else:
            names = history_parameter_names(namespace.get("In", []))
        if not names:
            raise ValueError(f"no parameters found for notebook {prefix}: no "
                             f"notebooks/{prefix}_*.py under {paths.REPO_ROOT} and no "
                             "literal-only cell in this kernel's history; pass names=[...]")
    missing = [n for n in names if n not in namespace]
    if missing:
        raise NameError(f"parameters {missing} of notebook {prefix} are not defined: run the "
                        "parameters cell before the setup cell")
    return {n: namespace[n] for n in names}


def recorded_parameters(params: dict, identity: dict) -> dict:
    """``params`` as provenance records them: a ``model`` given as a local folder is named
    as the model identity names it (``"folder:<name>"``, :func:`~analysis_utils.engine.models.
    portable_source`), since its path exists on this machine only and the identity's weights
    hash already says which weights they were; every other value unchanged.

    >>> recorded_parameters({"model": "/tmp/x/bert", "seed": 0},
    ...                     {"source": "folder:bert"})
    {'model': 'folder:bert', 'seed': 0}
    """
    source = str(identity.get("source") or "")
    if "model" in params and source.startswith("folder:"):
        return {**params, "model": source}
    return dict(params)


def setup(prefix: str, namespace: Mapping, *, precision: int = 3,
          names: Sequence[str] | None = None) -> Setup:
    """Start notebook ``prefix`` (``"01"``): collect its parameters from ``namespace``
    (:func:`collect_parameters`; it needs ``model``, ``control_init``, ``seed`` and ``device``),
    seed numpy's global generator with ``seed``, set pandas' display precision, load the model
    and its control (``load_model(model, init=control_init)``) and open the run record with
    the parameters (a model folder by its name, :func:`recorded_parameters`) and both
    models' identities; print one line per model.

    Add the data a notebook reads to ``run.data`` once it has read it.
    """
    import matplotlib
    import numpy as np
    import pandas as pd

    from ..engine.models import load_model

    params = collect_parameters(prefix, namespace, names)
    seed, device = params["seed"], params["device"] or None
    np.random.seed(seed)
    pd.set_option("display.precision", precision)
    pd.set_option("display.width", 200)
    matplotlib.rcParams["figure.dpi"] = 90
    lm = load_model(params["model"], device=device, seed=seed)
    control = load_model(params["model"], init=params["control_init"], device=device,
                         seed=seed)
    run = _run(prefix, recorded_parameters(params, lm.identity),
               {"model": lm.identity, "control": control.identity},
               getattr(lm.device, "type", None) or str(lm.device).split(":")[0])
    print(f"model: {lm.label} ({lm.num_layers} layers x {lm.num_heads} heads) on {lm.device}")
    print(f"control: {control.label}")
    return Setup(lm, control, run)


def setup_tables(prefix: str, namespace: Mapping, models: Mapping | None = None, *,
                 precision: int = 3, names: Sequence[str] | None = None) -> NotebookRun:
    """:func:`setup` for a notebook that reads saved tables and loads no model (notebook 08):
    collect the parameters, set the display options and open the run record with
    ``models`` (e.g. each compared run's model identity, from its provenance)."""
    import matplotlib
    import pandas as pd

    params = collect_parameters(prefix, namespace, names)
    pd.set_option("display.precision", precision)
    pd.set_option("display.width", 200)
    matplotlib.rcParams["figure.dpi"] = 90
    return _run(prefix, params, dict(models or {}), "cpu")  # no model: nothing on a GPU


def attention_maps(inputs: Sequence, models: Sequence, what: str = "inputs",
                   progress: bool | None = None, **kwargs) -> list:
    """The attention store of each of ``models`` for the same ``inputs``
    (:func:`analysis_utils.engine.attention.extract_attention`: extracted once, then read
    from the cache). Prints how many, their size on disk and, per model, how long the
    extraction took, on which device and when, as the store's manifest records it, beside the
    time this call took (a cache read takes a fraction of a second; the extraction time is
    what a first run on another machine should expect). ``progress``: None draws a progress
    bar only in a terminal."""
    from ..engine import attention

    stores, lines = [], []
    for m in models:
        t0 = time.perf_counter()
        store = attention.extract_attention(m, inputs, progress=progress,
                                            desc=f"maps {m.label}", **kwargs)
        took = time.perf_counter() - t0
        stores.append(store)
        if store.extracted_now:
            lines.append(f"  {m.label}: extracted now in {_seconds(took)} on {store.device}")
        else:
            lines.append(f"  {m.label}: {store.extraction_note()}; read from the cache in "
                         f"{took:.2f} s")
    print(f"{len(stores[0])} {what}, {stores[0].nbytes / 1e9:.2f} GB per model on disk")
    print("\n".join(lines))
    return stores


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def training_note(model: str) -> str:
    """Markdown for where a result depends on how the model was trained: its model card's
    base model, objective and pair count quoted (:func:`~analysis_utils.engine.modelcard.
    training_card`), and why that matters for sentence-pair tasks; or that no card ships with
    ``model`` here (a hub id is not fetched), so the reader must check it."""
    from ..engine.modelcard import training_card

    card = training_card(model)
    if card is None:
        return (f"**How this model was trained** is not quoted: no model card ships with "
                f"`{model}` here. Both papers' BERT-base is a masked-language model; check "
                "how yours was trained before reading its frozen features or its heads as "
                "BERT-base's.")
    pairs = "contrastive" in card["objective"].lower() or "pair" in card["pairs"].lower()
    return (f"**How this model was trained** (its model card): fine-tuned from "
            f"`{card['base model']}`; \"{card['objective']}\" \"{card['pairs']}\" "
            + ("It was trained on sentence pairs, not as a masked-language model like "
               "BERT-base, so the sentence-pair tasks (MRPC, STS-B, RTE) are close to what it "
               "was trained for and its frozen features start high on them: read the frozen "
               "baselines, and every gain over them, in that light."
               if pairs else "Compare its objective with BERT-base's masked-language model "
                             "before reading its heads as BERT-base's."))


def one_based(df):
    """``df`` with its ``layer`` and ``head`` columns counted from 1, as every saved table
    names heads ("3-10": layer 3, head 10); the analyses index from 0."""
    return df.assign(**{c: df[c].astype(int) + 1 for c in ("layer", "head") if c in df})


def table_view(df, digits: int | Mapping[str, int] = 1, index: str | Sequence[str] | None = None):
    """``df`` as a reader sees it in the rendered notebook: floats with ``digits`` decimals
    (an int, or column -> int, default 1), missing values as ``report.MISSING`` ("–", never
    ``NaN`` or ``<NA>``), the ``index`` column(s) as row labels. Returns a DataFrame of
    strings: as a cell's last expression it renders as an HTML table, and its text form
    depends only on the rounded values (stable for golden checks).

    >>> import pandas as pd
    >>> view = table_view(pd.DataFrame({"rel": ["det", "prep"], "acc": [94.31, None]}),
    ...                   index="rel")
    >>> view["acc"].to_dict()
    {'det': '94.3', 'prep': '–'}
    """
    import numpy as np
    import pandas as pd

    def cell(v, d: int) -> str:
        if report._missing(v):
            return report.MISSING
        if isinstance(v, (float, np.floating)):
            return f"{v:.{d}f}"
        return str(v)

    out = pd.DataFrame(index=df.index)
    for c in df.columns:
        d = digits.get(c, 1) if isinstance(digits, Mapping) else digits
        out[c] = [cell(v, d) for v in df[c]]
    if index is not None:
        out = out.set_index(index)
    return out
