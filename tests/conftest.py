"""Shared test set-up: reproducible Hypothesis runs, a fixed mpmath precision per
test, and one local Spark session for every Spark test of the run.

Hypothesis is derandomized by default (profile ``derandomized``: the same
examples on every run, so a green run is reproducible, in CI and locally). To
explore new random examples set ``PRIVLOSS_HYPOTHESIS_PROFILE=random`` (or pass
``--hypothesis-profile=random``); a failure prints its ``@reproduce_failure``
blob. With derandomization nothing is saved to the example database.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# keys and state written by the code under test (the fingerprint key) go to a
# private folder of this run, never to the user's ~/.config/privloss; subprocesses
# started by tests inherit it
if not os.environ.get("PRIVLOSS_HOME"):
    os.environ["PRIVLOSS_HOME"] = tempfile.mkdtemp(prefix="privloss-test-home-")
# the calibration cache (privloss._cache) likewise: a private folder of this run
if "PRIVLOSS_CACHE_DIR" not in os.environ:
    os.environ["PRIVLOSS_CACHE_DIR"] = tempfile.mkdtemp(prefix="privloss-test-cache-")

settings.register_profile("derandomized", derandomize=True, database=None,
                          print_blob=True)
settings.register_profile("random", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("PRIVLOSS_HYPOTHESIS_PROFILE", "derandomized"))


@pytest.fixture(autouse=True)
def _mpmath_default_precision():
    """Every test starts at mpmath's default precision (15 digits) and cannot leak
    another into the next test: tests and library set theirs with ``workdps``."""
    try:
        import mpmath
    except ImportError:       # mpmath is a test extra; tests that need it skip
        yield
        return
    with mpmath.workdps(15):
        yield


def spark_skip_reason() -> str | None:
    """Why the Spark tests cannot run here, or None when they can."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java not found: install Java 17 to run the Spark engine tests"
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (the 'spark' extra: pip install '.[spark]' from a checkout)"
    return None


@pytest.fixture(scope="session")
def spark():
    """A small local[2] session, started once (start-up costs ~8 s)."""
    reason = spark_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("privloss-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # tiny test data: compiling whole-stage code costs more than it saves
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
