"""Subsampled events: certified PLDs, Renyi curves, relations, agreement with dp-accounting."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss import PrivacyAccountant, compose
from privloss.accounting.profile import Profile
from privloss.bounds.subsampled_rdp import subsampled_gaussian_rdp
from privloss.events import (DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace, PoissonSampled,
                             PureDP, SampledWithoutReplacement)
from privloss.pld.subsampled import (poisson_discrete_gaussian_pld, poisson_discrete_laplace_pld,
                                     poisson_gaussian_pld, poisson_laplace_pld)

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event                                              # noqa: E402
from dp_accounting.pld import pld_privacy_accountant                            # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant                            # noqa: E402


# ----------------------------------------------------------------------------
# exact references
# ----------------------------------------------------------------------------

#: mpmath, 40 digits: sigma = 0.8, q = 0.1, remove order (the add order is 0 here):
#: x* = (log((e - 0.9)/0.1) + mu^2/2)/mu, mu = 1.25;
#: delta = 0.9 Phi(-x*) + 0.1 Phi(mu - x*) - e Phi(-x*)
POISSON_GAUSSIAN_DELTA_AT_1 = 0.001567658928090073836943189453539635551035


def test_poisson_gaussian_bracket_contains_the_closed_form():
    bracket = poisson_gaussian_pld(0.8, 0.1, step=1e-4).delta(1.0)
    assert bracket.lower <= POISSON_GAUSSIAN_DELTA_AT_1 <= bracket.upper
    assert bracket.upper - bracket.lower < 1e-7


def _hockey_stick(p, q, epsilon):
    return float(np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)))


def _both_orders(with_mass, without_mass, q, epsilon, folds):
    """Brute-force delta of ``folds`` compositions of the subsampled lattice pair."""
    mixture = q * with_mass + (1 - q) * without_mass
    values = []
    for p, r in ((mixture, without_mass), (without_mass, mixture)):
        pp, rr = p, r
        for _ in range(folds - 1):
            pp, rr = np.outer(pp, p).ravel(), np.outer(rr, r).ravel()
        values.append(_hockey_stick(pp, rr, epsilon))
    return max(values)


@pytest.mark.parametrize("epsilon", [0.05, 0.3])
def test_discrete_mechanisms_against_brute_force(epsilon):
    z = np.arange(-150, 151)
    t, shift, q = 2.0, 2, 0.1
    base = math.tanh(0.5 / t)
    lap_with = base * np.exp(-np.abs(z) / t)
    lap_without = base * np.exp(-np.abs(z - shift) / t)
    sigma = 3.0
    weights = np.exp(-z * z / (2 * sigma * sigma))
    gauss_with = weights / weights.sum()
    gauss_without = np.exp(-(z - 1.0) ** 2 / (2 * sigma * sigma)) / weights.sum()
    for folds in (1, 2):
        exact = _both_orders(lap_with, lap_without, q, epsilon, folds)
        bracket = poisson_discrete_laplace_pld(t, q, sensitivity=shift).self_compose(folds).delta(epsilon)
        assert bracket.lower - 1e-15 <= exact <= bracket.upper
        exact = _both_orders(gauss_with, gauss_without, q, epsilon, folds)
        bracket = poisson_discrete_gaussian_pld(sigma, q).self_compose(folds).delta(epsilon)
        assert bracket.lower - 1e-15 <= exact <= bracket.upper


# ----------------------------------------------------------------------------
# agreement with dp-accounting (same inputs; its PLD is a pessimistic estimate
# at value_discretization_interval 1e-4, its RDP accountant an upper bound)
# ----------------------------------------------------------------------------

def _dp_pld_epsilon(event, count, delta):
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(event, count)
    return accountant.get_epsilon(delta)


def _dp_rdp_epsilon(event, count, delta, relation=None):
    kwargs = {} if relation is None else {"neighboring_relation": relation}
    accountant = rdp_privacy_accountant.RdpAccountant(**kwargs)
    accountant.compose(event, count)
    return accountant.get_epsilon(delta)


def test_poisson_gaussian_matches_dp_accounting_pld():
    ours = compose([PoissonSampled(Gaussian(1.0), 0.01, count=1000)], target_delta=1e-5)
    theirs = _dp_pld_epsilon(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)),
                             1000, 1e-5)
    row = next(r for r in ours.bounds if r.name == "pld-subsampled")
    assert ours.bound == "pld-subsampled"
    # dp-accounting's pessimistic estimate is above the truth, hence above our lower end;
    # both are within their discretisation error (~1e-4 relative here) of each other
    assert row.lower <= theirs * (1 + 1e-9)
    assert abs(row.value - theirs) <= 1e-3 * theirs


def test_poisson_laplace_matches_dp_accounting_pld():
    ours = compose([PoissonSampled(Laplace(1.0), 0.05, count=100)], target_delta=1e-6)
    theirs = _dp_pld_epsilon(dp_event.PoissonSampledDpEvent(0.05, dp_event.LaplaceDpEvent(1.0)),
                             100, 1e-6)
    row = next(r for r in ours.bounds if r.name == "pld-subsampled")
    assert row.lower <= theirs * (1 + 1e-9)
    assert abs(row.value - theirs) <= 1e-3 * theirs


def test_poisson_gaussian_renyi_matches_dp_accounting_rdp():
    ours = compose([PoissonSampled(Gaussian(1.0), 0.01, count=1000)], target_delta=1e-5)
    row = next(r for r in ours.bounds if r.name == "rdp-subsampled")
    theirs = _dp_rdp_epsilon(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)),
                             1000, 1e-5)
    # same theorem and conversion; we use integer and half-integer orders only, so we
    # may be a little above (never below) their finer fractional grid
    assert theirs * (1 - 1e-9) <= row.value <= theirs * 1.01


def test_without_replacement_renyi_matches_dp_accounting_rdp():
    event = SampledWithoutReplacement(Gaussian(1.0), 100, 10_000, count=1000)
    ours = compose([event], target_delta=1e-5)
    assert ours.bound == "rdp-subsampled"
    theirs = _dp_rdp_epsilon(
        dp_event.SampledWithoutReplacementDpEvent(10_000, 100, dp_event.GaussianDpEvent(1.0)),
        1000, 1e-5, rdp_privacy_accountant.NeighborRel.REPLACE_ONE)
    assert theirs * (1 - 1e-9) <= ours.epsilon <= theirs * 1.01


def test_curves_at_full_sampling_are_the_gaussian_curve():
    orders = np.array([2.0, 3.0, 10.0])     # integer orders: half-integers are chords (above)
    for kind in ("poisson", "poisson-general", "without-replacement"):
        curve = subsampled_gaussian_rdp(0.5, 1.0, kind=kind, orders=orders)
        assert np.allclose(curve, 0.5 * orders, rtol=1e-11)


# ----------------------------------------------------------------------------
# relations and bad input
# ----------------------------------------------------------------------------

def test_relations_are_stored_and_mixing_is_refused_before_any_state_change():
    poisson = PoissonSampled(Gaussian(1.0), 0.1)
    without = SampledWithoutReplacement(Gaussian(1.0), 10, 100)
    assert poisson.relation == "add-remove" and without.relation == "replace-one"
    assert Profile.of([poisson]).relation == "add-remove"
    with pytest.raises(ValueError, match="relation"):
        compose([poisson, without], target_delta=1e-6)
    accountant = PrivacyAccountant([poisson])
    with pytest.raises(ValueError, match="relation"):
        accountant.compose(without)
    assert accountant.profile.atoms == ((poisson, 1),)
    with pytest.raises(ValueError, match="relation"):
        PoissonSampled(Gaussian(1.0), 0.1, relation="replace-one")
    with pytest.raises(ValueError, match="relation"):
        SampledWithoutReplacement(Gaussian(1.0), 1, 2, relation="add-remove")


@pytest.mark.parametrize("build, name", [
    (lambda: PoissonSampled(Gaussian(1.0), 0.0), "probability"),
    (lambda: PoissonSampled(Gaussian(1.0), 1.5), "probability"),
    (lambda: PoissonSampled(Gaussian(1.0), float("nan")), "probability"),
    (lambda: SampledWithoutReplacement(Laplace(1.0), 11, 10), "sample_size"),
    (lambda: SampledWithoutReplacement(Laplace(1.0), 0, 10), "sample_size"),
    (lambda: SampledWithoutReplacement(Laplace(1.0), 1, 0), "population_size"),
    (lambda: PoissonSampled(Gaussian(1.0, count=3), 0.5), "count"),
    (lambda: PoissonSampled(PureDP(1.0), 0.5), "event"),
])
def test_bad_input_names_the_parameter(build, name):
    with pytest.raises((ValueError, TypeError), match=name):
        build()


def test_amplified_guarantee_feeds_the_generic_bounds():
    event = PoissonSampled(Laplace(1.0), 0.01, count=10)
    assert event.guarantee == PureDP(math.log1p(0.01 * math.expm1(1.0)))
    result = compose([event, PureDP(0.1)], target_delta=1e-6)
    assert result.epsilon <= 10 * event.guarantee.epsilon + 0.1


# ----------------------------------------------------------------------------
# ordering: subsampling never costs more
# ----------------------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.5, 4.0), probability=st.floats(0.001, 1.0), count=st.integers(1, 30),
       laplace=st.booleans(), discrete=st.booleans())
def test_subsampled_never_costs_more_than_unsubsampled(sigma, probability, count, laplace, discrete):
    """Exact by construction: the GDP reading (continuous Gaussian) and the unsubsampled
    PLD's upper end (the others) are always available to the subsampled profile."""
    if laplace:
        inner = DiscreteLaplace(sigma) if discrete else Laplace(sigma)
    else:
        inner = DiscreteGaussian(sigma) if discrete else Gaussian(sigma)
    sampled = compose([PoissonSampled(inner, probability, count=count)], target_delta=1e-6)
    plain = compose([type(inner)(sigma, count=count)], target_delta=1e-6)
    assert sampled.epsilon <= plain.epsilon * (1 + 1e-9) + 1e-9
    without = compose([SampledWithoutReplacement(inner, max(1, int(probability * 100)), 100,
                                                 count=count)], target_delta=1e-6)
    assert without.epsilon <= plain.epsilon * (1 + 1e-9) + 1e-9


