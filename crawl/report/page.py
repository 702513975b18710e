"""The crawl report as one self-contained HTML page: plotly.js (from the plotly package)
inlined, the figures as JSON, tables as HTML. Opening it needs no network.

Every chart is a ``<div class="chart">``; the page's script draws each with Plotly and marks it
``data-drawn="1"`` once drawn, and writes any script error into ``#report-errors``, so a
headless browser can check that the whole page drew.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io
import plotly.offline
from plotly.subplots import make_subplots

from crawl.report.build import ReportData
from crawl.stages import (
    CRAWLDB_DEFERRED,
    CRAWLDB_KNOWN,
    CRAWLDB_PENDING,
    CRAWLDB_URLS_DUPLICATE,
    CRAWLDB_URLS_FOUND,
    CRAWLDB_URLS_NEW,
    CRAWLDB_URLS_RELEASED,
    CRAWLDB_URLS_RELEASED_REVISITS,
    FETCH_BACKOFFS,
    FETCH_RETRIES,
    FETCH_ROBOTS_RETRIES,
    FETCH_SUSPENSIONS,
    NEARDUP_PAGES_NEAR_DUPLICATE,
    PROCESS_LINKS_FOUND,
    PROCESS_LINKS_RECENT,
    PROCESS_LINKS_REJECTED,
    PROCESS_WARC_REVISITS,
)

__all__ = ["render_page"]

_STATUS_COLOURS = {
    "FETCHED": "#2e7d32", "REDIRECT": "#1565c0", "HTTP_ERROR": "#ef6c00",
    "FETCH_ERROR": "#c62828", "ROBOTS_DENIED": "#6a1b9a", "REJECTED": "#546e7a",
}
_LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "margin": {"l": 60, "r": 30, "t": 40, "b": 50},
    "legend": {"orientation": "h", "y": -0.15},
    "height": 380,
}


def _when(epoch_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _bytes(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{value:,.1f} TB"


class _Page:
    """Collects the page's sections, charts and tables in order."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.figures: dict[str, Any] = {}

    def section(self, title: str, note: str = "") -> None:
        self.parts.append(f"<h2>{html.escape(title)}</h2>")
        if note:
            self.note(note)

    def note(self, text: str) -> None:
        self.parts.append(f'<p class="note">{html.escape(text)}</p>')

    def chart(self, name: str, figure: go.Figure) -> None:
        # Plotly fills in a default template: ours is set always, the rest where not set.
        given = figure.layout.to_plotly_json()
        figure.update_layout(template=_LAYOUT["template"], **{
            key: value for key, value in _LAYOUT.items() if key not in given})
        self.figures[name] = figure
        self.parts.append(f'<div class="chart" id="chart-{html.escape(name)}"></div>')

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]],
              numeric: Sequence[bool] | None = None) -> None:
        numeric = numeric or [False] * len(headers)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = []
        for row in rows:
            cells = "".join(
                f'<td class="{"num" if numeric[i] else ""}">'
                f'{html.escape("–" if cell is None else str(cell))}</td>'
                for i, cell in enumerate(row))
            body.append(f"<tr>{cells}</tr>")
        self.parts.append(f"<table><thead><tr>{head}</tr></thead>"
                          f"<tbody>{''.join(body)}</tbody></table>")

    def tiles(self, items: Iterable[tuple[str, str]]) -> None:
        tiles = "".join(f'<div class="tile"><div class="value">{html.escape(value)}</div>'
                        f'<div class="label">{html.escape(label)}</div></div>'
                        for label, value in items)
        self.parts.append(f'<div class="tiles">{tiles}</div>')


def render_page(data: ReportData) -> str:
    """The report page for ``data``."""
    page = _Page()
    log = data.log
    _overview(page, data)
    if log.bin_starts_ms:
        _timeline(page, data)
    _outcomes(page, data)
    _hosts(page, data)
    _latency(page, data)
    _budget(page, data)
    _content(page, data)
    _novelty(page, data)
    _continuous(page, data)
    figures_json = plotly.io.to_json(
        {name: figure.to_plotly_json() for name, figure in page.figures.items()},
        validate=False).replace("</", "<\\/")
    title = f"Crawl report: {data.root}"
    return _TEMPLATE.format(
        title=html.escape(title),
        style=_STYLE,
        body="\n".join(page.parts),
        plotly=plotly.offline.get_plotlyjs(),
        figures=figures_json,
        script=_SCRIPT,
    )


