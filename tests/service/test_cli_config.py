"""``privloss serve`` command line and configuration checks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.service.conftest import need_service_extra

need_service_extra()

from privloss.cli.main import main


def test_add_analyst_prints_token_once_and_stores_hash(tmp_path, capsys, monkeypatch):
    import privloss.service.auth as auth
    from tests.service.conftest import cheap_hasher, write_config

    monkeypatch.setattr(auth, "_hasher", cheap_hasher)
    path = write_config(tmp_path)
    assert main(["serve", "add-analyst", "alice", "--config", str(path)]) == 0
    token = capsys.readouterr().out.strip()
    assert re.fullmatch(r"plk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", token)
    from privloss.service.auth import TokenStore
    from privloss.service.config import load_config
    store = TokenStore(load_config(path).tokens)
    assert store.verify(token) == "alice" and store.verify(token + "x") is None
    # re-issuing revokes the old token
    assert main(["serve", "add-analyst", "alice", "--config", str(path)]) == 0
    newer = capsys.readouterr().out.strip()
    time.sleep(0.01)
    assert store.verify(token) is None and store.verify(newer) == "alice"
    assert main(["serve", "add-analyst", "mallory", "--config", str(path)]) == 2
    assert "not declared" in capsys.readouterr().err


@pytest.mark.parametrize("old, new, named", [
    ("epsilon = 1.0", "epsilon = -1.0", "epsilon"),
    ('columns = ["article", "country"]', 'columns = ["article", "user_id"]', "privacy-unit"),
    ('columns = ["article", "country"]', 'columns = ["article", "a b"]', "columns"),
    ('user_column = "user_id"', "user_column = 'user_id\"; DROP'", "user_column"),
    ('name = "views"', 'name = "views/../x"', "name"),
    ("rate = 1000.0", "rate = 0", "rate"),
    ("[service]", "[service]\nshell = 'rm -rf /'", "shell"),
    ('columns = ["article", "country"]', 'columns = ["article", "article"]', "more than once"),
    ("[service]", "[service]\ntrusted_proxies = ['10.0.0.0/33']", "trusted_proxies"),
    ("[service]", "[service]\nsession_hours = 0", "session_hours"),
])
def test_bad_config_is_exit_2_naming_the_field(tmp_path, capsys, old, new, named):
    from tests.service.conftest import write_config

    path = write_config(tmp_path)
    path.write_text(path.read_text().replace(old, new, 1))
    assert main(["serve", "--config", str(path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and named in error, error


def test_serve_needs_config_or_demo(capsys):
    assert main(["serve"]) == 2
    assert "--config" in capsys.readouterr().err


def test_demo_prints_token_and_url_then_serves(tmp_path):
    import httpx

    from tests.service.conftest import free_port

    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "privloss.cli.main", "serve", "--demo",
                                "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = [process.stdout.readline() for _ in range(4)]
        token = re.search(r"analyst token: (\S+)", "".join(lines)).group(1)
        assert f"http://127.0.0.1:{port}/" in "".join(lines)
        deadline = time.monotonic() + 90
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/v1/datasets",
                                     headers={"Authorization": f"Bearer {token}"}, timeout=30)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.3)
        assert response.status_code == 200
        assert response.json()["datasets"][0]["name"] == "engagements"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
