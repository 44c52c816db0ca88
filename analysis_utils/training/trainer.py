"""Fine-tuning settings and the ``transformers.Trainer`` built from them.

:class:`FinetuneSettings` default to Kovaleva et al.'s (their authors' fork of
pytorch-pretrained-BERT's ``run_classifier.py``): batch 32, 3 epochs, learning rate 5e-5 with
10% linear warm-up then linear decay, max length 128, weight decay 0.01 (not on biases and
LayerNorm), Adam epsilon 1e-6, gradient clipping at 1.0. Two deliberate deviations, neither of
which changes what the paper measures: batches are padded to their longest input and grouped
by length (the paper padded every input to 128 tokens; see ``benchmarks/bench_finetune.py``),
and the optimiser is torch's AdamW (BertAdam skipped Adam's bias correction and clipped each
tensor's gradient separately).

Numeric precision (:data:`PRECISIONS`): ``FinetuneSettings.precision`` is ``float32`` (the
committed run's), ``tf32`` (CUDA matrix products on TensorFloat-32 tensor cores; weights and
activations stay float32) or ``bf16`` (``torch.autocast`` to bfloat16 around training and the
final scoring; weights and optimiser state stay float32). :func:`validate_precision` checks a
name (and that the device can run it), :func:`precision_applied` sets it around a block and
restores torch's flags after it. They live here, beside the settings, because the fine-tuning
code notebooks 06 and 07 import applies them; :mod:`analysis_utils.runplan.precision`
re-exports them for the run plan.

Progress bars (the Trainer's, and transformers' weight-loading bar) show only when stderr is
a terminal (:func:`progress_enabled`); in a notebook or a log file nothing is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
from torch import nn

from ..data.glue_metrics import compute_metrics
from ..engine.models import resolve_device
from .classifier import predictions_from_logits
from .glue_data import TaskDataset

__all__ = ["FinetuneSettings", "progress_enabled", "hf_progress_bars", "build_trainer",
           "PRECISIONS", "DEFAULT_PRECISION", "device_kind", "validate_precision",
           "precision_applied"]

#: The numeric precisions a fine-tune can run at, the default (the committed run's) first.
PRECISIONS = ("float32", "tf32", "bf16")
DEFAULT_PRECISION = "float32"


@dataclass(frozen=True)
class FinetuneSettings:
    """Everything about a fine-tuning run that can change its result (all part of the cache key).

    Defaults are Kovaleva et al.'s (Devlin et al.'s GLUE recipe, as in the authors' fork):
    ``batch_size`` 32, ``epochs`` 3, ``learning_rate`` 5e-5, ``max_length`` 128 word pieces,
    ``warmup_ratio`` 0.1 of all steps then linear decay to 0, ``weight_decay`` 0.01,
    ``adam_epsilon`` 1e-6, ``max_grad_norm`` 1.0.

    ``dynamic_padding``: pad each batch to its longest input (False: to ``max_length``, as the
    paper did); ``group_by_length``: transformers' ``LengthGroupedSampler`` (shuffled
    mega-batches of 50 batches, sorted by length inside; shuffled from ``(seed, epoch)``),
    which cuts padding further.
    ``eval_each_epoch``: score the dev set after every epoch (the curve's ``eval_*`` rows).
    ``logging_steps``: training-loss rows in the curve. ``num_threads``: torch CPU threads while
    training (None: leave torch's setting); it can change float reductions, hence the key.
    ``optim``: a ``TrainingArguments.optim`` name; plain ``adamw_torch`` behaves the same on
    CPU and GPU.
    ``precision``: ``float32`` (default), ``tf32`` (CUDA only) or ``bf16`` (autocast), applied
    around training and the final scoring (module docstring). It enters the cache key only
    when it is not float32 (:meth:`as_dict`), so the keys of float32 runs are the ones they
    had before the setting existed.
    """

    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    max_length: int = 128
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0
    lr_scheduler: str = "linear"
    optim: str = "adamw_torch"
    dynamic_padding: bool = True
    group_by_length: bool = True
    eval_each_epoch: bool = True
    eval_batch_size: int = 64
    logging_steps: int = 10
    num_threads: int | None = None
    precision: str = DEFAULT_PRECISION

    def __post_init__(self):
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must lie in [0, 1), got {self.warmup_ratio}")
        for name in ("epochs", "batch_size", "max_length", "eval_batch_size", "logging_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        validate_precision(self.precision)

    def as_dict(self) -> dict:
        """The settings as the cache key hashes them: every field, ``precision`` only when
        it is not float32 (the keys of float32 runs stay what they were before it existed)."""
        d = asdict(self)
        if d["precision"] == DEFAULT_PRECISION:
            del d["precision"]
        return d

    @classmethod
    def from_dict(cls, values: dict) -> FinetuneSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def device_kind(device=None) -> str:
    """``"cuda"`` / ``"cpu"`` / ``"mps"`` of ``device`` (a name such as ``"cuda:1"`` or a
    ``torch.device``; None or "": where :func:`~analysis_utils.engine.models.resolve_device`
    puts a model, ``$BERTOLOGY_DEVICE``, else CUDA when torch sees it, else CPU)."""
    if device is not None and str(device):
        return str(getattr(device, "type", None) or str(device).split(":")[0])
    return resolve_device(None).type


def _cuda_capability() -> tuple[int, int] | None:
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()


def validate_precision(precision: str, kind: str | None = None, *,
                       capability=_cuda_capability) -> str:
    """``precision`` if a fine-tune can run at it on device kind ``kind`` (``"cpu"`` /
    ``"cuda"``; None: only the name is checked), else ``ValueError`` saying why and what to use
    instead: ``tf32`` needs CUDA on a GPU of compute capability 8.0 or later (Ampere), where
    the flag does something; ``bf16`` runs on the CPU (autocast) and on such a GPU.
    ``capability``: returns the CUDA compute capability, or None without CUDA (for tests)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)} "
                         f"(default {DEFAULT_PRECISION}, the committed run's)")
    if kind is None or precision == DEFAULT_PRECISION:
        return precision
    if kind != "cuda":
        if precision == "tf32":
            raise ValueError(
                f"precision tf32 applies to CUDA matrix products only, and this runs on "
                f"{kind}: use precision float32 (or bf16), or run on a CUDA machine")
        return precision  # bf16: torch.autocast on the CPU
    cap = capability()
    if cap is None:
        raise ValueError(f"precision {precision} asks for CUDA, which torch does not see here: "
                         "use precision float32")
    if cap < (8, 0):
        raise ValueError(
            f"precision {precision} needs a GPU of compute capability 8.0 or later (Ampere: "
            f"A100, H100), this one is {cap[0]}.{cap[1]}: use precision float32")
    return precision


