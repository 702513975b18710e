"""The loop that carries discovered URLs and fetch outcomes back to the crawl DB: the records
and their lines (``records``), and reading the loop directory (``reader``)."""
