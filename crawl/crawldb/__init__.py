"""The crawl DB of one partition (``partition``: the URL-seen test, every URL's record in a
DRUM, admission and releases) and the recrawl schedule of a continuous crawl (``recrawl``)."""
