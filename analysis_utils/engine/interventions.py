"""Record, replace and gate attention heads in transformers 5.x (one mechanism for all).

transformers 5 dropped ``head_mask`` from BERT's forward, so every intervention on attention
goes through one attention function registered with ``transformers.AttentionInterface``
(and, under the same name, ``AttentionMaskInterface`` bound to ``eager_mask``: without it
padding silently stops being masked). It reproduces eager attention bit for bit (scores =
q k^T * scaling + mask, softmax, dropout, @ v) and, for the model inside an :func:`intervene`
context, changes the softmax output of chosen heads before dropout:

- ``uniform``: every row becomes 1/L over the L real (non-padding) tokens of its example,
  padding columns exactly 0 (Kovaleva et al. 2019, Section 4.6, "disabling" a head);
- ``zero``: the head's probabilities, hence its output, are 0 (Michel et al. 2019 masking);
- ``gate``: a (layers, heads) tensor multiplies each head's probabilities, i.e. its output;
  with ``requires_grad`` the gradient d loss / d gate is Michel et al.'s head importance
  (Section 4.1 of "Are Sixteen Heads Really Better than One?");
- ``record``: the probabilities actually used (after any replacement) of chosen layers, in
  layer order, for the latest forward pass (Clark et al. 2019 Section 3 maps, Section 3.2
  gradients with ``retain_grad`` / ``make_leaf``).

Which layer a call belongs to: the position of the calling module in the model's layer list
(the first ``nn.ModuleList`` of ``config.num_hidden_layers`` entries: ``encoder.layer`` in
BERT, RoBERTa, ELECTRA, ``transformer.layer`` in DistilBERT), mapped when the context is
entered; modules outside such a list fall back to their ``layer_idx`` attribute (set by
transformers 5 on ``BertSelfAttention``), then to the order of calls (shared layers, below).

Models that compute attention in their own code instead of calling ``AttentionInterface``
are reached through a hook the engine owns, where one is declared (:data:`OWN_CODE_HOOKS`):
MPNet (all-mpnet-base-v2) adds its relative position bias to the scores and takes the softmax
itself in ``MPNetSelfAttention.forward``, then passes the probabilities through its own
``dropout`` module; a forward pre-hook on that module applies the same change
(``Intervention._apply``, before dropout, with the padding mask captured from the attention
module's call), so both paths change a head identically (tested against the
``AttentionInterface`` path on a BERT with the same weights). Any other model that computes
attention in its own code is refused at entry with a :class:`NotRoutedError` (not silently
run unchanged). As a second guard, a forward pass inside the context that changes heads but
never reaches the intervention raises instead of returning unchanged outputs.

Models that reuse one attention module for several layers (ALBERT) have no layer list: the
layer of each call is its position in the forward pass (the k-th attention call is layer k),
checked at the end of every pass to number exactly ``num_hidden_layers`` calls.

Nesting is refused: entering a second context on a model (or on another model sharing its
config object) while one is active raises ``RuntimeError``; put every change in one call
(``uniform``, ``zero``, ``gate`` and ``record`` combine). Leaving the context, normally or
through an exception, restores the previous attention implementation exactly.

Example::

    with intervene(loaded, uniform=[(0, 1)], record=True) as iv:
        out = loaded.model(**batch)
        iv.attentions[0][:, 1]        # (batch, n, n): 1/L on real tokens, 0 on padding
        active_intervention(loaded)   # {"mode": "uniform", "uniform": [[0, 1]], ...}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator

import torch
from torch import nn

INTERVENTION_IMPL = "bertology_intervention"
#: Attention modules that compute their softmax in their own code -> the submodule that
#: receives the probabilities first (its input is the softmax output): the engine's hook point.
OWN_CODE_HOOKS = {"MPNetSelfAttention": "dropout"}
DESCRIPTION_VERSION = 1

# module -> (active Intervention, layer index or None): filled on entering a context, emptied
# on leaving it. Modules not listed (another model sharing the config) run plain eager.
_ACTIVE: dict[nn.Module, tuple[Intervention, int | None]] = {}


# ---------------------------------------------------------------------------------------
# the attention function


def intervention_attention_forward(module: nn.Module, query: torch.Tensor, key: torch.Tensor,
                                   value: torch.Tensor, attention_mask: torch.Tensor | None,
                                   scaling: float | None = None, dropout: float = 0.0,
                                   **kwargs):
    """Eager attention (as ``modeling_bert.eager_attention_forward``) plus the intervention
    active on ``module``'s model, if any.

    query/key/value: (batch, heads, n, head_dim); attention_mask: additive (batch, 1, n, n)
    or None; returns ``(output (batch, n, heads, head_dim), weights (batch, heads, n, n))``.
    """
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attention_mask = attention_mask[..., : key.shape[-2]]
        scores = scores + attention_mask
    probs = nn.functional.softmax(scores, dim=-1)
    entry = _ACTIVE.get(module)
    if entry is not None:
        intervention, layer = entry
        probs = intervention._apply(module, layer, probs, attention_mask)
    weights = nn.functional.dropout(probs, p=dropout, training=module.training)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return output, weights


def register_intervention_attention(name: str = INTERVENTION_IMPL) -> str:
    """Register :func:`intervention_attention_forward` and the eager mask under ``name``."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(name, intervention_attention_forward)
    AttentionMaskInterface.register(name, eager_mask)
    return name


