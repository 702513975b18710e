"""The crawl's stages and the figures they report, each name defined once.

A stage goes by two names, both fixed by what a crawl already holds on disk or in a dashboard,
so they are spelt here exactly as they always were:

- its **uid**: the Flink operator's uid and name (a savepoint maps its state to an operator by
  uid: a different spelling would restore nothing), and the name fault injection knows it by
  (:mod:`operators.faults`);
- its **figures name**: where its figures live (the status files
  ``status/<figures>-<subtask>.json`` of :mod:`crawl.progress`, the metric group
  ``crawler.<figures>`` of :mod:`operators.metrics`, the keys ``<figures>.<figure>`` of the
  figures summed over subtasks) and what a restarted subtask's forerunner is known by
  (:class:`operators.context.Lifecycle`).

A :class:`Figure` is one counter or gauge of a stage, named as the stage counts it
(``urls.found``); a figure that is a family (``pages``, for ``pages.FETCHED``,
``pages.HTTP_ERROR``, ...) names its members with :meth:`Figure.member`. Only figures that
one module writes and another reads back are here (the summary, ``python -m job status``,
the report, the idle rule, tests); a figure that only the metrics show keeps its literal
name where it is counted.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CRAWLDB_ARCHIVED",
    "CRAWLDB_BELOW_CUTOFF",
    "CRAWLDB_BUFFERED",
    "CRAWLDB_DEFERRED",
    "CRAWLDB_KNOWN",
    "CRAWLDB_MERGES",
    "CRAWLDB_PENDING",
    "CRAWLDB_RELEASES",
    "CRAWLDB_RELEASES_FROM_WINDOW",
    "CRAWLDB_URLS",
    "CRAWLDB_URLS_DUPLICATE",
    "CRAWLDB_URLS_FOUND",
    "CRAWLDB_URLS_NEAR_DUPLICATE",
    "CRAWLDB_URLS_NEW",
    "CRAWLDB_URLS_RELEASED",
    "CRAWLDB_URLS_RELEASED_REVISITS",
    "CRAWL_DB",
    "DECODE_LINES",
    "FETCH",
    "FETCH_BACKOFFS",
    "FETCH_ERRORS",
    "FETCH_HELD_DOMAIN_QUOTA",
    "FETCH_HOSTS_ACTIVE",
    "FETCH_HOSTS_FAILING",
    "FETCH_IN_FLIGHT",
    "FETCH_LATENCY_MS",
    "FETCH_QUEUED",
    "FETCH_RESULTS",
    "FETCH_RETRIES",
    "FETCH_RETRIES_EXHAUSTED",
    "FETCH_ROBOTS_RETRIES",
    "FETCH_ROBOTS_UNPARSEABLE",
    "FETCH_SUSPENSIONS",
    "FETCH_TIMERS",
    "LOOP_LISTER",
    "LOOP_READER",
    "LOOP_SINK",
    "NEARDUP_INDEX",
    "NEARDUP_INDEX_ADDED",
    "NEARDUP_INDEX_FORGOTTEN",
    "NEARDUP_INDEX_FOUND",
    "NEARDUP_INDEX_HELD_AGAIN",
    "NEARDUP_INDEX_LATE",
    "NEARDUP_INDEX_PROBES",
    "NEARDUP_PAGES_IN",
    "NEARDUP_PAGES_NEAR_DUPLICATE",
    "NEAR_DUPLICATES",
    "PROCESS",
    "PROCESS_BYTES",
    "PROCESS_FETCHES_DISCOVERY",
    "PROCESS_FETCHES_REFRESH",
    "PROCESS_FOUND_BY",
    "PROCESS_LINKS_FOUND",
    "PROCESS_LINKS_HELD_CASH",
    "PROCESS_LINKS_RECENT",
    "PROCESS_LINKS_REJECTED",
    "PROCESS_LINKS_SOFT_404",
    "PROCESS_NEARDUP_QUERIES",
    "PROCESS_NOT_FOUND_PROBES",
    "PROCESS_PAGES",
    "PROCESS_PAGES_SOFT_404",
    "PROCESS_WARC_NOT_MODIFIED",
    "PROCESS_WARC_REVISITS",
    "RETIRED_UIDS",
    "STAGES",
    "Figure",
    "Stage",
]


@dataclass(frozen=True)
class Stage:
    """One stage of the job: its operator's uid, and the name its figures go by (None for a
    stage that reports none)."""

    uid: str
    figures: str | None = None


LOOP_LISTER = Stage("loop-lister")
LOOP_READER = Stage("loop-reader", "decode")
CRAWL_DB = Stage("crawl-db", "crawldb")
FETCH = Stage("fetch", "fetch")
PROCESS = Stage("process", "process")
NEARDUP_INDEX = Stage("neardup-index", "nearindex")
NEAR_DUPLICATES = Stage("neardup-verdicts", "neardup")
LOOP_SINK = Stage("loop-sink")

#: Every stage, in the order a URL passes them.
STAGES = (LOOP_LISTER, LOOP_READER, CRAWL_DB, FETCH, PROCESS, NEARDUP_INDEX, NEAR_DUPLICATES,
          LOOP_SINK)
#: The uids of stages that earlier versions had, whose state a savepoint of theirs may hold:
#: the near-duplicate stage of one instance (its index now the ``neardup-index`` stage's).
RETIRED_UIDS = ("near-duplicates",)


@dataclass(frozen=True)
class Figure:
    """A counter or gauge of one stage (or the head of a family of them)."""

    stage: Stage
    #: The name the stage counts it by (a key of its status file's counters or gauges).
    name: str

    @property
    def key(self) -> str:
        """Its key among the crawl's figures (:class:`crawl.progress.CrawlFigures`):
        ``<stage's figures name>.<name>``."""
        return f"{self.stage.figures}.{self.name}"

    @property
    def member_prefix(self) -> str:
        """What the keys of the family's members start with: ``<key>.``."""
        return self.key + "."

    def member(self, part: str) -> str:
        """The name the stage counts the family's member ``part`` by: ``<name>.<part>``."""
        return f"{self.name}.{part}"

    def member_key(self, part: str) -> str:
        """The key of the family's member ``part`` among the crawl's figures."""
        return self.member_prefix + part


