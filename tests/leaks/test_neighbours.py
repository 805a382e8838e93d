"""Neighbouring-input harness: every release path run on D and on D plus one
user (a brand-new item, or more of existing items) with the same seed.

Everything but the noisy outputs (released items, their counts and intervals)
must be identical: Release.to_dict() parameters, events, the CLI --json
payload, the stored ledger row and `ledger history --json` (except the keyed
data MAC, a PRF of the data, and times).  Where the noise draws line up (known
domains: one draw per domain position) the counts differ by at most the
sensitivity.
"""

import json

import pytest

pytest.importorskip("duckdb")

from privloss.releases.algorithms import ALGORITHMS, KNOWN_GAUSSIAN  # noqa: E402
from privloss.query.engines import bounded_histogram  # noqa: E402
from privloss.samplers import InsecureSeededSource  # noqa: E402
from tests.leaks._support import (DOMAIN, NEIGHBOURS, half_widths, run,  # noqa: E402
                                  without_noise, write_csv)

L0 = 3
#: (spec, run keyword arguments); d_bar above the number of items, so a new item
#: changes how many items are visible
CASES = {
    "known-laplace": (ALGORITHMS["known-laplace"], dict(epsilon=1.0, domain=DOMAIN)),
    "known-gaussian": (KNOWN_GAUSSIAN, dict(epsilon=1.0, delta=1e-6, domain=DOMAIN)),
    "known-gumbel": (ALGORITHMS["known-gumbel"], dict(epsilon=1.0, k=2, domain=DOMAIN)),
    "unknown-laplace": (ALGORITHMS["unknown-laplace"], dict(epsilon=1.0, delta=1e-6, d_bar=50)),
    "unknown-gumbel": (ALGORITHMS["unknown-gumbel"],
                       dict(epsilon=1.0, delta=1e-6, k=2, d_bar=50)),
    "gauss-ordered": (ALGORITHMS["gauss-ordered"], dict(epsilon=1.0, delta=1e-6, k=2, d_bar=50)),
    "gauss-ordered-known": (ALGORITHMS["gauss-ordered"],
                            dict(epsilon=1.0, delta=1e-6, k=2, domain=DOMAIN)),
    "trunc-gauss": (ALGORITHMS["trunc-gauss"], dict(epsilon=1.0, delta=1e-6)),
}


def test_every_algorithm_is_covered():
    assert {spec.name for spec, _ in CASES.values()} == set(ALGORITHMS) | {"known-gaussian"}


def _release(path, spec, options, engine="duckdb"):
    options = dict(options)
    request = spec.engine_request(d_bar=options.get("d_bar"), domain=options.get("domain"))
    histogram = bounded_histogram(path, user_column="user", item_column="item", l0=L0, linf=1,
                                  seed=5, engine=engine, **request)
    return spec.run(histogram, l0_sensitivity=L0, source=InsecureSeededSource(7), **options)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("leaks")
    paths = {None: write_csv(folder / "d.csv")}
    for kind in NEIGHBOURS:
        paths[kind] = write_csv(folder / f"{kind}.csv", kind)
    return paths


@pytest.mark.parametrize("case", sorted(CASES))
def test_release_fields_identical_on_neighbours(datasets, case):
    spec, options = CASES[case]
    base = _release(datasets[None], spec, options)
    planned = spec.events(**{key: value for key, value in options.items() if key != "domain"},
                          l0_sensitivity=L0, known_domain="domain" in options,
                          domain_size=len(DOMAIN) if "domain" in options else None)
    assert base.events == planned
    for kind in NEIGHBOURS:
        other = _release(datasets[kind], spec, options)
        assert other.events == base.events
        mine, theirs = base.to_dict(), other.to_dict()
        assert without_noise(mine) == without_noise(theirs), (case, kind)
        assert "visible_items" not in json.dumps(theirs)
        for row in theirs["items"]:
            assert set(row) == {"item", "count", "ci95"}
        if spec.name != "gauss-ordered":       # its interval is a hull with the fitted value
            widths = half_widths(mine) | half_widths(theirs)
            assert widths <= {2 * mine["parameters"]["ci95_half_width"]}
        if spec.name in ("known-laplace", "known-gaussian"):
            # one noise draw per domain position, same seed: only the bounded
            # counts move, by at most linf = 1 on at most l0 items
            before = {row["item"]: row["count"] for row in mine["items"]}
            after = {row["item"]: row["count"] for row in theirs["items"]}
            assert set(before) == set(after) == set(DOMAIN)
            moved = [item for item in DOMAIN if before[item] != after[item]]
            assert len(moved) <= L0 and all(abs(after[i] - before[i]) <= 1 for i in moved)