def _overview(page: _Page, data: ReportData) -> None:
    log, summary, job = data.log, data.summary, data.job
    page.parts.append(f"<h1>Crawl report <small>{html.escape(data.root)}</small></h1>")
    if data.running:
        state = "running (the figures are those of the files as they were)"
    elif summary:
        state = f"finished: {summary.get('stop_reason') or 'stopped'}"
    else:
        state = "no summary (the crawl did not finish, or is running elsewhere)"
    window = (log.last_ms - log.first_ms) / 1000.0 if log.lines else 0.0
    page.parts.append(
        '<p class="meta">'
        f"Written {html.escape(_when(data.generated_ms))} UTC · crawl {html.escape(state)}"
        + (f" · Flink job {html.escape(str(job['job_id']))}" if job.get("job_id") else "")
        + f" · {log.lines:,} crawl log lines in {len(data.crawl_logs)} file(s)"
        + (f", {log.bad_lines:,} unreadable" if log.bad_lines else "")
        + (f" · from {html.escape(_when(log.first_ms))} to {html.escape(_when(log.last_ms))} "
           "UTC" if log.lines else "")
        + "</p>")
    errors = sum(n for status, n in log.by_status.items()
                 if status in ("HTTP_ERROR", "FETCH_ERROR"))
    deferred = sum(int(v) for v in summary.get("urls_deferred", {}).values()) if summary else int(
        sum(v for k, v in data.gauges.items() if k.startswith(CRAWLDB_DEFERRED.member_prefix)))
    known = int(summary.get("urls_known") or data.gauges.get(CRAWLDB_KNOWN.key, 0))
    page.tiles([
        ("pages fetched", f"{log.pages:,}"),
        ("pages/s over the crawl", f"{log.pages / window:,.1f}" if window > 0 else "–"),
        ("bytes", _bytes(log.bytes)),
        ("hosts asked", f"{log.host_count:,}"),
        ("robots.txt fetches", f"{log.robots_fetches:,}"),
        ("robots.txt denials", f"{log.by_status.get('ROBOTS_DENIED', 0):,}"),
        ("errors (HTTP and fetch)", f"{errors:,}"),
        ("URLs known", f"{known:,}"),
        ("URLs deferred by budgets", f"{deferred:,}"),
        ("revisit records", f"{int(data.counters.get(PROCESS_WARC_REVISITS.key, 0)):,}"),
        ("near-duplicates", f"{int(data.counters.get(NEARDUP_PAGES_NEAR_DUPLICATE.key, 0)):,}"),
        ("refetches (304)", f"{int(sum(log.timeline.get('refetches', []))):,} "
                            f"({log.novelty.get('304 not modified', 0):,})"),
    ])
    if not log.lines:
        page.note("The crawl logs hold no line yet: nothing was fetched.")


