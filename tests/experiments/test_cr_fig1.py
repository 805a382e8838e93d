"""cr-fig1 in quick mode: key numbers and output files."""

import pytest

from privloss.experiments import cr_fig1
from privloss.experiments._common import read_csv
from tests.experiments import assert_outputs


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("cr_fig1")
    return out, cr_fig1.run(out, quick=True)


def test_outputs(outcome):
    out, result = outcome
    assert_outputs(result, out, "cr-fig1")
    rows = read_csv(result["csv"])
    assert len(rows) == len(cr_fig1.QUICK_KS) * len(cr_fig1.DP_FRACTIONS)
    assert all(row["parameters_source"].startswith("ours:") for row in rows)
    assert "**ours**" in result["md"].read_text()


# reference: worked_values.md §8 (eq. (3) table, zCDP route table), §1 (Theorem 1), §3 (Theorem 3);
# 10-12 digit values, tolerance rel 1e-9 (1e-8 for the 10-digit zCDP/CKS values)
@pytest.mark.parametrize("key, reference, rel", [
    ("eq3_half_k50", 3.0946265987, 1e-9),
    ("theorem1_all_dp_k50", 3.172902734019, 1e-9),
    ("eq3_all_br_k50", 1.9209524158, 1e-9),
    ("eq3_all_dp_k50", 3.9667140636, 1e-9),
    ("theorem3_half_k50", 2.428394805730, 1e-9),
    ("zcdp_tight_all_br_k50", 1.6599790500, 1e-8),
    ("zcdp_tight_all_dp_k50", 3.5422913005, 1e-8),
    ("zcdp_tight_all_br_k100", 2.4190931769, 1e-8),
])
def test_key_numbers(outcome, key, reference, rel):
    assert outcome[1]["key_numbers"][key] == pytest.approx(reference, rel=rel)


def test_claims(outcome):
    claims = outcome[1]["claims"]
    # the seed's remark holds at k = 50 (2.5% apart), the special cases are exact
    assert [row["agree"] for row in claims[:3]] == [True, True, True]
