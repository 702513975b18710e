"""The crawl report: one self-contained HTML page of what a crawl did, from the files it keeps
(crawl logs, the stages' figures, the summary, the CDXJ index and the WARC files).

``log_figures`` reduces the crawl logs to figures, ``sources`` reads the other files,
``build`` gathers them and writes the page that ``page`` renders.
"""

from crawl.report.build import (
    REPORT_FILE_NAME,
    ReportData,
    ReportSettings,
    gather_report,
    write_report,
)

__all__ = ["REPORT_FILE_NAME", "ReportData", "ReportSettings", "gather_report", "write_report"]