# The loop reader (operators/loop_reader.py).
#: Loop lines read (``lines.in``) and skipped as unreadable (``lines.bad``).
DECODE_LINES = Figure(LOOP_READER, "lines")

# The crawl DB (operators/crawl_db.py, crawl/crawldb/partition.py).
#: Distinct URLs known, live and archived (gauge).
CRAWLDB_KNOWN = Figure(CRAWL_DB, "known")
#: Operations in the DRUMs' buffers, waiting for a merge (gauge).
CRAWLDB_BUFFERED = Figure(CRAWL_DB, "buffered")
#: URLs waiting to be released to the frontier, deferred ones not counted (gauge).
CRAWLDB_PENDING = Figure(CRAWL_DB, "pending")
#: Of the pending URLs, those below the page budget's cutoff (gauge).
CRAWLDB_BELOW_CUTOFF = Figure(CRAWL_DB, "below_cutoff")
#: URLs in archived sets (gauge).
CRAWLDB_ARCHIVED = Figure(CRAWL_DB, "archived")
#: URLs held back by a budget, by reason: ``deferred.budget:domain`` ... (gauges).
CRAWLDB_DEFERRED = Figure(CRAWL_DB, "deferred")
#: The family of the URL counters below (``urls.found``, ``urls.new``, ...).
CRAWLDB_URLS = Figure(CRAWL_DB, "urls")
#: URLs discovered (new or found again; rescored ones not counted).
CRAWLDB_URLS_FOUND = Figure(CRAWL_DB, "urls.found")
#: URLs new to the crawl DB (admitted).
CRAWLDB_URLS_NEW = Figure(CRAWL_DB, "urls.new")
#: URLs found again.
CRAWLDB_URLS_DUPLICATE = Figure(CRAWL_DB, "urls.duplicate")
#: URLs handed to the frontier.
CRAWLDB_URLS_RELEASED = Figure(CRAWL_DB, "urls.released")
#: Of the released URLs, revisits.
CRAWLDB_URLS_RELEASED_REVISITS = Figure(CRAWL_DB, "urls.released.revisits")
#: Pages marked as near-duplicates.
CRAWLDB_URLS_NEAR_DUPLICATE = Figure(CRAWL_DB, "urls.near_duplicate")
#: DRUM merges (and its family: ``merges.major``, ``merges.selections``).
CRAWLDB_MERGES = Figure(CRAWL_DB, "merges")
#: Releases of due URLs (and its family: ``releases.from_window``).
CRAWLDB_RELEASES = Figure(CRAWL_DB, "releases")
#: Releases taken from the due window without a pass over the DRUM.
CRAWLDB_RELEASES_FROM_WINDOW = Figure(CRAWL_DB, "releases.from_window")

