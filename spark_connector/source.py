"""The ``xstream`` Python data source: entry point Spark instantiates from the options."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from spark_connector import connect
from spark_connector import options as opt
from spark_connector.convert import DEFAULT_SCHEMA, BatchBuilder
from spark_connector.readers import XStreamBatchReader, XStreamStreamReader
from spark_connector.writer import XStreamStreamWriter, XStreamWriter


class XStreamDataSource(DataSource):
    """Read and write Redis streams (xstreamd or Redis) through redis-py.

    See spark_connector/README.md for the options and the delivery guarantees.
    """

    @classmethod
    def name(cls) -> str:
        return "xstream"

    def schema(self) -> StructType:
        return DEFAULT_SCHEMA

    def reader(self, schema: StructType) -> XStreamBatchReader:
        ropts = opt.ReadOptions.parse(self.options, streaming=False)
        return XStreamBatchReader(ropts, BatchBuilder(schema, ropts.metadata_columns))

    def streamReader(self, schema: StructType) -> XStreamStreamReader:  # noqa: N802
        ropts = opt.ReadOptions.parse(self.options, streaming=True)
        return XStreamStreamReader(ropts, BatchBuilder(schema, ropts.metadata_columns))

    def writer(self, schema: StructType, overwrite: bool) -> XStreamWriter:
        wopts = opt.WriteOptions.parse(self.options, streaming=False)
        if overwrite:
            if wopts.stream is None:
                raise opt.OptionError("overwrite needs a fixed target: set option stream")
            # Runs once, on the driver, before any task writes.
            target = wopts.stream
            connect.call(wopts.conn, lambda c: c.delete(target), f"deleting {target!r}")
        return XStreamWriter(schema, wopts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> XStreamStreamWriter:  # noqa: N802
        # Complete mode (overwrite) still appends: a stream is a log, each batch adds
        # the full result as new entries.
        return XStreamStreamWriter(schema, opt.WriteOptions.parse(self.options, streaming=True))
