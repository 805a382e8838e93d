"""Scalar exact samplers in pure Python integer arithmetic (CKS Algorithms 1-3).

These are the reference implementations: every decision is an integer
comparison ``source.uniform_below(d) < n``.  They work for integers of any
size and are used for ``size=None`` draws, for parameters too large for the
64-bit batched kernels, and to finish the rare batched elements whose
intermediates would not fit in 64 bits.

Rationals are passed as (numerator, denominator) pairs of Python ints.
Reference: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020 (arXiv:2004.00010), Algorithms 1-3.
"""

from __future__ import annotations


def bernoulli_ratio(source, n: int, d: int) -> bool:
    """Bernoulli(n/d) for integers 0 <= n <= d, d >= 1."""
    return source.uniform_below(d) < n


def exp_chain_parity(source, n: int, d: int, k: int = 1) -> bool:
    """Von Neumann's chain for Bernoulli(exp(-n/d)), 0 <= n <= d, from step ``k``.

    Draw A_k ~ Bernoulli(gamma/k), A_{k+1} ~ Bernoulli(gamma/(k+1)), ... until the
    first 0 and return whether the index K of that 0 is odd.  Started at
    ``k = 1`` this is CKS Algorithm 1 for gamma in [0, 1]:
    P[K > j] = gamma**j / j!, so P[K odd] = exp(-gamma).  Started at ``k > 1``
    it continues a chain already known to have passed steps 1..k-1, which is how
    the batched kernels hand over an element whose denominator ``d*k`` would
    no longer fit in 64 bits.
    """
    while source.uniform_below(d * k) < n:
        k += 1
    return k % 2 == 1


def bernoulli_exp(source, n: int, d: int) -> bool:
    """Bernoulli(exp(-n/d)) for any rational n/d >= 0 (CKS Algorithm 1).

    exp(-gamma) = exp(-1)**floor(gamma) * exp(-frac(gamma)); stop at the first
    failing factor (expected <= 1/(1-1/e) factors).
    """
    whole, rest = divmod(n, d)
    for _ in range(whole):
        if not exp_chain_parity(source, 1, 1):
            return False
    return exp_chain_parity(source, rest, d)


def geometric_exp_minus_one(source) -> int:
    """V >= 0 with P[V = v] = (1 - 1/e) e**(-v): count Bernoulli(1/e) successes."""
    v = 0
    while exp_chain_parity(source, 1, 1):
        v += 1
    return v


def discrete_laplace(source, t: int, s: int) -> int:
    """One draw with P[Z = z] proportional to exp(-|z| s / t) (CKS Algorithm 2)."""
    while True:
        u = source.uniform_below(t)
        if not exp_chain_parity(source, u, t):  # accept u w.p. exp(-u/t)
            continue
        v = geometric_exp_minus_one(source)
        y = (u + t * v) // s  # u + t v is geometric with ratio exp(-1/t)
        negative = source.uniform_below(2) == 1
        if negative and y == 0:  # do not count zero twice
            continue
        return -y if negative else y


def gaussian_gamma(y: int, b: int, e: int, f: int) -> int:
    """Numerator of gamma = (|y| - e/f)**2 / (2 sigma^2) over the fixed 2 a f^2.

    With sigma^2 = a/b: gamma = (|y| f - e)**2 * b / (2 a f**2).
    """
    w = abs(y) * f - e
    return w * w * b


def discrete_gaussian(source, a: int, b: int, p: int, q: int, e: int, f: int) -> int:
    """One draw from N_Z(0, a/b) (CKS Algorithm 3) with proposal Lap_Z(p/q).

    ``e/f`` must equal sigma^2 / (p/q).  The proposal y ~ Lap_Z(p/q) is accepted
    with probability exp(-(|y| - e/f)**2 / (2 sigma^2)); the product
    exp(-|y|q/p) * exp(-(|y| - e/f)**2/(2 sigma^2)) is exp(-y**2/(2 sigma^2))
    times a constant, for any proposal scale p/q.
    """
    denominator = 2 * a * f * f
    while True:
        y = discrete_laplace(source, p, q)
        if bernoulli_exp(source, gaussian_gamma(y, b, e, f), denominator):
            return y
