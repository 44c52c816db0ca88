"""analysis_utils: the package behind the notebooks that reproduce Clark et al. (2019) and
Kovaleva et al. (2019) on what Transformer attention heads do.

Folders: ``data`` (checksummed gold data and one reader per corpus), ``engine`` (model
loading, attention extraction and its checksummed store, token -> word maps, interventions on
heads), ``analyses`` (pure functions over attention arrays, one module per paper section),
``training`` (the seeded loop of the small models fitted here), ``plotting`` (figures).
Top level: ``paths``, ``profiles`` and ``params`` (run profiles and parameter rules),
``heads``, ``papers``: what every layer uses.
``ledger`` and ``claims`` (analyses layer): the claims ledger and the registry of the papers'
claims it judges.
``publish`` (driver layer): what runs, checks and publishes the outputs: ``notebook`` (what
every notebook does first), ``report`` (outputs with provenance), ``verdicts`` (each notebook's
ledger rows), ``compare`` (a rerun against the committed results), the papermill driver
(``pipeline``), ``stale``, ``imports`` (the import graph and the layers: base < engine < data
< training < analyses < plotting < driver; nothing imports upward, see the architecture page
of the book), ``links``, ``readme``, ``atlas`` (the head atlas) and ``book`` (the static
site). ``runplan`` (driver layer): the fine-tunes notebooks 06-07 need,
computed ahead of them on Ray or in-process (``python -m analysis_utils plan show|run``).
"""

__version__ = "0.1.0"

# Set by the notebook driver (``pipeline``) for the kernels it starts: the folder holding the
# driver's ``analysis_utils``. A kernel that imports another copy (an editable install of a
# second checkout) would write and delete outputs in that other checkout, so it fails here.
PACKAGE_ROOT_ENV = "BERTOLOGY_PACKAGE_ROOT"


def _check_package_root() -> None:
    import os

    expected = os.environ.get(PACKAGE_ROOT_ENV)
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if expected and os.path.normcase(os.path.realpath(expected)) != os.path.normcase(here):
        raise ImportError(
            f"this kernel imported analysis_utils from {here}, but the driver that started it "
            f"runs the package in {expected} (${PACKAGE_ROOT_ENV}); another checkout's editable "
            f"install or a PYTHONPATH entry shadows it. Put {expected} first on PYTHONPATH, "
            f"or run the driver from the checkout that is installed.")


_check_package_root()
