"""Exact optima: the bounds that, for some profiles, ARE the optimum.

A bound that equals the optimum over EVERY composition of mechanisms satisfying the
events (the supremum of the privacy profile, attained by some composition) is at
most every valid bound for those events. Once it has answered, the accountant
evaluates no other candidate (issue 12 item 8): the answer can exceed the minimum
over all bounds only by the optimum's own outward rounding (1e-12 relative, more
only where a bound certifies a looser error allowance), and the others' imports
(SciPy's optimiser, the PLD package) and arithmetic are saved. Only generic events
count: a named mechanism (Laplace, ...) or a subsampled one loses less than the
worst case of its guarantee, so the PLD bounds can be tighter than these optima.

Each function is a ``Candidate.exact_when`` (privloss.accounting.candidates): it
returns the theorem (a short citation) when the candidate's answer is the optimum
for the profile, else None; it is asked only once the candidate applies
(its ``models`` and ``why_not``), so it adds only what exactness needs beyond those.
"""

from __future__ import annotations

from privloss.accounting.profile import Profile
from privloss.accounting.sampled_candidates import skip_if_gaussian_dp
from privloss.events import ApproxDP, BoundedRange, PureDP


def _generic_homogeneous(profile: Profile, kinds: tuple) -> bool:
    """Every atom is exactly one of the generic event types ``kinds`` and all share
    one (epsilon, delta)."""
    if profile.size == 0 or any(type(event) not in kinds for event, _ in profile.atoms):
        return False
    eps, dels = profile.dp_like_epsilons_and_deltas()
    return bool(eps.min() == eps.max() and dels.min() == dels.max())


def exact_theorem1(profile: Profile, _interaction) -> str | None:
    """k equal (epsilon, delta)-DP events: [KOV] Thm 3.3 (= [MV] Thm 1.5 homogeneous,
    [CR] Thm 1) is the optimum of k-fold adaptive composition, and k independent
    copies of KOV's randomized-response pair (non-adaptive, hence also a set-wise
    composition of equal parameters) attain it."""
    if _generic_homogeneous(profile, (PureDP, ApproxDP)):
        return "[KOV] Thm 3.3, attained by k copies of KOV's pair"
    return None


def exact_theorem2(profile: Profile, _interaction) -> str | None:
    """k equal epsilon-BR events, non-adaptive (the candidate's only model): [CR] Thm 2
    = [DDR] Thm 3 is the supremum over all non-adaptive BR compositions."""
    if _generic_homogeneous(profile, (BoundedRange,)):
        return "[CR] Thm 2 = [DDR] Thm 3, attained by RR pairs"
    return None


def exact_theorem3(profile: Profile, _interaction) -> str | None:
    """Equal-epsilon DP and BR events, non-adaptive or adaptive with one BR (what
    ``candidates._need_theorem3`` admits): [CR] Thm 3 is the non-adaptive supremum, and by
    [CR] Cor. 5.1 the adaptive one when a single BR event is present."""
    if _generic_homogeneous(profile, (PureDP, BoundedRange)):
        return "[CR] Thm 3 (adaptive, one BR: Cor. 5.1), attained by RR pairs"
    return None


def exact_gaussian(profile: Profile, interaction) -> str | None:
    """Continuous Gaussians only: the composition is exactly mu-GDP with mu =
    sqrt(sum (s_i/sigma_i)^2) [DRS Cor. 3.3], attained by the Gaussian pairs
    themselves (a fixed sequence, so also the least budget of any filter rule)."""
    if skip_if_gaussian_dp(profile, interaction) is not None:
        return "[DRS] Cor. 3.3, attained by the Gaussian pairs"
    return None
