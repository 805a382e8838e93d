"""The zCDP parameter of a Gaussian tree for an (epsilon, delta) budget."""

from __future__ import annotations

__all__ = ["rho_for"]


def rho_for(epsilon: float, delta: float, *, interaction: str = "adaptive") -> float:
    """The largest rho whose one ``ZCDP(rho)`` event the accountant composes
    to at most (epsilon, delta) (the tree's own guarantee)."""
    from privloss.events import ZCDP
    from privloss.releases.algorithms._calibrate import largest_meeting

    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) for Gaussian noise, got {delta!r}")
    rho, _ = largest_meeting(lambda x: (ZCDP(x),), epsilon, delta,
                             guess=epsilon * epsilon / 8.0, interaction=interaction)
    return rho
