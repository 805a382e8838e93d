"""cr-fig3 in quick mode: key numbers and output files."""

import pytest

from privloss.experiments import cr_fig3
from privloss.experiments._common import read_csv
from tests.experiments import assert_outputs


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("cr_fig3")
    return out, cr_fig3.run(out, quick=True)


def test_outputs(outcome):
    out, result = outcome
    assert_outputs(result, out, "cr-fig3")
    assert len(read_csv(result["csv"])) == len(cr_fig3.QUICK_GRID)


# reference: worked_values.md §4, three-mechanism table (eps = 1; REC vs TREE agree to 1e-10,
# NA column candidates vs GRID); tolerance rel 1e-8 (the recursion is an estimate, ~1e-10)
REFERENCE = {
    0.0: (0.492779345689, 0.488033035345, 0.488033035345, 0.477448251475),
    0.5: (0.357682971061, 0.355247751568, 0.355247751568, 0.355247751568),
    1.0: (0.221777948664, 0.221777948664, 0.221777948664, 0.210776808022),
}


@pytest.mark.parametrize("epsilon_g", sorted(REFERENCE))
def test_key_numbers(outcome, epsilon_g):
    numbers = outcome[1]["key_numbers"]
    dp_br_br, br_dp_br, br_br_dp, nonadaptive = REFERENCE[epsilon_g]
    tag = f"eg{epsilon_g:g}"
    assert numbers[f"dp_br_br_{tag}"] == pytest.approx(dp_br_br, rel=1e-8)
    assert numbers[f"br_dp_br_{tag}"] == pytest.approx(br_dp_br, rel=1e-8)
    assert numbers[f"br_br_dp_{tag}"] == pytest.approx(br_br_dp, rel=1e-8)
    assert numbers[f"nonadaptive_{tag}"] == pytest.approx(nonadaptive, rel=1e-8)
    assert numbers[f"ratio_{tag}"] == pytest.approx(dp_br_br / br_dp_br, rel=1e-8)


def test_claims(outcome):
    assert [row["agree"] for row in outcome[1]["claims"]] == [True, True, True, None]
