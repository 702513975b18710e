"""What a crawl keeps of what it fetched: WARC records and files with recovery and checks
(``warc``), the CDXJ index (``cdxj``), the crawl log (``crawl_log``) and the end-of-crawl
summary computed from it (``summary``)."""
