"""The accuracy-plan subject of a ``GROUP BY ROLLUP``
(:func:`privloss.api.accuracy_plan.plan_accuracy` with ``command="rollup"``).

Definition
----------
``parameters``: :func:`privloss.api.rollup.make_rollup`'s without ``epsilon``;
the knob is epsilon itself (in the rollup's range [0.001, 100]).

* With public ``keys`` the tree is public, so each measure's 95% half-width
  is known before the release: the largest over the levels of
  :meth:`~privloss.api.rollup.RollupQuery.describe`'s
  ``ci95_half_width_by_level`` (the exact BLUE variance of every node of the
  keys' tree under the planned split across levels).  ``target_half_width``
  plans on that.
* Without keys every level's groups are selected by a noisy threshold and
  the split across levels is chosen on the selected tree: the half-widths
  depend on what is selected, so ``target_half_width`` is refused (give keys,
  or ``min_release_users``).  ``min_release_users=N`` plans on the
  selection: a node whose subtree holds ``N`` distinct users holds at least
  ``N`` (unit, finest group) pairs and is selected with probability at least
  ``p = P[N + Z >= tau]`` (``Z`` the selection's discrete Laplace, ``tau``
  its threshold); a finest group is released when it and its ``L - 1``
  ancestors below the grand total are selected, each by independent noise
  and each with at least ``N`` users, so with probability at least ``p^L``:
  the release probability planned is that lower bound (``L`` the number of
  ``by`` columns).

Privacy guarantee
-----------------
Public parameters only: nothing is read or charged.

Citation
--------
:mod:`privloss.releases.rollup` (the selection and the level split).

Runtime
-------
One :func:`~privloss.releases.rollup.plan_rollup` per epsilon tried (about
40 accountant calls with Gaussian noise), plus the keys' tree with keys.
"""

from __future__ import annotations

from privloss.api.accuracy_plan import ByEpsilon

__all__ = ["RollupSubject"]


class RollupSubject(ByEpsilon):
    """epsilon -> a rollup's half-widths / selection (module docstring)."""

    command = "rollup"
    range = (1e-3, 100.0)           # make_rollup's epsilon range

    def __init__(self, parameters: dict):
        from privloss.api.rollup import make_rollup

        self.parameters = dict(parameters)
        self.base = make_rollup(epsilon=1.0, **self.parameters)      # every parameter checked
        self._queries = {}

    def check_goal(self, target_half_width, min_release_users) -> None:
        """Refuse a goal this rollup cannot plan for (before any search)."""
        if target_half_width is not None and self.base.keys is None:
            raise ValueError("target_half_width on a rollup needs keys: without them every "
                             "level's groups and the split across levels are chosen privately "
                             "from the data, so no half-width is known before the release "
                             "(give keys, or min_release_users)")

    def query(self, epsilon: float):
        from privloss.api.rollup import make_rollup

        if epsilon not in self._queries:
            self._queries[epsilon] = make_rollup(epsilon=epsilon, **self.parameters)
        return self._queries[epsilon]

    def half_widths(self, epsilon: float) -> dict:
        """Each measure's largest 95% half-width over the keys' tree (none
        without keys: the tree is chosen privately)."""
        if self.base.keys is None:
            return {}
        levels = self.query(epsilon).describe()["level_split"]
        return {name: max(split["ci95_half_width_by_level"]) for name, split in levels.items()}

    def shares(self, epsilon: float) -> dict:
        return {}

    def threshold_noise(self, epsilon: float):
        """(per-node threshold in users, the selection's noise) or None with keys."""
        budget = self.query(epsilon).budget
        if not budget.selects:
            return None
        return float(budget.threshold), ("laplace", budget.selection_scale)

    def release_probability(self, epsilon: float, users: int, one_node) -> float:
        """A lower bound on the release probability of a finest group of ``users``
        distinct users: ``one_node ** L`` (module docstring); ``one_node``: the
        probability that one node with ``users`` users is selected."""
        return one_node ** len(self.base.by)
