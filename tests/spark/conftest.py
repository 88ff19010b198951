"""Fixtures for the connector tests: one local[2] SparkSession, reused by every module.

The server comes from the shared ``server`` fixture (xstreamd by default,
``XSTREAMD_TEST_TARGET=redis`` for Debian's redis-server).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO_ROOT, ServerProcess


def _spark_session() -> Any:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI"):
            pytest.fail("Java must be installed in CI for the spark tests")
        pytest.skip("Java is not installed")
    # Python workers must import spark_connector; they inherit this environment.
    path = os.environ.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), path) if p)
    from pyspark.sql import SparkSession

    import spark_connector

    session = (
        SparkSession.builder.master("local[2]")
        .appName("xstream-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_connector.register(session)
    return session


@pytest.fixture(scope="session")
def _spark_jvm() -> Iterator[Any]:
    session = _spark_session()
    yield session
    session.stop()


@pytest.fixture(scope="module")
def spark(_spark_jvm: Any) -> Iterator[Any]:
    """A local[2] SparkSession with the xstream format registered.

    Module-scoped as a fixture, but the JVM is started only once per test run (starting
    Spark costs seconds): every module gets the same session, and leftover streaming
    queries are stopped after each module.
    """
    yield _spark_jvm
    for query in _spark_jvm.streams.active:
        query.stop()


@pytest.fixture
def conn(server: ServerProcess) -> dict[str, str]:
    """Connection options for the test server."""
    return {"host": server.host, "port": str(server.port)}


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