def _timeline(page: _Page, data: ReportData) -> None:
    log = data.log
    timeline = log.timeline
    x = [_when(ms) for ms in log.bin_starts_ms]
    settings = data.settings
    page.section(
        "Rate over time, and what held the hosts back",
        f"Bins of {log.bin_seconds} s. Top: pages and bytes per second (pages: every request "
        "but robots.txt; bytes: every body). Middle: the mean number of hosts in each state, "
        "from the gaps between a host's requests in the crawl log: fetching (requests under "
        "way), waiting out politeness (a gap within max(delay "
        f"{settings.delay_seconds:g} s, the host's Crawl-delay, "
        f"{settings.response_time_factor:g} x its last response time), settings from "
        f"{settings.origin}), waiting after a failure (retries and back-off after no "
        "response, 429 or 5xx), or idle (a longer gap: nothing due for the host, its URLs "
        "held back by budgets or priority, or robots.txt unavailable); the dotted line counts "
        "the hosts with a request ending in the bin. Bottom: the events "
        "that hold hosts back: robots.txt fetches (a host waits for its robots.txt), "
        "robots.txt denials, 429/503 answers and failures.")
    figure = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                           row_heights=[0.4, 0.35, 0.25],
                           specs=[[{"secondary_y": True}], [{}], [{}]])
    figure.add_trace(go.Scatter(x=x, y=timeline["pages_per_s"], name="pages/s",
                                line={"color": "#1565c0"}), row=1, col=1)
    figure.add_trace(go.Scatter(x=x, y=timeline["bytes_per_s"], name="bytes/s",
                                line={"color": "#9e9e9e", "dash": "dot"}),
                     row=1, col=1, secondary_y=True)
    for key, name, colour in (("in_flight", "fetching", "#1565c0"),
                              ("hosts_politeness", "waiting: politeness", "#43a047"),
                              ("hosts_after_failure", "waiting: after a failure", "#e53935"),
                              ("hosts_idle", "idle", "#bdbdbd")):
        figure.add_trace(go.Scatter(x=x, y=timeline[key], name=name, stackgroup="hosts",
                                    line={"width": 0.5, "color": colour}), row=2, col=1)
    figure.add_trace(go.Scatter(x=x, y=timeline["hosts_active"], name="hosts with a request",
                                line={"width": 1, "color": "#424242", "dash": "dot"}),
                     row=2, col=1)
    for key, name, colour in (("robots_fetches", "robots.txt fetches", "#00acc1"),
                              ("robots_denials", "robots.txt denials", "#6a1b9a"),
                              ("slow_down", "429/503 answers", "#fb8c00"),
                              ("failures", "failures (no response, 429, 5xx)", "#c62828")):
        figure.add_trace(go.Bar(x=x, y=timeline[key], name=name, marker={"color": colour}),
                         row=3, col=1)
    figure.update_layout(height=720, barmode="stack", legend={"orientation": "h", "y": -0.08})
    figure.update_yaxes(title_text="pages/s", row=1, col=1, secondary_y=False)
    figure.update_yaxes(title_text="bytes/s", row=1, col=1, secondary_y=True)
    figure.update_yaxes(title_text="hosts", row=2, col=1)
    figure.update_yaxes(title_text="events", row=3, col=1)
    stop = str(data.summary.get("stop_reason", ""))
    if stop and log.last_ms:
        figure.add_vline(x=_when(log.last_ms), line={"dash": "dash", "color": "#424242"})
        figure.add_annotation(x=_when(log.last_ms), y=1.0, yref="paper", text=f"stop: {stop}",
                              showarrow=False, xanchor="right")
    page.chart("timeline", figure)
    gaps = log.gap_seconds
    total = sum(gaps.values())
    if total:
        page.note("Time between a host's requests, summed over hosts: "
                  + ", ".join(f"{name.replace('_', ' ')} {seconds:,.0f} s "
                              f"({100 * seconds / total:.0f} %)"
                              for name, seconds in gaps.items()) + ".")


def _outcomes(page: _Page, data: ReportData) -> None:
    log = data.log
    page.section("Outcomes",
                 "Every URL's outcome by status (robots.txt fetches apart), then by status and "
                 "reason (the 25 most frequent); robots.txt fetches by answer.")
    statuses = sorted(log.by_status.items(), key=lambda kv: -kv[1])
    figure = go.Figure(go.Bar(
        x=[n for _, n in statuses], y=[s for s, _ in statuses], orientation="h",
        marker={"color": [_STATUS_COLOURS.get(s, "#757575") for s, _ in statuses]}))
    figure.update_layout(title="by status", height=300, yaxis={"autorange": "reversed"})
    page.chart("status", figure)
    reasons = log.by_reason[:25]
    figure = go.Figure()
    for status in dict.fromkeys(status for status, _, _ in reasons):
        rows = [(reason or "(none)", n) for s, reason, n in reasons if s == status]
        figure.add_trace(go.Bar(x=[n for _, n in rows], y=[f"{status} {r}" for r, _ in rows],
                                orientation="h", name=status,
                                marker={"color": _STATUS_COLOURS.get(status, "#757575")}))
    figure.update_layout(title="by reason", height=max(300, 28 * len(reasons) + 100),
                         yaxis={"categoryorder": "total ascending"}, margin={"l": 260})
    page.chart("reasons", figure)
    if log.robots_by_code:
        page.table(["robots.txt answer", "fetches"],
                   sorted(log.robots_by_code.items(), key=lambda kv: -kv[1]), [False, True])


def _host_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [[row["host"], row["requests"], row["pages"], _bytes(row["bytes"]), row["failures"],
             f"{row['median_latency_ms']:,.0f}", f"{row['p95_latency_ms']:,.0f}",
             row["median_polite_gap_s"], row["median_gap_s"], row["crawl_delay_s"],
             row["requests_per_minute"]] for row in rows]


_HOST_HEADERS = ["host", "requests", "pages", "bytes", "failures", "median latency ms",
                 "p95 latency ms", "polite gap s (median)", "gap s (median)",
                 "Crawl-delay s", "requests/min"]
