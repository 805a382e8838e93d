"""cr-fig5 in quick mode: key numbers, ordering checks and output files."""

import pytest

from privloss.bounds.optimal_dp import optimal_dp_delta
from privloss.experiments import cr_fig5
from tests.experiments import assert_outputs


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("cr_fig5")
    return out, cr_fig5.run(out, quick=True)


def test_outputs(outcome):
    assert_outputs(outcome[1], outcome[0], "cr-fig5")


# reference: worked_values.md §1 (Theorem 1, k = 50, 100 = Laplace at Delta_0 = 50, 100) and §8
# (rho = 0.25 at Delta_0 = 100, rho = 0.125 at Delta_0 = 50, rho = 0.05 at Delta_0 = 20); rel 1e-8
@pytest.mark.parametrize("key, reference", [
    ("laplace_lemma62_l0_50", 3.172902734019),
    ("laplace_lemma62_l0_100", 4.774567588108),
    ("gaussian_zcdp_tight_l0_100", 3.5422913005),
    ("gaussian_zcdp_tight_l0_50", 2.4190931769),
    ("gaussian_zcdp_simple_l0_20", 1.7122581363),
    ("gaussian_zcdp_tight_l0_20", 1.4715947505),
])
def test_key_numbers(outcome, key, reference):
    assert outcome[1]["key_numbers"][key] == pytest.approx(reference, rel=1e-8)


@pytest.mark.parametrize("l0", cr_fig5.QUICK_L0)
def test_composed_gaussian_is_valid_and_above_one_shot(outcome, l0):
    # no published reference: the composed bound must be a valid (re-checked) bound and can
    # never beat the exact one-shot analytic Gaussian of the same noise
    numbers = outcome[1]["key_numbers"]
    composed = numbers[f"gaussian_analytic_composed_l0_{l0}"]
    assert composed >= numbers[f"gaussian_analytic_one_shot_l0_{l0}"]
    assert composed <= l0 * numbers[f"epsilon0_at_best_l0_{l0}"] * (1 + 1e-12)
    assert optimal_dp_delta(l0, numbers[f"epsilon0_at_best_l0_{l0}"], composed,
                            delta0=numbers[f"best_delta0_l0_{l0}"]) <= cr_fig5.DELTA
