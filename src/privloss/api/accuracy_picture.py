"""The accuracy-against-epsilon picture of an
:class:`~privloss.api.accuracy_plan.AccuracyPlan` (matplotlib, imported only
when a picture is drawn: the ``plot`` / ``analytics`` extra).

Privacy guarantee: none needed (a picture of public parameters)."""

from __future__ import annotations

__all__ = ["accuracy_figure", "save_accuracy_plot"]


def accuracy_figure(plan: AccuracyPlan) -> bytes:
    """The accuracy-against-epsilon plot of ``plan`` as PNG bytes: the 95%
    half-width (or a group's release probability) against epsilon, log axes,
    the planned epsilon marked (and the target).  Needs matplotlib."""
    import io

    from privloss.fdp.plot import _pyplot

    if not plan.curve:
        raise ValueError("this plan has no curve (planned with curve=False)")
    plt = _pyplot(headless=True)
    figure, ax = plt.subplots(figsize=(6.0, 4.2))
    try:
        xs = [point[0] for point in plan.curve]
        ys = [point[1] for point in plan.curve]
        ax.plot(xs, ys, marker=".", label=plan.measure)
        ax.set_xscale("log")
        if plan.goal == "release":
            ax.set_ylim(0, 1.02)
            ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
            ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
            ax.set_ylabel(f"P[group of {int(plan.target):,} users released]")
        else:
            if all(y > 0 for y in ys):
                ax.set_yscale("log")
            ax.set_ylabel("95% half-width (largest measurement)")
            if plan.target is not None:
                ax.axhline(plan.target, color="grey", linestyle=":", linewidth=1,
                           label=f"target {plan.target:g}")
        ax.axvline(plan.epsilon, color="tab:red", linestyle="--", linewidth=1,
                   label=f"planned epsilon {plan.epsilon:.3g}")
        ax.set_xlabel("epsilon")
        ax.set_title(f"privloss {plan.command}: accuracy against epsilon")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        return buffer.getvalue()
    finally:
        plt.close(figure)


def save_accuracy_plot(plan: AccuracyPlan, path) -> None:
    """Write :func:`accuracy_figure` to ``path`` (a .png file)."""
    from pathlib import Path

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"plot must be a .png file, got {str(path)!r}")
    path.write_bytes(accuracy_figure(plan))
