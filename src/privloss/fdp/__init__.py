"""f-DP: tradeoff curves, Gaussian differential privacy, the CLT approximation and
conversions to and from (epsilon, delta) and privacy-loss distributions.

>>> from privloss.fdp import GaussianTradeoff, rr_composition_tradeoff
>>> rr = rr_composition_tradeoff(0.2, 25)          # exact curve of 25-fold RR
>>> rr(0.1), GaussianTradeoff(1.0)(0.1)

This package does not import ``privloss.accounting``. Plotting needs matplotlib
(``privloss.fdp.plot``, imported lazily).
"""

from privloss.fdp.clt import (CLTApproximation, LossMoments, clt_approximation, gaussian_moments,
                              generalized_rr_moments, laplace_moments, pld_moments,
                              randomized_response_moments)
from privloss.fdp.convert import (MinimumTradeoff, PLDTradeoff, TradeoffBracket, mechanism_tradeoff,
                                  pld_tradeoff, profile_from_tradeoff, tradeoff_from_profile)
from privloss.fdp.gdp import (compose_gdp, gaussian_mechanism_mu, gdp_delta, gdp_epsilon, gdp_mu,
                              pure_dp_mu)
from privloss.fdp.tradeoff import (ApproxDPTradeoff, EnvelopeTradeoff, GaussianTradeoff,
                                   GeneralizedRRTradeoff, LaplaceTradeoff, PiecewiseLinearTradeoff,
                                   TradeoffCurve, identity_tradeoff, randomized_response_tradeoff,
                                   rr_composition_tradeoff)


def plot_tradeoffs(*args, **kwargs):
    """Lazy wrapper of :func:`privloss.fdp.plot.plot_tradeoffs` (needs matplotlib)."""
    from privloss.fdp.plot import plot_tradeoffs as _plot

    return _plot(*args, **kwargs)


__all__ = [
    "ApproxDPTradeoff", "CLTApproximation", "EnvelopeTradeoff", "GaussianTradeoff",
    "GeneralizedRRTradeoff", "LaplaceTradeoff", "LossMoments", "MinimumTradeoff", "PLDTradeoff",
    "PiecewiseLinearTradeoff", "TradeoffBracket", "TradeoffCurve", "clt_approximation",
    "compose_gdp", "gaussian_mechanism_mu", "gaussian_moments", "gdp_delta", "gdp_epsilon",
    "gdp_mu", "generalized_rr_moments", "identity_tradeoff", "laplace_moments",
    "mechanism_tradeoff", "pld_moments", "pld_tradeoff", "plot_tradeoffs", "profile_from_tradeoff",
    "pure_dp_mu", "randomized_response_moments", "randomized_response_tradeoff",
    "rr_composition_tradeoff", "tradeoff_from_profile",
]
