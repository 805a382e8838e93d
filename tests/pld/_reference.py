"""Exact references for the PLD tests (mpmath at 50 digits, float inputs taken exactly)."""

import mpmath


def theorem1_exact(k: int, epsilon: float, epsilon_g: float) -> float:
    """[CR] Theorem 1 (MV form) without rounding: (1+e^eps)^-k sum C(k,i)[e^{(k-i)eps} - e^{eps_g+i eps}]_+."""
    with mpmath.workdps(50):
        e, g = mpmath.mpf(epsilon), mpmath.mpf(epsilon_g)
        total = mpmath.fsum(mpmath.binomial(k, i) * max(mpmath.e ** ((k - i) * e) - mpmath.e ** (g + i * e), 0)
                            for i in range(k + 1))
        return float(total / (1 + mpmath.e ** e) ** k)
