"""Exact enumeration of fully adaptive games against a privacy filter.

An *analyst strategy* maps the public history (a tuple of (proposal, output)
pairs; output None when the filter refused) to the next proposal, or None to
stop. A proposal is a pure epsilon (the release is randomized response RR(eps),
the worst case of eps-DP [KOV]) or a pair (eps, delta) (the worst case of
(eps, delta)-DP: KOV's four-point pair "reveal with probability delta, else
RR(eps)"). The filter is asked about every proposal given the admitted history
(a fresh filter replayed along each prefix: :func:`check` is stateless), a
refused proposal produces no output, and the game has at most ``rounds``
proposals.

Every transcript is enumerated; its probabilities under D (truth 0) and D'
(truth 1) are products computed in mpmath at 50 digits, so the hockey-stick
divergence of the whole interaction at the budget epsilon is exact up to 1e-40,
far below the deltas compared with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import mpmath

#: working precision (decimal digits); set per function with ``workdps``, never globally
DPS = 50


@mpmath.workdps(DPS)
def output_laws(proposal):
    """[(P(y), Q(y)) for each output y] of the worst-case pair of ``proposal``.

    ``("br", eps, t)``: the epsilon-bounded-range pair RR_{eps, t} (composition.md
    Def. 2.4; every BR pair is a post-processing of one of these [DDR]); P puts
    mass q on output 0 (loss t), Q mass p, as tests/enumeration.py.
    """
    if isinstance(proposal, tuple) and proposal[0] == "br":
        width, t = mpmath.mpf(proposal[1]), mpmath.mpf(proposal[2])
        if width == 0:
            return [(mpmath.mpf(1), mpmath.mpf(1))]
        denominator = 1 - mpmath.e ** (-width)
        p = (mpmath.e ** (-t) - mpmath.e ** (-width)) / denominator
        q = (1 - mpmath.e ** (t - width)) / denominator
        return [(q, p), (1 - q, 1 - p)]
    if isinstance(proposal, tuple):
        epsilon, delta = (mpmath.mpf(value) for value in proposal)
    else:
        epsilon, delta = mpmath.mpf(proposal), mpmath.mpf(0)
    high = mpmath.e ** epsilon / (1 + mpmath.e ** epsilon)
    low = 1 - high
    keep = 1 - delta
    laws = [(keep * high, keep * low), (keep * low, keep * high)]
    if delta > 0:
        laws += [(delta, mpmath.mpf(0)), (mpmath.mpf(0), delta)]
    return laws


@mpmath.workdps(DPS)
def play(strategy: Callable, admit: Callable, rounds: int):
    """Leaves of the game tree: [(P mass, Q mass)], plus the number of refusals seen.

    ``admit(admitted_proposals_tuple) -> bool`` decides on the admitted history
    plus the new proposal (its last element).
    """
    leaves = []
    refusals = [0]

    def visit(history: tuple, admitted: tuple, p_mass, q_mass, depth: int):
        proposal = strategy(history) if depth < rounds else None
        if proposal is None:
            leaves.append((p_mass, q_mass))
            return
        candidate = admitted + (proposal,)
        if not admit(candidate):
            refusals[0] += 1
            visit(history + ((proposal, None),), admitted, p_mass, q_mass, depth + 1)
            return
        for output, (p, q) in enumerate(output_laws(proposal)):
            if p == 0 and q == 0:
                continue
            visit(history + ((proposal, output),), candidate, p_mass * p, q_mass * q, depth + 1)

    visit((), (), mpmath.mpf(1), mpmath.mpf(1), 0)
    return leaves, refusals[0]


@mpmath.workdps(DPS)
def hockey_stick(leaves, epsilon: float, *, reverse: bool = False):
    """Exact delta of the transcript at ``epsilon``: sum max(P - e^eps Q, 0) (or Q vs P)."""
    threshold = mpmath.e ** mpmath.mpf(epsilon)
    total = mpmath.mpf(0)
    for p, q in leaves:
        if reverse:
            p, q = q, p
        gap = p - threshold * q
        if gap > 0:
            total += gap
    return total


@mpmath.workdps(DPS)
def both_directions(strategy, admit, rounds: int, epsilon: float):
    leaves, refusals = play(strategy, admit, rounds)
    mass = mpmath.fsum(p for p, _ in leaves)
    assert abs(mass - 1) < mpmath.mpf(10) ** -40          # the tree is a distribution
    return (hockey_stick(leaves, epsilon), hockey_stick(leaves, epsilon, reverse=True),
            len(leaves), refusals)


# --------------------------------------------------------------------------
# analyst strategies: functions of the public history only
# --------------------------------------------------------------------------

def outputs(history):
    return [output for _, output in history if output is not None]


def greedy(big: float = 0.5, small: float = 0.05):
    """Spend big after an outcome that looks like D (output 0), small otherwise."""
    def strategy(history):
        seen = outputs(history)
        return big if not seen or seen[-1] == 0 else small
    return strategy


def alternating(big: float = 0.4, small: float = 0.1):
    def strategy(history):
        return big if len(history) % 2 == 0 else small
    return strategy


def pseudo_random(choices=(0.02, 0.05, 0.1, 0.2, 0.3, 0.5), seed: int = 0):
    """A fixed pseudo-random function of the history (a randomised analyst is a
    mixture of deterministic ones, and the hockey-stick divergence is convex)."""
    def strategy(history):
        digest = hashlib.sha256(repr((seed, history)).encode()).digest()
        return choices[digest[0] % len(choices)]
    return strategy


def largest_admitted(admit, ladder=(1.0, 0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.03, 0.02),
                     after_other=None):
    """Exploit 1: after an output that looks like D propose the LARGEST epsilon the
    filter still admits (the analyst can compute admission: it is public); after
    one that looks like D' propose ``after_other`` (default: the smallest rung) so
    that the rule that admits many small releases takes over on that branch."""
    small = ladder[-1] if after_other is None else after_other

    def strategy(history):
        admitted = tuple(proposal for proposal, output in history if output is not None)
        seen = outputs(history)
        if seen and seen[-1] == 1:
            return small
        for rung in ladder:
            if admit(admitted + (rung,)):
                return rung
        return ladder[-1]
    return strategy


def switch_rules(first: float, on_d: tuple, on_other: tuple):
    """Exploit 2: one release, then a branch-dependent continuation: ``on_d`` after
    output 0 (e.g. few large releases, admitted by basic composition) and
    ``on_other`` after output 1 (many small ones, admitted by a Renyi/zCDP rule).
    Refused proposals are skipped, so each branch uses its rule to the end."""
    def strategy(history):
        if not history:
            return first
        plan = on_d if history[0][1] == 0 else on_other
        index = len(history) - 1
        return plan[index] if index < len(plan) else None
    return strategy


def branch_sequences(first: float, on_d: tuple, on_other: tuple):
    """The strategy of the issue's counterexample family against fixed-parameter
    rules: first RR(first); then one fixed sequence after output 0, another after 1."""
    return switch_rules(first, on_d, on_other)
