"""Shared fixtures: one local Spark session for every Spark test of the run."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest


def spark_skip_reason() -> str | None:
    """Why the Spark tests cannot run here, or None when they can."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java not found: install Java 17 to run the Spark engine tests"
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'privloss[spark]')"
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
