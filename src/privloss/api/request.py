"""The public parameters of one private top-k or histogram release, checked and
turned into the events it spends, without any data: :class:`ReleaseRequest`.

Definition
----------
A request names the command (``topk`` / ``histogram``), the algorithm, the
total (epsilon, delta) of the release, ``k``, the contribution bounds ``l0``
and ``linf``, an optional public domain (labels, or only its size for a plan)
and ``d_bar``.  :meth:`ReleaseRequest.events` are the events the release will
report (``AlgorithmSpec.events``), fixed before any data is read, so a ledger
can charge them first.  The l0 the noise is scaled for is
``min(l0, |domain|)`` with a domain (a user touches at most every listed item;
:func:`l0_sensitivity`, the one rule shared with plan
files), ``l0`` without one.

Privacy guarantee
-----------------
None by itself: a request holds public parameters only.  Every check here
depends on them alone, so a refusal reveals nothing about the data.

Runtime
-------
One calibration per distinct parameter set (cached by the registry).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

from privloss.events import Event, Interaction

__all__ = ["ReleaseRequest", "TOPK_ALGORITHMS", "NOISES", "INTERACTIONS", "MAX_K", "MAX_TOPK_K",
           "EPSILON_RANGE",
           "histogram_algorithm", "topk_algorithm", "make_request", "l0_sensitivity",
           "unit_column"]

#: ``topk(algorithm=...)`` / ``privloss topk --algorithm`` choices
TOPK_ALGORITHMS = ("known-laplace", "known-gumbel", "unknown-laplace", "unknown-gumbel",
                   "gauss-ordered", "trunc-gauss")
#: ``histogram(noise=...)`` choices
NOISES = ("laplace", "gaussian")
#: budget composition models a release may be charged under (default: the first)
INTERACTIONS = (Interaction.FULLY_ADAPTIVE.value, Interaction.ADAPTIVE.value,
                Interaction.SETWISE.value)
#: largest k of a histogram: more released items than this is a mistake
MAX_K = 1_000_000
#: largest k of a top-k: its accounting composes k selections (k = 10,000 takes a few
#: seconds, 10^6 did not finish in a minute); the service's LIMITS use it
MAX_TOPK_K = 10_000
#: documented range of one release's epsilon: below 1e-3 the noise (scale >= 1000 l0)
#: swamps any count and the Gaussian calibrations take minutes (1e-5: over 2 minutes);
#: above 10^6 the calibrations' brackets overflow (1e300 reached inf), as in the service
EPSILON_RANGE = (1e-3, 1e6)


def unit_column(privacy_unit, user, *, required: bool = True):
    """The privacy-unit column: ``privacy_unit`` (the one vocabulary), or the
    deprecated ``user=`` (a DeprecationWarning, for one more release)."""
    if user is not None:
        import warnings

        if privacy_unit is not None:
            raise TypeError("give privacy_unit (the column of the protected units), not both "
                            "privacy_unit and the deprecated user")
        warnings.warn("user= is deprecated: use privacy_unit= (the same column)",
                      DeprecationWarning, stacklevel=3)
        return user
    if privacy_unit is None and required:
        raise TypeError("privacy_unit is required: the column whose values are the "
                        "protected units (people)")
    return privacy_unit


def l0_sensitivity(l0: int | None, domain_size: int | None) -> int | None:
    """The l0 the noise is scaled for: ``min(``l0``, domain size)`` with a known
    domain (a user touches at most every listed item, and at most ``l0`` items
    after bounding), else ````l0```` (None: unbounded)."""
    if domain_size is None:
        return l0
    return domain_size if l0 is None else min(l0, domain_size)


def topk_algorithm(algorithm, known_domain: bool) -> str:
    """The top-k algorithm: ``algorithm`` if given, else known-gumbel with a
    domain and unknown-gumbel without."""
    if algorithm is None:
        return "known-gumbel" if known_domain else "unknown-gumbel"
    if algorithm not in TOPK_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(TOPK_ALGORITHMS)}, "
                         f"got {algorithm!r}")
    return algorithm


def histogram_algorithm(noise: str, known_domain: bool) -> str:
    """``noise`` laplace: known-laplace / unknown-laplace; gaussian: known-gaussian /
    trunc-gauss."""
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")
    if noise == "laplace":
        return "known-laplace" if known_domain else "unknown-laplace"
    return "known-gaussian" if known_domain else "trunc-gauss"


def _epsilon(value) -> float:
    low, high = EPSILON_RANGE
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not low <= float(value) <= high:
        raise ValueError(f"epsilon must be in [{low:g}, {high:,.0f}] (the range of one "
                         f"release), got {value!r}")
    return float(value)


def _delta(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"delta must be a number in [0, 1), got {value!r}")
    return float(value)


def _integer(name: str, value, *, optional: bool = False, maximum: int | None = None):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {value!r}")
    return int(value)


def _domain(domain):
    """(labels or None, size or None) from a label sequence or a domain size."""
    if domain is None:
        return None, None
    if isinstance(domain, numbers.Integral) and not isinstance(domain, bool):
        return None, _integer("domain size", domain)
    from privloss.query.histogram import check_domain
    labels = check_domain(domain)
    if not labels:
        raise ValueError("domain must list at least one item")
    return tuple(labels), len(labels)


@dataclass(frozen=True)
class ReleaseRequest:
    """Checked public parameters of one release (see the module docstring).
    Build with :func:`make_request`."""

    command: str
    algorithm: str
    epsilon: float
    delta: float
    k: int | None
    l0: int | None
    linf: int
    d_bar: int | None
    domain: tuple | None
    domain_size: int | None
    interaction: str

    @property
    def spec(self):
        from privloss.releases.algorithms import ALGORITHMS, KNOWN_GAUSSIAN
        if self.algorithm == KNOWN_GAUSSIAN.name:
            return KNOWN_GAUSSIAN
        return ALGORITHMS[self.algorithm]

    @property
    def l0_sensitivity(self) -> int | None:
        """min(l0, |domain|) with a domain (see the module docstring)."""
        return l0_sensitivity(self.l0, self.domain_size)

    @property
    def l0_capped(self) -> bool:
        """The domain, not ``l0``, bounds the l0 sensitivity."""
        return self.domain_size is not None and (self.l0 is None or self.domain_size < self.l0)

    def calibration(self) -> dict:
        """Keyword arguments of ``AlgorithmSpec.events`` / ``run`` (without data)."""
        return dict(epsilon=self.epsilon, delta=self.delta, k=self.k,
                    l0_sensitivity=self.l0_sensitivity, linf_sensitivity=self.linf,
                    d_bar=self.d_bar, interaction=self.interaction)

    def events(self) -> tuple[Event, ...]:
        """The events this release spends (computed without data)."""
        return self.spec.events(**self.calibration(), known_domain=self.domain_size is not None,
                                domain_size=self.domain_size)

    def algorithm_plan(self):
        """The algorithm's exact parameters (noise, threshold) for this request."""
        spec = self.spec
        options = spec.parameters(epsilon=self.epsilon, delta=self.delta, k=self.k,
                                  l0_sensitivity=self.l0_sensitivity,
                                  linf_sensitivity=self.linf, d_bar=self.d_bar,
                                  known_domain=self.domain_size is not None,
                                  interaction=self.interaction)
        return spec.plan(**options)

    def engine_request(self) -> dict:
        return self.spec.engine_request(d_bar=self.d_bar, domain=self.domain)

    def query_key(self, fingerprint, *, user_column: str, item_column: str, seed) -> dict:
        """The ledger's repeated-query key: every parameter and the data's keyed
        fingerprint (never a statistic of the data).  The CLI and the Python API
        build it here, so the same query is the same key from both."""
        return {"command": self.command, "algorithm": self.algorithm, "data": fingerprint,
                "user_column": user_column, "item_column": item_column,
                "epsilon": self.epsilon, "delta": self.delta, "k": self.k, "l0": self.l0,
                "linf": self.linf, "d_bar": self.d_bar,
                "domain": None if self.domain is None else list(self.domain),
                "interaction": self.interaction, "seed": seed}

    def with_epsilon(self, epsilon: float) -> "ReleaseRequest":
        return dataclasses.replace(self, epsilon=_epsilon(epsilon))

    def with_interaction(self, interaction: str) -> "ReleaseRequest":
        return dataclasses.replace(self, interaction=_interaction(interaction))


