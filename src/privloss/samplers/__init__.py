"""Exact samplers for discrete privacy noise (no floating point in any decision).

* randomness: :class:`RandomSource`, :class:`SecureRandomSource` (default),
  :class:`InsecureSeededSource` (reproducible, tests only), :func:`default_source`;
* samplers: :func:`bernoulli`, :func:`bernoulli_exp`, :func:`uniform_integers`,
  :func:`discrete_laplace`, :func:`discrete_gaussian`;
* reference values (mpmath): ``discrete_gaussian_pmf`` / ``_variance`` /
  ``_normalizer`` / ``_mass`` and ``discrete_laplace_pmf`` / ``_variance`` /
  ``_mass``.

See ``docs/samplers.md``.
"""

from privloss.samplers.bernoulli import bernoulli, bernoulli_exp, uniform_integers
from privloss.samplers.discrete_gaussian import default_proposal_scale, discrete_gaussian
from privloss.samplers.discrete_laplace import discrete_laplace
from privloss.samplers.exact_pmf import (discrete_gaussian_mass, discrete_gaussian_normalizer,
                                         discrete_gaussian_pmf, discrete_gaussian_variance,
                                         discrete_laplace_mass, discrete_laplace_pmf,
                                         discrete_laplace_variance)
from privloss.samplers.randomness import (InsecureSeededSource, RandomSource, SecureRandomSource,
                                          default_source)

__all__ = [
    "RandomSource",
    "SecureRandomSource",
    "InsecureSeededSource",
    "default_source",
    "bernoulli",
    "bernoulli_exp",
    "uniform_integers",
    "discrete_laplace",
    "discrete_gaussian",
    "default_proposal_scale",
    "discrete_gaussian_normalizer",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_gaussian_mass",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "discrete_laplace_mass",
]
