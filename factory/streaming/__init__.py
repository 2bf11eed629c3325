"""What the stages that stream GBs of MB-sized rows (curate, release, export, ingest) share: a write-behind thread and
a read-ahead iterator beside the Python that builds the rows (:mod:`factory.streaming.background`) and glibc malloc
tuned to reuse freed memory (:mod:`factory.streaming.allocator`)."""
