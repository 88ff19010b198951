"""PySpark connector for Redis streams: the ``xstream`` Python data source.

``register(spark)`` makes ``spark.read/readStream/write/writeStream.format("xstream")``
available on a session. The package talks RESP through redis-py only, so executors need
redis-py, pyarrow and pyspark, nothing from the server. See README.md in this directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMAT", "XStreamDataSource", "register"]

FORMAT = "xstream"


def register(spark: SparkSession) -> None:
    """Register the ``xstream`` format on ``spark``."""
    from spark_connector.source import XStreamDataSource  # deferred: pyspark, when used

    spark.dataSource.register(XStreamDataSource)


def __getattr__(name: str) -> Any:
    # pyspark is imported only when the data source itself is needed
    if name == "XStreamDataSource":
        from spark_connector.source import XStreamDataSource  # deferred: pyspark, when used

        return XStreamDataSource
    raise AttributeError(name)
