"""Plain-Python crawl logic: URLs, robots, politeness, fetching, parsing, WARC writing.

Nothing in this package imports ``pyflink``; the Flink operators in ``operators/`` are thin
wrappers over it, so all of it is testable without starting Flink.
"""
