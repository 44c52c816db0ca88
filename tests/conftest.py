"""Shared fixtures: a tiny randomly initialised BERT saved to a folder (no downloads), so the
loader is exercised through the same code path as a real checkpoint; and a randomly
initialised model of BERT-base shape (12 layers x 12 heads, hidden 768) with the packaged
uncased vocabulary, for the paper profile's code path."""

from __future__ import annotations

import importlib.util
import os
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertModel

from analysis_utils import paths
from analysis_utils.publish import report

# Notebooks re-run by nbval (and any test that saves a table) must never overwrite the
# committed results/ and figures/: send their outputs to the cache. Set at import, before
# nbval starts kernels, which inherit this environment.
os.environ.setdefault(report.OUTPUT_ENV, str(paths.cache_dir() / "test_outputs"))
os.environ.setdefault(report.PROFILE_ENV, "smoke")

# Under pytest-xdist (`make test`: one worker per core), each worker and the notebook kernels
# and subprocesses it starts compute on its share of the cores. torch's default, one thread
# per core in every process, oversubscribes the machine, and its OpenMP threads spin while
# they wait: on 2 cores, golden 07's disabling studies took 587 s beside another worker
# against 77 s alone. Set at import, before nbval starts kernels, which inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    _threads = str(max(1, (os.cpu_count() or 1) // _workers))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "the", "cat", "sat",
              "on", "mat", "a", "dog", "ran", "big", "##s", "##ing", "un", "##believ",
              "##able", "he", "she", "it", "saw", "and"]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Folder with a tiny random BERT (2 layers x 2 heads, hidden 16) and its tokenizer."""
    folder = tmp_path_factory.mktemp("tiny_bert")
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(
        '{"do_lower_case": true, "tokenizer_class": "BertTokenizer", "model_max_length": 64}'
    )
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def bert_base_dir(tmp_path_factory):
    """Folder with a randomly initialised model of BERT-base shape (seed 0) and the packaged
    uncased tokenizer (:func:`analysis_utils.engine.models.save_bert_base_shape`); 440 MB,
    removed after the session."""
    from analysis_utils.engine.models import save_bert_base_shape

    folder = save_bert_base_shape(tmp_path_factory.mktemp("bert-base-shape-random"), seed=0)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    from analysis_utils.engine.models import load_model

    return load_model(str(tiny_model_dir), device="cpu")


@pytest.fixture
def gold_data_dir():
    """The gold data directory, or a skip that says why."""
    d = paths.data_dir()
    if not (d / "ud-english-ewt").is_dir():
        pytest.skip(f"gold data not found in {d}: set {paths.DATA_ENV} (CI points it at "
                    "../shared/data) or run `python -m analysis_utils fetch-data`")
    return d


def pytest_configure(config):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


# `make test` runs on every core with pytest-xdist. Tests are handed to workers in scopes, a
# scope runs whole and in order on one worker (nbval's cells share one kernel), and a worker
# takes the next scope when it is nearly done. A scope is a test file, except where files
# share work a fresh cache makes expensive: the real-FrameNet test reads the 13,572 LU files
# (about 3 min cold) and caches the selections goldens 07 and 06 read, and 07 trains the smoke
# fine-tunes 06 then loads; the three book files read one book. Each such group runs on one
# worker in the order given, so the work is done once (concurrently, each file did it again).
# The heaviest scopes go first (FIRST_SCOPES; the rest in collection order), so the last
# scopes to finish are short.
SHARED_SCOPES = {
    "framenet-goldens": ("test_framenet_data.py", "07_head_disabling.ipynb",
                         "06_finetuning_drift.ipynb"),
    "book": ("test_book.py", "test_book_browser.py", "test_frontpage.py"),
}
FIRST_SCOPES = ("framenet-goldens", "tests/test_ledger_stage.py", "tests/test_runplan.py",
                "tests/test_gpu_plan.py", "book", "tests/test_model_matrix.py")
_SCOPE_OF = {name: (group, i) for group, names in SHARED_SCOPES.items()
             for i, name in enumerate(names)}


def scope_of(nodeid: str) -> tuple[str, int]:
    """``(scope, place in its group)`` of a test id (``tests/golden/06_...ipynb::Cell 3``)."""
    path = nodeid.split("::", 1)[0]
    return _SCOPE_OF.get(path.rsplit("/", 1)[-1], (path, 0))


def scheduled_order(nodeids: list[str]) -> list[str]:
    """The test ids in the order the workers take them: FIRST_SCOPES first, then every other
    scope by its first test's place; within a scope, its files in the group's order, each
    file's tests in collection order."""
    first: dict[str, int] = {}
    for i, nid in enumerate(nodeids):
        first.setdefault(scope_of(nid)[0], i)
    rank = {scope: i for i, scope in enumerate(FIRST_SCOPES)}

    def key(item):
        i, nid = item
        scope, place = scope_of(nid)
        return rank.get(scope, len(rank)), first[scope], place, i

    return [nid for _, nid in sorted(enumerate(nodeids), key=key)]


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown when it is not loaded
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedScopeScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with :func:`scope_of`'s scopes in :func:`scheduled_order`.
        Only the queue of scopes is reordered: a worker is sent the places of its tests in its
        own collection, which must stay as collected (the completion reports index it)."""

        _as_collected: dict | None = None

        def _split_scope(self, nodeid):
            return scope_of(nodeid)[0]

        def schedule(self):
            if self.collection is not None or not self.collection_is_completed:
                return super().schedule()
            self._as_collected = dict(self.registered_collections)
            self.registered_collections = {node: scheduled_order(list(ids))
                                           for node, ids in self._as_collected.items()}
            self.config.option.loadscopereorder = False  # keep the order set here
            try:
                super().schedule()  # builds the queue from the reordered lists
            finally:
                self.registered_collections = self._as_collected

        def _assign_work_unit(self, node):
            reordered = self.registered_collections
            self.registered_collections = self._as_collected or reordered
            try:
                super()._assign_work_unit(node)
            finally:
                self.registered_collections = reordered

    return SharedScopeScheduling(config, log)


def _blank_word_maps(n_words: int, n_heads: int = 2):
    """Word-level maps of one layer for a sentence of ``n_words`` words between [CLS] and
    [SEP]: ``(attn (1, n_heads, n_words + 2, n_words + 2) all 0.01, is_special (n_words + 2,)
    True at both ends, word_positions 1..n_words)``; tests set the weights they mean."""
    m = n_words + 2
    attn = np.full((1, n_heads, m, m), 0.01, dtype=np.float32)
    is_special = np.zeros(m, dtype=bool)
    is_special[[0, m - 1]] = True
    return attn, is_special, np.arange(1, n_words + 1)


@pytest.fixture(scope="session")
def blank_maps():
    """The factory ``blank_maps(n_words, n_heads=2) -> (attn, is_special, word_positions)``:
    near-uniform word-level maps to draw hand-made attention patterns on (syntax and
    coreference scoring tests)."""
    return _blank_word_maps


@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium driven by Playwright, one browser for the session (never a browser
    download: ``.ci/run`` installs the ``chromium`` package)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright for Python: pip install -e '.[test]' "
                    "(make install)")
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("the browser tests drive Debian's chromium, not found on PATH: "
                    "apt-get install -y chromium (.ci/run installs it); never `playwright "
                    "install`")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


class LedgerMemo:
    """``ledger.build`` and ``ledger.notebook_rows`` over the committed run folders, each
    computed once per test session: a folder's ledger resamples every claim (about 40 s for
    ``results/`` on 2 cores), and several tests read the same one. ``build`` joins per-folder
    ledgers, which is what :func:`analysis_utils.ledger.build` does; callers get copies."""

    def __init__(self):
        self._built: dict[str, pd.DataFrame] = {}
        self._rows: dict[tuple[str, str], pd.DataFrame] = {}

    def build(self, folders) -> pd.DataFrame:
        from analysis_utils import ledger

        parts = []
        for f in folders:
            if f not in self._built:
                self._built[f] = ledger.build([f])
            parts.append(self._built[f])
        if not parts:
            return ledger.build([])
        return pd.concat(parts, ignore_index=True)

    def notebook_rows(self, prefix: str, folder) -> pd.DataFrame:
        from analysis_utils import ledger

        key = (prefix, str(folder))
        if key not in self._rows:
            self._rows[key] = ledger.notebook_rows(prefix, folder)
        return self._rows[key].copy()


@pytest.fixture(scope="session")
def committed_ledger() -> LedgerMemo:
    """One :class:`LedgerMemo` for the whole session."""
    return LedgerMemo()


@pytest.fixture(scope="session")
def book_site(tmp_path_factory):
    """The book built once for the session (``tests/test_book.py`` and
    ``tests/test_book_browser.py`` read the same site); without the book's packages this
    fails naming the install."""
    from analysis_utils.publish import book

    folder = tmp_path_factory.mktemp("book")
    return book.build(out=folder / "html", source=folder / "source")


def benchmark_module(name: str):
    """``benchmarks/<name>.py`` imported as a module (the benchmarks are scripts, not a
    package), for tests of their functions."""
    spec = importlib.util.spec_from_file_location(name, paths.REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
