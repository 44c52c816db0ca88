"""Saved evidence: a notebook's heavy computations, written once beside its tables and replayed
from there (issue 54, item 2).

A notebook wraps each heavy step in ``saved.step(run, name, compute, what)`` (:func:`step`,
``run`` its :class:`~analysis_utils.publish.report.Run`) and prints :func:`mode` once after its
setup. The step's value (nested dicts,
lists and tuples of DataFrames, arrays and plain scalars: :func:`pack`) is written to
``results/NN_evidence_<step>.npz`` with the run's other outputs, so the committed run ships it
and the papermill driver publishes it like any table. Then:

- ``recompute=True`` (every profile of the driver sets it: the committed renders compute
  everything they show): ``compute()`` runs, and its value is saved;
- ``recompute=False`` (the notebook's own default: an explorer on Binder or Colab who opens it
  alone): the saved file whose key matches is read instead, from this run's results folder, the
  folder the papermill driver publishes it into (``$BERTOLOGY_PUBLISHED_RESULTS``) or the
  repository's ``results/`` (each profile's subfolder included); only where none matches does
  ``compute()`` run. Each step prints which it did and why.

The key (:func:`key`) is the notebook, the step, the parameters the run records (``device``
and ``recompute`` left out: where it ran and whether it recomputed do not change what it
computes), the identity of both models (their weights' checksum, init and seed) and the data
the run records. It does not hold the code: the committed evidence is as current as the
committed render that wrote it, which ``python -m analysis_utils stale`` checks, and a reader
who changes the code recomputes with ``recompute=True``. The file records the commit and
device that computed it and the seconds it took, and replay prints them.

Values are stored without pickle: arrays as they are, DataFrames (their ``attrs`` too) as
Parquet bytes, scalars and the structure as JSON, so the bytes load in any numpy, pandas and
Python that read Parquet, and replay gives back equal objects (:func:`unpack`; a test holds
it, dtypes and index included).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

PACKAGE = "analysis_utils"
STEM = "evidence"
#: Parameters that do not change what a step computes (where it ran, whether it recomputed).
IGNORED_PARAMETERS = ("device", "recompute")
#: Model identity fields that say which weights computed the evidence.
MODEL_FIELDS = ("name", "source", "revision", "weights_sha256", "init", "seed")
#: Set by the papermill driver for its kernel: the results folder the run publishes into,
#: searched for saved evidence before the repository's (the run itself writes to staging).
PUBLISHED_ENV = "BERTOLOGY_PUBLISHED_RESULTS"
SPEC = "__spec__"
META = "__meta__"


class EvidenceError(ValueError):
    """A value :func:`pack` cannot store, or a saved file that does not read back."""


def key(prefix: str, step: str, params: Mapping, models: Mapping, data: Mapping) -> str:
    """The content key of one step: a sha256 over what decides its value (module docstring).

    >>> a = key("01", "norms", {"seed": 0, "device": "cpu"}, {}, {})
    >>> a == key("01", "norms", {"seed": 0, "device": "cuda", "recompute": True}, {}, {})
    True
    >>> a == key("01", "norms", {"seed": 1}, {}, {})
    False
    """
    doc = {"notebook": prefix, "step": step,
           "parameters": {k: v for k, v in sorted(params.items())
                          if k not in IGNORED_PARAMETERS},
           "models": {role: {f: (ident or {}).get(f) for f in MODEL_FIELDS}
                      for role, ident in sorted(models.items())},
           "data": data}
    text = json.dumps(doc, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def file_name(prefix: str, step: str) -> str:
    """``NN_evidence_<step>.npz``."""
    if not step.replace("_", "").isalnum():
        raise ValueError(f"step name {step!r}: letters, digits and underscores only")
    return f"{prefix}_{STEM}_{step}.npz"


# --- packing ---------------------------------------------------------------------------------

def _frame_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, engine="pyarrow")
    return buf.getvalue()


def pack(value) -> dict[str, np.ndarray]:
    """``value`` as named arrays for ``np.savez`` (no pickle): the structure as JSON in
    ``__spec__``, each array and each DataFrame's Parquet bytes under its own name.

    Dicts (any keys that pack), lists, tuples, DataFrames, Series, numpy arrays and scalars,
    ``None``, bools, ints, floats, strings and the package's own dataclasses (rebuilt from
    their fields); anything else raises :class:`EvidenceError`.
    """
    arrays: dict[str, np.ndarray] = {}

    def put(a: np.ndarray) -> str:
        name = f"a{len(arrays)}"
        arrays[name] = a
        return name

    def spec(v, where: str):
        if v is None or isinstance(v, (bool, str)):
            return {"t": "json", "v": v}
        if isinstance(v, (int, float)) and not isinstance(v, (np.generic,)):
            return {"t": "json", "v": v}
        if isinstance(v, np.generic):
            return {"t": "np", "a": put(np.asarray(v))}
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                raise EvidenceError(f"{where}: an object array cannot be saved without pickle; "
                                    "convert it to a typed array or a list")
            return {"t": "nd", "a": put(v)}
        if isinstance(v, pd.Series):
            return {"t": "series", "name": spec(v.name, f"{where}.name"),
                    "frame": spec(v.to_frame(name="values"), where)}
        if isinstance(v, pd.DataFrame):
            cols = list(v.columns)
            plain = v.copy()
            plain.attrs = {}
            plain.columns = [f"c{i}" for i in range(len(cols))]
            try:
                raw = _frame_bytes(plain)
            except Exception as err:  # pyarrow's errors name the column's type
                raise EvidenceError(f"{where}: DataFrame does not store as Parquet ({err})") \
                    from err
            multi = isinstance(v.columns, pd.MultiIndex)
            return {"t": "df", "a": put(np.frombuffer(raw, dtype=np.uint8)),
                    "columns": [spec(c, f"{where}.columns") for c in cols],
                    "multi": multi, "names": [spec(n, where) for n in v.columns.names],
                    "attrs": spec(dict(v.attrs), f"{where}.attrs")}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            cls = type(v)
            if not cls.__module__.startswith(PACKAGE + "."):
                raise EvidenceError(f"{where}: only the package's own dataclasses are saved "
                                    f"(not {cls.__module__}.{cls.__qualname__})")
            return {"t": "dataclass", "cls": f"{cls.__module__}:{cls.__qualname__}",
                    "fields": {f.name: spec(getattr(v, f.name), f"{where}.{f.name}")
                               for f in dataclasses.fields(v)}}
        if isinstance(v, dict):
            return {"t": "dict", "items": [[spec(k, f"{where} key"), spec(x, f"{where}[{k!r}]")]
                                           for k, x in v.items()]}
        if isinstance(v, (list, tuple)):
            return {"t": type(v).__name__,
                    "items": [spec(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        raise EvidenceError(f"{where}: cannot save a {type(v).__name__} as evidence (dicts, "
                            "lists, tuples, DataFrames, Series, arrays and scalars only)")

    top = spec(value, "value")
    arrays[SPEC] = np.asarray(json.dumps(top))
    return arrays


def unpack(arrays: Mapping[str, np.ndarray]):
    """The value :func:`pack` stored in ``arrays`` (an ``np.load`` result or a dict)."""
    top = json.loads(str(arrays[SPEC][()]))

    def build(s):
        t = s["t"]
        if t == "json":
            return s["v"]
        if t == "np":
            return np.asarray(arrays[s["a"]])[()]
        if t == "nd":
            return np.asarray(arrays[s["a"]])
        if t == "series":
            frame = build(s["frame"])
            out = frame["values"]
            out.name = build(s["name"])
            return out
        if t == "df":
            df = pd.read_parquet(io.BytesIO(np.asarray(arrays[s["a"]]).tobytes()),
                                 engine="pyarrow")
            cols = [build(c) for c in s["columns"]]
            names = [build(n) for n in s["names"]]
            df.columns = (pd.MultiIndex.from_tuples(cols, names=names) if s["multi"]
                          else pd.Index(cols, name=names[0] if names else None,
                                        dtype=object if not cols else None))
            df.attrs = build(s["attrs"])
            return df
        if t == "dataclass":
            module, _, qualname = s["cls"].partition(":")
            if not module.startswith(PACKAGE + "."):
                raise EvidenceError(f"saved evidence names a class outside the package: "
                                    f"{s['cls']}")
            cls = importlib.import_module(module)
            for part in qualname.split("."):
                cls = getattr(cls, part)
            return cls(**{k: build(v) for k, v in s["fields"].items()})
        if t == "dict":
            return {_hashable(build(k)): build(v) for k, v in s["items"]}
        if t in ("list", "tuple"):
            items = [build(x) for x in s["items"]]
            return tuple(items) if t == "tuple" else items
        raise EvidenceError(f"unknown entry type {t!r} in saved evidence")

    return build(top)


def _hashable(k):
    return tuple(_hashable(x) for x in k) if isinstance(k, list) else k


# --- files -----------------------------------------------------------------------------------

def write(path: Path, value, meta: Mapping) -> Path:
    """Save ``value`` (:func:`pack`) and ``meta`` to ``path``, written aside and moved into place
    (an interrupted run leaves the previous file or none, never half of one)."""
    from ..engine import atomic

    arrays = pack(value)
    arrays[META] = np.asarray(json.dumps(dict(meta), sort_keys=True, default=str))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    return path


def read_meta(path: Path) -> dict:
    """The metadata saved with the evidence at ``path`` ({} where it has none or is unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z[META][()])) if META in z.files else {}
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return {}


