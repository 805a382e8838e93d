"""Sample-and-aggregate: partition law, accuracy on a known function, exact
noise of the mean aggregator, events, bad inputs.

Statistical tests use ``InsecureSeededSource`` with fixed seeds and reject at
ALPHA = 1e-4 each.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.events import ApproxDP, PureDP
from privloss.mechanisms.sample_aggregate import SampleAggregate, block_outputs, random_partition
from privloss.samplers import InsecureSeededSource, discrete_laplace_mass
from tests.samplers._stats import chi_square_pvalue

ALPHA = 1e-4


def test_partition_is_a_partition_with_balanced_sizes():
    blocks = random_partition(103, 10, source=InsecureSeededSource(1))
    assert sorted(np.concatenate(blocks).tolist()) == list(range(103))
    assert sorted(len(b) for b in blocks) == [10] * 7 + [11] * 3
    assert random_partition(1, 1, source=InsecureSeededSource(1))[0].tolist() == [0]


def test_partition_is_uniform():
    # block 0 of a partition of 5 records into 2 blocks is a uniform 3-subset
    source = InsecureSeededSource(2)
    draws = Counter(tuple(random_partition(5, 2, source=source)[0]) for _ in range(6000))
    subsets = list(itertools.combinations(range(5), 3))
    assert set(draws) == set(subsets)
    observed = [draws[s] for s in subsets]
    assert stats.chisquare(observed).pvalue > ALPHA


def test_median_aggregator_accuracy_with_many_blocks():
    # the mean of N(3, 1) data is estimated well when each of 200 blocks has 100 records
    data = np.random.default_rng(3).normal(3.0, 1.0, 20_000)
    mechanism = SampleAggregate(np.mean, 200, 1.0, 0.0, 10.0)
    source = InsecureSeededSource(4)
    errors = np.abs([mechanism.release(data, source=source) - 3.0 for _ in range(40)])
    # block means have sd 0.1; S* ~ spacing of 200 such values, noise ~ 2 S*/eps
    assert np.median(errors) < 0.05
    assert np.mean(errors < 0.2) >= 0.9


def test_mean_aggregator_accuracy():
    data = np.random.default_rng(5).normal(3.0, 1.0, 20_000)
    mechanism = SampleAggregate(np.mean, 200, 1.0, 0.0, 10.0, aggregator="mean")
    source = InsecureSeededSource(6)
    draws = np.array([mechanism.release(data, source=source) for _ in range(200)])
    # noise sd = sqrt(2) * 10 / (200 * 1) ~ 0.071; bias of the block means ~ 0
    assert abs(np.mean(draws) - 3.0) < 4 * 0.071 / np.sqrt(200) + 0.01
    assert 0.05 < np.std(draws) < 0.1


def test_mean_aggregator_noise_is_exact_discrete_laplace():
    # constant f: the released value determines the integer noise exactly
    grid_bits, blocks, epsilon = 4, 64, 1.0
    mechanism = SampleAggregate(lambda block: 5.0, blocks, epsilon, 0.0, 10.0,
                                aggregator="mean", grid_bits=grid_bits)
    source = InsecureSeededSource(7)
    grid = 1 << grid_bits
    steps_each = 8                                       # 5.0 / 10 * 16
    noise = []
    for _ in range(4000):
        value = mechanism.release(np.zeros(blocks), source=source)
        total = Fraction(value) / 10 * grid * blocks     # exact: dyadic arithmetic
        assert total.denominator == 1
        noise.append(int(total) - steps_each * blocks)
    scale = Fraction(grid) / Fraction(epsilon)
    pvalue, _ = chi_square_pvalue(np.array(noise),
                                  lambda lo, hi: discrete_laplace_mass(lo, hi, scale),
                                  range(-40, 41, 4))
    assert pvalue > ALPHA


def test_block_outputs_clamp_and_replace_nan():
    data = np.arange(6.0)
    blocks = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])]
    values = block_outputs(lambda b: {0.0: -5.0, 2.0: float("nan"), 4.0: np.inf}[b[0]],
                           data, blocks, 0.0, 1.0)
    assert values.tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="real number"):
        block_outputs(lambda b: "x", data, blocks, 0.0, 1.0)


def test_records_can_be_rows():
    data = np.random.default_rng(8).normal(0, 1, (400, 3))
    mechanism = SampleAggregate(lambda rows: rows[:, 0].mean(), 20, 2.0, -1.0, 1.0)
    value = mechanism.release(data, source=InsecureSeededSource(9))
    assert -1.0 <= value <= 1.0


def test_events():
    assert SampleAggregate(np.mean, 10, 0.5, 0, 1).events == (PureDP(0.5),)
    assert SampleAggregate(np.mean, 10, 0.5, 0, 1, noise="laplace", delta=1e-6).events == \
        (ApproxDP(0.5, 1e-6),)
    assert SampleAggregate(np.mean, 10, 0.5, 0, 1, aggregator="mean").events == (PureDP(0.5),)


@pytest.mark.parametrize("args,kwargs,error,match", [
    (("f", 10, 1.0, 0, 1), {}, TypeError, "callable"),
    ((np.mean, 0, 1.0, 0, 1), {}, ValueError, "num_blocks"),
    ((np.mean, 2.5, 1.0, 0, 1), {}, TypeError, "num_blocks"),
    ((np.mean, 10, -1.0, 0, 1), {}, ValueError, "epsilon"),
    ((np.mean, 10, 1.0, 1, 0), {}, ValueError, "lower"),
    ((np.mean, 10, 1.0, 0, 1), dict(aggregator="mode"), ValueError, "aggregator"),
    ((np.mean, 10, 1.0, 0, 1), dict(aggregator="mean", delta=1e-6), ValueError, "delta"),
    ((np.mean, 10, 1.0, 0, 1), dict(aggregator="mean", noise="x"), ValueError, "noise"),
    ((np.mean, 10, 1.0, 0, 1), dict(aggregator="mean", grid_bits=0), ValueError, "grid_bits"),
    ((np.mean, 10, 1.0, 0, 1), dict(noise="laplace"), ValueError, "delta"),
])
def test_bad_constructor_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        SampleAggregate(*args, **kwargs)


def test_bad_release_arguments():
    mechanism = SampleAggregate(np.mean, 10, 1.0, 0, 1)
    with pytest.raises(ValueError, match="num_blocks must be <="):
        mechanism.release(np.zeros(5), source=InsecureSeededSource(0))
    with pytest.raises(ValueError, match="scalar"):
        mechanism.release(3.0, source=InsecureSeededSource(0))
    with pytest.raises(ValueError, match="num_blocks"):
        random_partition(3, 4)