_HOST_NUMERIC = [False] + [True] * 10


def _hosts(page: _Page, data: ReportData) -> None:
    log = data.log
    page.section(
        "Hosts",
        f"{log.host_count:,} hosts were asked. Each point is a host: its requests (robots.txt "
        "included) and its median response time; red where some failed. A gap is the time "
        "from the end of a host's request to the start of its next; the polite gap is the "
        "median of those within the politeness spacing. Crawl-delay is read from the host's "
        "robots.txt in the archive (blank: none, or not in the CDXJ index yet: it is written "
        "when the crawl stops).")
    points = log.host_points
    if points.get("host"):
        figure = go.Figure(go.Scatter(
            x=points["requests"], y=[max(v, 0.5) for v in points["median_latency_ms"]],
            text=points["host"], mode="markers",
            marker={"color": ["#c62828" if f else "#1565c0" for f in points["failures"]],
                    "opacity": 0.7},
            hovertemplate="%{text}<br>%{x} requests<br>median %{y} ms<extra></extra>"))
        figure.update_layout(title="hosts: requests and median latency",
                             xaxis={"type": "log", "title": "requests"},
                             yaxis={"type": "log", "title": "median latency (ms)"})
        page.chart("hosts", figure)
    page.parts.append("<h3>Busiest hosts</h3>")
    page.table(_HOST_HEADERS, _host_rows(log.busiest_hosts), _HOST_NUMERIC)
    page.parts.append("<h3>Slowest hosts (by median, then 95th percentile latency)</h3>")
    page.table(_HOST_HEADERS, _host_rows(log.slowest_hosts), _HOST_NUMERIC)


def _latency(page: _Page, data: ReportData) -> None:
    log = data.log
    if not log.latency_counts:
        return
    percentiles = log.latency_percentiles_ms
    page.section(
        "Fetch latency",
        "Time from sending a request to the end of its answer, counted in log-spaced "
        "buckets by outcome. Pages (robots.txt apart): "
        + ", ".join(f"{name} {value:,.0f} ms" for name, value in percentiles.items()) + ".")
    labels = [f"≤ {edge:,} ms" for edge in log.latency_edges_ms] + [
        f"> {log.latency_edges_ms[-1]:,} ms"]
    used = max(i for counts in log.latency_counts.values() for i, n in enumerate(counts) if n)
    figure = go.Figure()
    for name, counts in log.latency_counts.items():
        figure.add_trace(go.Bar(x=labels[:used + 1], y=counts[:used + 1], name=name,
                                marker={"color": _STATUS_COLOURS.get(name, "#8e24aa")}))
    figure.update_layout(barmode="stack", xaxis={"title": "latency"},
                         yaxis={"title": "requests"})
    page.chart("latency", figure)