@contextlib.contextmanager
def precision_applied(precision: str, device=None) -> Iterator[dict]:
    """Run the block at ``precision`` on ``device`` (None / "": CUDA when available); yields
    what was set (``{"precision", "device_kind", "autocast"}``). Torch's TF32 flags and
    float32 matmul precision are restored on exit, so nothing leaks into the next block (a
    long-lived worker runs many units)."""
    kind = device_kind(device)
    validate_precision(precision, kind)
    state = {"precision": precision, "device_kind": kind, "autocast": None}
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    try:
        if precision == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            torch.set_float32_matmul_precision("high")
        elif precision == "float32":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
        if precision == "bf16":
            state["autocast"] = f"{kind}:bfloat16"
            with torch.autocast(device_type=kind, dtype=torch.bfloat16):
                yield state
        else:
            yield state
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved[0]
        torch.backends.cudnn.allow_tf32 = saved[1]
        torch.set_float32_matmul_precision(saved[2])


def progress_enabled(progress: bool | None = None) -> bool:
    """``progress`` when given, else whether stderr is a terminal (False in a notebook kernel,
    a papermill run, a pipe or a log file)."""
    if progress is not None:
        return bool(progress)
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def hf_progress_bars(enabled: bool) -> Iterator[None]:
    """Silence transformers' own bars (weight loading) when ``enabled`` is False; restore."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    if not enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if before:
            hf_logging.enable_progress_bar()


def _collator(tokenizer, settings: FinetuneSettings):
    from transformers import DataCollatorWithPadding

    if settings.dynamic_padding:
        return DataCollatorWithPadding(tokenizer, padding="longest")
    return DataCollatorWithPadding(tokenizer, padding="max_length", max_length=settings.max_length)


def _epoch_seeded_length_sampler(batch_size: int, lengths: list[int], seed: int):
    """transformers' ``LengthGroupedSampler`` whose shuffle is drawn from ``(seed, epoch)``.

    The stock sampler draws from torch's global RNG when an epoch starts, whose state then
    depends on everything before (dropout, evaluation); a run resumed in the middle of an
    epoch restores that state only after the epoch's order was drawn, so it saw another
    order than the uninterrupted run. The Trainer calls ``set_epoch`` before every epoch."""
    from transformers.trainer_pt_utils import LengthGroupedSampler

    class EpochSeeded(LengthGroupedSampler):
        def __init__(self):
            super().__init__(batch_size, lengths=lengths, generator=torch.Generator())
            self.epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)

        def __iter__(self):
            self.generator.manual_seed(seed * 1_000_003 + self.epoch)
            return super().__iter__()

    return EpochSeeded()


def build_trainer(model: nn.Module, tokenizer, train: TaskDataset, dev: TaskDataset | None,
                  settings: FinetuneSettings, seed: int, output_dir: str | os.PathLike, *,
                  device: torch.device | None = None, checkpoint_steps: int | None = None,
                  save_checkpoints: bool = True, progress: bool | None = None,
                  callbacks: Sequence = ()):
    """A ``transformers.Trainer`` configured from ``settings``.

    Checkpoints go to ``output_dir`` every epoch (or every ``checkpoint_steps`` steps), one
    kept (none with ``save_checkpoints=False``, e.g. for timing); the dev set is scored
    after each epoch when ``dev`` is given and ``settings.eval_each_epoch``. Without progress
    bars the Trainer's PrinterCallback is removed too (it prints every log line). Length
    grouping uses a sampler seeded per epoch (:func:`_epoch_seeded_length_sampler`), so
    resuming reproduces the uninterrupted run."""
    from transformers import PrinterCallback, Trainer, TrainingArguments

    device = resolve_device(device)
    show = progress_enabled(progress)
    task = train.task
    evaluate_epochs = dev is not None and settings.eval_each_epoch
    args = TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.eval_batch_size,
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        warmup_steps=settings.warmup_ratio,  # a float in [0, 1) is a share of all steps
        weight_decay=settings.weight_decay,
        adam_epsilon=settings.adam_epsilon,
        max_grad_norm=settings.max_grad_norm,
        optim=settings.optim,
        train_sampling_strategy="group_by_length" if settings.group_by_length else "random",
        logging_strategy="steps",
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        eval_strategy="epoch" if evaluate_epochs else "no",
        save_strategy=("no" if not save_checkpoints
                       else "steps" if checkpoint_steps else "epoch"),
        save_steps=checkpoint_steps or 500,
        save_total_limit=1,
        seed=seed,
        data_seed=seed,
        disable_tqdm=not show,
        report_to="none",
        use_cpu=device.type == "cpu",
        dataloader_pin_memory=device.type == "cuda",
        remove_unused_columns=False,
    )

    def metrics(pred) -> dict[str, float]:
        logits = pred.predictions[0] if isinstance(pred.predictions, tuple) else pred.predictions
        return compute_metrics(task, predictions_from_logits(task, np.asarray(logits)), pred.label_ids)

    class _Trainer(Trainer):
        def _get_train_sampler(self, train_dataset=None):
            if settings.group_by_length:
                return _epoch_seeded_length_sampler(
                    settings.batch_size, (train_dataset or train).lengths, seed)
            return super()._get_train_sampler(train_dataset)

    trainer = _Trainer(model=model, args=args, train_dataset=train,
                      eval_dataset=dev if evaluate_epochs else None,
                      processing_class=tokenizer, data_collator=_collator(tokenizer, settings),
                      compute_metrics=metrics if evaluate_epochs else None,
                      callbacks=list(callbacks))
    if not show:
        trainer.remove_callback(PrinterCallback)
    return trainer