def read(path: Path):
    """The value saved at ``path``; :class:`EvidenceError` naming the file if it does not read."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return unpack({k: z[k] for k in z.files})
    except EvidenceError:
        raise
    except Exception as err:
        raise EvidenceError(f"{path}: saved evidence does not read back ({err}); delete it, or "
                            "run the notebook with recompute=True to write it again") from err


def candidates(name: str, folders) -> list[Path]:
    """``name`` in each of ``folders`` and their subfolders one level down (each profile's
    ``results/<sub>/``), first found first, without repeats."""
    seen, out = set(), []
    for folder in folders:
        folder = Path(folder)
        for p in [folder / name, *sorted(folder.glob(f"*/{name}"))]:
            r = p.resolve()
            if p.is_file() and r not in seen:
                seen.add(r)
                out.append(p)
    return out


def find(prefix: str, step: str, wanted: str, folders) -> Path | None:
    """The first saved file of ``step`` in ``folders`` (:func:`candidates`) whose key is
    ``wanted``, else None."""
    for p in candidates(file_name(prefix, step), folders):
        if read_meta(p).get("key") == wanted:
            return p
    return None


def _shown(path: Path) -> str:
    from .. import paths

    try:
        return str(path.resolve().relative_to(paths.REPO_ROOT))
    except ValueError:
        return str(path)


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:,.0f} s"


def mode(run) -> str:
    """One line for a notebook's first output: whether its heavy steps compute or replay (its
    ``recompute`` parameter, recorded in ``run.params``)."""
    if run.params.get("recompute", True):
        return "heavy steps: computed here (recompute=True)"
    return ("heavy steps: read from the saved evidence of a run with these parameters where "
            "there is one (results/, committed with the run), else computed here; "
            "recompute=True computes them all")


def step(run, name: str, compute: Callable[[], object], what: str):
    """The value of one heavy step of ``run``'s notebook: ``compute()``, or, unless the
    notebook's ``recompute`` parameter is true, the saved evidence of an earlier run with the
    same parameters, models and data (module docstring). Either way the value is saved as
    ``results/NN_evidence_<name>.npz`` among the run's outputs, and one line says which it
    was."""
    import os

    import torch

    from .. import paths
    from .report import output_dirs

    out_dir, _ = output_dirs()
    device = (torch.cuda.get_device_name(0) if torch.cuda.is_available()
              else f"cpu ({os.cpu_count()} cores)")
    search = [Path(p) for p in (os.environ.get(PUBLISHED_ENV),) if p] + [paths.RESULTS_DIR]
    value, path, line = resolve(
        run.prefix, name, compute, what=what, recompute=bool(run.params.get("recompute", True)),
        params=run.params, models=run.models, data=run.data, out_dir=out_dir, search=search,
        commit=run.commit, device=device)
    run.written.append(path.name)
    print(line)
    return value


def resolve(prefix: str, name: str, compute: Callable[[], object], *, what: str,
            recompute: bool, params: Mapping, models: Mapping, data: Mapping, out_dir: Path,
            search: list[Path], commit: str | None, device: str) -> tuple[object, Path, str]:
    """Run or replay one step (module docstring); return ``(value, saved path, line)``, where
    ``line`` says which it did. The value is always saved as ``out_dir/NN_evidence_<step>.npz``
    (copied there when it was replayed from another folder)."""
    import shutil

    wanted = key(prefix, name, params, models, data)
    target = out_dir / file_name(prefix, name)
    found = None if recompute else find(prefix, name, wanted, [out_dir, *search])
    if found is not None:
        t0 = time.perf_counter()
        value = read(found)
        meta = read_meta(found)
        if found.resolve() != target.resolve():
            from ..engine import atomic

            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic.replacing(target) as tmp:
                shutil.copyfile(found, tmp)
        made = meta.get("commit") or "an unrecorded commit"
        line = (f"{what}: read from {_shown(found)} in {_seconds(time.perf_counter() - t0)} "
                f"(computed at {str(made)[:7]} on {meta.get('device', '?')} in "
                f"{_seconds(float(meta.get('seconds', 0)))}; recompute=True computes it here)")
        return value, target, line
    why = "recompute=True" if recompute else "no saved evidence for these parameters"
    t0 = time.perf_counter()
    value = compute()
    took = time.perf_counter() - t0
    write(target, value, {"key": wanted, "notebook": prefix, "step": name, "commit": commit,
                          "device": device, "seconds": round(took, 1)})
    return value, target, f"{what}: computed here in {_seconds(took)} ({why})"
