"""Request/result value types shared by every generation backend, and the stable request hash."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict  # {"role": str, "content": str}


@dataclass(frozen=True)
class SamplingParams:
    """Decoding parameters. ``temperature == 0`` means greedy; ``seed`` makes sampling reproducible."""

    n: int = 1
    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("n", "max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if isinstance(self.stop, str) or isinstance(self.stop, list):
            object.__setattr__(self, "stop", (self.stop,) if isinstance(self.stop, str) else tuple(self.stop))

    def to_dict(self) -> dict:
        return {**asdict(self), "stop": list(self.stop)}


@dataclass(frozen=True)
class ChatRequest:
    """A chat conversation plus sampling parameters. A trailing assistant message is a prefix to continue."""

    messages: tuple[Message, ...]
    params: SamplingParams = field(default_factory=SamplingParams)

    def __init__(self, messages, params: SamplingParams | None = None):
        msgs = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in messages)
        if not msgs:
            raise ValueError("ChatRequest needs at least one message")
        object.__setattr__(self, "messages", msgs)
        object.__setattr__(self, "params", params or SamplingParams())

    @property
    def continues_assistant(self) -> bool:
        """True when the last message is an assistant prefix the model should continue."""
        return self.messages[-1]["role"] == "assistant"

    def to_dict(self) -> dict:
        return {"messages": [dict(m) for m in self.messages], "params": self.params.to_dict()}


@dataclass
class GenerationResult:
    """Completions for one request. ``error`` is set (and completions may be empty) when the call failed."""

    completions: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    finish_reasons: list[str | None] = field(default_factory=list)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def repeat_decoding(self, n: int) -> "GenerationResult":
        """Let one greedy decoding stand for ``n`` identical samples (in place; returns self)."""
        self.completions *= n
        self.finish_reasons *= n
        self.completion_tokens *= n
        return self

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "cached"}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GenerationResult":
        keys = ("completions", "prompt_tokens", "completion_tokens", "latency_s", "error", "finish_reasons")
        return cls(**{k: d[k] for k in keys if k in d})


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte-stable form hashed by :func:`request_hash`."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(backend: str, model: str, messages, params: SamplingParams) -> str:
    """sha256 hex of the canonical JSON of (backend, model, messages, params); stable across runs."""
    payload = {"backend": backend, "model": model, "params": params.to_dict(),
               "messages": [{"role": m["role"], "content": m["content"]} for m in messages]}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
