"""Certified numerical privacy-loss distributions (PLDs).

>>> from privloss.pld import laplace_pld
>>> pld = laplace_pld(1.0).self_compose(100)
>>> pld.epsilon(1e-6)            # Bracket(lower, upper), lower <= exact <= upper

Every answer is a :class:`~privloss.bounds.Bracket`; charge ``upper``.
This package does not import ``privloss.accounting`` (the accountant imports it).
"""

from privloss.pld.compose import (bounded_range_common_t_delta, bounded_range_common_t_epsilon,
                                  compose)
from privloss.pld.core import DEFAULT_STEP, DEFAULT_TAIL_MASS, PrivacyLossDistribution
from privloss.pld.mechanisms import (approx_dp_pld, bounded_range_pld, discrete_gaussian_pld,
                                     discrete_laplace_pld, gaussian_pld, generalized_rr_pld,
                                     laplace_pld, pure_dp_pld, randomized_response_pld,
                                     truncated_gaussian_pld)

__all__ = [
    "DEFAULT_STEP", "DEFAULT_TAIL_MASS", "PrivacyLossDistribution",
    "approx_dp_pld", "bounded_range_common_t_delta", "bounded_range_common_t_epsilon",
    "bounded_range_pld", "compose", "discrete_gaussian_pld", "discrete_laplace_pld",
    "gaussian_pld", "generalized_rr_pld", "laplace_pld", "pure_dp_pld",
    "randomized_response_pld", "truncated_gaussian_pld",
]
