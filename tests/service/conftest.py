"""Fixtures for the query-service tests: a small synthetic dataset, a config
with two datasets and three analysts, cheap argon2 hashes (the parameters are
read from each hash, so verification is as in production, only faster)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

def need_service_extra() -> None:
    """Skip the calling test module, saying why, without the 'service' extra."""
    for module in ("fastapi", "argon2", "httpx", "jinja2", "multipart"):
        pytest.importorskip(module, reason=f"needs the 'service' extra ({module}): "
                                           f"pip install '.[service]'")


#: test-only argon2id cost (production: argon2-cffi's defaults)
CHEAP = dict(time_cost=1, memory_cost=1024, parallelism=1)


def cheap_hasher():
    from argon2 import PasswordHasher
    return PasswordHasher(**CHEAP)


def write_config(directory: Path, *, ledger: str = "budget.sqlite", rate: float = 1000.0,
                 burst: int = 1000, budget=(1.0, 1e-6), analysts: int = 0,
                 extra: str = "") -> Path:
    """Config: dataset ``views`` (alice, bob, carol; bob capped) and ``secret``
    (bob only); ``analysts`` more analysts ``a0``, ``a1``, ... on ``views``."""
    from privloss.service.demo import write_demo_data

    data = directory / "views.parquet"
    if not data.exists():
        write_demo_data(data, rows=20_000)
    lines = [
        "[service]", f'ledger = "{ledger}"', f"rate = {rate}", f"burst = {burst}",
        "max_body_bytes = 4096", extra, "",
        "[[dataset]]", 'name = "views"', 'path = "views.parquet"', 'user_column = "user_id"',
        'columns = ["article", "country"]', f"epsilon = {budget[0]}", f"delta = {budget[1]}", "",
        "[[dataset]]", 'name = "secret"', 'path = "views.parquet"', 'user_column = "user_id"',
        'columns = ["industry"]', "epsilon = 1.0", "delta = 1e-6", "",
        "[[analyst]]", 'name = "alice"', 'datasets = ["views"]', "",
        "[[analyst]]", 'name = "bob"', 'datasets = ["views", "secret"]', "epsilon = 0.25",
        "delta = 1e-6", "",
        "[[analyst]]", 'name = "carol"', 'datasets = ["views"]', ""]
    for number in range(analysts):
        lines += ["[[analyst]]", f'name = "a{number}"', 'datasets = ["views"]', ""]
    path = directory / "service.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def issue_tokens(config) -> dict:
    from privloss.service.auth import add_analyst
    hasher = cheap_hasher()
    return {name: add_analyst(config.tokens, name, hasher=hasher) for name in config.analysts}


@pytest.fixture()
def service(tmp_path):
    """``(client, tokens, config, app)``: a TestClient on a fresh service."""
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    config = load_config(write_config(tmp_path))
    tokens = issue_tokens(config)
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, tokens, config, app


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerProcess:
    """``privloss serve --config`` in a subprocess on a free port."""

    def __init__(self, config_path: Path, *, workers: int = 1, ledger: str | None = None):
        self.config_path, self.workers, self.ledger = config_path, workers, ledger
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self, timeout: float = 90.0) -> "ServerProcess":
        import httpx
        argv = [sys.executable, "-m", "privloss.cli.main", "serve", "--config",
                str(self.config_path), "--port", str(self.port), "--workers", str(self.workers)]
        if self.ledger is not None:
            argv += ["--ledger", self.ledger]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(self.url + "/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("server did not start in time")

    def kill(self) -> None:
        """kill -9 the server (and its worker processes)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=30)