def _budget(page: _Page, data: ReportData) -> None:
    counters, gauges, summary = data.counters, data.gauges, data.summary
    page.section(
        "Where the budget went",
        "From the stages' figures: links found in pages and what became of them (dropped as "
        "sent lately, turned away by reason), what the crawl DB did with the URLs it received "
        "(new, already known, released by priority for fetching), and what its budgets "
        "held back (deferred, by budget) or still wait their turn when the figures were "
        "written.")
    rejected = summary.get("links_rejected") or {
        key.removeprefix(PROCESS_LINKS_REJECTED.member_prefix): value
        for key, value in counters.items() if key.startswith(PROCESS_LINKS_REJECTED.member_prefix)}
    deferred = summary.get("urls_deferred") or {
        key.removeprefix(CRAWLDB_DEFERRED.member_prefix): value for key, value in gauges.items()
        if key.startswith(CRAWLDB_DEFERRED.member_prefix)}
    rows: list[tuple[str, str, float]] = [
        ("links", "found in pages", counters.get(PROCESS_LINKS_FOUND.key, 0)),
        ("links", "dropped: sent lately", counters.get(PROCESS_LINKS_RECENT.key, 0)),
    ]
    rows += [("links", f"turned away: {reason}", n) for reason, n in
             sorted(rejected.items(), key=lambda kv: -kv[1])]
    rows += [
        ("crawl DB", "URLs received", counters.get(CRAWLDB_URLS_FOUND.key, 0)),
        ("crawl DB", "new URLs", counters.get(CRAWLDB_URLS_NEW.key, 0)),
        ("crawl DB", "already known", counters.get(CRAWLDB_URLS_DUPLICATE.key, 0)),
        ("crawl DB", "released for fetching", counters.get(CRAWLDB_URLS_RELEASED.key, 0)),
        ("crawl DB", "released again (revisits)",
         counters.get(CRAWLDB_URLS_RELEASED_REVISITS.key, 0)),
    ]
    rows += [("held back", f"deferred: {reason}", n) for reason, n in
             sorted(deferred.items(), key=lambda kv: -kv[1])]
    rows.append(("held back", "waiting (priority)",
                 summary.get("urls_waiting", gauges.get(CRAWLDB_PENDING.key, 0))))
    rows.append(("fetched", "page fetches", data.log.pages))
    colours = {"links": "#1565c0", "crawl DB": "#00897b", "held back": "#ef6c00",
               "fetched": "#2e7d32"}
    figure = go.Figure()
    for group in colours:
        kept = [(label, value) for g, label, value in rows if g == group]
        figure.add_trace(go.Bar(x=[v for _, v in kept], y=[f"{group}: {label}" for label, _ in
                                                           kept],
                                orientation="h", name=group, marker={"color": colours[group]}))
    figure.update_layout(height=max(320, 26 * len(rows) + 100), margin={"l": 300},
                         yaxis={"autorange": "reversed"}, xaxis={"title": "URLs"})
    page.chart("budget", figure)
    retries, backoffs = (int(counters.get(f.key, 0)) for f in (FETCH_RETRIES, FETCH_BACKOFFS))
    if retries or backoffs:
        page.note(f"The fetch stage retried {retries:,} times, "
                  f"backed off {backoffs:,} times, suspended "
                  f"{int(counters.get(FETCH_SUSPENSIONS.key, 0)):,} host(s) and retried "
                  f"robots.txt {int(counters.get(FETCH_ROBOTS_RETRIES.key, 0)):,} times.")


def _content(page: _Page, data: ReportData) -> None:
    log = data.log
    if not log.content_types:
        return
    page.section("Content types and sizes",
                 "Answered pages by media type (count, and bytes on hover); body sizes of "
                 "fetched pages.")
    types = log.content_types[:20]
    figure = go.Figure(go.Bar(
        x=[t for t, _, _ in types], y=[n for _, n, _ in types],
        customdata=[_bytes(b) for _, _, b in types],
        hovertemplate="%{x}<br>%{y} pages<br>%{customdata}<extra></extra>",
        marker={"color": "#00897b"}))
    figure.update_layout(title="pages by content type", yaxis={"title": "pages"})
    page.chart("content_types", figure)
    edges = log.size_edges
    labels = [f"< {_bytes(edge)}" for edge in edges[1:]] + [f"≥ {_bytes(edges[-1])}"]
    counts = log.size_counts[1:]
    last = max((i for i, n in enumerate(counts) if n), default=0)
    first = min((i for i, n in enumerate(counts) if n), default=0)
    figure = go.Figure(go.Bar(x=labels[first:last + 1], y=counts[first:last + 1],
                              marker={"color": "#5e35b1"}))
    figure.update_layout(title="body sizes (FETCHED)", yaxis={"title": "pages"})
    page.chart("sizes", figure)


def _novelty(page: _Page, data: ReportData) -> None:
    log = data.log
    if not log.novelty or not log.bin_starts_ms:
        return
    near = int(data.counters.get(NEARDUP_PAGES_NEAR_DUPLICATE.key, 0))
    page.section(
        "New content, duplicates and revisits",
        "Answered pages over time by what they brought, from the payload digests in the crawl "
        "log: a new payload, a payload already fetched at another URL (archived as a revisit "
        "record), a URL fetched before whose payload changed or not, or 304 Not Modified. "
        "Totals: " + ", ".join(f"{name} {n:,}" for name, n in log.novelty.items())
        + f"; near-duplicates found by the near-duplicate stage: {near:,}; revisit records "
        f"written: {int(data.counters.get(PROCESS_WARC_REVISITS.key, 0)):,}.")
    x = [_when(ms) for ms in log.bin_starts_ms]
    timeline = log.timeline
    new = timeline["new_payloads"]
    figure = go.Figure()
    unchanged = [r - c - m for r, c, m in zip(timeline["refetches"],
                                              timeline["refetches_changed"],
                                              timeline["not_modified"], strict=True)]
    for name, values, colour in (("new payload", new, "#2e7d32"),
                                 ("payload seen at another URL", timeline["duplicate_payloads"],
                                  "#9e9e9e"),
                                 ("refetch, changed", timeline["refetches_changed"], "#1565c0"),
                                 ("refetch, unchanged", unchanged, "#90caf9"),
                                 ("304 not modified", timeline["not_modified"], "#ffb300")):
        figure.add_trace(go.Bar(x=x, y=values, name=name, marker={"color": colour}))
    figure.update_layout(barmode="stack", yaxis={"title": f"pages per {log.bin_seconds} s"})
    page.chart("novelty", figure)


