"""The service and the anchor: a running server refuses (503, nothing charged,
nothing computed) once newest releases were deleted under it (the red team's
T1 on a running server), and a server does not start on a ledger that is
behind its witness, lost a dataset, or was deleted (T2), naming what it found."""

from __future__ import annotations

import os
import sqlite3

import pytest

from tests.service.conftest import bearer, issue_tokens, need_service_extra, write_config

need_service_extra()

TOPK = {"column": "article", "epsilon": 0.1, "delta": 1e-7, "k": 5, "l0": 3, "d_bar": 20}


@pytest.fixture()
def running(tmp_path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    config = load_config(write_config(tmp_path))
    tokens = issue_tokens(config)
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, tokens, config


def _release(client, tokens, label):
    return client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                       json={**TOPK, "label": str(label)})


def _delete_newest(path: str, keep: int) -> None:
    from tests.ledger._edits import untriggered
    with untriggered(path) as conn:
        conn.execute("DELETE FROM releases WHERE dataset = 'views' AND id NOT IN (SELECT id "
                     "FROM releases WHERE dataset = 'views' ORDER BY id LIMIT ?)", (keep,))
        conn.execute("UPDATE datasets SET recorded = ?, head = (SELECT chain FROM releases "
                     "WHERE dataset = 'views' ORDER BY id DESC LIMIT 1) WHERE name = 'views'",
                     (keep,))


def _rows(path: str) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM releases NOT INDEXED").fetchone()[0]


def test_the_service_anchors_its_ledger(running):
    _, _, config = running
    assert os.path.exists(config.ledger + ".witness")
    assert os.stat(config.ledger + ".key").st_mode & 0o077 == 0


def test_a_suffix_deleted_under_a_running_server_is_refused_before_any_charge(running):
    from privloss.budget import LedgerIntegrityError
    from privloss.service.app import create_app

    client, tokens, config = running
    for label in range(3):
        assert _release(client, tokens, label).status_code == 200
    _delete_newest(config.ledger, keep=1)
    refused = _release(client, tokens, "post-deletion-label")
    assert refused.status_code == 503, refused.text
    assert _rows(config.ledger) == 1                    # nothing charged, nothing computed
    history = client.get("/v1/datasets/views/history", headers=bearer(tokens["alice"]))
    assert history.status_code == 200 and "post-deletion-label" not in history.text
    # a request thread that opens its ledger now: a 503 too, not a 500
    import threading
    app = client.app
    app.state.service._local = threading.local()
    fresh = _release(client, tokens, "post-deletion-label-2")
    assert fresh.status_code == 503 and "integrity" in fresh.json()["detail"], fresh.text
    assert _rows(config.ledger) == 1
    with pytest.raises(LedgerIntegrityError, match="'views' has 1 release.*behind by 2"):
        create_app(config)                              # a restart refuses, naming it


def test_a_server_does_not_recreate_a_deleted_dataset_or_ledger(running):
    from privloss.budget import LedgerIntegrityError
    from privloss.service.app import create_app

    client, tokens, config = running
    assert _release(client, tokens, 1).status_code == 200
    from tests.ledger._edits import untriggered
    with untriggered(config.ledger) as conn:
        conn.execute("DELETE FROM outcomes")
        conn.execute("DELETE FROM releases WHERE dataset = 'views'")
        conn.execute("DELETE FROM datasets WHERE name = 'views'")
    with pytest.raises(LedgerIntegrityError, match="'views' is missing"):
        create_app(config)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(config.ledger + suffix):
            os.unlink(config.ledger + suffix)
    with pytest.raises(LedgerIntegrityError, match="was deleted"):
        create_app(config)
    assert not os.path.exists(config.ledger)


def test_privloss_serve_refuses_to_start_in_one_line(running, capsys):
    from privloss.cli.main import main

    client, tokens, config = running
    assert _release(client, tokens, 1).status_code == 200
    assert _release(client, tokens, 2).status_code == 200
    _delete_newest(config.ledger, keep=1)
    capsys.readouterr()
    assert main(["serve", "--config", str(config.path), "--port", "0"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "behind by 1" in err[0] and "'views'" in err[0], err
