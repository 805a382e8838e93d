"""Issue 23 item 2: privloss.PrivacyOdometer, a running epsilon valid at every time
at once under fully adaptive choice, tested by exact enumeration of games.

The odometer never refuses; its reading epsilon(v) depends on the transcript. The
claim tested: for every analyst strategy and every (data-dependent) stopping time,
sum over transcripts v of [P_D(v) - e^{epsilon(v)} P_D'(v)]_+ <= delta, both ways."""

from __future__ import annotations

import functools
import math

import mpmath
import pytest

from privloss import PrivacyOdometer, PureDP
from privloss._exact import sum_upper
from privloss.accounting.fully_adaptive import check, release_guarantee
from privloss.events import BoundedRange, Gaussian, NonPrivate, RandomizedResponse
from tests.filters import game


@functools.lru_cache(maxsize=None)
def guarantee(proposal):
    return release_guarantee(RandomizedResponse(proposal))


def replay(odometer: PrivacyOdometer):
    """reading(proposals): the reading of a fresh odometer like ``odometer`` after
    ``proposals`` (memoised along prefixes: the reading only rises)."""
    @functools.lru_cache(maxsize=None)
    def reading(proposals: tuple):
        fresh = PrivacyOdometer(odometer.delta, epsilon_min=odometer.level_epsilon(0),
                                ratio=odometer.level_epsilon(1) / odometer.level_epsilon(0))
        if proposals:
            fresh._guarantees = [guarantee(p) for p in proposals[:-1]]
            fresh._level = reading(proposals[:-1])[1] or 0
            fresh._policies = policies
        value = fresh.spend(RandomizedResponse(proposals[-1])) if proposals else 0.0
        return value, fresh._level
    policies: dict = {}
    return lambda proposals: reading(proposals)[0]


@mpmath.workdps(game.DPS)
def running_divergence(strategy, odometer, rounds: int, stop=None):
    """sum_v [P(v) - e^{eps(v)} Q(v)]_+ and the reverse, over the leaves of the game
    in which every proposal runs; ``stop(history)`` ends a branch early (a stopping
    time that depends on the outputs)."""
    cached = replay(odometer)
    forward = backward = mpmath.mpf(0)
    mass = mpmath.mpf(0)

    def visit(history, proposals, p_mass, q_mass, depth):
        nonlocal forward, backward, mass
        proposal = strategy(history) if depth < rounds and not (stop and stop(history)) else None
        if proposal is None:
            epsilon = cached(proposals)
            threshold = mpmath.e ** mpmath.mpf(epsilon) if math.isfinite(epsilon) else mpmath.inf
            forward += max(p_mass - threshold * q_mass, 0)
            backward += max(q_mass - threshold * p_mass, 0)
            mass += p_mass
            return
        for output, (p, q) in enumerate(game.output_laws(proposal)):
            visit(history + ((proposal, output),), proposals + (proposal,), p_mass * p, q_mass * q,
                  depth + 1)

    visit((), (), mpmath.mpf(1), mpmath.mpf(1), 0)
    assert abs(mass - 1) < mpmath.mpf(10) ** -40
    return forward, backward


STRATEGIES = {
    "greedy": game.greedy(1.0, 0.3),
    "alternating": game.alternating(0.9, 0.2),
    "pseudo-random": game.pseudo_random((0.1, 0.3, 0.5, 0.8, 1.2)),
    "switch": game.switch_rules(0.5, (1.2,) * 9, (0.3,) * 9),
}


@pytest.mark.parametrize("delta", [0.25, 0.05])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_running_epsilon_holds_at_the_end_of_every_game(name, delta):
    odometer = PrivacyOdometer(delta, epsilon_min=0.25, ratio=2.0 ** 0.5)
    forward, backward = running_divergence(STRATEGIES[name], odometer, 8)
    assert forward <= delta and backward <= delta, (name, forward, backward)


@pytest.mark.parametrize("name", ["greedy", "pseudo-random"])
def test_the_running_epsilon_holds_at_data_dependent_stopping_times(name):
    # stop as soon as two outputs looked like D' (a stopping time of the transcript)
    def stop(history):
        return sum(1 for _, output in history if output == 1) >= 2

    odometer = PrivacyOdometer(0.1, epsilon_min=0.25, ratio=2.0 ** 0.5)
    forward, backward = running_divergence(STRATEGIES[name], odometer, 9, stop)
    assert forward <= 0.1 and backward <= 0.1


