"""The algorithm registry: one :class:`AlgorithmSpec` per CLI name.

``ALGORITHMS[name].run(histogram, epsilon=..., delta=..., k=..., ...)`` splits a
total (epsilon, delta) budget as the algorithm's ``calibrate_*`` function
says (re-checked with ``privloss.accounting`` on the actual events) and
releases.  ``spec.engine_request(...)`` tells the caller how to build the
histogram (known domain, top-d_bar, or every positive item).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from privloss.releases.algorithms.gaussian import (calibrate_gauss_ordered,
                                                    calibrate_known_gaussian,
                                                    calibrate_trunc_gauss, gauss_ordered,
                                                    known_gaussian, plan_gauss_ordered,
                                                    plan_known_gaussian, plan_trunc_gauss,
                                                    trunc_gauss)
from privloss.releases.algorithms.known_gumbel import (calibrate_known_gumbel, known_gumbel,
                                                        plan_known_gumbel)
from privloss.releases.algorithms.known_laplace import (calibrate_known_laplace, known_laplace,
                                                         plan_known_laplace)
from privloss.releases.algorithms.unknown_gumbel import (calibrate_unknown_gumbel,
                                                          plan_unknown_gumbel, unknown_gumbel)
from privloss.releases.algorithms.unknown_laplace import (calibrate_unknown_laplace,
                                                           plan_unknown_laplace,
                                                           unknown_laplace)
from privloss.releases.release import Release
from privloss.events import Event, Interaction

__all__ = ["AlgorithmSpec", "ALGORITHMS", "HISTOGRAM_ALGORITHMS", "KNOWN_GAUSSIAN"]


def _need(name: str, value, why: str):
    if value is None:
        raise ValueError(f"{name} is required for {why}")
    return value


@dataclass(frozen=True)
class AlgorithmSpec:
    """How to calibrate and run one algorithm from a total budget.

    * ``function`` / ``calibrate`` – the algorithm and its budget split;
    * ``plan`` – the algorithm's exact parameters from ``calibrate``'s answer
      (its ``.events`` are what a release reports, known before any data);
    * ``domain`` – ``"known"`` (needs a public domain), ``"unknown"`` (reads
      the top ``d_bar``; ``top=d_bar`` in the engine is fine) or ``"either"``
      (gauss-ordered: known when a domain is given);
    * ``complete`` – must see every positive item (no ``top=`` in the engine);
    * ``needs_k``, ``needs_delta``, ``needs_l0`` – required arguments;
    * ``summary`` – one line for help texts.
    """

    name: str
    function: Callable[..., Release]
    calibrate: Callable[..., dict]
    domain: str
    complete: bool
    needs_k: bool
    needs_delta: bool
    needs_l0: bool
    summary: str
    plan: Callable[..., object]

    def parameters(self, *, epsilon, delta=0.0, k=None, l0_sensitivity=None, linf_sensitivity=1,
                   d_bar=None, known_domain=None,
                   interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
        """The keyword arguments of ``function`` spending at most (epsilon, delta)."""
        why = f"the {self.name} algorithm"
        if self.needs_k:
            _need("k", k, why)
        if self.needs_l0:
            _need("l0_sensitivity", l0_sensitivity, why)
        if self.needs_delta and not delta:
            raise ValueError(f"delta must be in (0, 1) for {why}, got {delta!r}")
        arguments = (("epsilon", epsilon), ("delta", delta), ("k", k),
                     ("l0_sensitivity", l0_sensitivity), ("linf_sensitivity", linf_sensitivity),
                     ("d_bar", d_bar), ("known_domain", known_domain),
                     ("interaction", interaction))
        try:
            hash(arguments)
        except TypeError:       # e.g. a list passed as a number: calibrate names the error
            return self._calibrate_now(**dict(arguments))
        # events() and run() calibrate the same release: search once
        return dict(_calibrated(self, arguments))

    def _calibrate_now(self, *, epsilon, delta, k, l0_sensitivity, linf_sensitivity, d_bar,
                       known_domain, interaction) -> dict:
        common = dict(epsilon=epsilon, delta=delta, linf_sensitivity=linf_sensitivity,
                      interaction=interaction)
        if self.name in ("known-laplace", "known-gaussian", "trunc-gauss"):
            return self.calibrate(l0_sensitivity=l0_sensitivity, **common)
        if self.name == "known-gumbel":
            return self.calibrate(k=k, **common)
        if self.name == "unknown-laplace":
            return self.calibrate(l0_sensitivity=l0_sensitivity, d_bar=d_bar, **common)
        if self.name == "unknown-gumbel":
            return self.calibrate(k=k, l0_sensitivity=l0_sensitivity, d_bar=d_bar, **common)
        return self.calibrate(k=k, known_domain=bool(known_domain), d_bar=d_bar,
                              l0_sensitivity=l0_sensitivity, **common)

    def _check_domain(self, known: bool) -> None:
        if self.domain == "known" and not known:
            # the histogram alone cannot show that zero-count labels were kept
            raise ValueError(f"domain (the public list of labels) is required for the "
                             f"{self.name} algorithm")
        if self.domain == "unknown" and known:
            raise ValueError(f"the {self.name} algorithm is for an unknown domain; "
                             f"do not pass domain")

    def events(self, *, epsilon, delta=0.0, k=None, l0_sensitivity=None, linf_sensitivity=1,
               d_bar=None, known_domain=False, domain_size=None,
               interaction: Interaction | str = Interaction.ADAPTIVE) -> tuple[Event, ...]:
        """The events a release with these parameters reports, computed without data.

        Same arguments as :meth:`run` except the data: ``known_domain`` says
        whether a public domain will be given (ignored by the known-domain
        algorithms, which always have one; an error for the unknown-domain
        ones), ``domain_size`` its number of labels when known (checked
        against ``k`` as :meth:`run` would).  :meth:`run` refuses to return a
        release whose events differ, so a ledger can charge these before the
        data is read.  ``interaction`` "fully-adaptive" (and "non-adaptive")
        calibrate as "adaptive": a release is one unit whose steps are fixed
        in advance.
        """
        known = True if self.domain == "known" else bool(known_domain)
        self._check_domain(known)
        if domain_size is not None and k is not None and known:
            if isinstance(domain_size, bool) or not isinstance(domain_size, int) \
                    or domain_size < 1:
                raise ValueError(f"domain_size must be an integer >= 1, got {domain_size!r}")
            if k > domain_size:
                raise ValueError(f"k must be at most the number of domain items "
                                 f"({domain_size}), got {k}")
        options = self.parameters(epsilon=epsilon, delta=delta, k=k,
                                  l0_sensitivity=l0_sensitivity,
                                  linf_sensitivity=linf_sensitivity, d_bar=d_bar,
                                  known_domain=known, interaction=interaction)
        return tuple(self.plan(**options).events)

    def run(self, histogram, *, epsilon, delta=0.0, k=None, l0_sensitivity=None,
            linf_sensitivity=1, d_bar=None, domain=None, nonnegative=True, source=None,
            interaction: Interaction | str = Interaction.ADAPTIVE) -> Release:
        """Calibrate to (epsilon, delta) and release on ``histogram``.

        ``k`` is the top-k size (for the histogram algorithms known-laplace,
        known-gaussian, unknown-laplace and trunc-gauss it is optional
        post-processing); ``domain`` the public label list, required by the
        known-domain algorithms (gauss-ordered uses known-domain discovery iff
        it is given);
        ``d_bar`` the number of top items the unknown-domain algorithms read.
        """
        known = domain is not None
        self._check_domain(known)
        options = self.parameters(epsilon=epsilon, delta=delta, k=k,
                                  l0_sensitivity=l0_sensitivity,
                                  linf_sensitivity=linf_sensitivity, d_bar=d_bar,
                                  known_domain=known, interaction=interaction)
        planned = tuple(self.plan(**options).events)
        if self.name in ("known-laplace", "known-gaussian"):
            release = self.function(histogram, k=k, domain=domain, source=source, **options)
        elif self.name == "known-gumbel":
            release = self.function(histogram, domain=domain, source=source, **options)
        elif self.name in ("unknown-laplace", "trunc-gauss"):
            release = self.function(histogram, k=k, source=source, **options)
        elif self.name == "unknown-gumbel":
            release = self.function(histogram, source=source, **options)
        else:
            release = self.function(histogram, domain=domain, nonnegative=nonnegative,
                                    source=source, **options)
        if tuple(release.events) != planned:
            # a ledger charged the planned events before the data was read
            raise ValueError(f"the {self.name} release reports events {release.events!r} but "
                             f"{planned!r} were planned")
        return release

    def engine_request(self, *, d_bar=None, domain=None) -> dict:
        """Keyword arguments for ``bounded_histogram``: ``{"domain": ...}`` for a known
        domain, ``{"top": d_bar}`` for an unknown one (None: every item), and
        never ``top`` for the algorithms that need every positive item."""
        if self.domain == "known" or (self.domain == "either" and domain is not None):
            return {"domain": _need("domain", domain, f"the {self.name} algorithm"),
                    "top": None}
        if self.complete:
            return {"domain": None, "top": None}
        return {"domain": None, "top": d_bar}


@functools.lru_cache(maxsize=128)
def _calibrated(spec: AlgorithmSpec, arguments: tuple) -> dict:
    return spec._calibrate_now(**dict(arguments))


def _spec(name, function, calibrate, *, plan, domain, complete=False, needs_k=False,
          needs_delta=False, needs_l0=False, summary="") -> AlgorithmSpec:
    return AlgorithmSpec(name, function, calibrate, domain, complete, needs_k, needs_delta,
                         needs_l0, summary, plan)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "known-laplace": _spec(
        "known-laplace", known_laplace, calibrate_known_laplace,
        plan=plan_known_laplace, domain="known", complete=True,
        needs_l0=True, summary="discrete Laplace on every count of a public domain (KnownLap)"),
    "known-gumbel": _spec(
        "known-gumbel", known_gumbel, calibrate_known_gumbel,
        plan=plan_known_gumbel, domain="known", complete=True,
        needs_k=True,
        summary="exact Gumbel top-k over a public domain + Laplace counts (KnownGumb)"),
    "unknown-laplace": _spec(
        "unknown-laplace", unknown_laplace, calibrate_unknown_laplace,
        plan=plan_unknown_laplace, domain="unknown",
        needs_delta=True, needs_l0=True,
        summary="Laplace counts of the top d_bar above a noisy threshold (UnkLap)"),
    "unknown-gumbel": _spec(
        "unknown-gumbel", unknown_gumbel, calibrate_unknown_gumbel,
        plan=plan_unknown_gumbel, domain="unknown",
        needs_k=True, needs_delta=True,
        summary="exact Gumbel top-k of the top d_bar against a threshold + Laplace counts "
                "(UnkGumb)"),
    "gauss-ordered": _spec(
        "gauss-ordered", gauss_ordered, calibrate_gauss_ordered,
        plan=plan_gauss_ordered, domain="either", needs_k=True,
        needs_delta=True,
        summary="Gumbel discovery, Gaussian counts fitted to the order (Cesar-Rogers Alg. 1)"),
    "trunc-gauss": _spec(
        "trunc-gauss", trunc_gauss, calibrate_trunc_gauss,
        plan=plan_trunc_gauss, domain="unknown", complete=True,
        needs_delta=True, needs_l0=True,
        summary="truncated Gaussian on every positive count, fixed threshold (Cesar-Rogers "
                "Alg. 2)"),
}

#: the Gaussian variant of known-laplace (histogram --noise gaussian)
KNOWN_GAUSSIAN = _spec(
    "known-gaussian", known_gaussian, calibrate_known_gaussian,
    plan=plan_known_gaussian, domain="known", complete=True,
    needs_delta=True, needs_l0=True, summary="discrete Gaussian on every count of a public domain")

#: ``privloss histogram --noise laplace|gaussian``
HISTOGRAM_ALGORITHMS: dict[str, AlgorithmSpec] = {
    "laplace": ALGORITHMS["known-laplace"], "gaussian": KNOWN_GAUSSIAN}