def _cli_argv(case, path):
    spec, options = CASES[case]
    argv = ["--privacy-unit", "user", "--item-column", "item", "--l0", str(L0),
            "--epsilon", str(options["epsilon"]), "--seed", "3", "--json"]
    if "delta" in options:
        argv += ["--delta", str(options["delta"])]
    if "d_bar" in options:
        argv += ["--d-bar", str(options["d_bar"])]
    if spec.name == "known-gaussian":
        return ["histogram", path, "--noise", "gaussian", *argv]
    argv += ["--k", str(options.get("k", 2)), "--algorithm", spec.name]
    return ["topk", path, *argv]


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_json_identical_on_neighbours(capsys, datasets, tmp_path, case):
    domain = tmp_path / "domain.txt"
    domain.write_text("\n".join(DOMAIN) + "\n")
    extra = ["--domain", domain] if "domain" in CASES[case][1] else []
    payloads = {}
    for kind, path in datasets.items():
        code, out, err = run(capsys, *_cli_argv(case, path), *extra)
        assert code == 0, err
        payloads[kind] = json.loads(out)
    for kind in NEIGHBOURS:
        assert without_noise(payloads[kind]) == without_noise(payloads[None]), (case, kind)
        assert payloads[kind]["parameters"]["nulls"] == "dropped"


def _normalised_history(rows):
    """History rows without the noisy outputs, times and the keyed data MAC."""
    def clean(value):
        if isinstance(value, str) and value.startswith("{"):
            value = json.loads(value)         # a stored query key (canonical JSON text)
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()
                    if key not in ("items", "time", "created", "mac", "file")}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value
    return clean(rows)


@pytest.mark.parametrize("case", ["unknown-gumbel", "trunc-gauss", "known-laplace"])
def test_ledger_row_and_history_identical_on_neighbours(capsys, datasets, tmp_path, case):
    domain = tmp_path / "domain.txt"
    domain.write_text("\n".join(DOMAIN) + "\n")
    extra = ["--domain", domain] if "domain" in CASES[case][1] else []
    histories, payloads = {}, {}
    for kind, path in datasets.items():
        ledger = tmp_path / f"ledger-{kind}.sqlite"
        code, _, err = run(capsys, "ledger", "create", "--ledger", ledger, "--dataset", "d",
                           "--epsilon", "10", "--delta", "1e-4",
                           "--interaction", "fully-adaptive")
        assert code == 0, err
        code, out, err = run(capsys, *_cli_argv(case, path), *extra, "--ledger", ledger,
                             "--dataset", "d")
        assert code == 0, err
        payloads[kind] = json.loads(out)
        code, out, err = run(capsys, "ledger", "history", "--ledger", ledger, "--dataset", "d",
                             "--json")
        assert code == 0, err
        histories[kind] = json.loads(out)
        assert len(histories[kind]) == 1
        fingerprint = json.dumps(histories[kind])
        assert "visible_items" not in fingerprint and "rows" not in fingerprint
    for kind in NEIGHBOURS:
        assert without_noise(payloads[kind]) == without_noise(payloads[None])
        assert _normalised_history(histories[kind]) == _normalised_history(histories[None])


@pytest.mark.slow
def test_spark_engine_neighbours(capsys, spark, datasets):
    """Spark: the CLI payload equals DuckDB's (same seed, so the releases above
    hold for Spark too) and is identical on neighbours but for the noisy items
    (two Spark runs; the Spark and DuckDB bounded histograms are compared in
    tests/analytics)."""
    payloads = {}
    for kind in (None, "new_item"):
        outputs = {}
        for engine in ("spark", "duckdb"):
            code, out, err = run(capsys, *_cli_argv("unknown-gumbel", datasets[kind]),
                                 "--engine", engine)
            assert code == 0, err
            outputs[engine] = json.loads(out)
        assert outputs["spark"] == outputs["duckdb"]
        payloads[kind] = outputs["spark"]
    assert without_noise(payloads["new_item"]) == without_noise(payloads[None])