def _interaction(interaction) -> str:
    value = Interaction.parse(interaction).value if interaction is not None else INTERACTIONS[0]
    if value not in INTERACTIONS:
        raise ValueError(f"interaction must be one of {', '.join(INTERACTIONS)}, "
                         f"got {interaction!r}")
    return value


def make_request(command: str, *, epsilon, delta=0.0, k=None, l0=None, linf=1, domain=None,
                 d_bar=None, algorithm=None, noise="laplace", interaction=None) -> ReleaseRequest:
    """Check every public parameter (``ValueError`` naming it, its value and the
    allowed range) and return the request; ``domain`` is a label sequence or
    (for a plan) the number of labels.  Data-independent: nothing is read."""
    if command not in ("topk", "histogram"):
        raise ValueError(f"command must be 'topk' or 'histogram', got {command!r}")
    epsilon = _epsilon(epsilon)
    delta = _delta(delta)
    linf = _integer("linf", linf)
    l0 = _integer("l0", l0, optional=True)
    d_bar = _integer("d_bar", d_bar, optional=True)
    labels, size = _domain(domain)
    if command == "topk":
        k = _integer("k", k, maximum=MAX_TOPK_K)
        if algorithm is not None and noise != "laplace":
            raise ValueError("noise is for histograms; a top-k takes an algorithm")
        algorithm = topk_algorithm(algorithm, size is not None)
    else:
        k = _integer("k", k, optional=True, maximum=MAX_K)
        if algorithm is not None:
            raise ValueError("algorithm is for top-k; a histogram takes noise='laplace' or "
                             "'gaussian'")
        algorithm = histogram_algorithm(noise, size is not None)
    request = ReleaseRequest(command, algorithm, epsilon, delta, k, l0, linf, d_bar, labels,
                             size, _interaction(interaction))
    spec = request.spec
    if spec.domain == "known" and size is None:
        raise ValueError(f"domain must be given for the {algorithm} algorithm (the public "
                         f"list of items of a known domain)")
    if spec.domain == "unknown" and size is not None:
        raise ValueError(f"the {algorithm} algorithm is for an unknown domain; do not pass "
                         f"domain")
    if k is not None and size is not None and k > size:
        raise ValueError(f"k must be at most the number of items in domain ({size}), got {k}")
    if spec.needs_l0 and request.l0_sensitivity is None:
        raise ValueError(f"l0 must be given for the {algorithm} algorithm without a domain")
    if spec.needs_delta and delta == 0:
        raise ValueError(f"delta must be in (0, 1) for the {algorithm} algorithm, got 0")
    return request
