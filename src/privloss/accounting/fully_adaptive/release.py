"""One release's guarantee in every currency a filter rule reads.

Inside one release the privacy parameters are fixed by the query before any data
is read, so the release is a fixed (adaptive-order) composition and its own
guarantee may use the tight fixed-parameter bounds of the accountant; across
releases only filter rules apply (:mod:`privloss.accounting.fully_adaptive.rules`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from privloss._exact import sum_upper
from privloss.accounting.profile import Profile
from privloss.bounds.rdp import br_renyi, dp_renyi
from privloss.events import Event, Gaussian

#: Renyi orders at which every release stores its Renyi curve. A Renyi-filter rule
#: uses a subset fixed when its budget is created (Lecuyer 2021, several orders).
RENYI_ORDERS: tuple[float, ...] = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0,
                                   12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0,
                                   192.0, 256.0, 512.0, 1024.0)

_INF = math.inf


def _json_float(value: float):
    """inf as the string "inf" (strict JSON has no infinity)."""
    return "inf" if math.isinf(value) else float(value)


def _read_float(name: str, value) -> float:
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return _INF
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"guarantee field {name} must be a number or 'inf', got {value!r}")
    result = float(value)
    if math.isnan(result) or result < 0:
        raise ValueError(f"guarantee field {name} must be >= 0 or 'inf', got {value!r}")
    return result


@dataclass(frozen=True)
class ReleaseGuarantee:
    """The guarantee of ONE release, in each filter currency (inf = none).

    All currencies describe the SAME decomposition of the release, so that one
    coupling argument serves every rule at once (docs/accounting.md, "Release
    deltas"): with probability ``delta`` (the same under both neighbouring
    inputs) a bad event happens; conditioned on its complement the release is

    * ``epsilon``-DP (sum of the epsilons of its DP, BR and conditioned ApproxDP
      atoms; inf if it has zCDP/Gaussian/CDP atoms). With ``delta = 0`` this is
      plain pure epsilon-DP (:attr:`pure_epsilon`);
    * (``xi``, ``rho``)-zCDP (pure DP as eps^2/2 [BS16 Prop. 1.4], BR as eps^2/8
      [CR] section 3, (discrete) Gaussian as Delta^2/(2 sigma^2), Algorithm 2 as
      its approximate zCDP [CR] Lemma 6.4);
    * of Renyi divergence at most ``renyi[j]`` at order ``RENYI_ORDERS[j]``
      (exact worst-case curves of DP/BR atoms, xi + alpha rho for the others);
    * ``gdp_mu``-GDP: finite only for releases made of continuous Gaussian
      mechanisms (then delta = 0), the class of Smith-Thakurta's filter.

    ``delta`` is the sum of the deltas of the ApproxDP and ApproxZCDP atoms: every
    (eps, delta)-DP pair is (1 - delta) * (an eps-DP pair) + delta * (something)
    under both inputs [KOV] Thm 2.1, and delta-approximate zCDP is defined by the
    same decomposition [BS16] Def. 8.1.
    """

    epsilon: float = _INF
    delta: float = 0.0
    rho: float = _INF
    xi: float = 0.0
    renyi: tuple = tuple(_INF for _ in RENYI_ORDERS)
    gdp_mu: float = _INF

    @property
    def pure_epsilon(self) -> float:
        """epsilon of plain epsilon-DP (inf unless delta = 0)."""
        return self.epsilon if self.delta == 0 else _INF

    def __post_init__(self):
        if len(self.renyi) != len(RENYI_ORDERS):
            raise ValueError(f"renyi must have {len(RENYI_ORDERS)} values (one per order in "
                             f"RENYI_ORDERS), got {len(self.renyi)}")
        for field in fields(self):
            if field.name == "renyi":
                object.__setattr__(self, "renyi", tuple(_read_float("renyi", value)
                                                        for value in self.renyi))
            else:
                object.__setattr__(self, field.name, _read_float(field.name, getattr(self, field.name)))
        if self.delta > 1:
            raise ValueError(f"guarantee field delta must be in [0, 1], got {self.delta!r}")

    @classmethod
    def zero(cls) -> "ReleaseGuarantee":
        """A release that touches no private data."""
        return cls(0.0, 0.0, 0.0, 0.0, tuple(0.0 for _ in RENYI_ORDERS), 0.0)

    @classmethod
    def non_private(cls) -> "ReleaseGuarantee":
        """A release without any guarantee: every rule refuses it."""
        return cls()

    def to_dict(self) -> dict:
        """JSON-safe dictionary (inf written as the string "inf")."""
        data = asdict(self)
        out = {name: _json_float(value) for name, value in data.items() if name != "renyi"}
        out["renyi"] = [_json_float(value) for value in self.renyi]
        out["renyi_orders"] = list(RENYI_ORDERS)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "ReleaseGuarantee":
        """Inverse of :meth:`to_dict`. ``epsilon``, ``delta``, ``rho`` and ``xi`` are
        required (a missing delta or xi would read as 0, optimistic); a missing
        ``renyi`` or ``gdp_mu`` reads as no guarantee in that currency (safe)."""
        if not isinstance(data, dict):
            raise ValueError(f"a release guarantee must be a JSON object, got {type(data).__name__}")
        missing = [name for name in ("epsilon", "delta", "rho", "xi") if name not in data]
        if missing:
            raise ValueError(f"release guarantee is missing {', '.join(missing)}")
        orders = data.get("renyi_orders", list(RENYI_ORDERS))
        renyi = data.get("renyi")
        if renyi is None or [float(order) for order in orders] != list(RENYI_ORDERS):
            # stored with other orders: not usable by the Renyi rules (safe: inf)
            renyi = [_INF] * len(RENYI_ORDERS)
        kwargs = {field.name: data[field.name] for field in fields(cls)
                  if field.name != "renyi" and field.name in data}
        return cls(renyi=tuple(renyi), **kwargs)


def _up(value: float, relative: float = 0.0) -> float:
    """``value`` rounded up by a relative slack (0 for correctly rounded sums)."""
    if not math.isfinite(value):
        return _INF
    if value <= 0:
        return 0.0
    return value * (1.0 + relative) if relative else value


def _subsampled_gaussian_curve(profile: Profile) -> tuple[Profile, np.ndarray]:
    """(the profile without its subsampled Gaussians, their summed Renyi curve at
    RENYI_ORDERS): Poisson [Mironov-Talwar-Zhang 2019; Zhu-Wang 2019 for the
    discrete Gaussian], without replacement [Wang-Balle-Kasiviswanathan 2019],
    as privloss.bounds.subsampled_rdp (the rdp-subsampled candidate's curves)."""
    from privloss.accounting.sampled_candidates import (subsampled_gaussian_event_rdp,
                                                       subsampled_gaussians)

    curve = np.zeros(len(RENYI_ORDERS))
    sampled = subsampled_gaussians(profile)
    if not sampled:
        return profile, curve
    rest = Profile(tuple(atom for atom in profile.atoms if atom not in sampled))
    orders = np.array(RENYI_ORDERS)
    for event, count in sampled:
        curve = curve + count * subsampled_gaussian_event_rdp(event, orders)
    return rest, curve


def _atom_renyi(profile: Profile, alpha: float) -> float:
    """Renyi divergence at ``alpha`` of the release conditioned on its delta events:
    sum over atoms (Renyi divergences add under adaptive composition, [Mironov 2017]
    Prop. 1); DP/BR atoms by their exact worst case (privloss.bounds.rdp)."""
    xi, rho = profile.zcdp_totals_without_pure()
    total = xi + alpha * rho
    dp = _grouped(profile.conditional_dp_epsilons)
    total += math.fsum(count * dp_renyi(eps, alpha) for eps, count in dp)
    total += math.fsum(count * br_renyi(eps, alpha) for eps, count in _grouped(profile.br_epsilons))
    return total


def _grouped(values: np.ndarray) -> list:
    """[(epsilon, count)] of the distinct epsilons: O(distinct) Renyi evaluations."""
    unique, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    return list(zip(unique.tolist(), counts.tolist()))


def _gdp_mu(profile: Profile) -> float:
    """mu of a release made only of continuous Gaussian mechanisms ([DRS] Cor. 3.3)."""
    if not profile.atoms or not all(isinstance(event, Gaussian) for event, _ in profile.atoms):
        return _INF
    total = math.fsum(count * (event.sensitivity / event.sigma) ** 2 for event, count in profile.atoms)
    return _up(math.sqrt(total), 1e-12)


def release_guarantee(events) -> ReleaseGuarantee:
    """The guarantee of ONE release (an Event or a sequence of events) in every currency.

    Definition
        The events of one release: their parameters are fixed by the query before
        the release reads data, so they compose as a fixed sequence inside the
        release. The release is split once into "bad event of probability delta"
        and "conditioned release" (see :class:`ReleaseGuarantee`), and each
        currency is a guarantee of the conditioned release.
    Privacy guarantee
        Each field is a valid guarantee of the conditioned release; numerical
        error is rounded towards more loss (relative 1e-12 upward).
    Citation
        pure DP: basic composition [DMNS06] (optimal at delta 0); zCDP [BS16]
        Prop. 1.4, Lemma 2.3, [CR] section 3, Lemmas 3.4 and 6.4; Renyi: [Mironov
        2017] Prop. 1 with the exact DP/BR curves of privloss.bounds.rdp; GDP:
        [DRS] Cor. 3.3; decomposition: [KOV] Thm 2.1, [BS16] Def. 8.1.
    Runtime
        O(number of atoms x number of orders); computed once per release, stored.
    """
    profile = Profile.of(events if not isinstance(events, Event) else (events,))
    if profile.has_non_private:
        return ReleaseGuarantee.non_private()
    if profile.is_empty:
        return ReleaseGuarantee.zero()
    delta = min(1.0, _up(profile.conditional_delta_total))
    epsilon = _INF
    if profile.only_dp_like:
        # the exact sum rounded up to a binary64 number: budgets compare exactly
        epsilon = _up(sum_upper(np.concatenate([profile.conditional_dp_epsilons,
                                                profile.br_epsilons])))
    xi, rho = profile.zcdp_totals()
    if not (math.isfinite(xi) and math.isfinite(rho)):
        xi, rho = 0.0, _INF
    rest, sampled_curve = _subsampled_gaussian_curve(profile)
    renyi = []
    for index, alpha in enumerate(RENYI_ORDERS):
        atoms = _atom_renyi(rest, alpha) + float(sampled_curve[index])
        value = min(atoms, xi + alpha * rho, epsilon)
        renyi.append(_up(value, 1e-12))
    return ReleaseGuarantee(epsilon=epsilon, delta=delta, rho=_up(rho, 1e-12), xi=_up(xi, 1e-12),
                            renyi=tuple(renyi), gdp_mu=_gdp_mu(profile))
