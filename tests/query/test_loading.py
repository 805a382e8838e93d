"""Files read once into the DuckDB engine (issue 19 item 3, issue 22 item 6).

A :class:`FileInput` with :class:`LoadedTables` is read whole into a table
once; with ``prepare=True`` count-only plans read materialised coded pairs.
Every statistic must be the one the plain file read gives, for every seed,
bounding and column kind (the pure-Python reference as the third witness)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from privloss.query import bounded_histogram
from privloss.query.engines import duckdb_engine, histogram_plan
from privloss.query.engines.reference import reference_histogram
from privloss.query.errors import ComputationFailed
from privloss.query.inputs import FileInput, LoadedTables, resolve_input
from privloss.query.plan import Bounding, QueryPlan

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CONFIGS = [dict(l0=None, linf=1, top=None), dict(l0=1, linf=1, top=None),
           dict(l0=3, linf=2, top=None), dict(l0=2, linf=5, top=4),
           dict(l0=40, linf=1, top=100)]


def _rows(seed, kind):
    rng = random.Random(seed)
    rows = []
    for _ in range(600):
        user, item = rng.randrange(50), min(int(rng.paretovariate(1.2)), 20)
        if kind == "text":
            rows.append((f"user {user}", f"it\u00e9m'{item}" if item % 3 else str(item)))
        elif kind == "integer":
            rows.append((user * 7919 - 10 ** 6, item))
        else:                       # float items (one null makes pandas' ints floats)
            rows.append((str(user), float(item) if item % 5 else None))
    return rows


def _file(tmp_path, rows, name="rows.parquet") -> Path:
    path = tmp_path / name
    pq.write_table(pa.table({"user": [r[0] for r in rows], "item": [r[1] for r in rows]}),
                   path)
    return path


def _loaded(path, prepare):
    return dataclasses.replace(resolve_input(path), tables=LoadedTables(prepare=prepare))


def _same(a, b):
    assert a.items == b.items and np.array_equal(a.counts, b.counts)
    assert (a.total_items, a.next_count) == (b.total_items, b.next_count)


@pytest.mark.parametrize("kind", ["text", "integer", "float"])
def test_loaded_and_prepared_equal_the_file(tmp_path, kind):
    rows = _rows(1, kind)
    path = _file(tmp_path, rows)
    once, prepared = _loaded(path, False), _loaded(path, True)
    for config in CONFIGS:
        for seed in range(4):
            plain = bounded_histogram(path, user_column="user", item_column="item", seed=seed,
                                      **config)
            for source in (once, prepared):
                _same(bounded_histogram(source, user_column="user", item_column="item",
                                        seed=seed, **config), plain)
            if kind != "float":
                _same(plain, reference_histogram(rows, seed=seed, **config))
    # one table per input, one pairs table per (unit, columns) whatever the bounding
    assert len(once.tables) == len(prepared.tables) == 1
    loaded = duckdb_engine.load(prepared)
    assert len(loaded._pairs) == 1


def test_prepared_choice_by_one_aggregation_equals_the_windows(tmp_path, monkeypatch):
    """On coded pairs the l0 choice is one top-n aggregation (``_sql.
    _coded_group_choice``) on BIGINT keys, or HUGEINT keys for a table of
    ``2^NARROW_KEY_BITS`` pairs or more; with ``max_groups`` at or above
    ``TOP_N_LIMIT`` the windows of the plain path choose: all keep the same
    pairs, ties on the key and the code included (broken by the
    canonical-integer rule)."""
    from privloss.query.engines import _sql
    from tests.query.test_integer_text import _code_tie

    text, twin = _code_tie()
    rows = _rows(4, "text") + [("t1", twin), ("t1", text), ("t2", text), ("t2", twin),
                               ("t3", twin)]
    path = _file(tmp_path, rows)
    configs = [dict(l0=1, linf=1, top=None), dict(l0=3, linf=2, top=None),
               dict(l0=2, linf=5, top=4)]
    expected = {}
    for config in configs:
        for seed in range(3):
            plain = bounded_histogram(path, user_column="user", item_column="item",
                                      seed=seed, **config)
            _same(plain, reference_histogram(rows, seed=seed, **config))
            expected[repr((config, seed))] = plain
            _same(bounded_histogram(_loaded(path, True), user_column="user",
                                    item_column="item", seed=seed, **config), plain)
    for name, value in (("NARROW_KEY_BITS", 0),       # every table: HUGEINT keys
                        ("TOP_N_LIMIT", 1)):          # every l0: the windows
        monkeypatch.setattr(_sql, name, value)
        for config in configs:
            for seed in range(3):
                _same(bounded_histogram(_loaded(path, True), user_column="user",
                                        item_column="item", seed=seed, **config),
                      expected[repr((config, seed))])


def test_prepared_with_domain_where_values_and_two_columns(tmp_path):
    from privloss.query.spec import ValueGrid
    from privloss.query.sql import parse_where

    rng = random.Random(5)
    table = pa.table({"user": [f"u{rng.randrange(40)}" for _ in range(800)],
                      "item": [f"i{rng.randrange(12)}" for _ in range(800)],
                      "country": [rng.choice(["DE", "FR", "1", "02"]) for _ in range(800)],
                      "price": [rng.uniform(-5, 120) for _ in range(800)]})
    path = tmp_path / "shop.parquet"
    pq.write_table(table, path)
    prepared = _loaded(path, True)
    for seed in range(3):
        for kwargs in (dict(domain=["i1", "i2", "zz"]), dict(top=3),
                       dict(where=parse_where("country IN ('DE', '1')"))):
            _same(bounded_histogram(prepared, user_column="user", item_column="item", l0=2,
                                    seed=seed, **kwargs),
                  bounded_histogram(path, user_column="user", item_column="item", l0=2,
                                    seed=seed, **kwargs))
        for value_columns, grids in (((), {}), (("price",), {"price": ValueGrid(2, 0, 400)})):
            def plan(source):
                return QueryPlan(source=source, privacy_unit="user", by=("item", "country"),
                                 bounding=Bounding(2, 3), seed=seed,
                                 value_columns=value_columns, grids=grids)
            def groups(source):       # without top the engine's order is arbitrary
                return sorted(duckdb_engine.run(plan(source)).groups, key=repr)
            assert groups(prepared) == groups(path)


def test_load_once_close_and_failures(tmp_path, monkeypatch):
    path = _file(tmp_path, _rows(2, "text"))
    source = _loaded(path, True)
    reads = []
    original = duckdb_engine.LoadedFile.read.__func__

    def counting(cls, *args, **kwargs):
        reads.append(1)
        return original(cls, *args, **kwargs)
    monkeypatch.setattr(duckdb_engine.LoadedFile, "read", classmethod(counting))
    duckdb_engine.prepare(histogram_plan(source, user_column="user", item_column="item"))
    for seed in range(3):
        bounded_histogram(source, user_column="user", item_column="item", l0=2, seed=seed)
    assert reads == [1]
    loaded = duckdb_engine.load(source)
    source.tables.close()
    assert len(source.tables) == 0
    with pytest.raises(duckdb.Error):           # closed with its tables
        loaded.connection.execute("SELECT 1")
    # a malformed CSV: ValueError (fixed text) before a charge, ComputationFailed after,
    # and a failed read is not kept
    bad = tmp_path / "bad.csv"
    bad.write_text("user,item\nu1,a\nu2,b,extra\n")
    for scan, error in ((True, ValueError), (False, ComputationFailed)):
        inp = dataclasses.replace(resolve_input(bad), tables=LoadedTables())
        with pytest.raises(error) as raised:
            duckdb_engine.load(inp, scan)
        assert "extra" not in str(raised.value) and len(inp.tables) == 0


def test_the_api_reads_a_csv_file_once(tmp_path, monkeypatch):
    """The check of every row before the charge and the release read one
    table: the file is parsed once (issue 22 item 6)."""
    import privloss

    path = tmp_path / "rows.csv"
    path.write_text("user,item\n" + "".join(f"u{i % 400},i{i % 5}\n" for i in range(2000)))
    monkeypatch.setenv("PRIVLOSS_HOME", str(tmp_path / "home"))
    reads, relations = [], []
    original = duckdb_engine.LoadedFile.read.__func__

    def counting(cls, duckdb_module, inp, *args, **kwargs):
        reads.append(inp.names)
        return original(cls, duckdb_module, inp, *args, **kwargs)
    monkeypatch.setattr(duckdb_engine.LoadedFile, "read", classmethod(counting))
    monkeypatch.setattr(duckdb_engine, "_file_relation",
                        lambda *a, **k: relations.append(1) or pytest.fail("read again"))
    release = privloss.topk(str(path), privacy_unit="user", item="item", k=2, epsilon=5,
                            delta=1e-6, l0=2, seed=1)
    assert len(reads) == 1 and relations == []
    assert release.items                       # something was counted
    # the private copy, and its loaded table, are gone with the release
    assert not Path(reads[0][0]).exists()


def test_fileinput_tables_do_not_change_equality(tmp_path):
    path = _file(tmp_path, _rows(3, "integer"))
    plain = resolve_input(path)
    assert isinstance(plain, FileInput) and plain.tables is None
    assert _loaded(path, True) == plain and hash(_loaded(path, False)) == hash(plain)


CSV_SHAPES = {
    "quoted": 'user,item\n"u1","a\nb"\nu2,"c,d"\n"u""3",e\n',
    "blank line": "user,item\nu1,a\n\nu2,b\n",
    "crlf": "user,item\r\nu1,a\r\nu2,b\r\n",
    "no final newline": "user,item\nu1,a\nu2,b",
    "header only": "user,item\n",
    "extra field": "user,item\nu1,a\nu2,b,extra\n",
    "missing field": "user,item\nu1,a\nu2\n",
    "comment-like line": "# note\nuser,item\nu1,a\n",
    "late extra field": "user,item\n" + "".join(f"u{i},i{i % 7}\n" for i in range(30000))
                        + "u9,x,extra\n" + "u1,a\n",
    "bad UTF-8 in a column not read": b"user,item,note\nu1,a,ok\nu2,b,\xff\xfe no\n",
    "late bad UTF-8 in a column not read": "".join(
        ["user,item,note\n"] + [f"u{i},i{i % 7},ok\n" for i in range(30000)]).encode()
        + b"u9,x,\xff\xfe\nu1,a,ok\n",
    "a third column": "user,note,item\nu1,x,a\nu2,y,b\n",
}


@pytest.mark.parametrize("shape", sorted(CSV_SHAPES))
def test_a_loaded_csv_reads_as_the_file_does(tmp_path, shape):
    """The table read once holds what the engine's file reader reads, and a
    file it refuses is refused, before any row is counted."""
    path = tmp_path / "rows.csv"
    text = CSV_SHAPES[shape]
    path.write_bytes(text if isinstance(text, bytes) else text.encode())

    def outcome(plan):
        try:
            duckdb_engine.check(plan)
            return sorted(duckdb_engine.run(plan).groups, key=repr)
        except ValueError as error:     # the message names no data, only columns
            return str(error).split("; error id")[0]
    for item in ("item", "missing"):
        plan = histogram_plan(path, user_column="user", item_column=item, l0=None)
        expected = outcome(plan)
        for prepare in (True, False):     # all columns, or only the plan's
            loaded = dataclasses.replace(plan, source=_loaded(path, prepare))
            assert outcome(loaded) == expected
