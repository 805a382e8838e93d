"""cr-interpolation in quick mode: key numbers and output files."""

import pytest

from privloss.experiments import cr_interpolation
from privloss.experiments._common import read_csv
from tests.experiments import assert_outputs


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("cr_interpolation")
    return out, cr_interpolation.run(out, quick=True)


def test_outputs(outcome):
    out, result = outcome
    assert_outputs(result, out, "cr-interpolation")
    rows = read_csv(result["csv"])
    assert [int(row["num_dp"]) for row in rows if row["k"] == "10"] == list(range(11))


# reference: worked_values.md §2 (d = 0, Theorem 2), §3 (d = k/2, Theorem 3), §1 (d = k,
# Theorem 1); eps = 0.1, delta = 1e-6; 12-digit values, tolerance rel 1e-9
@pytest.mark.parametrize("key, reference", [
    ("theorem3_k10_d0", 0.628636838773),
    ("theorem3_k10_d5", 0.853656441642),
    ("theorem3_k10_d10", 0.999370905722),
    ("theorem3_k50_d0", 1.533740352924),
    ("theorem3_k50_d25", 2.428394805730),
    ("theorem3_k50_d50", 3.172902734019),
    ("theorem3_k100_d0", 2.246026212456),
    ("theorem3_k100_d50", 3.650225769201),
    ("theorem3_k100_d100", 4.774567588108),
])
def test_key_numbers(outcome, key, reference):
    assert outcome[1]["key_numbers"][key] == pytest.approx(reference, rel=1e-9)


def test_claims_agree(outcome):
    assert all(row["agree"] for row in outcome[1]["claims"])
