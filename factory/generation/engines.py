"""One generation engine in this process, by name (no replicas): what :func:`factory.generation.make_backend` and
each replica process of :class:`~factory.generation.replicas.ReplicaPool` build."""
from __future__ import annotations

from .base import Backend

BACKENDS = ("openai", "vllm", "transformers")


def local_engine(key: str, model: str | None = None, **kw) -> Backend:
    """``openai`` | ``vllm`` | ``transformers`` (alias ``hf``), built with ``kw``."""
    if key == "openai":
        from .openai_backend import OpenAIBackend
        if not model:
            raise ValueError("the openai backend needs a model name")
        return OpenAIBackend(model, **kw)
    if key == "vllm":
        from .vllm_backend import VLLMBackend
        return VLLMBackend(model, **kw)
    if key in ("transformers", "hf"):
        from .hf_backend import TransformersBackend
        return TransformersBackend(model, **kw)
    raise ValueError(f"unknown backend {key!r}; choose one of {', '.join(BACKENDS)}")
