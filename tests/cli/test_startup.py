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


# --------------------------------------------------------------------------
# the compose path (issue 12 item 8: `privloss compose --dp 0.1 --target-delta 1e-6`
# under 0.3 s): each bound's module is imported when the bound is evaluated, and a
# profile with an exact optimum evaluates that bound only
# --------------------------------------------------------------------------

#: never needed to import the accountant, nor by a profile with an exact optimum
NOT_ON_THE_COMPOSE_PATH = ("scipy.optimize", "scipy.signal", "scipy.fft", "privloss.pld",
                           "privloss.bounds.zcdp", "privloss.bounds.rdp",
                           "privloss.bounds.heterogeneous_dp", "privloss.bounds.adaptive_sequence",
                           "matplotlib", "duckdb", "pyspark", "mpmath")


def on_the_path(modules: set[str], names=NOT_ON_THE_COMPOSE_PATH) -> list[str]:
    return sorted(name for name in modules
                  if any(name == heavy or name.startswith(heavy + ".") for heavy in names))


def compose_modules(*argv: str) -> set[str]:
    code = ("import contextlib, io\nfrom privloss.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    code = main({list(argv)!r})\n"
            "assert code == 0, code")
    return loaded_after(code)


def test_importing_the_accountant_loads_no_bound():
    modules = loaded_after("import privloss.accounting.accountant")
    assert on_the_path(modules) == []
    assert not [name for name in modules if name.startswith("privloss.bounds.")
                and name not in ("privloss.bounds._numeric",)]
    assert "scipy.special" not in modules


@pytest.mark.parametrize("argv", [
    ("compose", "--dp", "0.1", "--target-delta", "1e-6"),
    ("compose", "--dp", "0.1", "--delta", "1e-6"),                 # the old spelling
    ("compose", "--dp", "0.1x50", "--target-epsilon", "1"),
    ("compose", "--approx-dp", "0.1:1e-9x20", "--target-delta", "1e-6"),
    ("compose", "--br", "0.1", "--target-delta", "1e-6"),          # one BR: Cor. 5.1
    ("compose", "--br", "0.1x20", "--interaction", "non-adaptive", "--target-delta", "1e-6"),
    ("compose", "--gaussian", "1x100", "--target-delta", "1e-6"),
])
def test_a_profile_with_an_exact_optimum_imports_no_other_bound(argv):
    assert on_the_path(compose_modules(*argv)) == []


def test_a_small_pure_dp_compose_does_not_import_scipy():
    """Theorem 1 for small k takes its log-gamma from ``math.lgamma`` (scipy.special
    alone costs about 0.2 s of start-up)."""
    for argv in (("compose", "--dp", "0.1", "--target-delta", "1e-6"),
                 ("compose", "--dp", "0.1x50", "--target-epsilon", "1")):
        modules = compose_modules(*argv)
        assert not [name for name in modules if name == "scipy" or name.startswith("scipy.")]


def test_zcdp_profiles_do_not_import_scipy():
    """The zCDP conversions find their optimal order by bisection (no scipy.optimize)."""
    for target in (("--target-delta", "1e-6"), ("--target-epsilon", "1")):
        modules = compose_modules("compose", "--zcdp", "0.01x5", *target)
        assert not [name for name in modules if name == "scipy" or name.startswith("scipy.")]
        assert "privloss.pld" not in modules


def test_the_pld_is_imported_when_it_is_evaluated():
    modules = compose_modules("compose", "--laplace", "10x3", "--target-delta", "1e-6")
    assert "privloss.pld" in modules and "scipy.optimize" not in modules


def test_gaussian_dp_candidate_models_match_its_module():
    """candidates.py spells the GDP row's models out (no import of the bound module)."""
    from privloss.accounting.candidates import CANDIDATES
    from privloss.bounds.gaussian_dp import INTERACTIONS
    from privloss.events import Interaction

    row = next(candidate for candidate in CANDIDATES if candidate.name == "gaussian-dp")
    assert row.models == frozenset(Interaction.parse(value) for value in INTERACTIONS)


def test_adaptive_recursion_limit_matches_its_module():
    from privloss.accounting.candidates import ADAPTIVE_RECURSION_LIMIT
    from privloss.bounds.adaptive_sequence import MAX_SEQUENCE_LENGTH

    assert ADAPTIVE_RECURSION_LIMIT == MAX_SEQUENCE_LENGTH


def test_a_missing_extra_is_one_line(monkeypatch, capsys):
    """Issue 22 item 5: a missing optional module names the extra to install,
    in one line (exit 2); any other missing module keeps its traceback."""
    import privloss.cli.compose as compose
    from privloss.cli.main import main, missing_extra

    def needs_spark(args):
        raise ModuleNotFoundError("No module named 'pyspark'", name="pyspark")

    monkeypatch.setattr(compose, "run", needs_spark)
    code = main(["compose", "--dp", "0.1", "--target-delta", "1e-6"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "pip install 'privloss[spark]'" in err and "'pyspark'" in err
    assert missing_extra(ModuleNotFoundError("x", name="not_a_dependency")) is None
