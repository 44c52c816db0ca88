"""The publishing layer: what runs, checks and publishes the notebooks' outputs, apart from the
science (driver layer, see :mod:`analysis_utils.publish.imports`). One purpose per module:

- ``notebook``: what every notebook does first (``notebook.setup``: parameters, models, the
  output record) and its table helpers;
- ``report``: outputs with provenance (``Run``: tables, figures, declared tolerances);
- ``ledger_stage``: the claims ledger as its own stage after the notebooks (``python -m
  analysis_utils ledger``): every verdict table, the stability report, their provenance;
- ``compare``: a rerun's tables against the committed ones, within declared tolerances (and
  the cross-device ones when the two sides ran on different kinds of device);
- ``pipeline``: the papermill driver, ``python -m analysis_utils run`` (notebooks in order,
  staged, parameters checked, provenance kept);
- ``stale``: which rendered notebooks no longer match their code, data manifest, claims
  registry or profile;
- ``imports``: the package's static import graph and its layers (no upward import, no cycle);
- ``links``: the published repository written into every Binder and Colab link;
- ``readme``: the generated parts of the book and README (runtime table, findings ledger);
- ``atlas``: the head atlas, one self-contained HTML page per model (assets in ``atlas_page/``);
- ``book``: the static site (``make book``): Sphinx with MyST-NB and the book theme, no
  notebook executed;
- ``claimpages``: the book's page per claim and its findings index, generated at build time
  from the ledger's committed ``08_claims.csv``.
"""
