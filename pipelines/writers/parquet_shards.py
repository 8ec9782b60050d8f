"""A shard as Parquet (`--format parquet`): the shard's JSON lines, in their order, as rows.

The shard writer (output.write_entries) owns the order of a shard's lines whatever the format:
this writer takes the lines it merges, one at a time, decodes each (JSON floats and ints come
back as the values encoded) and writes them in row groups of a fixed number of rows. Its bytes
depend on the lines alone, as GzipWriter's do: the row groups are cut by count, never by size
or time; the compression and its level are fixed; and pyarrow writes no time stamp (its
`created_by` names its version, as the pinned versions in run_config.json do). The columns are
typed from the Page record's values (page.record_fields), so an empty shard has them too.
"""
from typing import BinaryIO, List

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.page import record_fields

# About 2 MB of text at C4's average page (about 2 KB): a reader that wants one row (the
# dataset viewer, a random access) reads one row group, and a row group's column chunks are
# large enough for zstd. Cut by count, so the same lines always give the same groups.
ROWS_PER_ROW_GROUP = 1_000
COMPRESSION = "zstd"
# zstd's default level. On the samples' en validation shard (797 pages): 0.72 MB against the
# JSON lines' 0.82 (ISA-L gzip), in 9.5 ms; level 1 and snappy 0.81 and 1.13 MB in 5.6 ms;
# level 6 0.68 MB in 22.6 ms.
COMPRESSION_LEVEL = 3
_ARROW_TYPES = {str: pa.string(), int: pa.int64(), float: pa.float64()}


def record_schema() -> pa.Schema:
    """The Arrow columns of an output record: its fields, in order, typed as the Page's."""
    return pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in record_fields()])


class _CountingSink:
    """What pyarrow needs of a sink that may only write (a Beam file, a hashing wrapper): the
    position it asks for is the bytes written so far."""

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self._written = 0
        self.closed = False

    def write(self, data) -> int:
        self._sink.write(bytes(data))
        self._written += len(data)
        return len(data)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True  # The caller closes the sink it opened.


class ParquetLinesWriter:
    """Writes the output lines given one at a time to `sink` as one Parquet file (the same
    calls as GzipWriter's: `write(line)` per line, then `close()`)."""

    def __init__(self, sink: BinaryIO):
        self._schema = record_schema()
        self._columns = [name for name, _ in record_fields()]
        self._writer = pq.ParquetWriter(pa.PythonFile(_CountingSink(sink), mode="w"),
                                        self._schema, compression=COMPRESSION,
                                        compression_level=COMPRESSION_LEVEL)
        self._rows: List[dict] = []

    def write(self, line: bytes) -> None:
        self._rows.append(orjson.loads(line))
        if len(self._rows) == ROWS_PER_ROW_GROUP:
            self._write_row_group()

    def _write_row_group(self) -> None:
        columns = {name: [row[name] for row in self._rows] for name in self._columns}
        self._writer.write_table(pa.Table.from_pydict(columns, schema=self._schema),
                                 row_group_size=ROWS_PER_ROW_GROUP)
        self._rows = []

    def close(self) -> None:
        if self._rows:
            self._write_row_group()
        self._writer.close()
