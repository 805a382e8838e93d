"""Two-party counting protocol: unbiasedness, message law, events, bad inputs.

Statistical tests use ``InsecureSeededSource`` with fixed seeds and reject at
ALPHA = 1e-4 each.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.events import PureDP
from privloss.mechanisms.two_party import TwoPartyCount, TwoPartyTranscript, count_bits
from privloss.samplers import InsecureSeededSource, discrete_laplace_mass, discrete_laplace_variance
from tests.samplers._stats import chi_square_pvalue

ALPHA = 1e-4


def test_transcript_total():
    transcript = TwoPartyTranscript(3, -1)
    assert transcript.total == 2


def test_unbiased_with_known_variance():
    rng = np.random.default_rng(1)
    party_1 = rng.integers(0, 2, 500)
    party_2 = rng.integers(0, 2, 500).astype(bool)
    truth = int(party_1.sum() + party_2.sum())
    protocol = TwoPartyCount(0.5)                      # scale 4 per message
    source = InsecureSeededSource(2)
    totals = np.array([protocol.release(party_1, party_2, source=source).total
                       for _ in range(20_000)])
    variance = 2 * float(discrete_laplace_variance(Fraction(4)))
    z = (totals.mean() - truth) / math.sqrt(variance / totals.size)
    assert 2 * stats.norm.sf(abs(z)) > ALPHA
    # sample variance: sd of s^2 / sigma^2 is sqrt((kurtosis - 1) / n) and the
    # kurtosis of a sum of two Laplace-like draws is <= 6; 4.5 sd ~ alpha 1e-5
    ratio = totals.var(ddof=1) / variance
    assert abs(ratio - 1) < 4.5 * math.sqrt(5 / totals.size)


def test_party_message_law():
    protocol = TwoPartyCount(1.0, scale="3/2")
    bits = [1, 0, 1, 1]
    source = InsecureSeededSource(3)
    noise = np.array([protocol.party_message(bits, source=source) - 3 for _ in range(20_000)])
    pvalue, _ = chi_square_pvalue(noise,
                                  lambda lo, hi: discrete_laplace_mass(lo, hi, Fraction(3, 2)),
                                  range(-8, 9))
    assert pvalue > ALPHA


def test_outputs_are_ints():
    transcript = TwoPartyCount(1.0).release([1, 0], [True], source=InsecureSeededSource(0))
    assert isinstance(transcript.message_1, int) and isinstance(transcript.message_2, int)
    assert isinstance(transcript.total, int)


def test_events_state_the_guarantee_obtained():
    # the notes' default scale 2/epsilon gives epsilon/2 per party
    default = TwoPartyCount(1.0)
    assert default.scale == 2 and default.events == (PureDP(0.5),)
    assert TwoPartyCount(0.3, scale=1 / Fraction(0.3)).events == (PureDP(0.3),)
    odd = TwoPartyCount(1.0, scale="10/3")
    assert odd.epsilon_per_message >= 0.3 and Fraction(odd.epsilon_per_message) >= Fraction(3, 10)
    assert odd.epsilon_per_message == pytest.approx(0.3, rel=1e-15)


def test_count_bits():
    assert count_bits("bits", []) == 0
    assert count_bits("bits", np.array([True, False, True])) == 2
    assert count_bits("bits", [1.0, 0.0, 1.0]) == 2


@pytest.mark.parametrize("bits,error,match", [
    ([0, 2], ValueError, "only 0 and 1"),
    ([0.5], ValueError, "only 0 and 1"),
    ([[0, 1]], ValueError, "1-D"),
    (["a"], TypeError, "0/1"),
])
def test_bad_bits(bits, error, match):
    with pytest.raises(error, match=match):
        TwoPartyCount(1.0).release(bits, [0], source=InsecureSeededSource(0))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(epsilon=0), ValueError, "epsilon"),
    (dict(epsilon=float("inf")), ValueError, "epsilon"),
    (dict(epsilon=1, scale=0), ValueError, "scale"),
    (dict(epsilon=1, scale=-2), ValueError, "scale"),
    (dict(epsilon=1, scale="x"), ValueError, "scale"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        TwoPartyCount(**kwargs)
