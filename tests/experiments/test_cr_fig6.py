"""cr-fig6: Macbeth top-k, Algorithm 1 vs Laplace (quick mode).

References: ``shared/data/README.md`` (18,272 lower-cased alphabetic tokens,
'the' 650, 'my' 203) and ``spec/topk.md`` section 7 calibration table
(k = 10, eps0 = 0.1, delta = 1e-6: overall eps 0.9994, rho 0.01745, sigma 16.93).
"""

import pytest

from privloss.experiments import _common, cr_fig6 as C

pytestmark = pytest.mark.skipif(not C.macbeth_path().is_file(),
                                reason=f"Macbeth text absent at {C.macbeth_path()}")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    return C.run(tmp_path_factory.mktemp("fig6"), quick=True, seed=11)


def test_key_numbers(quick_run):
    key = quick_run["key_numbers"]
    assert key["tokens"] == 18272                     # data/README.md
    assert key["true_count_rank1"] == 650 and key["true_count_rank10"] == 203
    # topk.md section 7 (4 significant digits)
    assert key["overall_epsilon"] == pytest.approx(0.9994, abs=1e-4)
    assert key["rho"] == pytest.approx(0.01745, abs=1e-5)
    assert key["sigma"] == pytest.approx(16.93, abs=0.01)


def test_outputs_flag_our_parameters(quick_run):
    rows = _common.read_csv(quick_run["csv"])
    assert [r["word"] for r in rows][:3] == ["the", "and", "to"]
    assert all(r["parameters_source"].startswith("ours") for r in rows)
    assert "**ours**" in quick_run["md"].read_text()
    assert quick_run["png"].exists()


def test_missing_data_path_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_path"):
        C.run(tmp_path, quick=True, data_path=tmp_path / "absent.txt")
