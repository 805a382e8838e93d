"""CLI start-up: what ``privloss`` imports before it does any work (issue #12, item 8).

Each check runs in a fresh interpreter (``sys.modules`` of this test process is
full already). Timings are measured by ``benchmarks/cli_startup.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from privloss.cli.main import COMMANDS, build_parser

#: modules that must not be loaded by ``import privloss.cli.main`` (issue #12, item 8)
HEAVY = ("scipy.optimize", "scipy.signal", "privloss.pld", "numpy", "privloss.accounting",
         "duckdb", "matplotlib", "pyspark")
#: the commands owned by the CLI modules whose --help must stay light
LIGHT_HELP = ("compose", "calibrate", "sample", "tradeoff", "reproduce", "demo")


def loaded_after(code: str) -> set[str]:
    """The modules loaded by ``code`` in a fresh interpreter."""
    script = (f"import sys\n{code}\n"
              "import json; print(json.dumps(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True)
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(name for name in modules
                  if any(name == heavy or name.startswith(heavy + ".") for heavy in HEAVY))


def test_importing_the_entry_point_is_light():
    modules = loaded_after("import privloss.cli.main")
    assert heavy_in(modules) == []
    assert not [name for name in modules if name.startswith("privloss.cli.") and
                name not in ("privloss.cli.main", "privloss.cli._common")]


def test_top_level_help_imports_no_command():
    code = ("from privloss.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    modules = loaded_after(code)
    assert heavy_in(modules) == []
    assert not [name for name in COMMANDS if f"privloss.cli.{name}" in modules]


@pytest.mark.parametrize("command", LIGHT_HELP)
def test_command_help_imports_only_its_module(command):
    code = ("import contextlib, io\nfrom privloss.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main([{command!r}, '--help'])\n"
            "    except SystemExit:\n        pass")
    modules = loaded_after(code)
    assert heavy_in(modules) == []
    others = [name for name in COMMANDS if name != command and f"privloss.cli.{name}" in modules]
    assert others == []


def test_stub_help_matches_the_modules():
    """The one-line help of the stubs (``privloss --help``) is each module's own."""
    def helps(parser):
        subparsers = next(action for action in parser._actions
                          if isinstance(action, type(parser._subparsers._group_actions[0])))
        return {choice.dest: choice.help for choice in subparsers._choices_actions}

    stubs, full = helps(build_parser()), helps(build_parser("*"))
    assert list(stubs) == list(COMMANDS) == list(full)
    assert stubs == full


def test_every_command_parses_with_its_module(capsys):
    """A stub never answers for a command: ``privloss X --help`` shows X's own flags."""
    for command in ("compose", "calibrate", "tradeoff"):
        with pytest.raises(SystemExit) as raised:
            build_parser(command).parse_args([command, "--help"])
        assert raised.value.code == 0
        assert "--json" in capsys.readouterr().out or command == "tradeoff"
