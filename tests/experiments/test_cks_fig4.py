"""cks-fig4: seed 004's Figure 4 numbers (quick mode).

References: ``spec/samplers.md`` section 8 regression table (independent
re-implementation) and the seed's sentence "for k = 100 the variance is 69% more".
"""

import math

import pytest

from privloss.experiments import _common, cks_fig4 as C
from privloss.samplers import discrete_laplace_variance


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    return C.run(tmp_path_factory.mktemp("cks"), quick=True)


@pytest.mark.parametrize("k, laplace, gaussian, ratio", [
    (1, 1.84, 20.53, 0.090), (10, 199.6, 205.3, 0.972), (50, 1693, 1026, 1.650), (100, 3469, 2053, 1.690)])
def test_samplers_md_table(quick_run, k, laplace, gaussian, ratio):
    key = quick_run["key_numbers"]
    # samplers.md section 8 (printed to 3-4 significant digits): relative tolerance 2e-3
    assert key[f"laplace_variance_k{k}"] == pytest.approx(laplace, rel=2e-3)
    assert key[f"gaussian_variance_k{k}"] == pytest.approx(gaussian, rel=2e-3)
    assert key[f"ratio_k{k}"] == pytest.approx(ratio, abs=1e-3)


def test_claims(quick_run):
    key = quick_run["key_numbers"]
    assert 100 * (key["ratio_k100"] - 1) == pytest.approx(69, abs=0.5)   # seed 004: "69% more"
    assert key["crossover_k"] == 11                                       # ratio 0.972 at k = 10
    assert all(c["agree"] for c in quick_run["claims"])


def test_laplace_variance_closed_form_against_exact_sum():
    epsilon0 = C.laplace_epsilon0(10)
    assert epsilon0 == pytest.approx(0.10006, abs=1e-5)                   # samplers.md section 8
    exact = float(discrete_laplace_variance(1 / epsilon0))                # mpmath sum
    assert C.discrete_laplace_variance(epsilon0) == pytest.approx(exact, rel=1e-12)


def test_outputs(quick_run):
    rows = _common.read_csv(quick_run["csv"])
    assert [int(r["k"]) for r in rows] == list(C.QUICK_KS)
    assert quick_run["png"].exists() and quick_run["md"].exists()
    assert not math.isnan(quick_run["key_numbers"]["panel_a_laplace_epsilon0"])
