"""Fuzz of the command line: hostile argument lists for every command.

Each generated argv runs ``privloss.cli.main.main`` in-process and must end
with exit status 0, 2 (bad input) or 3 (budget refused), never a traceback;
on an error stderr holds exactly one error line that names a flag (or the
positional argument) at fault; no Python warning reaches the user; no call
hangs (a ``SIGALRM`` guard stops one after ``3 * TIME_LIMIT`` seconds).  How
long calls take is measured in ``benchmarks/cli_startup.py``, not asserted
here: a timed assertion on a shared machine flakes.

The default run tries about 100 argument lists (< 60 s); the ``slow`` test
tries many more and reaches the documented limits (10^6 mechanisms, 50,000
calibrated mechanisms, 10^7 samples). Hypothesis is derandomized by default
(``tests/conftest.py``), so a green run is reproducible.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privloss.cli.main import main

#: the hang guard's unit: a call still running after 3 * TIME_LIMIT seconds fails (issue
#: #12's target, under 10 s on the 2-core machine, is measured in benchmarks/)
TIME_LIMIT = 20.0

# --------------------------------------------------------------------------
# running one argv
# --------------------------------------------------------------------------


class CallTimedOut(BaseException):
    """Raised by the SIGALRM guard (a BaseException: no library ``except`` swallows it)."""


def _alarm(signum, frame):
    raise CallTimedOut()


def run_cli(argv: list[str]):
    """(exit status, stdout, stderr, seconds, warnings) of ``privloss argv``."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(3 * TIME_LIMIT))
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            try:
                code = main(argv)
            except SystemExit as exit_:       # argparse: --help (0), bad usage (2)
                code = exit_.code
    except CallTimedOut:
        pytest.fail(f"privloss {' '.join(argv)!r}: no answer after {3 * TIME_LIMIT:.0f} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - started
    return code, out.getvalue(), err.getvalue(), seconds, list(caught)


#: a flag named in a message (--epsilon, -n, `--sql`, ...)
FLAG = re.compile(r"(^|[\s(`'\"])--?[a-z]")
#: names of the positional arguments (argparse names them so)
POSITIONAL_NAMES = ("COMMAND", "ACTION", "DATA", "NAME", "distribution")
#: warnings a user never sees (Python hides them by default)
HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def check_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run ``argv`` and assert the contract of the module docstring."""
    code, out, err, seconds, caught = run_cli(argv)
    shown = " ".join(argv)
    assert code in (0, 2, 3), f"privloss {shown}: exit status {code!r}\n{err}"
    assert "Traceback" not in err, f"privloss {shown}: traceback\n{err}"
    visible = [w for w in caught if not issubclass(w.category, HIDDEN_WARNINGS)]
    assert not visible, f"privloss {shown}: warnings reach the user: " + "; ".join(
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in visible)
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if ": warning:" not in line and not line.startswith("[")]
    if code == 0:
        assert not [line for line in errors if "error" in line], f"privloss {shown}: {err}"
        return code, out, err
    assert len(errors) == 1, f"privloss {shown}: expected one error line, got\n{err}"
    line = errors[0]
    assert line.startswith("privloss") and "error:" in line, f"privloss {shown}: {line}"
    if code == 3:
        assert "budget" in line, f"privloss {shown}: refused without naming the budget: {line}"
        return code, out, err
    message = line.split("error:", 1)[1]
    named = bool(FLAG.search(message)) or any(name in message for name in POSITIONAL_NAMES)
    assert named, f"privloss {shown}: the error names no flag: {line}"
    return code, out, err


# --------------------------------------------------------------------------
# hostile values
# --------------------------------------------------------------------------

def one_of_weighted(usual, *unusual):
    """``usual`` about three times in four, else one of ``unusual``."""
    choices = (usual,) * (3 * len(unusual)) + unusual
    return st.integers(0, len(choices) - 1).flatmap(lambda index: choices[index])


#: values a careful user types (most examples should get past the parser)
GOOD_NUMBERS = ["0.1", "0.5", "1", "2", "0.01", "3", "1e-3", "10"]
#: hostile or edge values
NUMBER_WORDS = ["0", "-0", "1e-300", "5e-324", "1e-9", "1e-6", "0.999999", "1.5", "30", "700",
                "1000", "1e10", "1e300", "1e309", "inf", "-inf", "nan", "-1", "-1e-9", "abc", "",
                " ", "0x10", "1_000", "1/3", "10/3", "1e", "+2", "9" * 400, "0.1x2",
                "1e999999999"]
good_numbers = st.sampled_from(GOOD_NUMBERS)
numbers = st.integers(0, 9).flatmap(lambda index: (
    good_numbers if index < 6 else
    st.sampled_from(NUMBER_WORDS) if index == 6 else
    st.floats(allow_nan=True, allow_infinity=True).map(repr) if index == 7 else
    st.floats(1e-12, 1e3).map(lambda x: f"{x:.6g}") if index == 8 else
    st.integers(-5, 10 ** 12).map(str)))
probabilities = one_of_weighted(
    st.sampled_from(["1e-6", "1e-9", "0.01", "1e-5"]),
    st.sampled_from(["0", "0.5", "1", "1.5", "-1e-6", "nan", "1e-300", "0.999999999"]), numbers)
COUNT_WORDS = ["0", "-1", "1e3", "99999999999", "x", "", "1000001", "9" * 30, "10^6"]


def counts(largest: int):
    return one_of_weighted(st.integers(1, 20).map(str), st.integers(1, largest).map(str),
                           st.sampled_from([str(largest), str(largest // 2 + 1)]),
                           st.sampled_from(COUNT_WORDS))


def specs(largest: int, values=numbers):
    """EPS[xK] texts: a value, optionally repeated K times."""
    return st.builds(lambda value, count: value if count is None else f"{value}x{count}",
                     values, st.none() | counts(largest))


def approx_specs(largest: int):
    pair = st.builds(lambda e, d: f"{e}:{d}", numbers, probabilities)
    return st.builds(lambda value, count: value if count is None else f"{value}x{count}",
                     pair | pair | numbers, st.none() | counts(largest))


def flag_list(options: dict, *, min_size: int = 0, max_size: int = 4):
    """(flag, value) pairs drawn from ``options`` (flag -> strategy, or None for a switch)."""
    pairs = [st.tuples(st.just(flag), value if value is not None else st.just(None))
             for flag, value in options.items()]
    return st.lists(st.one_of(*pairs), min_size=min_size, max_size=max_size).map(
        lambda items: [word for flag, value in items
                       for word in ((flag,) if value is None else (flag, value))])


INTERACTIONS = st.sampled_from(["adaptive", "adaptive", "non-adaptive", "setwise",
                                "fully-adaptive", "bogus", ""])


def compose_argv(largest: int):
    mechanisms = {"--dp": specs(largest), "--br": specs(largest), "--zcdp": specs(largest),
                  "--approx-dp": approx_specs(largest), "--laplace": specs(largest),
                  "--gaussian": specs(largest), "--rr": specs(largest)}
    target = one_of_weighted(
        st.tuples(st.sampled_from(["--target-delta", "--delta"]), probabilities) | st.tuples(
            st.sampled_from(["--target-epsilon", "--epsilon"]), numbers),
        st.just(()), st.just(("--target-delta", "1e-6", "--target-epsilon", "1")))
    extra = {"--interaction": INTERACTIONS, "--sensitivity": numbers, "--json": None}
    return st.builds(lambda m, t, e: ["compose", *m, *t, *e],
                     one_of_weighted(flag_list(mechanisms, min_size=1, max_size=3),
                                     flag_list(mechanisms, max_size=6)),
                     target, flag_list(extra, max_size=2))


def calibrate_argv(largest: int):
    required = st.builds(lambda k, e, d: ["--k", k, "--target-epsilon", e, "--target-delta", d],
                         counts(largest), numbers, probabilities)
    options = {"--kind": st.sampled_from(["dp", "br", "gaussian", "zcdp"]),
               "--num-dp": counts(largest), "--sensitivity": numbers,
               "--interaction": INTERACTIONS, "--json": None}
    base = one_of_weighted(required, st.just(["--target-epsilon", "1", "--delta", "1e-6"]))
    return st.builds(lambda b, o: ["calibrate", *b, *o], base, flag_list(options, max_size=3))


def sample_argv(largest: int, tmp):
    outputs = st.sampled_from([str(tmp / "noise.npy"), str(tmp / "noise.csv"), str(tmp / "x.txt"),
                               str(tmp / "missing" / "x.npy"), str(tmp), "/dev/null.npy"])
    scales = one_of_weighted(numbers, st.sampled_from(["10/3", "1/0", "0/5", "-1/2", "1e-30",
                                                       "1e30", "1e31", "3", "1e9", "0.001"]))
    required = st.builds(lambda flag, scale, n: [flag, scale, "-n", n],
                         st.sampled_from(["--scale", "--sigma", "--sigma-squared"]), scales,
                         counts(largest))
    options = {"-o": outputs, "--seed": st.sampled_from(["0", "7", "-1", "x", "9" * 40])}
    distribution = st.sampled_from(["discrete-gaussian", "discrete-laplace",
                                    "discrete-gaussian", "discrete-laplace", "cauchy"])
    base = one_of_weighted(required, st.just(["-n", "3"]))
    return st.builds(lambda d, b, o: ["sample", d, *b, *o], distribution, base,
                     flag_list(options, max_size=2))


def tradeoff_argv(largest: int, tmp):
    curves = {"--laplace": specs(largest), "--gaussian": specs(largest),
              "--rr": specs(largest), "--dp": specs(largest)}
    options = {"--sensitivity": numbers, "--count": counts(10 ** 6), "--points": counts(100),
               "--clt": None,
               "--step": numbers,
               "--csv": st.sampled_from([str(tmp / "curves.csv"), str(tmp / "no" / "c.csv"),
                                         str(tmp)])}
    return st.builds(lambda c, o: ["tradeoff", *c, *o],
                     one_of_weighted(flag_list(curves, min_size=1, max_size=3),
                                     flag_list(curves, max_size=5)),
                     flag_list(options, max_size=3))


DATASETS = st.sampled_from(["d", "d", "d", "other", "", "a b", "x" * 300, "../etc", "名前",
                            "d;DROP"])


def ledger_argv(tmp):
    good = str(tmp / "ledger.sqlite")
    paths = st.sampled_from([good, good, good, str(tmp / "new.sqlite"), str(tmp / "data.csv"),
                             str(tmp), str(tmp / "no" / "l.sqlite")])
    create = st.builds(lambda p, d, e, extra: ["ledger", "create", "--ledger", p, "--dataset", d,
                                               "--epsilon", e, *extra],
                       paths, DATASETS, numbers,
                       flag_list({"--delta": probabilities, "--interaction": INTERACTIONS,
                                  "--json": None}, max_size=2))
    show = st.builds(lambda action, p, d, j: ["ledger", action, "--ledger", p, "--dataset", d, *j],
                     st.sampled_from(["show", "history", "show", "delete"]), paths, DATASETS,
                     st.sampled_from([[], ["--json"]]))
    return create | show


def release_argv(tmp):
    good = str(tmp / "data.csv")
    data = st.sampled_from([good, good, good, good, str(tmp / "missing.csv"), str(tmp),
                            "SELECT 1"])
    right = ["--privacy-unit", "user", "--item-column", "item"]
    columns = st.sampled_from([right, right, right, ["--privacy-unit", "nope", "--item-column",
                                                     "item"], ["--privacy-unit", "user"]])
    epsilon = one_of_weighted(st.builds(lambda e: ["--epsilon", e], numbers), st.just([]))
    options = {"--delta": probabilities, "--l0": counts(100), "--linf": counts(100),
               "--d-bar": counts(1000),
               "--domain": st.sampled_from([str(tmp / "domain.txt"), str(tmp / "missing.txt")]),
               "--seed": st.sampled_from(["0", "3", "-1"]), "--json": None,
               "--interaction": st.sampled_from(["adaptive", "setwise", "fully-adaptive", "x"]),
               "--ledger": st.sampled_from([str(tmp / "ledger.sqlite")]),
               "--dataset": st.sampled_from(["d", "missing"])}
    domain = str(tmp / "domain.txt")
    histogram_bases = st.sampled_from([["--domain", domain], ["--l0", "3", "--delta", "1e-6"],
                                       ["--noise", "gaussian", "--domain", domain, "--delta",
                                        "1e-6"], [], ["--noise", "x"]])
    topk_bases = st.sampled_from([["--k", "3", "--domain", domain],
                                  ["--k", "3", "--l0", "3", "--delta", "1e-6"],
                                  ["--k", "2", "--algorithm", "known-laplace", "--domain", domain],
                                  ["--k", "3", "--algorithm", "trunc-gauss", "--l0", "2",
                                   "--delta", "1e-6"], ["--k", "0"]])
    histogram = st.builds(lambda d, c, e, b, o: ["histogram", d, *c, *e, *b, *o], data, columns,
                          epsilon, histogram_bases, flag_list(options, max_size=2))
    topk = st.builds(lambda d, c, e, b, o: ["topk", d, *c, *e, *b, *o], data, columns, epsilon,
                     topk_bases, flag_list(options | {"--k": counts(20)}, max_size=2))
    return histogram | topk


OTHER_ARGV = st.sampled_from([["--help"], ["--version"], [], ["bogus"], ["compose", "--help"],
                              ["ledger"], ["reproduce", "nothing"], ["sample", "--help"],
                              ["histogram", "--help"], ["--bogus", "compose"]])


def accounting_argv(tmp, *, largest: int, calibrate_largest: int, sample_largest: int):
    """The commands without data: compose, calibrate, sample, tradeoff (and top level)."""
    return st.one_of(compose_argv(largest), calibrate_argv(calibrate_largest),
                     sample_argv(sample_largest, tmp), tradeoff_argv(largest, tmp), OTHER_ARGV)


def data_argv(tmp):
    """The commands over data and the ledger: ledger, histogram, topk."""
    return st.one_of(ledger_argv(tmp), release_argv(tmp))


# --------------------------------------------------------------------------
# known failures outside the command-line modules (reported; skipped by the fuzz)
# --------------------------------------------------------------------------

def _option(argv: list[str], flag: str) -> str | None:
    """The value of the last ``flag`` in argv (None if absent)."""
    values = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]
    return values[-1] if values else None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _repeat(spec: str) -> int:
    """K of an EPS[xK] flag value (1 if absent or unreadable)."""
    base, sep, count = spec.lower().rpartition("x")
    try:
        return int(count) if sep else 1
    except ValueError:
        return 1


# --------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A CSV of 60 users, a domain file and a ledger with dataset d (epsilon 3)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    rows = [(f"u{user}", f"item{(user * 7 + j) % 9}") for user in range(60) for j in range(3)]
    (tmp / "data.csv").write_text("user,item\n" + "".join(f"{u},{i}\n" for u, i in rows))
    (tmp / "domain.txt").write_text("".join(f"item{i}\n" for i in range(9)))
    code, _, err = check_cli(["ledger", "create", "--ledger", str(tmp / "ledger.sqlite"),
                              "--dataset", "d", "--epsilon", "3", "--delta", "1e-5"])
    assert code == 0, err
    return tmp


FUZZ_SETTINGS = dict(deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
    HealthCheck.filter_too_much])


def fuzz(strategy, data):
    argv = data.draw(strategy, label="argv")
    check_cli(argv)


@settings(max_examples=70, **FUZZ_SETTINGS)
@given(data=st.data())
def test_fuzz_accounting_commands(workspace, data):
    fuzz(accounting_argv(workspace, largest=1000, calibrate_largest=200,
                         sample_largest=10 ** 4), data)


@settings(max_examples=30, **FUZZ_SETTINGS)
@given(data=st.data())
def test_fuzz_data_commands(workspace, data):
    fuzz(data_argv(workspace), data)


@pytest.mark.slow
@settings(max_examples=600, **FUZZ_SETTINGS)
@given(data=st.data())
def test_fuzz_accounting_commands_to_the_limits(workspace, data):
    """Counts up to the documented limits (10^6 mechanisms, 50,000 calibrated, 10^7 samples)."""
    fuzz(accounting_argv(workspace, largest=10 ** 6, calibrate_largest=50_000,
                         sample_largest=10 ** 7), data)


@pytest.mark.slow
@settings(max_examples=300, **FUZZ_SETTINGS)
@given(data=st.data())
def test_fuzz_data_commands_more(workspace, data):
    fuzz(data_argv(workspace), data)


# the cases of issue #12, item 7 (and neighbours found by the fuzz): argv, the exit
# status and words of the error (None: any of 0 / 2)
KNOWN_CASES = [
    (["compose", "--dp", "0.1x99999999999", "--br", "0.1x3", "--delta", "1e-6"], 2,
     "--dp: K in '0.1x99999999999' must be an integer in [1, 10^10]"),
    (["compose", "--dp", "0.1x1000001", "--br", "0.1", "--target-delta", "1e-6"], 2, "10^6"),
    (["compose", "--dp", "0.1x600000", "--br", "0.1x600000", "--target-delta", "1e-6"], 2,
     "--dp, --br: at most 10^6 mechanisms in total"),
    (["calibrate", "--k", "1000000", "--target-epsilon", "1", "--target-delta", "1e-6"], 2, "--k"),
    (["calibrate", "--k", "10", "--target-epsilon", "1e300", "--target-delta", "1e-6"], None, None),
    (["compose", "--dp", "1e300", "--target-delta", "1e-6"], 2, "--dp"),
    (["compose", "--laplace", "1e-300", "--target-delta", "1e-6"], 2, "--laplace"),
    (["compose", "--gaussian", "1e-300x3", "--target-epsilon", "1"], 2, "--gaussian"),
    (["compose", "--gaussian", "1e160", "--target-delta", "1e-6"], 2, "--gaussian"),
    (["compose", "--zcdp", "1e300", "--target-epsilon", "1e-300"], 0, None),
    (["sample", "discrete-gaussian", "--sigma", "1e-30", "-n", "3"], 0, None),
    (["sample", "discrete-laplace", "--scale", "1e300", "-n", "3"], 2, "--scale"),
    (["sample", "discrete-laplace", "--scale", "1e-30", "-n", "1000000"], 2, "-n"),
    (["sample", "discrete-laplace", "--scale", "1e999999999", "-n", "3"], 2, "--scale"),
    (["tradeoff", "--laplace", "1e-300x2"], 2, "--laplace"),
    (["tradeoff", "--laplace", "1e-3"], 2, "--laplace"),
    (["tradeoff", "--rr", "1e300x5"], 2, "--rr"),
    (["tradeoff", "--laplace", "1x10", "--step", "1e-6"], 2, "--step"),
    (["reproduce", "nothing"], 2, "NAME"),
]


@pytest.mark.parametrize("argv, status, words", KNOWN_CASES, ids=lambda v: str(v)[:60])
def test_known_hostile_cases(argv, status, words):
    code, _, err = check_cli(argv)
    if status is not None:
        assert code == status, err
    if words is not None:
        assert words in err


#: calibrations that once took 6 to 38 s (~36 evaluations of the exact adaptive-sequence
#: recursion for <= 20 BR events; now a dozen, by regula falsi)
SLOW_ONCE = [
    ["calibrate", "--k", "18", "--target-epsilon", "3", "--target-delta", "1e-6", "--kind", "br"],
    ["calibrate", "--k", "20", "--target-epsilon", "1", "--target-delta", "1e-9", "--kind", "br"],
]
#: histogram / topk at tiny epsilons (issue #12 item 7: "the parameters are out of the
#: supported numeric range (ZeroDivisionError)", a hang with Gaussian noise)
TINY_EPSILON_RELEASES = [
    ["histogram", "DATA", "--epsilon", "1e-300", "--domain", "domain.txt"],
    ["histogram", "DATA", "--epsilon", "1e-100", "--l0", "3", "--delta", "1e-6"],
    ["topk", "DATA", "--epsilon", "1e-100", "--k", "3", "--domain", "domain.txt"],
    ["histogram", "DATA", "--epsilon", "1e-6", "--noise", "gaussian", "--domain", "domain.txt",
     "--delta", "1e-6"],
]


def with_workspace(argv: list[str], workspace) -> list[str]:
    argv = [str(workspace / word) if word.endswith(".txt") else word for word in argv]
    if "DATA" in argv:
        at = argv.index("DATA")
        argv[at:at + 1] = [str(workspace / "data.csv"), "--privacy-unit", "user",
                           "--item-column", "item"]
    return argv


@pytest.mark.parametrize("argv", TINY_EPSILON_RELEASES, ids=" ".join)
def test_tiny_epsilon_releases_name_the_flag(workspace, argv):
    code, _, err = check_cli(with_workspace(argv, workspace))
    assert code == 2 and "--epsilon" in err


@pytest.mark.parametrize("argv", SLOW_ONCE, ids=" ".join)
def test_calibrating_bounded_range_sequences_answers(workspace, argv):
    code, out, _ = check_cli(with_workspace(argv, workspace))
    assert code == 0 and "per-mechanism epsilon" in out


def test_error_line_format():
    """The contract itself: one line, the flag named, exit 2."""
    code, _, err = check_cli(["compose", "--dp", "abc", "--delta", "1e-6"])
    assert code == 2 and re.match(r"privloss compose: error: argument --dp: ", err)
