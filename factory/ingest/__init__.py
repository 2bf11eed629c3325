"""Ingestion engine: readers (file/line-located errors), dataset adapters, normalization to problems / tests /
programs. The lake side - `factory ingest` - is :mod:`factory.stages.ingest`.
"""
