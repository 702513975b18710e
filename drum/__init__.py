"""DRUM: the disk-backed URL-seen test and crawl DB (IRLBot's Disk Repository with Update
Management). Not built yet: the crawl DB currently lives in Flink MapState (RocksDB)."""
