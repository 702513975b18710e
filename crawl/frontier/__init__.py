"""The fetch stage's per-host decisions, without Flink: the host's queue (``host_queue``),
its politeness clock and back-off (``politeness``), robots.txt (``robots``), the page budget
shared by every subtask (``budget``), and what a host does when it wakes (``scheduler``)."""