# ----------------------------------------------------------------------------
# certified brackets against independent high-precision values (one mechanism)
# ----------------------------------------------------------------------------

def _mp_poisson_gaussian_delta(mu, q, epsilon):
    """mpmath, 40 digits: both orders of the subsampled Gaussian in closed form
    (the loss is monotone in x; integrate P - e^eps Q over the region above the threshold)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        mu, q, e = mpmath.mpf(mu), mpmath.mpf(q), mpmath.mpf(epsilon)
        one = 1 - q
        remove = mpmath.mpf(0)
        if mpmath.exp(e) > one:
            x = (mpmath.log((mpmath.exp(e) - one) / q) + mu * mu / 2) / mu
            remove = one * mpmath.ncdf(-x) + q * mpmath.ncdf(mu - x) - mpmath.exp(e) * mpmath.ncdf(-x)
        add = mpmath.mpf(0)
        if mpmath.exp(-e) > one:
            x = (mpmath.log((mpmath.exp(-e) - one) / q) + mu * mu / 2) / mu
            add = mpmath.ncdf(x) - mpmath.exp(e) * (one * mpmath.ncdf(x) + q * mpmath.ncdf(x - mu))
        return float(max(remove, add))


def _mp_poisson_laplace_delta(d, q, epsilon):
    """mpmath, 40 digits, closed form of both orders. Base loss l0 = -d (x <= 0), 2x - d
    (0 < x < d), d (x >= d). Remove: P - e^eps Q = q Lap(d) - (e^eps - 1 + q) Lap(0) > 0
    iff e^{l0} > c = (e^eps - 1 + q)/q, i.e. x > x* = (log c + d)/2; add: P - e^eps Q > 0
    iff e^{l0} < c' = (e^{-eps} - 1 + q)/q, i.e. x < (log c' + d)/2; Laplace tail masses."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        d, q, e = mpmath.mpf(d), mpmath.mpf(q), mpmath.mpf(epsilon)
        c = (mpmath.exp(e) - 1 + q) / q
        x = (mpmath.log(c) + d) / 2
        if x < d:
            remove = q * (1 - mpmath.exp(x - d) / 2) - (mpmath.exp(e) - 1 + q) * mpmath.exp(-x) / 2
        else:                                   # only the atom x >= d, if its loss d exceeds log c
            remove = max(q / 2 - (mpmath.exp(e) - 1 + q) * mpmath.exp(-d) / 2, 0) if x == d else 0
        add = mpmath.mpf(0)
        c = (mpmath.exp(-e) - 1 + q) / q
        if c > mpmath.exp(-d):
            x = (mpmath.log(c) + d) / 2        # in (0, d): c <= q/q = 1 < e^d
            add = (1 - mpmath.exp(e) * (1 - q)) * (1 - mpmath.exp(-x) / 2) \
                - mpmath.exp(e) * q * mpmath.exp(x - d) / 2
        return float(max(remove, add))


@pytest.mark.parametrize("sigma, q, epsilon", [(0.5, 0.001, 0.01), (1.0, 0.01, 0.05), (0.8, 0.3, 0.7),
                                               (2.0, 0.9, 0.2), (4.0, 0.5, 0.0)])
def test_poisson_gaussian_bracket_contains_exact(sigma, q, epsilon):
    exact = _mp_poisson_gaussian_delta(1.0 / sigma, q, epsilon)
    bracket = poisson_gaussian_pld(sigma, q).delta(epsilon)
    assert bracket.lower <= exact <= bracket.upper


@pytest.mark.parametrize("scale, q, epsilon", [(1.0, 0.05, 0.01), (0.5, 0.3, 0.3), (2.0, 0.9, 0.1),
                                               (0.25, 0.01, 0.02)])
def test_poisson_laplace_bracket_contains_exact(scale, q, epsilon):
    exact = _mp_poisson_laplace_delta(1.0 / scale, q, epsilon)
    bracket = poisson_laplace_pld(scale, q).delta(epsilon)
    assert bracket.lower <= exact <= bracket.upper
