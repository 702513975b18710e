"""The crawl job's topology: one function from the loop source to the loop sink.

::

    tick -> loop lister -> key_by(file name) loop reader (seed files + discovered URLs)
        -> key_by(vnode % partitions) crawl DB
        -> key_by(fetch key: the host, crawl/urls/routing.py) fetch (frontier, robots, politeness,
        HTTP)
        -> key_by(payload digest) process (WARC, revisits, crawl log, links)
           [-> key_by(a permuted table's key, each page probing every table) near-duplicate
               index -> key_by(page) near-duplicate verdicts (marks)]
        -> loop sink (files back into the loop dir)

Every stage has a name and a stable uid (savepoints map state to operators by uid), both
spelt once, in :mod:`crawl.stages`. URLs are
normalised where they are born (seed injection, link extraction), so the loop only carries
canonical URLs grouped by vnode.
"""

from __future__ import annotations

from pyflink.common import Encoder, Types
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from pyflink.table import StreamTableEnvironment

from crawl.config import Config
from crawl.content.neardup_index import answer_key, probe_key
from crawl.crawldb.partition import partition_of
from crawl.layout import OutputLayout
from crawl.processing import ProcessSettings, payload_key
from crawl.stages import (
    CRAWL_DB,
    FETCH,
    LOOP_LISTER,
    LOOP_READER,
    LOOP_SINK,
    NEAR_DUPLICATES,
    NEARDUP_INDEX,
    PROCESS,
)
from operators.crawl_db import CrawlDbFunction, CrawlDbSettings
from operators.fetch import FetchFunction, FetchSettings
from operators.loop_reader import LoopListerFunction, LoopReaderFunction
from operators.neardup import NearDuplicateSettings, NearVerdictFunction
from operators.neardup_index import NearIndexFunction
from operators.process import ProcessFunction

__all__ = ["LOOP_POLL_MS", "build_topology"]

#: How often the loop lister looks for new committed files.
LOOP_POLL_MS = 100


def build_topology(env: StreamExecutionEnvironment, config: Config, layout: OutputLayout) -> None:
    """Add the crawl's operators to ``env`` (``layout.root`` must be absolute)."""
    output = str(layout.root)
    loop_dir = str(layout.loop)

    # The loop source: a tick ten times a second (Flink's datagen table source: PyFlink has no
    # unbounded DataStream source to take a rate from) makes one lister list the loop
    # directory; each new file goes by name to the reader keyed by it (operators/loop_reader.py).
    tables = StreamTableEnvironment.create(env)
    tables.execute_sql(
        "CREATE TEMPORARY TABLE loop_ticks (tick BIGINT) WITH ("
        " 'connector' = 'datagen',"
        f" 'rows-per-second' = '{1000 // LOOP_POLL_MS}',"
        " 'scan.parallelism' = '1'"
        ")"
    )
    ticks = tables.to_data_stream(tables.from_path("loop_ticks"))
    names = (
        ticks.flat_map(LoopListerFunction(loop_dir), output_type=Types.STRING())
        .name(LOOP_LISTER.uid)
        .uid(LOOP_LISTER.uid)
        .set_parallelism(1)
    )
    records = (
        names.key_by(lambda name: name, key_type=Types.STRING())
        .process(
            LoopReaderFunction(output, config.crawl.vnodes),
            output_type=Types.TUPLE([Types.INT(), Types.STRING()]),
        )
        .name(LOOP_READER.uid)
        .uid(LOOP_READER.uid)
    )

    partitions = config.crawldb.partitions
    fetch_requests = (
        records.key_by(lambda record: partition_of(record[0], partitions), key_type=Types.INT())
        .process(
            CrawlDbFunction(CrawlDbSettings.from_config(config), output),
            output_type=Types.TUPLE([Types.STRING(), Types.STRING()]),
        )
        .name(CRAWL_DB.uid)
        .uid(CRAWL_DB.uid)
    )

    results = (
        fetch_requests.key_by(lambda request: request[0], key_type=Types.STRING())
        .process(
            FetchFunction(FetchSettings.from_config(config), output),
            output_type=Types.PICKLED_BYTE_ARRAY(),
        )
        .name(FETCH.uid)
        .uid(FETCH.uid)
    )

    min_bytes = config.warc.revisit_min_bytes if config.warc.revisits else 2**62
    near_probes = OutputTag("near-probes", Types.STRING())
    processed = (
        results.key_by(lambda result: payload_key(result, min_bytes), key_type=Types.STRING())
        .process(
            ProcessFunction(ProcessSettings.from_config(config), output, near_probes),
            output_type=Types.STRING(),
        )
        .name(PROCESS.uid)
        .uid(PROCESS.uid)
    )
    # Near-duplicates share no key: the index is keyed by the permuted tables' keys, each page
    # probing every table, and the verdicts by page (only pages a table found an original
    # for). Both stages are there even with neardup.enabled off (they then get nothing), so
    # that a savepoint taken either way restores into the other.
    neardup = NearDuplicateSettings.from_config(config)
    answers = (
        processed.get_side_output(near_probes)
        .key_by(probe_key, key_type=Types.INT())
        .process(NearIndexFunction(neardup, output), output_type=Types.STRING())
        .name(NEARDUP_INDEX.uid)
        .uid(NEARDUP_INDEX.uid)
    )
    verdicts = (
        answers.key_by(answer_key, key_type=Types.STRING())
        .process(NearVerdictFunction(neardup, output), output_type=Types.STRING())
        .name(NEAR_DUPLICATES.uid)
        .uid(NEAR_DUPLICATES.uid)
    )
    loop_lines = processed.union(verdicts)

    loop_sink = (
        FileSink.for_row_format(loop_dir, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("loop").build())
        .build()
    )
    loop_lines.sink_to(loop_sink).name(LOOP_SINK.uid).uid(LOOP_SINK.uid)
