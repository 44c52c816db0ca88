"""One seeded training loop for the small models trained in this compendium.

The attention probes (Section 5), the map-type CNN (Kovaleva et al. 4.1) and the masked-LM
head fitted on a frozen encoder (Figure 3) all train through :func:`fit`; what differs
between them (how a batch is drawn, what the loss is) is passed in as functions. Fine-tuning
whole transformers is left to ``transformers.Trainer``.
"""

from .loop import TrainLog, deterministic_algorithms, fit, seeded, torch_threads

__all__ = ["fit", "TrainLog", "seeded", "torch_threads", "deterministic_algorithms"]
