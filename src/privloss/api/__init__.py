"""The public API: ``privloss.topk``, ``histogram``, ``aggregate``, ``sql``,
``rollup``, ``plan`` and ``max_epsilon``.

Each call checks its public parameters, builds the release's events, charges
the ledger (:mod:`privloss.budget`) when one is given and only then runs the
query (:mod:`privloss.query`) and the release algorithm
(:mod:`privloss.releases`): :mod:`privloss.api.protocol` is that order,
shared by every release kind.  Names are imported lazily.
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.api.aggregate": ("aggregate", "plan_aggregate", "AggregateRelease"),
    "privloss.api.protocol": ("histogram", "topk"),
    "privloss.api.planning": ("max_epsilon", "plan"),
    "privloss.api.sql": ("sql",),
    "privloss.api.rollup": ("rollup", "plan_rollup", "RollupRelease"),
    "privloss.api.accuracy_plan": ("plan_accuracy", "accuracy_figure"),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.api", _EXPORTS)
