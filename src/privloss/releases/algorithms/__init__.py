"""Private histogram and top-k algorithms on a contribution-bounded histogram.

Every algorithm takes a ``Histogram(items, counts, total_items, next_count)``
(:mod:`privloss.query.histogram`; any object with those attributes) and
returns a :class:`privloss.releases.release.Release` (items, noisy counts,
95% intervals, the ``privloss.events`` spent, the parameters used).

* ``known-laplace`` – :func:`known_laplace`: known domain, l0-restricted (KnownLap);
* ``known-gumbel`` – :func:`known_gumbel`: known domain, unrestricted (KnownGumb);
* ``unknown-laplace`` – :func:`unknown_laplace`: unknown domain, l0-restricted (UnkLap);
* ``unknown-gumbel`` – :func:`unknown_gumbel`: unknown domain, unrestricted (UnkGumb);
* ``gauss-ordered`` – :func:`gauss_ordered`: Cesar–Rogers Algorithm 1 (either domain);
* ``trunc-gauss`` – :func:`trunc_gauss`: Cesar–Rogers Algorithm 2 (every positive item);
* (``known-gaussian``, not a top-k choice) – :func:`known_gaussian`: Gaussian KnownLap.

Each has a ``calibrate_*`` function that splits a total (epsilon, delta)
budget and returns the algorithm's keyword arguments, checked with
``privloss.accounting`` on the events the release will report;
``ALGORITHMS[name].run(histogram, epsilon=..., delta=..., k=...)`` does both.

Exactness: discrete Laplace / discrete Gaussian noise (exact samplers) and
exact peeling for every Gumbel selection; the only float step that touches
private data before noise is the truncated Gaussian of ``trunc_gauss``
(documented there); thresholds and offsets are computed in floats from public
parameters and rounded to the safe side; the least-squares fit of
``gauss_ordered`` is float post-processing of released values.
Example::

    from privloss.releases.algorithms import ALGORITHMS
    release = ALGORITHMS["unknown-gumbel"].run(histogram, epsilon=1.0, delta=1e-6, k=10,
                                              l0_sensitivity=5)
    for row in release.rows(): print(row["item"], row["count"], row["ci95"])
"""

# names are loaded with their module on first use (privloss._lazy): a group-by's
# calibration reads _calibrate / _noise only, not every algorithm (and SciPy)
import sys
import types

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.releases.algorithms.gaussian": (
        "calibrate_gauss_ordered", "calibrate_known_gaussian", "calibrate_trunc_gauss",
        "gauss_ordered", "known_gaussian", "trunc_gauss"),
    "privloss.releases.algorithms.known_gumbel": ("calibrate_known_gumbel", "known_gumbel"),
    "privloss.releases.algorithms.known_laplace": ("calibrate_known_laplace", "known_laplace"),
    "privloss.releases.algorithms.registry": ("ALGORITHMS", "HISTOGRAM_ALGORITHMS",
                                              "KNOWN_GAUSSIAN", "AlgorithmSpec"),
    "privloss.releases.algorithms.truncated_gaussian": ("failure_probability",
                                                        "solve_truncation"),
    "privloss.releases.algorithms.unknown_gumbel": ("calibrate_unknown_gumbel",
                                                    "unknown_gumbel"),
    "privloss.releases.algorithms.unknown_laplace": ("calibrate_unknown_laplace",
                                                     "unknown_laplace"),
}
__getattr__, __dir__, _ = lazy_exports("privloss.releases.algorithms", _EXPORTS)

#: submodules named as the function they export: the package attribute is the
#: function (as when this package imported them all), not the module that the
#: import system sets on the package when it loads one
_SHADOWED = ("known_gumbel", "known_laplace", "unknown_gumbel", "unknown_laplace")


class _Package(types.ModuleType):
    def __setattr__(self, name, value):
        if name in _SHADOWED and isinstance(value, types.ModuleType) \
                and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "known_laplace", "known_gumbel", "unknown_laplace", "unknown_gumbel", "known_gaussian",
    "gauss_ordered", "trunc_gauss",
    "calibrate_known_laplace", "calibrate_known_gumbel", "calibrate_unknown_laplace",
    "calibrate_unknown_gumbel", "calibrate_known_gaussian", "calibrate_gauss_ordered",
    "calibrate_trunc_gauss",
    "ALGORITHMS", "HISTOGRAM_ALGORITHMS", "KNOWN_GAUSSIAN", "AlgorithmSpec",
    "failure_probability", "solve_truncation",
]
