"""Plain-Python crawl logic, testable without Flink: nothing here imports ``pyflink``.

The shared vocabulary sits at the top: ``config`` (the configuration file, as frozen
sections), ``status`` (one status vocabulary), ``hops`` (how a URL was reached), ``model``
(what crosses stage boundaries), ``layout`` (the output directory), ``stages`` (the stages'
names and the names of the figures read across modules), ``progress`` and ``memory`` (each
stage's figures). The subpackages follow the way of a URL through the crawl
(ARCHITECTURE.md): ``urls`` (normalisation and policy), ``loop`` (the records that go round),
``crawldb`` (the crawl DB of a partition), ``frontier`` (the fetch stage's per-host decisions),
``http`` (the client), ``content`` (what a page holds), ``archive`` (WARC, CDXJ, crawl log);
``processing`` is the process stage's work, which joins the last three. ``tests/unit/
test_layers.py`` holds the import directions between them.
"""
