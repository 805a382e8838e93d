"""The per-user calibration cache (privloss._cache, _calibrate.largest_meeting).

Contract: a calibration keyed by public parameters is stored once and read
back by later calls (and processes) with the same answer; a cached knob is
used only after the full accountant's re-check, so a forged, corrupted or
foreign entry is ignored, searched again and overwritten; the cache can be
turned off; a failed write never fails the calibration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privloss import _cache
from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms.gaussian import (calibrate_gauss_ordered,
                                                    calibrate_known_gaussian,
                                                    calibrate_trunc_gauss)
from privloss.releases.algorithms.known_gumbel import calibrate_known_gumbel
from privloss.releases.algorithms.known_laplace import calibrate_known_laplace
from privloss.releases.algorithms.unknown_gumbel import (calibrate_unknown_gumbel,
                                                          plan_unknown_gumbel)

SRC = str(Path(__file__).resolve().parents[2] / "src")
TOPK = dict(k=10, epsilon=1.0, delta=1e-6, l0_sensitivity=5)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("PRIVLOSS_CACHE_DIR", str(folder))
    return folder


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json")) if folder.exists() else []


def _uncached(**arguments) -> dict:
    """The calibration as computed with the cache off (the reference)."""
    previous = os.environ.get("PRIVLOSS_CACHE_DIR")
    os.environ["PRIVLOSS_CACHE_DIR"] = "off"
    try:
        return calibrate_unknown_gumbel(**arguments)
    finally:
        os.environ["PRIVLOSS_CACHE_DIR"] = previous


def _no_search(monkeypatch):
    """Make any accountant search fail the test (a cache hit runs none)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the calibration searched although the cache held the answer")
    monkeypatch.setattr(_calibrate, "_bracketed_largest", refuse)


def test_second_call_reads_the_cache_without_searching(cache, monkeypatch):
    first = calibrate_unknown_gumbel(**TOPK)
    assert first == _uncached(**TOPK)
    [entry] = _entries(cache)
    assert entry.parent.name == _calibrate.CACHE_NAMESPACE
    stored = json.loads(entry.read_text())
    assert stored["key"]["parameters"]["algorithm"] == "unknown-gumbel"
    assert float.fromhex(stored["value"]) == first["epsilon"]
    _no_search(monkeypatch)
    assert calibrate_unknown_gumbel(**TOPK) == first


def test_another_process_reads_the_same_answer(cache):
    first = calibrate_unknown_gumbel(**TOPK)
    code = ("import sys, json; from privloss.releases.algorithms import _calibrate as c\n"
            "c._bracketed_largest = None  # a search would fail\n"
            "from privloss.releases.algorithms.unknown_gumbel import calibrate_unknown_gumbel\n"
            "print(calibrate_unknown_gumbel(k=10, epsilon=1.0, delta=1e-6, "
            "l0_sensitivity=5)['epsilon'].hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SRC}, check=True)
    assert float.fromhex(out.stdout.strip()) == first["epsilon"]


@pytest.mark.parametrize("forged", [
    lambda good: (good * 4).hex(),          # too large: fails the re-check
    lambda good: "1e308",                   # not a hex float
    lambda good: float("inf").hex(),
    lambda good: (-good).hex(),
    lambda good: 12,                        # not a string
    lambda good: (1e300).hex(),             # absurd: the plan may refuse it
])
def test_a_forged_value_is_ignored_and_overwritten(cache, monkeypatch, forged):
    good = calibrate_unknown_gumbel(**TOPK)["epsilon"]
    [entry] = _entries(cache)
    stored = json.loads(entry.read_text())
    stored["value"] = forged(good)
    entry.write_text(json.dumps(stored))
    again = calibrate_unknown_gumbel(**TOPK)
    assert again["epsilon"] == good
    assert float.fromhex(json.loads(entry.read_text())["value"]) == good


def test_a_forged_value_never_gives_events_beyond_the_target(cache):
    """However the entry is forged, the events used compose within the target."""
    good = calibrate_unknown_gumbel(**TOPK)["epsilon"]
    [entry] = _entries(cache)
    for factor in (1.0001, 1.01, 2.0, 100.0):
        stored = json.loads(entry.read_text())
        stored["value"] = (good * factor).hex()
        entry.write_text(json.dumps(stored))
        chosen = calibrate_unknown_gumbel(**TOPK)
        events = plan_unknown_gumbel(**chosen).events
        assert _calibrate.spent(events, 1e-6, "adaptive").value <= 1.0
        assert chosen["epsilon"] == good


@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe not utf-8", b"[1, 2]",
                                     b'{"key": 1, "value": "0x1p-4"}', b"x" * 100_000,
                                     b"[" * 60_000, b'{"key": ' + b"[" * 60_000])
def test_a_corrupted_file_is_a_miss(cache, content):
    good = calibrate_unknown_gumbel(**TOPK)
    [entry] = _entries(cache)
    entry.write_bytes(content)
    assert calibrate_unknown_gumbel(**TOPK) == good
    assert json.loads(entry.read_text())["value"] == good["epsilon"].hex()


def test_an_entry_for_another_key_is_a_miss(cache):
    """A file named by the key's hash but holding another key (a collision, a
    copied file) is not used, even when its value would pass the re-check."""
    good = calibrate_unknown_gumbel(**TOPK)
    [entry] = _entries(cache)
    stored = json.loads(entry.read_text())
    stored["key"]["parameters"]["k"] = 11
    stored["value"] = (good["epsilon"] / 2).hex()      # valid, but not this search's answer
    entry.write_text(json.dumps(stored))
    assert calibrate_unknown_gumbel(**TOPK) == good


