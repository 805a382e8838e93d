"""The plot helper writes a figure (skipped without matplotlib)."""

import pytest

pytest.importorskip("matplotlib")

from privloss.fdp import GaussianTradeoff, mechanism_tradeoff, plot_tradeoffs, rr_composition_tradeoff  # noqa: E402
from privloss.pld import laplace_pld  # noqa: E402


def test_plot_writes_png(tmp_path):
    path = tmp_path / "curves.png"
    bracket = mechanism_tradeoff(laplace_pld(5.0, step=2e-3).self_compose(25))
    ax = plot_tradeoffs([rr_composition_tradeoff(0.2, 25), GaussianTradeoff(1.0), bracket],
                        path=str(path), title="test")
    assert path.stat().st_size > 1000
    assert len(ax.get_lines()) == 4                      # three curves and perfect privacy


def test_plot_validates_labels():
    with pytest.raises(ValueError, match="one entry per curve"):
        plot_tradeoffs([GaussianTradeoff(1.0)], labels=["a", "b"])
    with pytest.raises(TypeError, match=r"curves\[0\]"):
        plot_tradeoffs(["not a curve"])
