"""Dinur–Nissim reconstruction: accurate answers are blatantly non-private,
answers that are epsilon = 1 DP as a batch are not reconstructed.

Seeds are fixed (``InsecureSeededSource``). Thresholds: with n = 100 a random
guess recovers 50% +- 5% (one sd), so "<= 70%" is 4 sd above chance and
">= 99%" leaves one wrong bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.attacks import (LaplaceSubsetSums, bounded_noise_answers, demonstrate_attack,
                              fraction_recovered, random_database, random_subset_queries,
                              reconstruct_exhaustive, reconstruct_lp, subset_sums)
from privloss.attacks.reconstruction import all_subset_masks
from privloss.events import NonPrivate, PureDP
from privloss.samplers import InsecureSeededSource


def test_accurate_answers_are_reconstructed():
    # error bound E = 1 ~ sqrt(100)/10, 4n queries
    outcome = demonstrate_attack(100, noise="bounded", source=InsecureSeededSource(1))
    assert outcome.noise_parameter == 1 and outcome.max_error <= 1
    assert outcome.num_queries == 400
    assert outcome.fraction_recovered >= 0.99
    assert outcome.event == NonPrivate()


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_dp_answers_are_not_reconstructed(delta):
    outcome = demonstrate_attack(100, noise="laplace", epsilon=1.0, delta=delta,
                                 source=InsecureSeededSource(2))
    assert outcome.fraction_recovered <= 0.70
    # the whole batch of queries is (1, delta)-DP according to the accountant
    spent = compose([outcome.event], target_delta=delta)
    assert spent.value <= 1.0 + 1e-9


@pytest.mark.parametrize("objective", ["sum", "feasibility"])
def test_other_objectives(objective):
    outcome = demonstrate_attack(60, noise="bounded", objective=objective,
                                 source=InsecureSeededSource(3))
    assert outcome.fraction_recovered >= 0.99


def test_lp_recovers_exact_answers_exactly():
    source = InsecureSeededSource(4)
    database = random_database(40, source=source)
    queries = random_subset_queries(40, 160, source=source)
    result = reconstruct_lp(queries, subset_sums(database, queries))
    assert result.deviation == pytest.approx(0.0, abs=1e-7)
    assert fraction_recovered(result.candidate, database) == 1.0
    assert np.all((result.fractional >= 0) & (result.fractional <= 1))


def test_feasibility_with_wrong_bound_raises():
    source = InsecureSeededSource(5)
    database = random_database(30, source=source)
    queries = random_subset_queries(30, 120, source=source)
    answers = bounded_noise_answers(database, queries, 3, source=source)
    with pytest.raises(ArithmeticError, match="LP failed"):
        reconstruct_lp(queries, answers + 50, objective="feasibility", error_bound=0)


def test_bounded_noise_is_bounded_and_uses_the_whole_range():
    source = InsecureSeededSource(6)
    database = random_database(20, source=source)
    queries = random_subset_queries(20, 2000, source=source)
    answers = bounded_noise_answers(database, queries, 2, source=source)
    errors = answers - subset_sums(database, queries)
    assert set(errors.tolist()) == {-2, -1, 0, 1, 2}


def test_laplace_calibration_and_events():
    mechanism = LaplaceSubsetSums(400, 1.0)
    assert mechanism.per_query_epsilon <= 1.0 / 400
    assert mechanism.per_query_epsilon == pytest.approx(1.0 / 400, rel=1e-6)
    assert mechanism.event == PureDP(mechanism.per_query_epsilon, count=400)
    assert 1 / mechanism.scale == pytest.approx(mechanism.per_query_epsilon, rel=1e-15)
    # with delta > 0 the accountant allows roughly sqrt(k) scaling: less noise
    approximate = LaplaceSubsetSums(400, 1.0, 1e-6)
    assert approximate.per_query_epsilon > 3 * mechanism.per_query_epsilon
    assert compose([approximate.event], target_delta=1e-6).value <= 1.0 + 1e-9


def test_exhaustive_attack_within_4E():
    n = 10
    source = InsecureSeededSource(7)
    database = random_database(n, source=source)
    masks = all_subset_masks(n)
    membership = ((masks[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
    exact = subset_sums(database, membership)
    assert np.array_equal(reconstruct_exhaustive(exact, 0), database)
    for bound in (1, 2):
        answers = bounded_noise_answers(database, membership, bound, source=source)
        guess = reconstruct_exhaustive(answers, bound)
        assert int(np.sum(guess != database)) <= 4 * bound
    with pytest.raises(ValueError, match="no candidate"):
        reconstruct_exhaustive(exact + 5, 1)


@pytest.mark.parametrize("call,error,match", [
    (lambda: random_database(0), ValueError, "n must"),
    (lambda: random_subset_queries(5, 0), ValueError, "num_queries"),
    (lambda: subset_sums([0, 2], [[1, 1]]), ValueError, "only 0 and 1"),
    (lambda: subset_sums([0, 1], [[1, 1, 1]]), ValueError, "one column per"),
    (lambda: subset_sums([0, 1], [1, 1]), ValueError, "2-D"),
    (lambda: bounded_noise_answers([0, 1], [[1, 1]], -1), ValueError, "error_bound"),
    (lambda: reconstruct_lp([[1, 0]], [1.0], objective="l2"), ValueError, "objective"),
    (lambda: reconstruct_lp([[1, 0]], [1.0, 2.0]), ValueError, "one entry per query"),
    (lambda: reconstruct_lp([[1, 0]], [np.nan]), ValueError, "finite"),
    (lambda: reconstruct_lp([[1, 0]], [1.0], objective="feasibility"), ValueError, "required"),
    (lambda: reconstruct_lp([[1, 0]], [1.0], error_bound=1), ValueError, "only used"),
    (lambda: reconstruct_exhaustive(np.zeros(6), 1), ValueError, "2\\^n"),
    (lambda: reconstruct_exhaustive(np.zeros(4), -1), ValueError, "error_bound"),
    (lambda: fraction_recovered([0, 1], [0, 1, 1]), ValueError, "entries"),
    (lambda: LaplaceSubsetSums(10, 0.0), ValueError, "epsilon"),
    (lambda: LaplaceSubsetSums(10, 1.0, 1.0), ValueError, "delta"),
    (lambda: LaplaceSubsetSums(10, 1.0).release([0, 1], [[1, 1]]), ValueError, "num_queries"),
    (lambda: demonstrate_attack(10, noise="gauss"), ValueError, "noise"),
    (lambda: demonstrate_attack(10, noise="laplace", error_bound=1), ValueError, "only used"),
])
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.slow
def test_large_demonstration():
    # n = 500, m = 2000: E = 2 ~ sqrt(500)/10 reconstructs everything; the
    # (1, 0)- and (1, 1e-6)-DP batches stay near chance
    accurate = demonstrate_attack(500, noise="bounded", source=InsecureSeededSource(11))
    assert accurate.fraction_recovered >= 0.99
    for delta in (0.0, 1e-6):
        private = demonstrate_attack(500, noise="laplace", delta=delta,
                                     source=InsecureSeededSource(12))
        assert private.fraction_recovered <= 0.60


def test_error_of_order_sqrt_n_breaks_the_attack():
    # recovery degrades as E / sqrt(n) grows (spec §8.2 demo plan), n = 200
    n = 200
    fractions = [demonstrate_attack(n, noise="bounded", error_bound=int(c * math.sqrt(n)),
                                    source=InsecureSeededSource(13)).fraction_recovered
                 for c in (0.1, 1.0, 4.0)]
    assert fractions[0] >= 0.99 and fractions[0] > fractions[1] > fractions[2]
