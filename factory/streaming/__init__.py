"""What the stages that stream GBs of MB-sized rows (curate, release, export, ingest) share: a write-behind
thread and a read-ahead iterator (:mod:`factory.streaming.background`: Parquet encoding, compression and reads
release the GIL, so they run beside the Python that builds the rows) and glibc malloc tuned to reuse freed
memory (:mod:`factory.streaming.allocator`)."""
