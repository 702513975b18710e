"""The crawl job: its topology, the local launcher and the command line.

``python -m job crawl --seeds seeds.txt --out out/`` (or the ``pyflink-crawler`` console script)
runs a crawl on the local MiniCluster; ``python -m job demo`` crawls the built-in synthetic web.
"""
