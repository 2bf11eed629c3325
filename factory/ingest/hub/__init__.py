"""Datasets as published on the Hugging Face Hub: ``hf://`` resolution through huggingface_hub's cache
(:mod:`.resolve`), adapters for the published layouts (:mod:`.adapters`, registered as ``hf-*``), bounded-memory
readers (:mod:`.stream`) and the streamed ingest (:mod:`.ingest`). docs/hub.md has the table of datasets and fields.
"""

