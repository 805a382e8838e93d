"""Errors of the release path whose text must not depend on the data.

:class:`ComputationFailed` replaces every engine error raised while the
private computation runs (after a ledger charged it): its message is fixed
and carries only a random error id; the engine's own text, which can contain
values of the data (``error('count=' || ...)`` in a query), goes only to the
operator's log, ``logging.getLogger("privloss.engine")``, under that id.
That log is silent until the operator configures logging (the ``privloss``
logger has a ``NullHandler``, so Python's last-resort handler never prints
the text on stderr); e.g. ``logging.basicConfig()`` or a handler on
``privloss.engine``.
"""

from __future__ import annotations

import logging
import secrets

__all__ = ["ComputationFailed", "FIXED_MESSAGE", "ENGINE_LOGGER", "computation_failed",
           "log_engine_error"]

#: the only text an analyst sees when the computation fails
FIXED_MESSAGE = "the computation failed; the release was charged"
#: where the real engine error is written, for the operator
ENGINE_LOGGER = "privloss.engine"


class ComputationFailed(RuntimeError):
    """The engine failed during the private computation.

    ``str(error)`` is :data:`FIXED_MESSAGE` plus ``(error id XXXXXXXX)``, a
    random id that names the log record holding the engine's message; nothing
    in it depends on the data.  Raise it ``from None`` so no traceback chains
    the original text.
    """

    def __init__(self, error_id: str):
        self.error_id = error_id
        super().__init__(f"{FIXED_MESSAGE} (error id {error_id})")


def log_engine_error(error: BaseException, what: str) -> str:
    """Log ``error`` (its type and text) for the operator; return the random
    error id that names the record."""
    error_id = secrets.token_hex(4)
    logging.getLogger(ENGINE_LOGGER).error("privloss computation %s failed (%s): %s: %s",
                                           error_id, what, type(error).__name__, error)
    return error_id


def computation_failed(error: BaseException, what: str) -> ComputationFailed:
    """Log ``error`` (its type and text) for the operator and return the fixed
    :class:`ComputationFailed` to raise instead (``raise computation_failed(e, ...) from None``)."""
    return ComputationFailed(log_engine_error(error, what))