def test_delta_zero_is_the_exact_sum_and_the_game_has_zero_divergence():
    odometer = PrivacyOdometer(0.0)
    assert odometer.epsilon == 0.0
    for value in (0.1, 0.25, 0.125):
        odometer.spend(PureDP(value))
    assert odometer.epsilon == 0.1 + 0.25 + 0.125 or odometer.epsilon >= 0.475
    forward, backward = running_divergence(STRATEGIES["pseudo-random"], PrivacyOdometer(0.0), 8)
    assert forward == 0 and backward == 0


def test_the_reading_only_rises_and_matches_the_smallest_admitting_level():
    odometer = PrivacyOdometer(1e-6)
    previous = 0.0
    history = []
    for value in [0.01] * 50 + [0.2, 0.05] * 5:
        reading_now = odometer.spend(PureDP(value))
        history.append(release_guarantee(PureDP(value)))
        assert reading_now >= previous
        previous = reading_now
        level = odometer.level
        assert check(odometer.policy(level), history).admitted
        assert level == 0 or not check(odometer.policy(level - 1), history).admitted
    # within one grid step of the fully adaptive filter at the same delta... and far
    # below basic composition (sum 1.75) only once the Renyi rule pays off
    assert 1.0 < odometer.epsilon <= 1.75 * 2 ** 0.125


def test_pure_releases_read_at_most_their_exact_sum():
    odometer = PrivacyOdometer(1e-6)
    assert odometer.spend(PureDP(1e-4)) == 1e-4          # below the grid's first level
    assert odometer.spend(PureDP(0.125)) == sum_upper([1e-4, 0.125])


def test_levels_split_delta_and_bad_input():
    odometer = PrivacyOdometer(1e-6)
    assert math.fsum(odometer.level_delta(j) for j in range(100_000)) <= 1e-6
    with pytest.raises(ValueError, match="delta"):
        PrivacyOdometer(1.0)
    with pytest.raises(ValueError, match="ratio"):
        PrivacyOdometer(1e-6, ratio=1.0)
    assert odometer.spend(NonPrivate()) == math.inf
    assert PrivacyOdometer(1e-6).spend([BoundedRange(0.1), Gaussian(3.0)]) > 0
    with pytest.raises(ValueError):
        odometer.spend(PureDP(-1.0))


def walk_divergence(delta: float, epsilon: float, rounds: int):
    """A long game solved by dynamic programming: RR(epsilon) every round, and the
    analyst stops the first time the realised privacy loss (zeros - ones) * epsilon
    exceeds the odometer's reading (harvesting the transcripts where the reading
    is too low, the classic attack on a naive odometer). The reading depends only
    on the round (constant proposals), so the states are (round, walk value)."""
    odometer = PrivacyOdometer(delta)
    readings = [0.0] + [odometer.spend(RandomizedResponse(epsilon)) for _ in range(rounds)]
    with mpmath.workdps(game.DPS):
        high = mpmath.e ** mpmath.mpf(epsilon) / (1 + mpmath.e ** mpmath.mpf(epsilon))
        low = 1 - high
        states = {0: (mpmath.mpf(1), mpmath.mpf(1))}
        forward = backward = mpmath.mpf(0)
        for t in range(1, rounds + 1):
            moved: dict = {}
            for walk, (p, q) in states.items():
                for step, (a, b) in ((1, (high, low)), (-1, (low, high))):
                    p0, q0 = moved.get(walk + step, (0, 0))
                    moved[walk + step] = (p0 + p * a, q0 + q * b)
            states = {}
            threshold = mpmath.e ** mpmath.mpf(readings[t])
            for walk, (p, q) in moved.items():
                if walk * epsilon > readings[t] or t == rounds:
                    forward += max(p - threshold * q, 0)
                    backward += max(q - threshold * p, 0)
                else:
                    states[walk] = (p, q)
        return forward, backward, readings[-1]


@pytest.mark.parametrize("delta", [1e-2, 1e-3])
def test_a_300_round_stopping_attack_stays_within_delta(delta):
    forward, backward, final = walk_divergence(delta, 0.05, 300)
    assert forward <= delta and backward <= delta
    assert final < 0.05 * 300 / 2            # the Renyi levels are in play (basic: 15)
