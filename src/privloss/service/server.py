"""Application factory for server processes started by uvicorn (``--workers``).

``PRIVLOSS_SERVICE_CONFIG`` names the configuration file and
``PRIVLOSS_SERVICE_LEDGER`` optionally overrides its ledger; every process
opens the ledger itself (SQLite serialises writers with its lock, PostgreSQL
with serialisable transactions), so they share one budget.
"""

from __future__ import annotations

import dataclasses
import logging
import os

__all__ = ["app_from_environment", "operator_logging"]


def operator_logging() -> None:
    """The server's log, for the operator: privloss's WARNING+ records (the
    engine's text of a failed computation, the record an internal error's id
    names) on this server process's stderr, unless logging is configured
    already.  The library itself is silent (the ``privloss`` logger has only a
    ``NullHandler``); the analyst never sees this stream."""
    logger = logging.getLogger("privloss")
    if logging.getLogger().handlers or any(
            not isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        return
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logger.addHandler(handler)


def app_from_environment():
    from privloss.service.app import create_app
    from privloss.service.config import load_config

    operator_logging()
    config = load_config(os.environ["PRIVLOSS_SERVICE_CONFIG"])
    ledger = os.environ.get("PRIVLOSS_SERVICE_LEDGER")
    if ledger:
        config = dataclasses.replace(config, ledger=ledger)
    return create_app(config)