def test_different_public_parameters_are_different_entries(cache):
    a = calibrate_unknown_gumbel(**TOPK)
    b = calibrate_unknown_gumbel(**{**TOPK, "epsilon": 0.5})
    c = calibrate_unknown_gumbel(**{**TOPK, "k": 9})
    d = calibrate_unknown_gumbel(**TOPK, interaction="fully-adaptive")   # same model inside
    e = calibrate_unknown_gumbel(**{**TOPK, "l0_sensitivity": 6})   # same events, own entry
    assert len({a["epsilon"], b["epsilon"], c["epsilon"]}) == 3
    assert d == a
    assert e["epsilon"] == a["epsilon"] and e["l0_sensitivity"] == 6
    assert len(_entries(cache)) == 4


def test_code_changes_change_the_key(cache, monkeypatch):
    calibrate_unknown_gumbel(**TOPK)
    monkeypatch.setattr(_cache, "code_fingerprint", lambda: "another version")
    calibrate_unknown_gumbel(**TOPK)
    assert len(_entries(cache)) == 2


@pytest.mark.parametrize("value", ["off", "OFF", "", "none", "0"])
def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv("PRIVLOSS_CACHE_DIR", value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert _cache.cache_directory() is None
    calibrate_unknown_gumbel(**TOPK)
    assert list(tmp_path.rglob("*.json")) == []


def test_default_folders(tmp_path, monkeypatch):
    monkeypatch.delenv("PRIVLOSS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.cache_directory() == tmp_path / "xdg" / "privloss"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache.cache_directory() == tmp_path / "home" / ".cache" / "privloss"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _cache.cache_directory() == tmp_path / "home" / ".cache" / "privloss"
    monkeypatch.setenv("PRIVLOSS_CACHE_DIR", str(tmp_path / "mine"))
    assert _cache.cache_directory() == tmp_path / "mine"


def test_an_unwritable_folder_never_fails_the_calibration(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PRIVLOSS_CACHE_DIR", str(blocker / "cache"))
    assert calibrate_unknown_gumbel(**TOPK) == _uncached(**TOPK)
    assert _cache.write_entry("calibration", {"a": 1}, "0x1p-4") is False
    assert _cache.read_entry("calibration", {"a": 1}) is None


def test_a_failed_write_leaves_no_temporary_file(cache, monkeypatch):
    def failing_replace(source, target):
        raise OSError("disk full")
    monkeypatch.setattr(_cache.os, "replace", failing_replace)
    assert _cache.write_entry("calibration", {"a": 1}, "0x1p-4") is False
    assert [p.name for p in cache.rglob("*")] == ["calibration"]


def test_keys_json_cannot_spell_are_not_cached(cache):
    assert _cache.write_entry("calibration", {"a": object()}, "v") is False
    assert _cache.write_entry("calibration", {"a": float("nan")}, "v") is False
    assert _cache.read_entry("calibration", {"a": object()}) is None
    assert _entries(cache) == []


@pytest.mark.parametrize("calibrate, arguments", [
    (calibrate_known_gumbel, dict(k=5, epsilon=1.0, delta=1e-6)),
    (calibrate_known_laplace, dict(epsilon=1.0, delta=1e-6, l0_sensitivity=4)),
    (calibrate_known_gaussian, dict(epsilon=1.0, delta=1e-6, l0_sensitivity=4)),
    (calibrate_gauss_ordered, dict(k=5, epsilon=1.0, delta=1e-6, known_domain=True)),
    (calibrate_gauss_ordered, dict(k=5, epsilon=1.0, delta=1e-6, known_domain=False,
                                   l0_sensitivity=3)),
    (calibrate_trunc_gauss, dict(epsilon=1.0, delta=1e-6, l0_sensitivity=4)),
])
def test_every_searched_algorithm_caches_the_same_answer(cache, monkeypatch, calibrate,
                                                         arguments):
    first = calibrate(**arguments)
    assert len(_entries(cache)) == 1
    _no_search(monkeypatch)
    assert calibrate(**arguments) == first


def test_the_registry_path_of_the_cli_and_the_service_uses_the_cache(cache, monkeypatch):
    """``AlgorithmSpec.events`` / ``run`` (what ``api.request`` calls for the CLI
    and the service) calibrate through the cache: a new process finds the entry."""
    from privloss.releases.algorithms.registry import ALGORITHMS

    spec = ALGORITHMS["unknown-gumbel"]
    arguments = dict(epsilon=0.8125, delta=1e-7, k=3, l0_sensitivity=2)
    events = spec.events(**arguments)
    [entry] = _entries(cache)
    code = ("from privloss.releases.algorithms import _calibrate as c\n"
            "c._bracketed_largest = None  # a search would fail\n"
            "from privloss.releases.algorithms.registry import ALGORITHMS\n"
            "print(ALGORITHMS['unknown-gumbel'].events(epsilon=0.8125, delta=1e-7, k=3, "
            "l0_sensitivity=2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SRC}, check=True)
    assert out.stdout.strip() == repr(events)
    assert entry.exists()


def test_a_fifo_in_place_of_an_entry_is_a_miss_and_cannot_hang(cache):
    key = {"a": 1}
    _, path = _cache._located("calibration", key)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    assert _cache.read_entry("calibration", key) is None      # returns at once
    assert _cache.write_entry("calibration", key, "0x1p-4") is True
    assert _cache.read_entry("calibration", key) == "0x1p-4"
