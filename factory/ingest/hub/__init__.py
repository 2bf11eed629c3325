"""Datasets as published on the Hugging Face Hub: ``hf://`` resolution through huggingface_hub's cache
(:mod:`.resolve`), adapters for the published layouts (:mod:`.adapters`, registered as ``hf-*``), bounded-memory
readers (:mod:`.stream`) and the streamed ingest (:mod:`.ingest`). docs/hub.md has the table of datasets and fields.
"""

# The adapter registry first: it imports .adapters and then the adapters built on them (factory.ingest.multipl_e
# imports HUB_DATASETS), so importing factory.ingest.hub.adapters first must not find it half-initialised.
import factory.ingest.adapters  # noqa: E402,F401
