"""Fingerprint of a model's weights as they are in memory, for cache keys.

A hash of the checkpoint files says nothing about a model fine-tuned, randomised or edited
after loading; :func:`weights_fingerprint` hashes the tensors themselves, so one optimiser
step gives a new key and two loads of the same folder give the same one.
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn

FINGERPRINT_VERSION = "weights_fingerprint/v1"


def _tensor_bytes(t: torch.Tensor) -> memoryview:
    """The raw bytes of ``t`` (any dtype, any device), C-contiguous, without copying on CPU."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    t = t.contiguous().reshape(-1)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    # bfloat16 / float8 have no numpy dtype: reinterpret the same storage as bytes
    return memoryview(t.view(torch.uint8).numpy()) if t.numel() else memoryview(b"")


def weights_fingerprint(model) -> str:
    """sha256 hex digest over every parameter and buffer of ``model`` in memory.

    model: an ``nn.Module`` or an object holding one in ``.model`` (LoadedModel). Names are
    taken in sorted order; each contributes its name, dtype, shape and bytes. A tensor shared
    under several names (tied embeddings) is hashed once and then referenced by its first
    name, so tying is part of the fingerprint. Meta (not materialised) tensors are refused.

    Example::

        before = weights_fingerprint(model)
        with torch.no_grad():
            model.embeddings.word_embeddings.weight[0, 0] += 1
        assert weights_fingerprint(model) != before
    """
    if not isinstance(model, nn.Module) and hasattr(model, "model"):
        model = model.model
    tensors = dict(model.named_parameters(remove_duplicate=False))
    tensors.update(model.named_buffers(remove_duplicate=False))
    digest = hashlib.sha256(FINGERPRINT_VERSION.encode())
    seen: dict[tuple, str] = {}
    for name in sorted(tensors):
        t = tensors[name]
        if t.device.type == "meta":
            raise ValueError(f"{name} is on the meta device (not loaded): load the weights "
                             "before fingerprinting")
        header = f"\n{name}\t{t.dtype}\t{list(t.shape)}\t"
        digest.update(header.encode())
        ident = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.stride()),
                 t.dtype, tuple(t.shape), t.device) if t.numel() else None
        if ident is not None and ident in seen:
            digest.update(f"same as {seen[ident]}".encode())
            continue
        if ident is not None:
            seen[ident] = name
        digest.update(_tensor_bytes(t))
    return digest.hexdigest()


def model_state(model) -> dict:
    """What a cache key needs to know about a model beyond its identity: the fingerprint of
    its in-memory weights and the intervention active on it (None outside one).

    model: a torch model or an object holding one in ``.model`` (e.g. LoadedModel)."""
    from .interventions import active_intervention

    module = model.model if not isinstance(model, nn.Module) and hasattr(model, "model") else model
    return {"weights": weights_fingerprint(module), "intervention": active_intervention(module)}