def _real_tokens(attention_mask: torch.Tensor | None, probs: torch.Tensor) -> torch.Tensor:
    """Boolean (batch or 1, 1 or heads, n, n): True where a query may attend to a key."""
    if attention_mask is None:  # no padding in the batch: the mask function skipped it
        return torch.ones((1, 1) + tuple(probs.shape[-2:]), dtype=torch.bool,
                          device=probs.device)
    if attention_mask.dtype == torch.bool:
        return attention_mask
    # additive mask: 0 where allowed, the dtype's minimum where masked
    return attention_mask > torch.finfo(attention_mask.dtype).min / 2


def _uniform_rows(attention_mask: torch.Tensor | None, probs: torch.Tensor) -> torch.Tensor:
    """(batch, 1, n, n): 1/L over the L real tokens of each example, exactly 0 elsewhere."""
    allowed = _real_tokens(attention_mask, probs).to(probs.dtype)
    return allowed / allowed.sum(-1, keepdim=True).clamp_min(1)


# ---------------------------------------------------------------------------------------
# the context


def unwrap_model(model) -> nn.Module:
    """Accept a torch model or an object holding one in ``.model`` (e.g. LoadedModel)."""
    if not isinstance(model, nn.Module) and hasattr(model, "model"):
        model = model.model
    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"expected a transformers model (or an object holding one in .model), "
                        f"got {type(model).__name__}")
    return model


def _heads(pairs, num_layers: int, num_heads: int, what: str) -> tuple[tuple[int, int], ...]:
    out = set()
    for pair in pairs or ():
        layer, head = (int(x) for x in pair)
        if not (0 <= layer < num_layers and 0 <= head < num_heads):
            raise ValueError(f"{what}: head ({layer}, {head}) is outside this model's "
                             f"{num_layers} layers x {num_heads} heads")
        out.add((layer, head))
    return tuple(sorted(out))


def layer_list(model: nn.Module, num_layers: int) -> nn.ModuleList | None:
    """The encoder's list of ``num_layers`` layers (the first ``nn.ModuleList`` of that
    length), or None when the model has none (ALBERT-like models share one layer)."""
    return next((m for m in model.modules()
                 if isinstance(m, nn.ModuleList) and len(m) == num_layers), None)


def _layer_map(model: nn.Module, num_layers: int) -> dict[nn.Module, int | None]:
    """Every submodule -> its layer: position in the layer list, else ``layer_idx``, else None
    (then the call order in the pass gives the layer: shared layers, ALBERT)."""
    layers = layer_list(model, num_layers)
    found = {}
    if layers is not None:
        for i, block in enumerate(layers):
            for sub in block.modules():
                found[sub] = i
    mapping = {}
    for sub in model.modules():
        idx = getattr(sub, "layer_idx", None)
        mapping[sub] = found.get(sub, idx if isinstance(idx, int) else None)
    return mapping


