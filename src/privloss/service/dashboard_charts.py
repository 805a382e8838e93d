"""The dashboard's PNG charts (matplotlib, imported where used).

Definition
----------
* :func:`tradeoff_png`: the (epsilon, delta)-DP tradeoff function
  f_{eps,delta} of the ledger's spent (epsilon, delta), mine and the
  dataset's.  Under the fully adaptive model the ledger's guarantee is an
  (epsilon, delta) pair from a privacy filter, and (eps, delta)-DP is exactly
  f_{eps,delta}-DP (Dong, Roth and Su, Prop. 2.5), so the curve is sound for
  any interaction.
* :func:`budget_png`: budget use over time: the dataset's spent epsilon after
  each of my releases (from my history's receipts), today's spending (mine and
  the dataset's) and the budget line.
* :func:`running_png`: a running-totals release: the released total per
  period with its 95% interval as a band (the release's own numbers).
* the preview's accuracy against epsilon is
  :func:`privloss.api.accuracy_plan.accuracy_figure` (not drawn here).

Privacy guarantee
-----------------
None needed: the caller's own budget and history, and plans of public
parameters.

Runtime
-------
One matplotlib figure per image.
"""

from __future__ import annotations

import io
import math
from datetime import datetime, timezone

__all__ = ["tradeoff_png", "budget_png", "running_png"]


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()


def tradeoff_png(budget: dict) -> bytes:
    """The f_{eps,delta} curves of my and the dataset's spent budget (see the
    module docstring), as PNG bytes."""
    from matplotlib.figure import Figure

    from privloss.fdp.plot import plot_tradeoffs
    from privloss.fdp.tradeoff import ApproxDPTradeoff

    curves, labels = [], []
    for who, label in (("dataset", "everything released (dataset)"), ("mine", "my releases")):
        spent = budget[who]
        epsilon = min(float(spent["spent_epsilon"]), 50.0)
        delta = min(float(spent["spent_delta"]), 1.0)
        curves.append(ApproxDPTradeoff(epsilon, delta))
        labels.append(f"{label}: eps={spent['spent_epsilon']:.4g}, "
                      f"delta={spent['spent_delta']:.2g}")
    figure = Figure(figsize=(5.2, 5.0))
    axes = figure.subplots()
    plot_tradeoffs(curves, labels=labels, ax=axes, title="what an attacker can do so far")
    return _png(figure)


def _time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def budget_png(history: list[dict], budget: dict, now: datetime | None = None) -> bytes:
    """Budget use over time (see the module docstring) as PNG bytes.
    ``history``: my releases (``time``, ``spent_epsilon_after``), any order;
    ``budget``: :func:`privloss.service.queries.analyst_view`'s."""
    return _png(budget_figure(history, budget, now))


def budget_figure(history: list[dict], budget: dict, now: datetime | None = None):
    """The matplotlib ``Figure`` :func:`budget_png` renders."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure

    now = now or datetime.now(timezone.utc)
    rows = sorted(((_time(row["time"]), float(row["spent_epsilon_after"])) for row in history
                   if row.get("spent_epsilon_after") is not None and row.get("time")),
                  key=lambda pair: pair[0])
    dataset, mine = budget["dataset"], budget["mine"]
    figure = Figure(figsize=(5.2, 3.6))
    axes = figure.subplots()
    if rows:
        times = [rows[0][0]] + [time for time, _ in rows] + [now]
        values = [0.0] + [value for _, value in rows] + [float(dataset["spent_epsilon"])]
        axes.step(times, values, where="post", color="#1d3557",
                  label="dataset's epsilon after each of my releases")
        axes.plot([time for time, _ in rows], [value for _, value in rows], "o",
                  color="#1d3557", markersize=4)
        start = rows[0][0]
    else:
        start = now
        axes.text(0.5, 0.5, "no releases yet", transform=axes.transAxes, ha="center",
                  color="#5a6776")
    axes.plot([now], [float(mine["spent_epsilon"])], "D", color="#e76f51",
              label=f"mine now: {float(mine['spent_epsilon']):.4g}")
    limit = float(dataset["budget_epsilon"])
    if math.isfinite(limit):
        axes.axhline(limit, color="#e63946", linewidth=1.5,
                     label=f"dataset budget {limit:.4g}")
    cap = float(mine["budget_epsilon"])
    if math.isfinite(cap) and cap != limit:
        axes.axhline(cap, color="#e76f51", linestyle=":", linewidth=1,
                     label=f"my cap {cap:.4g}")
    axes.set_ylim(bottom=0)
    if start == now:
        from datetime import timedelta
        axes.set_xlim(now - timedelta(minutes=5), now + timedelta(minutes=5))
    locator = AutoDateLocator(minticks=3, maxticks=5)
    axes.xaxis.set_major_locator(locator)
    # seconds as a clock time: the default, "36.0, 36.1", reads as nonsense beside the date
    axes.xaxis.set_major_formatter(ConciseDateFormatter(
        locator, formats=["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S"],
        zero_formats=["", "%Y", "%b", "%b-%d", "%H:%M", "%H:%M:%S"]))
    axes.set_ylabel("epsilon spent")
    axes.set_title("budget use over time (UTC)")
    axes.grid(alpha=0.3)
    # below the axes: inside, it would hide the budget line or the latest step
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                frameon=False)
    return figure


def running_png(result: dict) -> bytes:
    """A running-totals release (the ``/running`` route's body or its stored
    answer): total per period and its 95% interval band, as PNG bytes."""
    from matplotlib.figure import Figure

    rows = result["periods"]
    parameters = result.get("parameters") or {}
    positions = list(range(len(rows)))
    figure = Figure(figsize=(6.0, 3.0))
    axes = figure.subplots()
    axes.fill_between(positions, [row["ci95"][0] for row in rows],
                      [row["ci95"][1] for row in rows], color="#2a9d8f", alpha=0.25,
                      label="95% interval")
    axes.plot(positions, [row["total"] for row in rows], "o-", color="#264653", markersize=3,
              label="released running total")
    step = max(1, len(rows) // 8)
    axes.set_xticks(positions[::step], [str(row["period"]) for row in rows][::step],
                    rotation=30, ha="right", fontsize=7)
    axes.set_ylabel(str(parameters.get("statistic", "total")).replace("_", " "))
    axes.set_title(f"running total per {parameters.get('period', 'period')} (private)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    return _png(figure)
