"""cr-fig4 in quick mode: key numbers and output files."""

import pytest

from privloss.experiments import cr_fig4
from tests.experiments import assert_outputs


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("cr_fig4")
    return out, cr_fig4.run(out, quick=True)


def test_outputs(outcome):
    assert_outputs(outcome[1], outcome[0], "cr-fig4")


# reference: worked_values.md §9 (Delta_0 = 10: Lemma 6.2, 6.3 simple/CKS, 6.1), §6 (rho = 0.1 at
# Delta_0 = 40), §8 (rho = 0.25 at Delta_0 = 100), §1 (Theorem 1, k = 100); 10-12 digits, rel 1e-8
@pytest.mark.parametrize("key, reference", [
    ("laplace_lemma62_l0_10", 0.9993709057),
    ("gaussian_zcdp_simple_l0_10", 1.2003940002),
    ("gaussian_zcdp_tight_l0_10", 1.0140742547),
    ("gaussian_analytic_lemma61_l0_10", 0.9405155265),
    ("gaussian_zcdp_simple_l0_40", 2.4507880005),
    ("gaussian_zcdp_tight_l0_40", 2.1419389284),
    ("gaussian_zcdp_simple_l0_100", 3.9669221888),
    ("gaussian_zcdp_tight_l0_100", 3.5422913005),
    ("laplace_lemma62_l0_100", 4.774567588108),
])
def test_key_numbers(outcome, key, reference):
    assert outcome[1]["key_numbers"][key] == pytest.approx(reference, rel=1e-8)


def test_claims(outcome):
    assert [row["agree"] for row in outcome[1]["claims"]] == [True, True]