def _continuous(page: _Page, data: ReportData) -> None:
    log = data.log
    page.section("Refetches and freshness (continuous crawl)")
    refetches = sum(log.timeline.get("refetches", []))
    if not refetches:
        page.note("No URL was fetched twice: this crawl did not revisit (recrawl off, or not "
                  "long enough for a page to come due again).")
        return
    page.note(
        f"{log.urls_refetched:,} URLs were fetched more than once ({refetches:,} refetches; "
        f"median {log.median_refetch_interval_s:,.1f} s between two fetches of a URL). The "
        "share of refetches that found the page changed says how fresh the copy was: a high "
        "share means pages change faster than they are revisited. 304s answer a conditional "
        "request (the page had not changed).")
    x = [_when(ms) for ms in log.bin_starts_ms]
    timeline = log.timeline
    changed_share = [100.0 * c / r if r else None for c, r in
                     zip(timeline["refetches_changed"], timeline["refetches"], strict=True)]
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           row_heights=[0.65, 0.35], specs=[[{"secondary_y": True}], [{}]])
    figure.add_trace(go.Bar(x=x, y=timeline["refetches"], name="refetches",
                            marker={"color": "#90caf9"}), row=1, col=1)
    figure.add_trace(go.Bar(x=x, y=timeline["not_modified"], name="304 not modified",
                            marker={"color": "#ffb300"}), row=1, col=1)
    figure.add_trace(go.Scatter(x=x, y=changed_share, name="changed (% of refetches)",
                                mode="lines+markers", connectgaps=True,
                                line={"color": "#1565c0"}), row=1, col=1, secondary_y=True)
    figure.add_trace(go.Scatter(x=x, y=timeline["median_refetch_interval_s"],
                                name="median interval between two fetches of a URL",
                                mode="markers", marker={"color": "#424242"}), row=2, col=1)
    figure.update_layout(barmode="overlay", height=520)
    figure.update_yaxes(title_text=f"per {log.bin_seconds} s", row=1, col=1, secondary_y=False)
    figure.update_yaxes(title_text="% changed", range=[0, 105], row=1, col=1, secondary_y=True)
    figure.update_yaxes(title_text="interval (s)", row=2, col=1)
    page.chart("freshness", figure)


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1280px; color: #212121; padding: 0 16px; }
h1 small { font-size: 55%; color: #757575; font-weight: normal; }
h2 { border-bottom: 1px solid #e0e0e0; padding-bottom: 4px; margin-top: 36px; }
.meta, .note { color: #616161; font-size: 14px; max-width: 1100px; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; }
.tile { border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px 14px; min-width: 130px; }
.tile .value { font-size: 22px; font-weight: 600; }
.tile .label { font-size: 12px; color: #757575; }
.chart { min-height: 300px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
th, td { border-bottom: 1px solid #eeeeee; padding: 3px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
#report-errors { color: #b71c1c; white-space: pre-wrap; }
"""

_SCRIPT = """
(function () {
  var errors = document.getElementById("report-errors");
  function report(text) { errors.textContent += text + "\\n"; }
  window.addEventListener("error", function (event) { report("error: " + event.message); });
  var figures = JSON.parse(document.getElementById("report-figures").textContent);
  var charts = document.querySelectorAll("div.chart");
  charts.forEach(function (element) {
    var figure = figures[element.id.replace(/^chart-/, "")];
    if (!figure) { report("no figure for " + element.id); return; }
    try {
      Plotly.newPlot(element, figure.data, figure.layout,
                     {responsive: true, displaylogo: false})
        .then(function () { element.setAttribute("data-drawn", "1"); },
              function (error) { report(element.id + ": " + error); });
    } catch (error) { report(element.id + ": " + error); }
  });
})();
"""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{style}</style>
<script>{plotly}</script>
</head>
<body>
<div id="report-errors"></div>
{body}
<script type="application/json" id="report-figures">{figures}</script>
<script>{script}</script>
</body>
</html>
"""
