"""The run plan: the independent, content-keyed units of work notebooks 06 and 07 need, computed
ahead of the notebooks, on Ray (a local instance or a cluster) or in this process.

- :mod:`~analysis_utils.runplan.finetunes`: which fine-tuning runs the notebooks make, from their
  string parameters;
- :mod:`~analysis_utils.runplan.units`: the plan of a profile, read from the notebooks'
  parameters cells and the profile's overrides exactly as the notebook driver does; each unit
  with its cache key, whether it is cached, and an estimated cost;
- :mod:`~analysis_utils.runplan.execute`: runs what is left, in-process or as Ray tasks, with a
  log per unit, retries, and a check that workers see the driver's cache;
- :mod:`~analysis_utils.runplan.cli`: ``python -m analysis_utils plan show|run``.

Nothing is imported here, so ``from analysis_utils.runplan import finetunes`` (notebooks 06
and 07) does not load the executor or Ray.
"""
