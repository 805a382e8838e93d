"""Dinur–Nissim reconstruction attacks on noisy subset-sum answers.

Demonstration code for why answers to many counting queries must carry noise
of order sqrt(n) (spec ``mechanisms.md`` §8, lecture notes seed 003):

* a database ``d in {0,1}^n`` (:func:`random_database`) and random subset-sum
  queries ``q_j`` containing every index with probability 1/2
  (:func:`random_subset_queries`), true answers ``<q_j, d>``;
* answering mechanisms: uniformly bounded integer noise in ``[-E, E]``
  (:func:`bounded_noise_answers`, *not* private) and
  :class:`LaplaceSubsetSums`, exact discrete Laplace noise calibrated with
  ``privloss.accounting`` so that the whole batch of queries is
  (epsilon, delta)-DP;
* the LP attack (:func:`reconstruct_lp`, spec §8.2): find ``c in [0,1]^n``
  whose answers deviate least from the noisy ones (max or sum of deviations,
  or the notes' feasibility LP with a known bound E), round at 1/2;
* the exhaustive attack (:func:`reconstruct_exhaustive`, spec §8.1) for tiny n;
* :func:`demonstrate_attack` runs one experiment end to end.

Theorem (Dinur–Nissim 2003; notes Thm 2): answers within error ``o(sqrt n)``
to ``O(n log^2 n)`` random queries let the LP recover all but ``o(n)`` bits.
Demonstrated numbers are in ``docs/mechanisms_other.md``.

Citation: I. Dinur, K. Nissim, "Revealing information while preserving
privacy", PODS 2003; lecture notes seed 003 ("Reconstruction attacks").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sparse
from scipy.optimize import linprog

from privloss.accounting import calibrate_epsilon
from privloss.bounds._numeric import check_positive, check_probability
from privloss.events import Event, NonPrivate, PureDP
from privloss.mechanisms.base import Mechanism, check_integer
from privloss.samplers import discrete_laplace, uniform_integers
from privloss.samplers.randomness import resolve_source

__all__ = [
    "OBJECTIVES",
    "random_database",
    "random_subset_queries",
    "subset_sums",
    "bounded_noise_answers",
    "LaplaceSubsetSums",
    "ReconstructionResult",
    "reconstruct_lp",
    "reconstruct_exhaustive",
    "fraction_recovered",
    "AttackOutcome",
    "demonstrate_attack",
]

#: LP objectives of :func:`reconstruct_lp`.
OBJECTIVES = ("max", "sum", "feasibility")
#: Largest n for the exhaustive attack (4^n work).
EXHAUSTIVE_MAX_N = 16


def _check_bits(name: str, values) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of 0/1 values, "
                         f"got shape {array.shape}")
    if not (array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer)) \
            or not np.all((array == 0) | (array == 1)):
        raise ValueError(f"{name} must contain only 0 and 1")
    return array.astype(np.int8)


def _check_queries(queries, n: int | None = None) -> np.ndarray:
    array = np.asarray(queries)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"queries must be a non-empty 2-D 0/1 matrix (one row per query), "
                         f"got shape {array.shape}")
    if n is not None and array.shape[1] != n:
        raise ValueError(f"queries must have one column per database entry ({n}), "
                         f"got {array.shape[1]}")
    if not (array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer)) \
            or not np.all((array == 0) | (array == 1)):
        raise ValueError("queries must contain only 0 and 1")
    return array.astype(bool)


# --------------------------------------------------------------------------
# databases, queries, answers
# --------------------------------------------------------------------------

def random_database(n, *, source=None) -> np.ndarray:
    """n independent fair bits (``int8`` 0/1) from the random source."""
    n = check_integer("n", n, 1)
    return resolve_source(source).random_bits(n).astype(np.int8)


def random_subset_queries(n, num_queries, *, source=None) -> np.ndarray:
    """``num_queries`` x ``n`` boolean matrix: each index in each query with probability 1/2."""
    n = check_integer("n", n, 1)
    num_queries = check_integer("num_queries", num_queries, 1)
    return resolve_source(source).random_bits(n * num_queries).reshape(num_queries, n)


def subset_sums(database, queries) -> np.ndarray:
    """The true answers ``<q_j, d>`` (``int64``)."""
    bits = _check_bits("database", database)
    rows = _check_queries(queries, bits.size)
    return rows.astype(np.int64) @ bits.astype(np.int64)


def bounded_noise_answers(database, queries, error_bound, *, source=None) -> np.ndarray:
    """True answers plus independent uniform integer noise in ``[-error_bound, error_bound]``.

    Not differentially private (a demonstration of "accurate" answers): every
    answer is within ``error_bound`` of the truth.
    """
    error_bound = check_integer("error_bound", error_bound, 0)
    truth = subset_sums(database, queries)
    noise = uniform_integers(-error_bound, error_bound + 1, size=truth.size,
                             source=resolve_source(source))
    return truth + np.asarray(noise, dtype=np.int64)


class LaplaceSubsetSums(Mechanism):
    """Answers a batch of subset-sum queries with exact discrete Laplace noise.

    Definition
        Per-query epsilon0 = ``calibrate_epsilon(num_queries, 0, epsilon,
        delta)`` (the largest epsilon0 such that ``num_queries`` adaptively
        composed epsilon0-DP mechanisms are (epsilon, delta)-DP by the
        accountant's tightest bound; basic composition ``epsilon/num_queries``
        when ``delta = 0``); each answer gets ``Lap_Z(1/epsilon0)`` noise,
        the scale being the exact rational ``1/Fraction(epsilon0)``.
    Privacy guarantee
        Neighbours: one database bit changed (every query has sensitivity 1).
        Each answer is epsilon0-DP, the batch (epsilon, delta)-DP; events
        ``PureDP(epsilon0, count=num_queries)``.
    Citation
        Lecture notes seed 003; CKS 2020 (discrete Laplace); spec §8.2 (noise
        of order sqrt(t)/epsilon defeats the attack).
    Runtime
        O(num_queries n) for the answers, O(1) expected per noise draw.
    """

    neighbours = "one bit of the database changed"

    def __init__(self, num_queries, epsilon, delta=0.0):
        self.num_queries = check_integer("num_queries", num_queries, 1)
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_probability("delta", delta, closed_upper=False)
        calibration = calibrate_epsilon(self.num_queries, 0, self.epsilon, self.delta)
        per_query = calibration.per_mechanism_epsilon
        if not (0.0 < per_query < math.inf):
            raise ArithmeticError(f"calibration returned per-query epsilon {per_query!r}")
        self.per_query_epsilon = per_query
        self.scale = 1 / Fraction(per_query)
        self._events = (PureDP(per_query, count=self.num_queries),)

    def _release(self, database, queries, *, source=None) -> np.ndarray:
        rows = _check_queries(queries)
        if rows.shape[0] != self.num_queries:
            raise ValueError(f"queries must have {self.num_queries} rows (num_queries), "
                             f"got {rows.shape[0]}")
        truth = subset_sums(database, rows)
        noise = discrete_laplace(self.scale, size=truth.size, source=resolve_source(source))
        return truth + np.asarray(noise, dtype=np.int64)


# --------------------------------------------------------------------------
# attacks
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ReconstructionResult:
    """``candidate``: the rounded guess (int8 0/1); ``fractional``: the LP
    solution in [0,1]^n; ``deviation``: the LP optimum (max or sum of
    ``|<q_j, c> - a_j|``; 0 for feasibility)."""

    candidate: np.ndarray
    fractional: np.ndarray
    deviation: float
    objective: str


def reconstruct_lp(queries, answers, *, objective: str = "max",
                   error_bound=None) -> ReconstructionResult:
    """The Dinur–Nissim LP attack (``scipy.optimize.linprog``, HiGHS).

    Definition
        Variables ``c in [0,1]^n``; with Q the query matrix and a the answers:

        * ``"max"``: minimise t subject to ``-t <= Qc - a <= t``;
        * ``"sum"``: minimise ``sum_j e_j`` subject to ``-e_j <= (Qc - a)_j <= e_j``;
        * ``"feasibility"`` (the notes' weeding phase): any c with
          ``|Qc - a| <= error_bound`` (raises if infeasible, i.e. the bound is wrong).

        Rounding: ``c'_i = 1`` iff ``c_i > 1/2``.
    Privacy guarantee
        None (an attack).
    Citation
        Dinur–Nissim 2003; notes Thm 2; spec §8.2.
    Runtime
        One LP with n (+1 or + m) variables and 2m sparse rows; "max" at
        n = 500, m = 2000 takes ~6 s, "sum" ~50 s.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    rows = _check_queries(queries)
    num_queries, n = rows.shape
    targets = np.asarray(answers, dtype=float).reshape(-1)
    if targets.size != num_queries:
        raise ValueError(f"answers must have one entry per query ({num_queries}), "
                         f"got {targets.size}")
    if not np.all(np.isfinite(targets)):
        raise ValueError("answers must be finite")
    if objective == "feasibility":
        if error_bound is None:
            raise ValueError("error_bound is required with objective='feasibility'")
        bound = float(error_bound)
        if not (math.isfinite(bound) and bound >= 0):
            raise ValueError(f"error_bound must be in [0, inf), got {error_bound!r}")
    elif error_bound is not None:
        raise ValueError(f"error_bound is only used with objective='feasibility', "
                         f"got objective={objective!r}")
    q = sparse.csr_matrix(rows.astype(float))
    if objective == "max":
        extra = sparse.csr_matrix(np.ones((num_queries, 1)))
        cost = np.concatenate((np.zeros(n), [1.0]))
        a_ub = sparse.vstack([sparse.hstack([q, -extra]), sparse.hstack([-q, -extra])])
        b_ub = np.concatenate((targets, -targets))
        bounds = [(0.0, 1.0)] * n + [(0.0, None)]
    elif objective == "sum":
        extra = sparse.identity(num_queries, format="csr")
        cost = np.concatenate((np.zeros(n), np.ones(num_queries)))
        a_ub = sparse.vstack([sparse.hstack([q, -extra]), sparse.hstack([-q, -extra])])
        b_ub = np.concatenate((targets, -targets))
        bounds = [(0.0, 1.0)] * n + [(0.0, None)] * num_queries
    else:
        cost = np.zeros(n)
        a_ub = sparse.vstack([q, -q])
        b_ub = np.concatenate((targets + bound, -(targets - bound)))
        bounds = [(0.0, 1.0)] * n
    result = linprog(cost, A_ub=a_ub.tocsr(), b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise ArithmeticError(f"the reconstruction LP failed: {result.message}")
    fractional = np.clip(result.x[:n], 0.0, 1.0)
    deviation = 0.0 if objective == "feasibility" else float(result.fun)
    return ReconstructionResult((fractional > 0.5).astype(np.int8), fractional, deviation,
                                objective)


_POPCOUNT_16: np.ndarray | None = None


def _popcount(values: np.ndarray) -> np.ndarray:
    """Bit counts of non-negative integers below 2^16 (table lookup)."""
    global _POPCOUNT_16
    if _POPCOUNT_16 is None:
        table = np.zeros(1 << 16, dtype=np.int8)
        for bit in range(16):
            table += ((np.arange(1 << 16) >> bit) & 1).astype(np.int8)
        _POPCOUNT_16 = table
    return _POPCOUNT_16[values]


def all_subset_masks(n: int) -> np.ndarray:
    """Subset masks 0..2^n-1 (bit i = index i), the query order of the exhaustive attack."""
    n = check_integer("n", n, 1, EXHAUSTIVE_MAX_N)
    return np.arange(1 << n, dtype=np.int64)


def reconstruct_exhaustive(answers, error_bound) -> np.ndarray:
    """The exponential-query attack (notes Thm 1; spec §8.1).

    Definition
        ``answers[S]`` is the (noisy) answer to the subset with bit mask S, for
        all ``2^n`` masks. Output the first candidate ``c`` (in mask order)
        with ``|sum_{i in S} c_i - answers[S]| <= error_bound`` for every S.
    Guarantee
        If every answer is within ``error_bound`` of the truth, the true
        database survives and the output differs from it in at most
        ``4 error_bound`` positions.
    Runtime
        O(4^n) (candidates processed in chunks); n <= 16.
    """
    targets = np.asarray(answers, dtype=float).reshape(-1)
    n = int(targets.size).bit_length() - 1
    if n < 1 or targets.size != 1 << n or n > EXHAUSTIVE_MAX_N:
        raise ValueError(f"answers must have 2^n entries for 1 <= n <= {EXHAUSTIVE_MAX_N}, "
                         f"got {targets.size}")
    bound = float(error_bound)
    if not (math.isfinite(bound) and bound >= 0):
        raise ValueError(f"error_bound must be in [0, inf), got {error_bound!r}")
    masks = all_subset_masks(n)
    chunk = max(1, (1 << 22) >> n)
    for start in range(0, 1 << n, chunk):
        candidates = masks[start:start + chunk]
        sums = _popcount(candidates[:, None] & masks[None, :])
        ok = np.all(np.abs(sums - targets[None, :]) <= bound, axis=1)
        if ok.any():
            winner = int(candidates[int(np.argmax(ok))])
            return np.array([(winner >> i) & 1 for i in range(n)], dtype=np.int8)
    raise ValueError("no candidate is consistent with the answers: error_bound is too small")


def fraction_recovered(candidate, database) -> float:
    """Fraction of positions where ``candidate`` equals ``database``."""
    guess = _check_bits("candidate", candidate)
    truth = _check_bits("database", database)
    if guess.size != truth.size:
        raise ValueError(f"candidate must have {truth.size} entries, got {guess.size}")
    return float(np.mean(guess == truth))


# --------------------------------------------------------------------------
# demonstration
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class AttackOutcome:
    """One run of :func:`demonstrate_attack`.

    ``noise_parameter`` is E for bounded noise and the discrete Laplace scale
    for Laplace noise; ``event`` the answers' privacy guarantee (``NonPrivate``
    for bounded noise)."""

    n: int
    num_queries: int
    noise: str
    noise_parameter: float
    max_error: int
    fraction_recovered: float
    event: Event


def demonstrate_attack(n, *, num_queries=None, noise: str = "bounded", error_bound=None,
                       epsilon=1.0, delta=0.0, objective: str = "max",
                       source=None) -> AttackOutcome:
    """Run the LP attack once on a fresh random database.

    ``noise="bounded"``: uniform integer noise in ``[-E, E]`` with
    ``E = error_bound`` (default ``isqrt(n) // 10``, at least 1, i.e. about
    sqrt(n)/10); ``noise="laplace"``: :class:`LaplaceSubsetSums` with the whole
    batch (epsilon, delta)-DP. ``num_queries`` defaults to 4n.
    With ``objective="feasibility"`` the attacker is given E (bounded noise) or
    the observed maximum error (Laplace; an oracle advantage for the attacker).
    """
    n = check_integer("n", n, 1)
    num_queries = 4 * n if num_queries is None else check_integer("num_queries", num_queries, 1)
    if noise not in ("bounded", "laplace"):
        raise ValueError(f"noise must be 'bounded' or 'laplace', got {noise!r}")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    src = resolve_source(source)
    database = random_database(n, source=src)
    queries = random_subset_queries(n, num_queries, source=src)
    if noise == "bounded":
        bound = max(1, math.isqrt(n) // 10) if error_bound is None else \
            check_integer("error_bound", error_bound, 0)
        answers = bounded_noise_answers(database, queries, bound, source=src)
        parameter, event = float(bound), NonPrivate()
    else:
        if error_bound is not None:
            raise ValueError("error_bound is only used with noise='bounded'")
        mechanism = LaplaceSubsetSums(num_queries, epsilon, delta)
        answers = mechanism.release(database, queries, source=src)
        parameter, event = float(mechanism.scale), mechanism.event
    max_error = int(np.max(np.abs(answers - subset_sums(database, queries))))
    given = (parameter if noise == "bounded" else max_error) if objective == "feasibility" \
        else None
    result = reconstruct_lp(queries, answers, objective=objective, error_bound=given)
    return AttackOutcome(n, num_queries, noise, parameter, max_error,
                         fraction_recovered(result.candidate, database), event)
