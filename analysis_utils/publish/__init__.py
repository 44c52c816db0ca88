"""The publishing layer: what runs, checks and publishes the notebooks' outputs, apart from the
science (driver layer, see :mod:`analysis_utils.publish.imports`). One purpose per module:

- ``pipeline``: the papermill driver, ``python -m analysis_utils run`` (notebooks in order,
  staged, parameters checked, provenance kept);
- ``stale``: which rendered notebooks no longer match their code, data manifest or profile;
- ``imports``: the package's static import graph and its layers (no upward import, no cycle);
- ``links``: the published repository written into every Binder and Colab link;
- ``readme``: the generated parts of the book and README (runtime table, findings ledger);
- ``atlas``: the head atlas, one self-contained HTML page per model (assets in ``atlas_page/``);
- ``book``: the static site (``make book``): Sphinx with MyST-NB and the book theme, no
  notebook executed.

Modules that every notebook imports (``notebook``, ``report``, ``compare``, ``verdicts``) sit
at the package's top level for now; they move here with the next full re-render
(moving them changes the code every rendered notebook depends on, see ``stale``).
"""