def _attn_configs(model: nn.Module) -> list:
    """Every distinct config object in the model (submodels may carry their own)."""
    configs = {}
    for sub in model.modules():
        cfg = getattr(sub, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation"):
            configs.setdefault(id(cfg), cfg)
    return list(configs.values())


def _snapshot(configs: list) -> list:
    return [(cfg, cfg.__dict__.get("_attn_implementation_internal", cfg._attn_implementation))
            for cfg in configs]


def _restore(model: nn.Module, snapshot: list) -> None:
    for cfg, impl in snapshot:
        if "_attn_implementation_internal" in cfg.__dict__:
            cfg._attn_implementation_internal = impl  # exact: no checks, no fallbacks
        else:  # pragma: no cover - configs without the internal attribute
            cfg._attn_implementation = impl


class NotRoutedError(ValueError):
    """A model whose attention does not go through ``transformers.AttentionInterface``, so
    :func:`intervene` cannot reach its heads."""


def _routes_attention(model: nn.Module) -> bool:
    """Whether every transformers model class in ``model`` calls ``AttentionInterface``
    (transformers' own test, ``PreTrainedModel._can_set_attn_implementation``: the modeling
    module of a class with an ``*Attention*`` module looks its function up in the interface).
    Plain modules holding a config are trusted; the forward-pass guard covers them."""
    from transformers import PreTrainedModel

    classes = {type(m) for m in model.modules() if isinstance(m, PreTrainedModel)}
    check = [getattr(c, "_can_set_attn_implementation", None) for c in classes]
    return all(f() for f in check if f is not None)


def _hook_points(model: nn.Module) -> list[tuple[nn.Module, nn.Module]]:
    """(attention module, module receiving its probabilities) for every attention module of
    ``model`` declared in :data:`OWN_CODE_HOOKS`."""
    out = []
    for m in model.modules():
        sub = OWN_CODE_HOOKS.get(type(m).__name__)
        if sub is not None and isinstance(getattr(m, sub, None), nn.Module):
            out.append((m, getattr(m, sub)))
    return out


def supports(model) -> bool:
    """Whether :func:`intervene` can reach ``model``'s heads: its attention goes through
    ``transformers.AttentionInterface`` (BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT) or through
    a hook the engine owns (:data:`OWN_CODE_HOOKS`: MPNet)."""
    m = unwrap_model(model)
    return _routes_attention(m) or bool(_hook_points(m))


def why_not(model) -> str:
    """Why :func:`intervene` cannot reach ``model`` (empty when it can)."""
    m = unwrap_model(model)
    return "" if supports(m) else _not_routed_message(m)


def _not_routed_message(model: nn.Module) -> str:
    own = sorted({type(m).__name__ for m in model.modules()
                  if "Attention" in type(m).__name__})
    return (f"{type(model).__name__} ({getattr(model.config, 'model_type', '?')}) computes "
            f"attention in its own code ({', '.join(own) or 'its attention modules'}) instead of "
            "calling transformers.AttentionInterface, so intervene cannot replace, zero, gate or "
            "record its heads, and no engine hook is declared for it (OWN_CODE_HOOKS names "
            "the attention modules the engine reaches by a hook, e.g. MPNetSelfAttention). "
            "Its attention maps can still be extracted (extract_attention, output_attentions="
            "True); for head disabling use a BERT-family model, e.g. load_model('minilm').")


def _set_impl(model: nn.Module, name: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # plain nn.Module holding a config
        model.config._attn_implementation = name


class Intervention:
    """What :func:`intervene` yields: the active changes and the recorded probabilities.

    ``attentions``: list of (batch, heads, n, n) tensors, one per recorded layer in layer
    order, for the latest forward pass (a new list each pass: keep a reference to keep it);
    ``passes``: how many forward passes ran inside the context.
    """

    def __init__(self, num_layers: int, num_heads: int, uniform, zero, gate, record,
                 retain_grad: bool, make_leaf: bool):
        self.num_layers, self.num_heads = num_layers, num_heads
        self.uniform = _heads(uniform, num_layers, num_heads, "uniform")
        self.zero = _heads(zero, num_layers, num_heads, "zero")
        both = set(self.uniform) & set(self.zero)
        if both:
            raise ValueError(f"heads {sorted(both)} are both in uniform and zero: pick one")
        if gate is not None:
            if not isinstance(gate, torch.Tensor):
                gate = torch.as_tensor(gate, dtype=torch.float32)
            if tuple(gate.shape) != (num_layers, num_heads):
                raise ValueError(f"gate must have shape (layers, heads) = ({num_layers}, "
                                 f"{num_heads}), got {tuple(gate.shape)}")
        self.gate = gate
        if record is True:
            record = range(num_layers)
        self.record = frozenset(int(x) for x in (record or ()))
        bad = [x for x in self.record if not 0 <= x < num_layers]
        if bad:
            raise ValueError(f"record: layers {sorted(bad)} outside 0..{num_layers - 1}")
        self.retain_grad, self.make_leaf = retain_grad, make_leaf
        self.attentions: list[torch.Tensor] = []
        self.passes = 0
        self._calls = 0  # calls of the attention function (the no-op guard counts them)
        self._last_layer: int | None = None
        self._pass_calls = 0  # attention calls in the current pass (shared layers' numbering)
        self._by_layer = {kind: _per_layer(heads)
                          for kind, heads in (("uniform", self.uniform), ("zero", self.zero))}
        self._head_masks: dict = {}

    def describe(self) -> dict | None:
        """JSON-able description for cache keys, or None when nothing changes the attention
        (record only). Gate values are summarised by a sha256 over their float64 bytes, read
        now (a gate edited in place gets a new hash)."""
        modes = [m for m, on in (("uniform", self.uniform), ("zero", self.zero),
                                 ("gate", self.gate is not None)) if on]
        if not modes:
            return None
        gate = None
        if self.gate is not None:
            values = self.gate.detach().to("cpu", torch.float64).contiguous().numpy()
            gate = {"shape": list(values.shape),
                    "sha256": hashlib.sha256(values.tobytes()).hexdigest()}
        return {"version": DESCRIPTION_VERSION, "mode": "+".join(modes),
                "uniform": [list(p) for p in self.uniform], "zero": [list(p) for p in self.zero],
                "gate": gate}

    def key(self) -> str | None:
        """Short hash of :meth:`describe` (None when it is None), for file names."""
        desc = self.describe()
        if desc is None:
            return None
        return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]

    def _head_mask(self, kind: str, layer: int, device: torch.device) -> torch.Tensor:
        cache_key = (kind, layer, device)
        if cache_key not in self._head_masks:
            mask = torch.zeros(self.num_heads, dtype=torch.bool)
            mask[list(self._by_layer[kind][layer])] = True
            self._head_masks[cache_key] = mask.to(device)[None, :, None, None]
        return self._head_masks[cache_key]

    def _apply(self, module: nn.Module, layer: int | None, probs: torch.Tensor,
               attention_mask: torch.Tensor | None) -> torch.Tensor:
        self._calls += 1
        self._pass_calls += 1
        if layer is None:
            layer = getattr(module, "layer_idx", None)
            if not isinstance(layer, int):  # one module shared by all layers: the call order
                layer = self._pass_calls - 1
                if layer >= self.num_layers:
                    raise RuntimeError(
                        f"{type(module).__name__} was called {self._pass_calls} times in one "
                        f"forward pass of a {self.num_layers}-layer model: its calls cannot be "
                        "numbered as layers (an ALBERT with several layers per group?)")
        if probs.shape[1] != self.num_heads:
            raise RuntimeError(f"layer {layer} has {probs.shape[1]} heads, the config says "
                               f"{self.num_heads} (pruned heads are not supported)")
        if self._last_layer is None or layer <= self._last_layer:  # a new forward pass
            self.attentions = []
            self.passes += 1
        self._last_layer = layer
        if layer in self._by_layer["uniform"]:
            probs = torch.where(self._head_mask("uniform", layer, probs.device),
                                _uniform_rows(attention_mask, probs), probs)
        if layer in self._by_layer["zero"]:
            probs = probs.masked_fill(self._head_mask("zero", layer, probs.device), 0.0)
        if self.gate is not None:
            probs = probs * self.gate[layer].to(probs)[None, :, None, None]
        if layer in self.record:
            if self.make_leaf and torch.is_grad_enabled() and not probs.requires_grad:
                probs = probs.detach().requires_grad_(True)
            if self.retain_grad and probs.requires_grad:
                probs.retain_grad()
            self.attentions.append(probs)
        return probs


def _per_layer(heads) -> dict[int, tuple[int, ...]]:
    out: dict[int, list[int]] = {}
    for layer, head in heads:
        out.setdefault(layer, []).append(head)
    return {layer: tuple(hs) for layer, hs in out.items()}


@contextlib.contextmanager
def intervene(model, *, uniform: Iterable[tuple[int, int]] = (),
              zero: Iterable[tuple[int, int]] = (), gate: torch.Tensor | None = None,
              record: bool | Iterable[int] = False, retain_grad: bool = False,
              make_leaf: bool = False, name: str = INTERVENTION_IMPL) -> Iterator[Intervention]:
    """Run ``model`` with heads replaced, gated and/or recorded; yields an :class:`Intervention`.

    model: a transformers model (with or without a task head) or an object holding one in
    ``.model``; uniform / zero: (layer, head) pairs; gate: (layers, heads) tensor multiplying
    each head's probabilities (applied after uniform/zero); record: True for every layer or
    the layers to keep in ``.attentions`` (each (batch, heads, n, n), after the changes).
    retain_grad: ``retain_grad()`` on the recorded probabilities; make_leaf: when grad is
    enabled but nothing upstream requires it, make them leaves so d loss / d probs exists.

    Example (Michel et al. 2019 head importance)::

        gate = torch.ones(layers, heads, requires_grad=True)
        with intervene(model, gate=gate):
            model(**batch).logits.log_softmax(-1)[..., 0].sum().backward()
        importance = gate.grad.abs()
    """
    model = unwrap_model(model)
    config = model.config
    iv = Intervention(int(config.num_hidden_layers), int(config.num_attention_heads),
                      uniform, zero, gate, record, retain_grad, make_leaf)
    modules = list(model.modules())
    if any(m in _ACTIVE for m in modules) or config._attn_implementation == name:
        raise RuntimeError("an intervention is already active on this model (or on one sharing "
                           "its config): nesting is not supported; leave it first, or give "
                           "uniform/zero/gate/record together in one intervene() call")
    routed = _routes_attention(model)
    points = [] if routed else _hook_points(model)
    if not routed and not points:
        raise NotRoutedError(_not_routed_message(model))
    mapping = _layer_map(model, iv.num_layers)
    if routed:
        register_intervention_attention(name)
    snapshot = _snapshot(_attn_configs(model))
    # a pass starts at the model's forward, or at its base model's when called directly
    from transformers import PreTrainedModel

    hooks = [m.register_forward_pre_hook(lambda module, args: _new_pass(iv))
             for m in modules if m is model or isinstance(m, PreTrainedModel)]
    try:
        if routed:
            _set_impl(model, name)
            if config._attn_implementation != name:
                raise NotRoutedError(_not_routed_message(model))
        else:
            hooks += _own_code_hooks(points, iv, mapping)
        for m in modules:
            _ACTIVE[m] = (iv, mapping.get(m))
        if iv.describe() is not None or iv.record:
            hooks += _guard_passes(model, iv)
        yield iv
    finally:
        for h in hooks:
            h.remove()
        for m in modules:
            entry = _ACTIVE.get(m)
            if entry is not None and entry[0] is iv:
                del _ACTIVE[m]
        _restore(model, snapshot)


def _new_pass(iv: Intervention) -> None:
    iv._pass_calls = 0


def _own_code_hooks(points, iv: Intervention, mapping) -> list:
    """The engine's hook for attention computed in a model's own code (:data:`OWN_CODE_HOOKS`):
    the attention module's call leaves its padding mask here, and the module that receives the
    softmax output gets the probabilities after ``Intervention._apply`` (before dropout, as
    in :func:`intervention_attention_forward`)."""
    masks: dict[nn.Module, torch.Tensor | None] = {}
    hooks = []
    for attn, receiver in points:
        def keep_mask(module, args, kwargs):
            mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
            masks[module] = mask

        def change(module, args, attn=attn):
            probs = iv._apply(attn, mapping.get(attn), args[0], masks.get(attn))
            return (probs, *args[1:])

        hooks.append(attn.register_forward_pre_hook(keep_mask, with_kwargs=True))
        hooks.append(receiver.register_forward_pre_hook(change))
    return hooks


def _guard_passes(model: nn.Module, iv: Intervention) -> list:
    """Hooks on ``model`` that raise when one of its forward passes ran without a single call
    of the attention function (the changes asked for would silently not have happened)."""
    calls_before: list[int] = []

    def before(module, args):
        calls_before.append(iv._calls)

    def after(module, args, output):
        start = calls_before.pop() if calls_before else iv._calls
        if iv._calls == start:
            raise NotRoutedError(_not_routed_message(model) + " (a forward pass inside "
                                 "intervene() never reached the intervention's attention "
                                 "function)")

    return [model.register_forward_pre_hook(before), model.register_forward_hook(after)]


def active_intervention(model) -> dict | None:
    """:meth:`Intervention.describe` of the context active on ``model`` (None outside one,
    or when it only records); include it in attention-cache keys."""
    for m in unwrap_model(model).modules():
        entry = _ACTIVE.get(m)
        if entry is not None:
            return entry[0].describe()
    return None
