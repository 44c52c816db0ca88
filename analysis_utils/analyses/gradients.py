"""Gradient-based importance of attention weights (Clark et al. 2019, Section 3.2, Figure 3):
|d masked-LM loss / d attention weight|, averaged per layer over attention to [SEP], to
periods/commas and to other tokens, through the checkpoint's masked-LM head or one fitted on
the frozen encoder. Method and caveats: notebook 01, "Gradient-based importance".
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from .. import training
from ..engine import atomic
from ..engine.attention import uses_token_types
from ..engine.fingerprint import weights_fingerprint
from ..engine.interventions import intervene
from ..engine.memory import release

TARGETS = ("[SEP]", "./,", "other")


def _unwrap(model):
    """Accept a torch model or an object holding one in ``.model`` (e.g. LoadedModel)."""
    if not isinstance(model, nn.Module) and hasattr(model, "model"):
        return model.model
    return model


# ---------------------------------------------------------------------------------------
# inputs and masking


def _as_ids(enc) -> tuple[list[int], list[int] | None]:
    if isinstance(enc, dict) or hasattr(enc, "keys"):
        ids, tt = enc["input_ids"], enc.get("token_type_ids")
    elif hasattr(enc, "input_ids"):
        ids, tt = enc.input_ids, getattr(enc, "token_type_ids", None)
    else:
        ids, tt = enc, None
    ids = [int(x) for x in ids]
    return ids, ([int(x) for x in tt] if tt is not None else None)


def _pad_batch(items: Sequence[tuple[list[int], list[int] | None]], pad_id: int):
    n = max(len(ids) for ids, _ in items)
    b = len(items)
    input_ids = torch.full((b, n), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((b, n), dtype=torch.long)
    token_type_ids = torch.zeros((b, n), dtype=torch.long)
    has_tt = any(tt is not None for _, tt in items)
    for i, (ids, tt) in enumerate(items):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention_mask[i, : len(ids)] = 1
        if tt is not None:
            token_type_ids[i, : len(tt)] = torch.tensor(tt)
    return input_ids, attention_mask, (token_type_ids if has_tt else None)


def special_ids(tokenizer) -> set[int]:
    """Ids never masked: every special token of the tokenizer ([CLS], [SEP], [PAD], ...)."""
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    for attr in ("cls_token_id", "sep_token_id", "pad_token_id", "bos_token_id", "eos_token_id"):
        v = getattr(tokenizer, attr, None)
        if v is not None:
            ids.add(int(v))
    return ids


def mask_tokens(ids: Sequence[int], rng: np.random.Generator, mask_id: int, vocab_size: int,
                never_mask: set[int], mask_prob: float = 0.15,
                replace: tuple[float, float, float] = (0.8, 0.1, 0.1)):
    """BERT masking of one sequence: each maskable token is selected with ``mask_prob``
    (at least one is selected); selected tokens become [MASK] / a random token / stay,
    with the probabilities ``replace``. Returns ``(masked ids, positions, original ids)``.
    """
    ids = np.asarray(ids, dtype=np.int64)
    eligible = np.flatnonzero(~np.isin(ids, list(never_mask)))
    if eligible.size == 0:
        return ids.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    chosen = eligible[rng.random(eligible.size) < mask_prob]
    if chosen.size == 0:
        chosen = rng.choice(eligible, size=1)
    labels = ids[chosen].copy()
    out = ids.copy()
    u = rng.random(chosen.size)
    to_mask = u < replace[0]
    to_rand = (u >= replace[0]) & (u < replace[0] + replace[1])
    out[chosen[to_mask]] = mask_id
    out[chosen[to_rand]] = rng.integers(0, vocab_size, size=int(to_rand.sum()))
    return out, chosen, labels


def _device_of(model: nn.Module, device=None) -> torch.device:
    if device is not None:
        return torch.device(device)
    try:
        return next(model.parameters()).device
    except StopIteration:  # pragma: no cover
        return torch.device("cpu")


def _tokenize(tokenizer, texts: Iterable[str], max_length: int) -> list[list[int]]:
    out = []
    for t in texts:
        ids = tokenizer(t, truncation=True, max_length=max_length)["input_ids"]
        if len(ids) > 2:
            out.append(list(ids))
    return out


# ---------------------------------------------------------------------------------------
# masked-LM head


def _word_embeddings(encoder: nn.Module) -> nn.Embedding:
    return _unwrap(encoder).get_input_embeddings()


# The fitted head's own activation: BERT's prediction head (the encoder's activation is a
# family-specific config field, hidden_act in BERT, activation in DistilBERT; the head is ours).
MLM_HEAD_ACTIVATION = "gelu"


def build_mlm_head(encoder: nn.Module, train_decoder: bool = False, seed: int = 0) -> nn.Module:
    """A BERT-style prediction head (``BertOnlyMLMHead``: dense + GELU + LayerNorm + decoder +
    bias) sized for ``encoder``: hidden size from its config (``hidden_size``, the name
    ``AutoConfig`` gives every family), vocabulary and embedding width from its word
    embeddings. The decoder is the encoder's word embedding matrix: shared and frozen
    (``train_decoder=False``, BERT's weight tying on a frozen encoder) or a trainable copy of it.
    Where the embeddings are narrower than the hidden states (ALBERT's factorised embeddings),
    the dense layer maps hidden -> embedding width, as ALBERT's own head does."""
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertOnlyMLMHead

    encoder = _unwrap(encoder)
    cfg = encoder.config
    emb = _word_embeddings(encoder).weight
    vocab, width = emb.shape
    hidden = int(cfg.hidden_size)
    # layer_norm_eps: optional in a config (DistilBERT has none), BERT's 1e-12 otherwise
    head_cfg = BertConfig(vocab_size=int(vocab), hidden_size=hidden,
                          hidden_act=MLM_HEAD_ACTIVATION,
                          layer_norm_eps=float(getattr(cfg, "layer_norm_eps", 1e-12)))
    torch.manual_seed(seed)
    head = BertOnlyMLMHead(head_cfg)
    transform = head.predictions.transform
    if width != hidden:
        transform.dense = nn.Linear(hidden, width)
        transform.LayerNorm = nn.LayerNorm(width, eps=head_cfg.layer_norm_eps)
    std = getattr(cfg, "initializer_range", 0.02)
    nn.init.normal_(transform.dense.weight, std=std)
    nn.init.zeros_(transform.dense.bias)
    if train_decoder:
        head.predictions.decoder.weight = nn.Parameter(emb.detach().clone())
    else:
        head.predictions.decoder.weight = nn.Parameter(emb.detach(), requires_grad=False)
    head.predictions.decoder.bias = head.predictions.bias
    nn.init.zeros_(head.predictions.bias)
    return head.to(device=emb.device, dtype=emb.dtype)


@torch.no_grad()
def _masked_states(encoder, items, rng_seed_base: int, tokenizer, mask_prob, replace,
                   batch_size, device):
    """Hidden states of the masked positions of masked copies of ``items`` (frozen encoder).
    Example ``k`` is masked with ``np.random.default_rng([seed, k])``."""
    never = special_ids(tokenizer)
    states, labels = [], []
    vocab = _word_embeddings(encoder).num_embeddings
    for start in range(0, len(items), batch_size):
        chunk = items[start: start + batch_size]
        masked, pos = [], []
        for k, ids in enumerate(chunk):
            rng = np.random.default_rng([rng_seed_base, start + k])
            m, p, lab = mask_tokens(ids, rng, tokenizer.mask_token_id, vocab, never,
                                    mask_prob, replace)
            masked.append((m.tolist(), None))
            pos.append(p)
            labels.append(torch.as_tensor(lab))
        input_ids, attention_mask, _ = _pad_batch(masked, tokenizer.pad_token_id or 0)
        with torch.no_grad():
            hidden = encoder(input_ids=input_ids.to(device),
                             attention_mask=attention_mask.to(device)).last_hidden_state
        for i, p in enumerate(pos):
            states.append(hidden[i, torch.as_tensor(p, device=device)].float().cpu())
        del hidden
        # Batches padded to different lengths leave freed blocks of other sizes that glibc
        # keeps: over notebook 01's 1,200 texts the process grew by 1.5 GB (measured), which
        # made the run that fits the head peak above Binder's 2 GB; returned after each batch
        release()
    return torch.cat(states), torch.cat(labels)


def _accuracy(head, states, labels, device, batch=512) -> float:
    """Masked-token accuracy of ``head`` on cached ``states``, ``batch`` positions at a time.
    Each position's logits span the vocabulary (30,522 x 4 bytes for BERT's), and the head's
    intermediates as many again: 4,096 positions at a time added 960 MB to the process's
    peak (measured; 139 MB at 512), which made notebook 01's first run, the one that fits
    the head, peak above Binder's 2 GB."""
    correct = 0
    with torch.no_grad():
        for s in range(0, len(labels), batch):
            logits = head(states[s: s + batch].to(device, dtype=_head_dtype(head)))
            correct += (logits.argmax(-1).cpu() == labels[s: s + batch]).sum().item()
    return correct / max(len(labels), 1)


def _head_dtype(head):
    return next(head.parameters()).dtype


def fit_mlm_head(encoder: nn.Module, tokenizer, texts: Sequence[str], steps: int = 2000,
                 batch_size: int = 512, lr: float = 1e-3, seed: int = 0, device=None,
                 max_length: int = 128, heldout_fraction: float = 0.1, mask_prob: float = 0.15,
                 copies: int = 2, encode_batch_size: int = 32, train_decoder: bool = False,
                 weight_decay: float = 0.01) -> tuple[nn.Module, dict]:
    """Train a BERT-style masked-LM head on a FROZEN encoder; return ``(head, report)``.

    The texts are tokenized (truncated to ``max_length``) and split, seeded, into training
    and held-out texts (``heldout_fraction``). Each training text is masked ``copies``
    times with BERT's scheme (15% of non-special tokens; 80% [MASK], 10% random, 10% kept)
    and the frozen encoder is run once per masked copy; its hidden states at the selected
    positions are cached, so the ``steps`` AdamW steps (``batch_size`` masked positions
    each) train only the head. Held-out accuracy is measured on masked copies of the
    held-out texts where every selected token is replaced by [MASK].

    ``report``: texts and masked tokens per split, steps, initial/final training loss,
    held-out accuracy before and after training and the majority-token baseline (predict
    the most frequent training target).
    """
    encoder = _unwrap(encoder)
    device = _device_of(encoder, device)
    was_training = encoder.training
    encoder.eval()
    seqs = _tokenize(tokenizer, texts, max_length)
    if len(seqs) < 2:
        raise ValueError("need at least two non-empty texts")
    order = np.random.default_rng(seed).permutation(len(seqs))
    n_held = max(1, int(round(heldout_fraction * len(seqs))))
    held = [seqs[i] for i in order[:n_held]]
    train = [seqs[i] for i in order[n_held:]]

    tr_states, tr_labels = [], []
    for c in range(copies):
        s, lab = _masked_states(encoder, train, seed * 1000 + c + 1, tokenizer, mask_prob,
                                (0.8, 0.1, 0.1), encode_batch_size, device)
        tr_states.append(s)
        tr_labels.append(lab)
    tr_states, tr_labels = torch.cat(tr_states), torch.cat(tr_labels)
    ho_states, ho_labels = _masked_states(encoder, held, seed * 1000, tokenizer, mask_prob,
                                          (1.0, 0.0, 0.0), encode_batch_size, device)
    encoder.train(was_training)

    head = build_mlm_head(encoder, train_decoder=train_decoder, seed=seed)
    acc0 = _accuracy(head, ho_states, ho_labels, device)
    dtype = _head_dtype(head)

    def batches(generator):  # masked positions drawn with replacement, as many as needed
        while True:
            yield torch.randint(0, len(tr_labels), (min(batch_size, len(tr_labels)),),
                                generator=generator)

    def batch_loss(h, idx):
        logits = h(tr_states[idx].to(device, dtype=dtype))
        return nn.functional.cross_entropy(logits.float(), tr_labels[idx].to(device)), len(idx)

    def warmup_then_linear_decay(opt):
        return torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: min(1.0, (t + 1) / max(1, steps // 20)) * max(0.0, 1 - t / steps))

    log = training.fit(head, batches, batch_loss,
                       optimizer=functools.partial(torch.optim.AdamW, lr=lr,
                                                   weight_decay=weight_decay),
                       max_steps=steps, seed=seed, scheduler=warmup_then_linear_decay)
    losses = log.step_losses
    majority = int(torch.mode(tr_labels).values)
    k = max(1, min(50, steps // 10))
    report = {
        "train_texts": len(train),
        "heldout_texts": len(held),
        "train_masked_tokens": int(len(tr_labels)),
        "heldout_masked_tokens": int(len(ho_labels)),
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "copies": copies,
        "train_decoder": train_decoder,
        "initial_train_loss": float(np.mean(losses[:k])) if losses else math.nan,
        "final_train_loss": float(np.mean(losses[-k:])) if losses else math.nan,
        "heldout_accuracy_before": acc0,
        "heldout_accuracy": _accuracy(head, ho_states, ho_labels, device),
        "majority_token_accuracy": float((ho_labels == majority).float().mean()),
        "majority_token_id": majority,
    }
    return head, report


_HEAD_PREFIXES = {"cls.predictions.": "cls", "lm_head.": "lm_head"}


def checkpoint_weight_names(model_path) -> list[str] | None:
    """Tensor names stored in a local checkpoint folder (safetensors, sharded index or
    pytorch_model.bin), or None when ``model_path`` is not a local folder with weights."""
    p = Path(model_path)
    if not p.is_dir():
        return None
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (p / index).is_file():
            return list(json.loads((p / index).read_text())["weight_map"])
    if (p / "model.safetensors").is_file():
        from safetensors import safe_open

        with safe_open(str(p / "model.safetensors"), framework="pt") as f:
            return list(f.keys())
    if (p / "pytorch_model.bin").is_file():
        sd = torch.load(p / "pytorch_model.bin", map_location="cpu", weights_only=True)
        return list(sd)
    return None


def has_mlm_head(model_path) -> bool | None:
    """Whether the checkpoint's weights contain a masked-LM head (None: cannot tell)."""
    names = checkpoint_weight_names(model_path)
    if names is None:
        return None
    return any(n.startswith(pref) for n in names for pref in _HEAD_PREFIXES)


def load_mlm_head(model_path, device=None) -> nn.Module | None:
    """The checkpoint's own masked-LM head, or None when its weights have none.

    Loads ``AutoModelForMaskedLM`` (which handles old key names and weight tying) and
    returns its head module (``.cls`` for BERT, ``.lm_head`` for RoBERTa-like models):
    ``head(last_hidden_state) -> logits``. For a folder, the weights are inspected first
    (no model is built when ``cls.predictions.*`` / ``lm_head.*`` are absent); for a hub id,
    a head reported missing by the loader counts as absent.
    """
    from transformers import AutoModelForMaskedLM

    present = has_mlm_head(model_path)
    if present is False:
        return None
    from ..engine.models import quiet_loading

    with quiet_loading():
        mlm, info = AutoModelForMaskedLM.from_pretrained(str(model_path),
                                                         output_loading_info=True)
    head = None
    for attr in _HEAD_PREFIXES.values():
        if hasattr(mlm, attr):
            head = getattr(mlm, attr)
            prefix = attr + "."
            break
    if head is None:
        return None
    missing = [k for k in info.get("missing_keys", []) if k.startswith(prefix)
               and not k.endswith("decoder.weight")]
    if missing:
        return None
    head.eval()
    if device is not None:
        head.to(device)
    return head


# ---------------------------------------------------------------------------------------
# Figure 3


def attention_gradient_importance(encoder: nn.Module, mlm_head: nn.Module, tokenizer,
                                  encodings: Iterable, mask_prob: float = 0.15, seed: int = 0,
                                  batch_size: int = 8, device=None,
                                  punct_tokens: Sequence[str] = (".", ","),
                                  replace: tuple[float, float, float] = (0.8, 0.1, 0.1),
                                  separate_cls: bool = False, return_examples: bool = False,
                                  by_example: bool = False):
    """Mean |d loss / d attention weight| per layer, for attention to [SEP], to "." / ","
    and to other tokens (Figure 3).

    ``encodings``: token-id sequences of segments (special tokens included), or mappings /
    objects with ``input_ids`` (and optional ``token_type_ids``). Example ``k`` is masked
    with BERT's scheme (``mask_prob`` of its non-special tokens, at least one; ``replace``
    = [MASK] / random / kept) using ``np.random.default_rng([seed, k])``, so results do not
    depend on ``batch_size``. The loss is the sum over examples of each example's mean
    masked-LM cross-entropy, so each example contributes the gradient of its own loss.

    Averages pool every (example, head, attending real token, attended real token of the
    target class) entry of a layer; padding rows and columns are excluded (padding rows
    have zero gradient; see the tests). Classes follow the input the model sees: a
    masked "." is [MASK] and counts as "other"; [CLS] counts as "other" unless
    ``separate_cls`` adds a ``"[CLS]"`` target (useful for models whose sink is [CLS]). Returns a DataFrame with
    columns ``layer`` (1-based), ``target`` (``"[SEP]"``, ``"./,"``, ``"other"``),
    ``mean_abs_grad``, ``mean_attention`` (the average attention weight on one token of the
    class, for context), ``n_weights``; ``attrs`` hold the masked-LM loss and the accuracy
    of the head on the masked tokens. With ``by_example`` also returns, second, the same
    sums before pooling: one row per (``example``, ``layer``, ``target``) with
    ``sum_abs_grad`` and ``n_weights``, so that a test can resample the examples (the
    pooled ``mean_abs_grad`` is ``sum_abs_grad.sum() / n_weights.sum()`` over them). With
    ``return_examples`` also returns, last, the masked inputs used.
    """
    encoder = _unwrap(encoder)
    device = _device_of(encoder, device)
    was_training, head_training = encoder.training, mlm_head.training
    encoder.eval()
    mlm_head.eval()
    items = [_as_ids(e) for e in encodings]
    if not items:
        raise ValueError("no encodings")
    never = special_ids(tokenizer)
    vocab = _word_embeddings(encoder).num_embeddings
    sep_id = tokenizer.sep_token_id
    punct = [i for i in tokenizer.convert_tokens_to_ids(list(punct_tokens))
             if i is not None and i != tokenizer.unk_token_id]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    targets = TARGETS + (("[CLS]",) if separate_cls else ())
    # segment ids only where the model has a table for them (RoBERTa has one type: a second
    # segment's id 1 would index past it), as the engine's own batches do
    types = uses_token_types(encoder)
    n_layers = None
    sums = counts = att_sums = None
    per_sums: list[np.ndarray] = []  # (examples of a batch, layers, targets), by_example only
    per_counts: list[np.ndarray] = []
    loss_total, n_masked, n_correct = 0.0, 0, 0
    masked_inputs = []
    for start in range(0, len(items), batch_size):
        chunk = items[start: start + batch_size]
        masked, positions, labels = [], [], []
        for k, (ids, tt) in enumerate(chunk):
            rng = np.random.default_rng([seed, start + k])
            m, p, lab = mask_tokens(ids, rng, tokenizer.mask_token_id, vocab, never,
                                    mask_prob, replace)
            masked.append((m.tolist(), tt))
            positions.append(p)
            labels.append(lab)
        masked_inputs.extend(masked)
        input_ids, attention_mask, token_type_ids = _pad_batch(masked, pad_id)
        kwargs = {"input_ids": input_ids.to(device), "attention_mask": attention_mask.to(device)}
        if token_type_ids is not None and types:
            kwargs["token_type_ids"] = token_type_ids.to(device)
        with torch.enable_grad(), intervene(encoder, record=True, make_leaf=True) as iv:
            hidden = encoder(**kwargs).last_hidden_state
            probs = iv.attentions
            loss = hidden.new_zeros((), dtype=torch.float32)
            for i, (p, lab) in enumerate(zip(positions, labels, strict=True)):
                if len(p) == 0:
                    continue
                logits = mlm_head(hidden[i, torch.as_tensor(p, device=device)]).float()
                target = torch.as_tensor(lab, device=device)
                loss = loss + nn.functional.cross_entropy(logits, target)
                n_correct += (logits.argmax(-1) == target).sum().item()
                n_masked += len(p)
            if loss.requires_grad:
                grads = torch.autograd.grad(loss, list(probs), allow_unused=True)
            else:  # nothing masked in this batch
                grads = [None] * len(probs)
        loss_total += loss.item()
        if n_layers is None:
            n_layers = len(probs)
            sums = np.zeros((n_layers, len(targets)))
            counts = np.zeros((n_layers, len(targets)))
            att_sums = np.zeros((n_layers, len(targets)))
        # classes by the token the model sees (a masked "." is [MASK], hence "other";
        # specials are never masked)
        real = attention_mask.bool().to(device)
        is_sep = (input_ids == sep_id).to(device) & real
        is_punct = torch.isin(input_ids, torch.tensor(punct, dtype=torch.long)).to(device)
        is_punct = is_punct & real & ~is_sep
        is_other = real & ~is_sep & ~is_punct
        classes = [is_sep, is_punct, is_other]
        if separate_cls:
            is_cls = (input_ids == tokenizer.cls_token_id).to(device) & real
            classes = [is_sep, is_punct, is_other & ~is_cls, is_cls]
        if by_example:
            b_sums = np.zeros((len(chunk), n_layers, len(targets)))
            b_counts = np.zeros((len(chunk), n_layers, len(targets)))
        for layer, (g, pr) in enumerate(zip(grads, probs, strict=True)):
            if g is None:
                g = torch.zeros_like(pr)
            g = g.detach().abs().float()
            a = pr.detach().float()
            n_heads = g.shape[1]
            for t, col in enumerate(classes):
                sel = (real[:, None, :, None] & col[:, None, None, :]).float()
                sums[layer, t] += (g * sel).sum().item()
                att_sums[layer, t] += (a * sel).sum().item()
                counts[layer, t] += sel.sum().item() * n_heads
                if by_example:
                    b_sums[:, layer, t] = (g * sel).sum(dim=(1, 2, 3)).double().cpu().numpy()
                    b_counts[:, layer, t] = sel.sum(dim=(1, 2, 3)).double().cpu().numpy() * n_heads
        if by_example:
            per_sums.append(b_sums)
            per_counts.append(b_counts)
        del grads, probs, hidden, loss
    encoder.train(was_training)
    mlm_head.train(head_training)
    release()  # the backward passes' freed buffers would otherwise stay resident (engine.memory)
    rows = []
    for layer in range(n_layers):
        for t, name in enumerate(targets):
            c = counts[layer, t]
            rows.append({"layer": layer + 1, "target": name,
                         "mean_abs_grad": sums[layer, t] / c if c else math.nan,
                         "mean_attention": att_sums[layer, t] / c if c else math.nan,
                         "n_weights": int(c)})
    df = pd.DataFrame(rows)
    df.attrs.update({"mlm_loss": loss_total / len(items), "masked_tokens": n_masked,
                     "masked_accuracy": n_correct / max(n_masked, 1), "examples": len(items),
                     "mask_prob": mask_prob, "seed": seed})
    out: tuple = (df,)
    if by_example:
        ps, pc = np.concatenate(per_sums), np.concatenate(per_counts)
        ex, lay, tgt = np.meshgrid(np.arange(len(ps)), np.arange(n_layers),
                                   np.arange(len(targets)), indexing="ij")
        out += (pd.DataFrame({"example": ex.ravel(), "layer": lay.ravel() + 1,
                              "target": np.asarray(targets, dtype=object)[tgt.ravel()],
                              "sum_abs_grad": ps.ravel(),
                              "n_weights": pc.ravel().round().astype(np.int64)}),)
    if return_examples:
        out += (masked_inputs,)
    return out if len(out) > 1 else df


def _head_cache_key(loaded, texts: Sequence[str], settings: dict) -> str:
    import hashlib

    ident = {k: loaded.identity.get(k) for k in ("name", "weights_sha256", "init", "seed")}
    # the head is fitted on the encoder as it is in memory, not as its checkpoint file was
    ident["weights"] = weights_fingerprint(loaded.model)
    h = hashlib.sha256(json.dumps({"identity": ident, "settings": settings,
                                   "version": MLM_HEAD_VERSION}, sort_keys=True).encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _save_head(head: nn.Module, report: dict, folder: Path) -> None:
    """Atomically write the head's own tensors (not the tied decoder) and its report."""

    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().clone().contiguous() for k, v in head.state_dict().items()
               if k != "predictions.decoder.bias"}
    if not report.get("train_decoder"):
        tensors.pop("predictions.decoder.weight", None)
    with atomic.replacing(folder / "head.safetensors") as tmp:
        save_file(tensors, str(tmp))
    # written last: its presence marks completion
    atomic.write_text(folder / "report.json", json.dumps(report, indent=1, default=float))


def _load_head(loaded, folder: Path, report: dict) -> nn.Module:
    from safetensors.torch import load_file

    head = build_mlm_head(loaded.model, train_decoder=bool(report.get("train_decoder")))
    missing, unexpected = head.load_state_dict(load_file(str(folder / "head.safetensors")),
                                               strict=False)
    allowed = {"predictions.decoder.weight", "predictions.decoder.bias"}
    if unexpected or set(missing) - allowed:
        raise RuntimeError(f"cached masked-LM head in {folder} does not fit the model "
                           f"(missing {missing}, unexpected {unexpected}); delete the folder")
    return head.to(loaded.device).eval()


MLM_HEAD_VERSION = "1"


def mlm_head_for(loaded, texts: Sequence[str], steps: int = 600, batch_size: int = 512,
                 seed: int = 0, cache_dir=None, **fit_kwargs) -> tuple[nn.Module, dict]:
    """The masked-LM head for Figure 3: the checkpoint's own head when it has one, else a
    head fitted on the frozen encoder over ``texts`` (:func:`fit_mlm_head`).

    loaded: a :class:`analysis_utils.engine.models.LoadedModel`. Returns ``(head, report)``; the
    report says which head was used and, for a fitted one, its held-out masked-token
    accuracy beside the most-frequent-token baseline. A fitted head is cached on disk
    (safetensors) under a key of the model identity, the texts and the settings, so a rerun
    with the same inputs loads it instead of fitting again."""
    from .. import paths

    source = loaded.location or loaded.identity["name"]  # identity["source"] is not a path
    head = load_mlm_head(source, device=loaded.device) if loaded.identity["init"] == \
        "pretrained" else None
    if head is not None:
        return head, {"head": "the checkpoint's own masked-LM head"}
    settings = {"steps": steps, "batch_size": batch_size, "seed": seed, **fit_kwargs}
    folder = paths.cache_dir(cache_dir) / "mlm_heads" / _head_cache_key(loaded, texts, settings)
    if (folder / "report.json").exists():
        report = json.loads((folder / "report.json").read_text())
        return _load_head(loaded, folder, report), report
    head, report = fit_mlm_head(loaded.model, loaded.tokenizer, texts, steps=steps,
                                batch_size=batch_size, seed=seed, device=loaded.device,
                                **fit_kwargs)
    report = {"head": "fitted on the frozen encoder", **report}
    _save_head(head, report, folder)
    return head, report


#: Where Figure 3's masked-LM head came from, as notebook 01's comparison table states it.
OWN_HEAD = "the checkpoint's own masked-LM head"
FITTED_HEAD = "fitted masked-LM head"


def head_source(report: dict) -> str:
    """:data:`OWN_HEAD` for the checkpoint's own head, :data:`FITTED_HEAD` for one fitted
    here (its report holds a held-out accuracy), from :func:`mlm_head_for`'s report."""
    return FITTED_HEAD if "heldout_accuracy" in report else OWN_HEAD


def pooled_ratio(sums: np.ndarray, counts: np.ndarray, target: int, other: int,
                 weights: np.ndarray | None = None) -> float:
    """The Figure 3 ratio from unpooled sums: for each layer, the mean |gradient| of attention
    to ``target`` over that to ``other``, each pooled over the examples (``sums`` and
    ``counts``: arrays (examples, layers, targets), as ``by_example`` gives them), then the
    mean over the layers. ``weights``: how often each example counts (a bootstrap draw);
    None: once each, which is :func:`attention_gradient_importance`'s own pooled ratio;
    ``(B, examples)`` counts of B draws at once give the ``(B,)`` ratios.

    >>> s = np.array([[[1.0, 4.0]], [[3.0, 4.0]]]); c = np.ones_like(s)
    >>> pooled_ratio(s, c, 0, 1), pooled_ratio(s, c, 0, 1, np.array([2, 0]))
    (0.5, 0.25)
    >>> pooled_ratio(s, c, 0, 1, np.array([[2, 0], [0, 2]])).tolist()
    [0.25, 0.75]
    """
    w = np.ones(len(sums)) if weights is None else np.asarray(weights, dtype=float)
    s = np.tensordot(w, sums, axes=1)  # (layers, targets), or (B, layers, targets)
    c = np.tensordot(w, counts, axes=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s / c
        r = np.mean(mean[..., target] / mean[..., other], axis=-1)
    return float(r) if np.ndim(r) == 0 else r


def head_is_informative(report: dict, margin: float = 0.05) -> bool:
    """Whether gradients through this masked-LM head can test Figure 3's claim: the
    checkpoint's own head always; a fitted one when its held-out masked-token accuracy beats
    always predicting the most frequent token by at least ``margin``."""
    if "heldout_accuracy" not in report:
        return True
    return report["heldout_accuracy"] >= report["majority_token_accuracy"] + margin


def head_quality_note(report: dict, margin: float = 0.05) -> str:
    """One sentence on whether a fitted head is good enough to read Figure 3 from: its
    held-out accuracy against always predicting the most frequent token."""
    if "heldout_accuracy" not in report:
        return f"Figure 3 uses {report['head']}."
    acc, base = report["heldout_accuracy"], report["majority_token_accuracy"]
    if not head_is_informative(report, margin):
        return (f"The fitted head predicts {acc:.1%} of held-out masked tokens, within "
                f"{margin:.0%} of always guessing the most frequent token ({base:.1%}): the "
                "frozen encoder's last layer carries little the head can decode, so the "
                "gradients below say little about masked-LM prediction. Read Figure 3 for "
                "this model as uninformative about the paper's claim.")
    return (f"The fitted head predicts {acc:.1%} of held-out masked tokens (most frequent "
            f"token: {base:.1%}).")


def head_quality_caption(report: dict, margin: float = 0.05) -> str:
    """The same verdict in one line for the figure itself, e.g. ``"masked-LM head fitted on
    the frozen encoder: 7.9% held-out masked-token accuracy vs. 7.3% for always the most
    frequent token: uninformative, read as tentative at most"``."""
    if "heldout_accuracy" not in report:
        return f"masked-LM head: {report['head']}"
    acc, base = report["heldout_accuracy"], report["majority_token_accuracy"]
    verdict = ("uninformative: read as tentative at most" if not head_is_informative(report, margin)
               else "it decodes masked tokens")
    return (f"masked-LM head fitted on the frozen encoder: {acc:.1%} held-out masked-token "
            f"accuracy vs. {base:.1%} for always the most frequent token; {verdict}")
