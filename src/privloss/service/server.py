"""Application factory for server processes started by uvicorn (``--workers``).

``PRIVLOSS_SERVICE_CONFIG`` names the configuration file and
``PRIVLOSS_SERVICE_LEDGER`` optionally overrides its ledger; every process
opens the ledger itself (SQLite serialises writers with its lock, PostgreSQL
with serialisable transactions), so they share one budget.
"""

from __future__ import annotations

import dataclasses
import os

__all__ = ["app_from_environment"]


def app_from_environment():
    from privloss.service.app import create_app
    from privloss.service.config import load_config

    config = load_config(os.environ["PRIVLOSS_SERVICE_CONFIG"])
    ledger = os.environ.get("PRIVLOSS_SERVICE_LEDGER")
    if ledger:
        config = dataclasses.replace(config, ledger=ledger)
    return create_app(config)
