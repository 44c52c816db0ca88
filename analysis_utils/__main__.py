"""Command line: ``python -m analysis_utils {run,fetch-data,check-data,check-cache} ...``."""

from __future__ import annotations

import sys

USAGE = """usage: python -m analysis_utils COMMAND [options]

commands:
  run          execute the notebooks with a profile (smoke | default | paper)
  fetch-data   download missing gold data files into the data directory, checksummed
  check-data   report which gold data files are present, missing or corrupt
  check-cache  verify every cached attention store (checksums); --fix repairs corrupt ones

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
    if command in ("fetch-data", "check-data"):
        from .datasets import cli

        return cli(command, rest)
    if command == "check-cache":
        from .cache_check import cli as check_cache_cli

        return check_cache_cli(rest)
    print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
