"""Run profiles: named sets of parameter overrides, kept in this one place.

A notebook's ``parameters`` cell holds the full-run defaults. A profile overrides some of them;
``"*"`` applies to every notebook that has the parameter, a notebook prefix (``"01"``) to that
notebook only. Every override is checked, before anything runs, against the notebook's
parameters cell (name and type) and the ranges declared in :mod:`analysis_utils.params`.

- ``smoke``: the packaged model on tiny subsets, seconds per notebook; writes under the cache
  (``<cache>/smoke_outputs/``); ``run --profile smoke --golden`` (``make golden``) also refreshes
  the golden notebooks under ``tests/golden/`` that nbval re-runs.
- ``default``: the packaged model (all-MiniLM-L6-v2) on the full local data: the committed
  ``results/``, ``figures/`` and rendered notebooks.
- ``base``: the base-size all-mpnet-base-v2 (12 x 12, assembled offline by ``make mpnet``) on
  the default data, notebooks 01-05, into ``results/base/``, ``figures/base/`` and
  ``notebooks/base/`` so the default outputs stay where they are.
- ``paper``: ``bert-base-uncased`` as in both papers, for a connected GPU box.

Every profile sets ``recompute = True`` where a notebook has it: a rendered run computes
every heavy step it shows and saves it as evidence (:mod:`analysis_utils.publish.saved`); the
notebook's own default, ``False``, is for a reader who opens it alone and replays that
evidence.
"""

from __future__ import annotations

PROFILES: dict[str, dict[str, dict]] = {
    "smoke": {
        "*": {"model": "minilm", "seed": 0, "recompute": True},
        "01": {"n_segments": 24, "mlm_steps": 20, "mlm_texts": 40,
               "n_grad_segments": 4, "n_norm_segments": 12},
        "02": {"max_sentences": 60, "min_count": 20},
        "03": {"max_documents": 3},
        "05": {"n_segments": 12, "n_perm": 200, "mds_n_init": 1, "n_folds": 3, "cnn_epochs": 3,
               "glue_max_examples": 4, "n_contact_sheets": 1, "seeds": "0,1"},
        "04": {"max_train": 200, "max_dev": 50, "max_test": 50, "min_count": 20, "seeds": "0,1"},
        # 06 and 07 share the tiny fine-tuning plan, so 07 reuses 06's smoke models
        # 24 dev examples: golden 07's five disabling sweeps (79 evaluations each) took 175 of
        # its 205 s at 48 (2 Dec 2026), the longest step of `make test`
        "06": {"tasks": "MRPC,STS-B", "seeds": "42,43", "multi_seed_tasks": "MRPC",
               "train_subsets": "MRPC:64,STS-B:64", "epochs": 1, "max_dev": 24,
               "n_examples": 24, "padded_examples": 8, "glue_max_examples": 8,
               "maptype_seeds": "0", "cnn_epochs": 3, "framenet_max_sentences": 40,
               "lr_check": "1e-4", "lr_check_tasks": "MRPC", "random_init": 1},
        "07": {"tasks": "MRPC,STS-B", "seeds": "42,43", "multi_seed_tasks": "MRPC",
               "train_subsets": "MRPC:64,STS-B:64", "epochs": 1, "max_dev": 24, "n_boot": 200,
               "n_random_orders": 1, "importance_examples": 32},
    },
    "default": {"*": {"recompute": True}},
    # all-mpnet-base-v2 (12 x 12, hidden 768) on the default data, into results/base/,
    # figures/base/ and notebooks/base/; notebooks 01-05 only (NOTEBOOKS below).
    # CPU budget (2 cores): three training seeds for the probes and classifiers, 200 GLUE dev
    # examples per task for the map types; stated in the notebooks by their data tables and
    # parameters. 04 reads all of EWT, as the default does: trained on a 2,000-sentence
    # sample, its distances + GloVe baseline scored 51.6 against 58.5 on the full set, and a
    # dev sample numbers its sentences apart from 02's, which the ledger's distributed-syntax
    # test matches on (issue 52).
    "base": {
        "*": {"model": "mpnet", "recompute": True},
        "01": {"n_norm_segments": 300},
        "04": {"seeds": "0,1,2"},
        "05": {"seeds": "0,1,2", "glue_max_examples": 200},
    },
    "paper": {
        "*": {"model": "bert-base-uncased", "recompute": True},
    },
}

# Profiles that run only some notebooks by default. The base profile's 06-07 (fine-tuning
# all-mpnet-base-v2 on GLUE, then disabling its heads through the engine's MPNet hook) are
# hours on a 2-core CPU: they run only when asked for by name (--only 06,07), on a GPU box.
NOTEBOOKS: dict[str, tuple[str, ...]] = {"base": ("01", "02", "03", "04", "05")}
ON_REQUEST: dict[str, tuple[str, ...]] = {"base": ("06", "07")}
# Profiles that publish into their own subfolder of results/, figures/ and notebooks/.
SUBFOLDER: dict[str, str] = {"base": "base"}


def notebooks(profile: str, only: list[str] | None) -> list[str] | None:
    """The notebook prefixes ``profile`` runs given ``--only`` (``None``: every notebook);
    a prefix outside the profile's own set is refused."""
    allowed = NOTEBOOKS.get(profile)
    if allowed is None:
        return only
    if not only:
        return list(allowed)
    wanted = [o.strip().zfill(2) for o in only if o.strip()]
    extra = ON_REQUEST.get(profile, ())
    outside = sorted(set(wanted) - set(allowed) - set(extra))
    if outside:
        also = f" (and {', '.join(extra)} when named in --only)" if extra else ""
        raise ValueError(f"profile {profile!r} runs notebooks {', '.join(allowed)} only{also}; "
                         f"drop {', '.join(outside)} from --only")
    return wanted


def overrides(profile: str, prefix: str, available: set[str] | None = None) -> dict:
    """Parameter overrides of ``profile`` for notebook ``prefix`` (``"01"``), restricted to
    ``available`` parameter names when given."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    spec = PROFILES[profile]
    merged = {**spec.get("*", {}), **spec.get(prefix, {})}
    if available is not None:
        merged = {k: v for k, v in merged.items() if k in available}
    return merged
