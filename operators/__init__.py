"""The Flink functions of the crawl job: thin wrappers over the plain logic in ``crawl/``.

Each module holds one function class, and the frozen settings it is built from where it takes
more than a setting or two; state is declared in ``open()`` with a numbered comment on what
each piece holds.
"""
