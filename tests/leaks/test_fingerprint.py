"""The keyed data fingerprint: where the key lives, and what the MAC covers."""

import os
import stat

import pytest

from privloss.query import fingerprint


def test_key_file_is_created_once_with_mode_0600(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLOSS_HOME", str(tmp_path / "home"))
    key = fingerprint.fingerprint_key()
    path = tmp_path / "home" / "fingerprint.key"
    assert fingerprint.key_path() == path and len(key) == 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert fingerprint.fingerprint_key() == key          # read back, not replaced
    assert [p.name for p in path.parent.iterdir()] == ["fingerprint.key"]   # no temp left


def test_environment_key_wins_and_changes_every_mac(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLOSS_HOME", str(tmp_path))
    first = fingerprint.keyed_mac("sql", "SELECT 1")
    monkeypatch.setenv(fingerprint.KEY_ENVIRONMENT, "ab" * 32)
    second = fingerprint.keyed_mac("sql", "SELECT 1")
    assert first != second and len(second) == 64
    assert fingerprint.keyed_mac("sql", "SELECT 1") == second
    assert fingerprint.keyed_mac("sq", "lSELECT 1") != second     # parts are framed
    monkeypatch.setenv(fingerprint.KEY_ENVIRONMENT, "abcd")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        fingerprint.keyed_mac("x")


def test_snapshot_macs_the_bytes_it_copies(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVLOSS_HOME", str(tmp_path / "home"))
    data = tmp_path / "a*[1].csv"
    data.write_text("user,item\nu1,a\n")
    with fingerprint.snapshot_files([data]) as first:
        [copy] = first.files
        assert open(copy).read() == "user,item\nu1,a\n"
        assert not fingerprint.has_glob_characters(copy) and copy.endswith(".csv")
        assert stat.S_IMODE(os.stat(os.path.dirname(copy)).st_mode) == 0o700
    assert not os.path.exists(copy)
    with fingerprint.snapshot_files([data]) as again:
        assert again.mac == first.mac
    data.write_text("user,item\nu1,b\n")
    with fingerprint.snapshot_files([data]) as changed:
        assert changed.mac != first.mac
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        fingerprint.snapshot_files([fifo])
