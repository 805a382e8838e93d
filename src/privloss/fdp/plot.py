"""Plot tradeoff curves with matplotlib (imported lazily: the ``plot`` extra, ``pip install '.[plot]'`` from a checkout)."""

from __future__ import annotations

import numpy as np

from privloss.fdp.tradeoff import TradeoffCurve


def _pyplot(headless: bool):
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError("plotting needs matplotlib: install the 'plot' extra (pip install '.[plot]' from a privloss checkout)") from error
    if headless and "matplotlib.pyplot" not in __import__("sys").modules:
        matplotlib.use("Agg")      # writing a file needs no display
    import matplotlib.pyplot as plt

    return plt


def plot_tradeoffs(curves, *, labels=None, dashed=None, ax=None, path=None, title: str | None = None,
                   points: int = 1001, identity: bool = True):
    """Draw tradeoff curves (type I error alpha vs type II error beta) on one figure.

    Definition
        ``curves``: TradeoffCurve objects or TradeoffBracket objects (drawn as the
        certified lower curve, with the band up to the upper curve shaded).
        ``identity`` adds the perfect-privacy line beta = 1 - alpha; ``dashed``
        (one bool per curve) draws approximations such as the CLT curve dashed.
    Privacy guarantee
        None (a picture); the lower curve of a bracket is the certified one.
    Runtime
        O(len(curves) x points). Returns the matplotlib Axes; saves to ``path``
        (PNG/SVG/PDF by extension) when given.
    """
    from privloss.fdp.convert import TradeoffBracket

    items = list(curves)
    if labels is not None and len(labels) != len(items):
        raise ValueError(f"labels must have one entry per curve, got {len(labels)} for {len(items)}")
    if dashed is not None and len(dashed) != len(items):
        raise ValueError(f"dashed must have one entry per curve, got {len(dashed)} for {len(items)}")
    plt = _pyplot(headless=path is not None and ax is None)
    figure = None
    if ax is None:
        figure, ax = plt.subplots(figsize=(5.2, 5.0))
    for index, item in enumerate(items):
        label = labels[index] if labels is not None else getattr(item, "label", None)
        style = "--" if dashed is not None and dashed[index] else "-"
        if isinstance(item, TradeoffBracket):
            alpha, lower, upper = item.points(points)
            line, = ax.plot(alpha, lower, style, label=label)
            ax.fill_between(alpha, lower, upper, color=line.get_color(), alpha=0.25, linewidth=0)
        elif isinstance(item, TradeoffCurve):
            alpha, beta = item.points(points)
            ax.plot(alpha, beta, style, label=label)
        else:
            raise TypeError(f"curves[{index}] must be a TradeoffCurve or TradeoffBracket, "
                            f"got {type(item).__name__}")
    if identity:
        grid = np.array([0.0, 1.0])
        ax.plot(grid, 1 - grid, linestyle=":", color="black", linewidth=0.8, label="perfect privacy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error  alpha  (false accusation)")
    ax.set_ylabel("type II error  beta  (missed detection)")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    if path is not None:
        (figure or ax.figure).savefig(path, dpi=120, bbox_inches="tight")
        if figure is not None:
            plt.close(figure)
    return ax
