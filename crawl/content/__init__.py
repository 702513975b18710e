"""What a fetched page holds: its links (``links``), visible and main text (``text``),
sitemaps (``sitemaps``), simhash fingerprints and their index (``simhash``), and
near-duplicates (``neardup``, and ``neardup_judge``: the near-duplicate stage's work)."""
