"""Every leak test gets its own fingerprint key home (never the user's ~/.config)."""

import pytest


@pytest.fixture(autouse=True)
def _private_fingerprint_home(tmp_path_factory, monkeypatch):
    monkeypatch.delenv("PRIVLOSS_FINGERPRINT_KEY", raising=False)
    monkeypatch.setenv("PRIVLOSS_HOME", str(tmp_path_factory.getbasetemp() / "privloss-home"))
