"""The library is silent by default; the server's operator log is not."""

import logging
import subprocess
import sys

SNIPPET = """
import logging, privloss
from privloss.query.errors import computation_failed
computation_failed(ValueError("secret=967"), "a test")
{extra}
logging.getLogger("privloss.service").error("internal error %s", "abc")
"""


def _stderr(extra: str = "") -> str:
    done = subprocess.run([sys.executable, "-c", SNIPPET.format(extra=extra)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_library_process_prints_no_engine_text():
    assert _stderr() == ""


def test_operator_configured_logging_sees_it():
    text = _stderr("logging.basicConfig()\n"
                   "computation_failed(ValueError('secret=968'), 'again')")
    assert "secret=968" in text and "secret=967" not in text


def test_server_operator_log_on_stderr():
    text = _stderr("from privloss.service.server import operator_logging\n"
                   "operator_logging(); operator_logging()\n"
                   "computation_failed(ValueError('secret=969'), 'again')")
    assert text.count("secret=969") == 1 and "internal error abc" in text


def test_operator_logging_leaves_a_configured_application_alone(monkeypatch):
    from privloss.service.server import operator_logging

    logger = logging.getLogger("privloss")
    monkeypatch.setattr(logger, "handlers", [logging.NullHandler()])
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.NullHandler()])
    operator_logging()
    assert len(logger.handlers) == 1