# The fetch stage (operators/fetch.py, crawl/frontier/scheduler.py).
#: URLs in the host queues (gauge).
FETCH_QUEUED = Figure(FETCH, "queued")
#: URLs taken in from the crawl DB.
FETCH_URLS_IN = Figure(FETCH, "urls.in")
#: Fetches in flight (gauge).
FETCH_IN_FLIGHT = Figure(FETCH, "in_flight")
#: Hosts with URLs queued or a fetch in flight (gauge).
FETCH_HOSTS_ACTIVE = Figure(FETCH, "hosts_active")
#: Hosts whose last fetches failed (gauge).
FETCH_HOSTS_FAILING = Figure(FETCH, "hosts_failing")
#: Timer firings (not progress: a waiting host wakes for nothing).
FETCH_TIMERS = Figure(FETCH, "timers")
#: Fetch outcomes by status: ``results.FETCHED`` ...
FETCH_RESULTS = Figure(FETCH, "results")
#: Failed fetches by reason: ``errors.timeout:read`` ...
FETCH_ERRORS = Figure(FETCH, "errors")
#: Fetches tried again after a failure.
FETCH_RETRIES = Figure(FETCH, "retries")
#: Fetches that failed after their retries.
FETCH_RETRIES_EXHAUSTED = Figure(FETCH, "retries.exhausted")
#: Back-offs of a host after a failure.
FETCH_BACKOFFS = Figure(FETCH, "backoffs")
#: Hosts suspended after failures in a row.
FETCH_SUSPENSIONS = Figure(FETCH, "suspensions")
#: robots.txt fetches to be tried again after a failure.
FETCH_ROBOTS_RETRIES = Figure(FETCH, "robots.retries")
#: robots.txt files that could not be parsed.
FETCH_ROBOTS_UNPARSEABLE = Figure(FETCH, "robots.unparseable")
#: Wake-ups of a host held back by its domain's quota of fetches in flight.
FETCH_HELD_DOMAIN_QUOTA = Figure(FETCH, "held.domain_quota")
#: The histogram of fetch durations (a Flink metric only: ``latency_ms_median``,
#: ``latency_ms_p95``, ``latency_ms_max``, ...).
FETCH_LATENCY_MS = Figure(FETCH, "latency_ms")

# The process stage (operators/process.py, crawl/processing.py).
#: Fetch outcomes processed, by status: ``pages.FETCHED`` ...
PROCESS_PAGES = Figure(PROCESS, "pages")
#: Response body bytes archived.
PROCESS_BYTES = Figure(PROCESS, "bytes")
#: Pages by the way they were found: ``found_by.link`` ...
PROCESS_FOUND_BY = Figure(PROCESS, "found_by")
#: Fetches of a URL fetched before (a continuous crawl's revisits).
PROCESS_FETCHES_REFRESH = Figure(PROCESS, "fetches.refresh")
#: First fetches of a URL (a continuous crawl's discovery).
PROCESS_FETCHES_DISCOVERY = Figure(PROCESS, "fetches.discovery")
#: Revisit records written for repeated payloads.
PROCESS_WARC_REVISITS = Figure(PROCESS, "warc.revisits")
#: 304 Not Modified answers to a revisit.
PROCESS_WARC_NOT_MODIFIED = Figure(PROCESS, "warc.not_modified")
#: Links found in pages.
PROCESS_LINKS_FOUND = Figure(PROCESS, "links.found")
#: Links dropped because this subtask sent them lately.
PROCESS_LINKS_RECENT = Figure(PROCESS, "links.recent")
#: URLs sent on later with the cash their dropped repeats brought.
PROCESS_LINKS_HELD_CASH = Figure(PROCESS, "links.held_cash")
#: Links rejected, by reason: ``links.rejected.scope:external-host`` ...
PROCESS_LINKS_REJECTED = Figure(PROCESS, "links.rejected")
#: Queries sent to the near-duplicate stage.
PROCESS_NEARDUP_QUERIES = Figure(PROCESS, "neardup.queries")
#: Hosts' not-found probes by what they answered: ``not_found_probes.soft-404`` (a page),
#: ``not_found_probes.4xx``, ``.3xx``, ``.5xx``, ``.2xx`` (no HTML page), ``.error``.
PROCESS_NOT_FOUND_PROBES = Figure(PROCESS, "not_found_probes")
#: Pages found to be their host's not-found page, soft 404s (:mod:`crawl.content.soft404`)...
PROCESS_PAGES_SOFT_404 = Figure(PROCESS, "pages.soft_not_found")
#: ...and the links of theirs not followed.
PROCESS_LINKS_SOFT_404 = Figure(PROCESS, "links.soft_not_found")

# The near-duplicate index (operators/neardup.py).
#: Probes answered (one a table a page is looked up in).
NEARDUP_INDEX_PROBES = Figure(NEARDUP_INDEX, "probes")
#: Pages added to a table...
NEARDUP_INDEX_ADDED = Figure(NEARDUP_INDEX, "pages.added")
#: ...not added: the key held a page of the same URL within the distance...
NEARDUP_INDEX_HELD_AGAIN = Figure(NEARDUP_INDEX, "pages.held_again")
#: ...and forgotten: a full key's oldest.
NEARDUP_INDEX_FORGOTTEN = Figure(NEARDUP_INDEX, "pages.forgotten")
#: Probes that found an earlier page within the distance under their key...
NEARDUP_INDEX_FOUND = Figure(NEARDUP_INDEX, "found")
#: ...and late answers: an earlier page found a later one it is near.
NEARDUP_INDEX_LATE = Figure(NEARDUP_INDEX, "late_answers")

# The near-duplicate verdicts (operators/neardup.py).
#: Answers taken (a page's original found by one of its tables, or a late answer).
NEARDUP_PAGES_IN = Figure(NEAR_DUPLICATES, "pages.in")
#: Pages found to be near-duplicates (those marked by a late answer included).
NEARDUP_PAGES_NEAR_DUPLICATE = Figure(NEAR_DUPLICATES, "pages.near_duplicate")
