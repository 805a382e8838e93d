"""DuckDB memory limit and spill directory on privloss's own connections
(issue 13 item 7): results do not depend on the limit, a private spill
directory is removed afterwards, a bad setting is refused by name."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from privloss.query import bounded_histogram
from privloss.query.engines.duckdb_engine import (DEFAULT_MEMORY_LIMIT, MEMORY_LIMIT_VARIABLE,
                                                      TEMP_DIRECTORY_VARIABLE, memory_settings)

pa = pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")


def _rows(n_rows=200_000, seed=3):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n_rows // 8, size=n_rows)
    items = np.minimum(rng.zipf(1.3, size=n_rows), 5000)
    return pa.table({"user": [str(u) for u in users], "item": [f"i{i}" for i in items]})


def test_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv(MEMORY_LIMIT_VARIABLE, raising=False)
    monkeypatch.delenv(TEMP_DIRECTORY_VARIABLE, raising=False)
    assert memory_settings() == (DEFAULT_MEMORY_LIMIT, None)
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "2GB")
    monkeypatch.setenv(TEMP_DIRECTORY_VARIABLE, "/somewhere")
    assert memory_settings() == ("2GB", "/somewhere")


def test_bad_memory_limit_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "lots")
    with pytest.raises(ValueError, match=MEMORY_LIMIT_VARIABLE):
        bounded_histogram(_rows(100), user_column="user", item_column="item")


def test_spilling_gives_the_same_result(monkeypatch, tmp_path):
    table = _rows()
    kwargs = dict(user_column="user", item_column="item", l0=3, linf=2, top=50, seed=4)
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "4GB")
    roomy = bounded_histogram(table, **kwargs)
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "24MB")
    monkeypatch.setenv(TEMP_DIRECTORY_VARIABLE, str(tmp_path / "spill"))
    tight = bounded_histogram(table, **kwargs)
    assert tight.items == roomy.items and np.array_equal(tight.counts, roomy.counts)
    assert (tight.total_items, tight.next_count) == (roomy.total_items, roomy.next_count)


def test_private_spill_directory_is_removed(monkeypatch, tmp_path):
    monkeypatch.delenv(TEMP_DIRECTORY_VARIABLE, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    bounded_histogram(_rows(1000), user_column="user", item_column="item", l0=2, seed=1)
    with pytest.raises(ValueError):   # an error while reading also cleans up
        bounded_histogram(_rows(10), user_column="nobody", item_column="item")
    assert list(tmp_path.iterdir()) == []
