"""fdp-blog: key numbers of seed 001's figures (quick mode).

References: ``spec/worked_values.md`` section 7 (Laplace tradeoff at eps0 = 1,
CLT mu of 25-fold RR at 0.2, closed forms verified against numerical
Neyman-Pearson); Google's ``dp_accounting`` PLD library for the 2-fold Laplace
composition (independent implementation).
"""

import math

import numpy as np
import pytest

from privloss.experiments import _common, fdp_blog as F


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    return F.run(tmp_path_factory.mktemp("fdp"), quick=True)


def test_worked_values(quick_run):
    key = quick_run["key_numbers"]
    # worked_values.md section 7, tolerance 1e-11 (12 printed digits)
    assert key["laplace_f_0.1"] == pytest.approx(0.728171817154, abs=1e-11)
    assert key["laplace_f_0.3"] == pytest.approx(0.306566200976, abs=1e-11)
    assert key["laplace_f_0.7"] == pytest.approx(0.110363832351, abs=1e-11)
    assert key["clt_mu_rr_25_0.2"] == pytest.approx(1.0016675002, abs=1e-10)
    # the blog's y = e^-1/(4x) on [e^-1/2, 1/2]
    assert key["laplace_reciprocal_max_error"] < 1e-12
    assert key["rr_minus_f_eps0_max"] < 1e-12


def test_classical_sigma_and_gaps(quick_run):
    key = quick_run["key_numbers"]
    # sigma = sqrt(2 ln 1250) / eps (blog / Dwork-Roth), hand computation 3.7764795...
    assert key["sigma_classical_1_1e-3"] == pytest.approx(math.sqrt(2 * math.log(1250)), rel=1e-15)
    assert key["gaussian_1_gap_max"] > 0.3 and key["gaussian_4_gap_max"] > 0.8   # "far from equal"
    # the 25-fold compositions are within about 1% of G_1 (blog's figures, our measure)
    assert key["rr25_vs_g1_max_abs"] < 0.006
    assert key["laplace25_vs_g1_max_abs"] < 0.015
    assert all(c["agree"] for c in quick_run["claims"])


def test_laplace_two_fold_against_dp_accounting():
    pld_lib = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from privloss.fdp import mechanism_tradeoff
    from privloss.pld import laplace_pld
    ours = laplace_pld(1.0).self_compose(2)
    theirs = pld_lib.from_laplace_mechanism(1.0, value_discretization_interval=1e-5).self_compose(2)
    for epsilon in (0.0, 0.5, 1.0, 1.5):
        bracket = ours.delta(epsilon)
        assert theirs.get_delta_for_epsilon(epsilon) == pytest.approx(bracket.upper, abs=1e-4)
    curve = mechanism_tradeoff(ours)
    lower, upper = curve(np.array([0.1]))
    assert lower[0] == pytest.approx(0.49093, abs=1e-4)   # key number laplace2_f_0.1


def test_outputs(quick_run):
    rows = _common.read_csv(quick_run["csv"])
    assert len(rows) == F.GRID_QUICK.size
    assert quick_run["png"].exists()
    assert "e^-1/(4x)" in quick_run["md"].read_text()
