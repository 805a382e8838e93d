"""The harness catches the audit's leaks (a)-(c): each fix undone for one test
(monkeypatched back), the harness must report a difference."""

import json
import logging

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pandas")

from tests.leaks import harness  # noqa: E402
from tests.leaks.test_greybox import PATHS  # noqa: E402


def _views(tmp_path, path, kinds):
    form, public, _, runner, masks = PATHS[path]
    views = []
    for kind in kinds:
        directory = tmp_path / str(kind)
        directory.mkdir()
        data = directory / f"data.{form}"
        (harness.write_csv if form == "csv" else harness.write_parquet)(data, kind)
        seen = runner(directory, data)
        views.append((harness.masked(seen, public_keys=public, run_directory=str(directory),
                                     text_masks=masks), seen))
    return views


def test_a_engine_text_on_stderr(tmp_path, monkeypatch):
    import privloss  # noqa: F401 - its NullHandler is installed first, then removed here

    monkeypatch.setattr(logging.getLogger("privloss"), "handlers", [])
    (base, _), (other, _) = _views(tmp_path, "lib-failing-sql", (None, "one_row"))
    found = harness.differences(base, other)
    assert found and "secret=" in found[0] and found[0].startswith("/stderr")


def test_b_malformed_row_read_only_when_computing(tmp_path, monkeypatch):
    import dataclasses

    from privloss.api import protocol
    from privloss.query.engines import duckdb_engine

    original = duckdb_engine._file_relation
    monkeypatch.setattr(duckdb_engine, "_file_relation",
                        lambda duckdb, con, inp, names, scan=False:
                        original(duckdb, con, inp, names, False))
    # the fix now also lives in the read-once path (the whole file loaded before
    # the charge): undo it too, so the files are read lazily, as before the fix
    snapshot = protocol.snapshot_path
    monkeypatch.setattr(protocol, "snapshot_path", lambda path, snapshots: (
        lambda pair: (dataclasses.replace(pair[0], tables=None), pair[1]))(
            snapshot(path, snapshots)))
    (early, _), (late, _) = _views(tmp_path, "cli-topk-json-ledger",
                                   ("malformed_early", "malformed_late"))
    found = harness.differences(early, late)
    assert any(line.startswith("/stderr") for line in found)
    assert any("releases" in line for line in found)          # one charged, one not


def test_c_float_keys_not_normalised(tmp_path, monkeypatch):
    from privloss.query.engines import duckdb_engine

    monkeypatch.setattr(duckdb_engine, "floats_as_integer_text",
                        lambda duckdb, relation, names: (relation, ()))
    (base, seen), (other, theirs) = _views(tmp_path, "parquet-lib-histogram-domain",
                                           (None, "type_change"))
    gaps = harness.noisy_gaps(json.loads(seen.stdout), json.loads(theirs.stdout))
    assert max(gaps.values()) > 1
    (tmp_path / "topk").mkdir()
    (base, _), (other, _) = _views(tmp_path / "topk", "parquet-cli-topk-json",
                                   (None, "type_change"))
    assert any("DpSelected" in line for line in harness.differences(base, other))


def test_masking_keeps_types_and_public_keys():
    mask = harness.mask_json
    release = {"items": [{"item": "a", "count": 3, "ci95": [1, 5]}], "spent": {"epsilon": 1.0}}
    same = {"items": [{"item": "a", "count": 9, "ci95": [7, 11]}], "spent": {"epsilon": 1.0}}
    floated = {"items": [{"item": "a", "count": 9.0, "ci95": [7, 11]}], "spent": {"epsilon": 1.0}}
    assert not harness.differences(mask(release, public_keys=True), mask(same, public_keys=True))
    assert harness.differences(mask(release, public_keys=True), mask(floated, public_keys=True))
    other_key = {"items": [{"item": "b", "count": 3, "ci95": [1, 5]}], "spent": {"epsilon": 1.0}}
    assert harness.differences(mask(release, public_keys=True), mask(other_key, public_keys=True))
    assert not harness.differences(mask(release, public_keys=False),
                                   mask(other_key, public_keys=False))
    typed = {"items": [{"item": 1.0, "count": 3, "ci95": [1, 5]}], "spent": {"epsilon": 1.0}}
    assert harness.differences(mask(release, public_keys=False), mask(typed, public_keys=False))
    empty = {"items": [], "spent": {"epsilon": 1.0}}
    assert not harness.differences(mask(empty, public_keys=False), mask(typed, public_keys=False))
    spent = {"items": [], "spent": {"epsilon": 2.0}}
    assert harness.differences(mask(empty, public_keys=False), mask(spent, public_keys=False))
    assert harness.mask_text("failed (error id 0a1b2c3d) in /tmp/privloss-data-x1y2z3w4/p") == \
        "failed (error id <ID>) in /tmp/<TMP>/p"
