"""Generation layer: LLM backends behind one interface, AceCoder-style synthesis/sampling prompts and parsers.

``make_backend(name, model, **kw).generate(requests) -> list[GenerationResult]``.
"""
from __future__ import annotations

from .base import Backend
from .engines import BACKENDS, local_engine
from .cache import Budget, BudgetExhausted, GenerationCache, JsonlCache, MemoryCache
from .sample import build_sample_messages, extract_code
from .synth import SynthResult, build_synth_messages, parse_synth_output
from .types import ChatRequest, GenerationResult, SamplingParams, request_hash


def make_backend(name: str, model: str | None = None, **kw) -> Backend:
    """Build a backend by name: ``openai`` | ``vllm`` | ``transformers`` (alias ``hf``).

    Keyword arguments go to the backend constructor (``cache=``, ``budget=`` are accepted by all).
    ``replicas=N`` (with ``devices_per_replica=``) runs N copies of a local engine, one process each
    (:class:`~factory.generation.replicas.ReplicaPool`); ``replicas=1`` is one engine in this process.
    """
    key = name.lower()
    if key == "vllm" and not model:
        raise ValueError("the vllm backend needs a model path or name")
    replicas = kw.pop("replicas", None) or 1
    devices_per_replica = kw.pop("devices_per_replica", None) or 1
    if replicas > 1 or devices_per_replica > 1:
        from .replicas import ReplicaPool
        return ReplicaPool(key, model, replicas=replicas, devices_per_replica=devices_per_replica, **kw)
    return local_engine(key, model, **kw)


__all__ = ["Backend", "Budget", "BudgetExhausted", "ChatRequest", "GenerationCache", "GenerationResult",
           "JsonlCache", "MemoryCache", "SamplingParams", "SynthResult", "make_backend", "request_hash",
           "build_synth_messages", "parse_synth_output", "build_sample_messages", "extract_code", "BACKENDS"]
