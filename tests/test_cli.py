"""The command table of ``python -m analysis_utils``: every command names a function that
exists, ``--help`` lists them all, an unknown command exits 2 with the list."""

from __future__ import annotations

import importlib

from analysis_utils import __main__ as cli


def test_every_command_resolves_to_a_function():
    for name, (module, function, text) in cli.COMMANDS.items():
        target = getattr(importlib.import_module(module, "analysis_utils"), function, None)
        assert callable(target), f"{name}: {module}.{function} does not exist"
        assert text.strip(), f"{name}: no help line"


def test_help_lists_every_command_and_unknown_exits_2(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n  {name} " in out for name in cli.COMMANDS), out
    assert cli.main(["no-such-command"]) == 2
    assert "unknown command 'no-such-command'" in capsys.readouterr().err
