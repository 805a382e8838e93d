"""notes-examples in quick mode: key numbers and output files."""

import math

import pytest

from privloss.bounds.advanced import drv_epsilon
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.experiments import notes_examples
from tests.experiments import assert_outputs

SEED = 20240601


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("notes_examples")
    return out, notes_examples.run(out, quick=True, seed=SEED)


def test_outputs(outcome):
    assert_outputs(outcome[1], outcome[0], "notes-examples")


def test_histogram(outcome):
    numbers = outcome[1]["key_numbers"]
    # the notes: ln(10000/0.05) ~ 12.2; closed form, rel 1e-12
    assert numbers["histogram_union_bound"] == pytest.approx(math.log(10000 / 0.05), rel=1e-12)
    # exact quantile of max of 10,000 |Lap(1)|: (1 - e^-t)^10000 = 0.95, checked forward
    t = numbers["histogram_exact_quantile"]
    assert (1 - math.exp(-t)) ** 10000 == pytest.approx(0.95, rel=1e-9)


def test_ballot(outcome):
    numbers = outcome[1]["key_numbers"]
    # closed forms 1 / (1 + 2 e^{-eps/2}) for votes (4, 3, 3), sensitivity 1, exp(eps u / 2)
    for eps in (5, 6, 0.5):
        assert numbers[f"ballot_eps{eps:g}_top"] == pytest.approx(1 / (1 + 2 * math.exp(-eps / 2)),
                                                                 rel=1e-12)
    # the seed's eps = 5 column (0.9, 0.045, 0.045) is the eps = 6 column, not eps = 5's
    assert round(numbers["ballot_eps6_top"], 1) == 0.9
    assert round(numbers["ballot_eps6_second"], 3) == 0.045
    assert round(numbers["ballot_eps5_second"], 3) == 0.071
    ballot_claim = outcome[1]["claims"][2]
    assert ballot_claim["agree"] is False


def test_lifetime(outcome):
    numbers = outcome[1]["key_numbers"]
    delta = math.exp(-32)
    # the corollary: 1 / (2 sqrt(2 * 10^4 * 32)) = 1/1600 exactly
    assert numbers["lifetime_corollary"] == pytest.approx(1 / 1600, rel=1e-12)
    # the notes' 1/801 is not sufficient by DRV itself
    assert numbers["lifetime_drv_at_1_over_801"] > 1
    # DRV solved exactly: 1/812.3 (bisection; forward check on both sides at rel 1e-9)
    drv = numbers["lifetime_drv_exact"]
    assert drv == pytest.approx(1 / 812.3, rel=1e-4)
    assert drv_epsilon(10000, drv, delta) <= 1 < drv_epsilon(10000, drv * (1 + 1e-9), delta)
    # optimal bound: 0.0013976034 (bisection here vs privloss.accounting.calibrate_epsilon,
    # which gave 0.0013976034161 in full mode); forward check
    optimal = numbers["lifetime_optimal"]
    assert optimal == pytest.approx(0.0013976034161, rel=1e-8)
    assert optimal_dp_epsilon(10000, optimal, delta) <= 1
    assert numbers["lifetime_corollary"] < drv < optimal


def test_attack(outcome):
    numbers = outcome[1]["key_numbers"]
    # fixed seed; bounded noise ~sqrt(n)/10 is blatantly non-private, 1-DP Laplace is not
    assert numbers["attack_bounded_fraction_n64"] >= 0.9
    assert numbers["attack_laplace_fraction_n64"] <= 0.8


def test_attack_verdict_comes_from_an_interval(outcome):
    numbers = outcome[1]["key_numbers"]
    row = next(r for r in outcome[1]["claims"] if r["claim"].startswith("answers within"))
    assert row["verdict"] == "agree" and "agree at 10 trials" in row["ours"]
    assert 0 < numbers["attack_difference_low"] <= numbers["attack_difference_mean"]
