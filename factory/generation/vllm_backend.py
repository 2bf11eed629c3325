"""Offline vLLM backend (``LLM.chat``). vLLM is imported lazily so this module imports without it."""
from __future__ import annotations

import contextlib
import gc
import itertools
import time

from .base import Backend, Gate
from .types import ChatRequest, GenerationResult


def _import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError("the vllm backend needs vLLM: `pip install vllm` on a machine with a supported "
                          "GPU, or use the openai backend against a `vllm serve` endpoint") from e
    return vllm


class VLLMBackend(Backend):
    """Batches all pending requests into ``LLM.chat`` calls (one per prefix mode), one SamplingParams each.

    ``latency_s`` is the batch wall time divided by the batch size. Extra keyword arguments go to ``LLM()``.
    """

    name = "vllm"

    def __init__(self, model: str, *, llm=None, cache=None, budget=None, **llm_kwargs):
        super().__init__(model, cache=cache, budget=budget)
        self._llm, self._llm_kwargs = llm, llm_kwargs

    @property
    def parallel_requests(self) -> int:
        """vLLM batches continuously: hand it as many sequences as it schedules at once (``max_num_seqs``)."""
        return int(self._llm_kwargs.get("max_num_seqs") or 256)

    @property
    def llm(self):
        if self._llm is None:
            self._llm = _import_vllm().LLM(model=self.model, **self._llm_kwargs)
        return self._llm

    def close(self) -> None:
        """Shut the engine's processes down now. Needed where interpreter-exit hooks never run (a spawned replica
        process ends with ``os._exit``): without it the engine-core process outlives its owner."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        for owner in (llm, engine, getattr(engine, "engine_core", None)):
            if callable(stop := getattr(owner, "shutdown", None)):
                with contextlib.suppress(Exception):
                    stop()
                break
        del llm, engine
        gc.collect()

    def warm(self) -> None:
        self.llm  # noqa: B018 - builds the engine now

    def _sampling_params(self, p):
        vllm = _import_vllm()
        # vLLM refuses n > 1 with greedy decoding: decode once, the copies are added afterwards
        return vllm.SamplingParams(n=1 if p.temperature == 0 else p.n, temperature=p.temperature, top_p=p.top_p,
                                   max_tokens=p.max_tokens, seed=p.seed, stop=list(p.stop) or None)

    def _run_many(self, requests: list[ChatRequest], gate: Gate) -> list[GenerationResult | None]:
        out: list[GenerationResult | None] = [None] * len(requests)
        admitted = list(itertools.takewhile(lambda i: gate.start(), range(len(requests))))
        for cont in (False, True):
            idx = [i for i in admitted if requests[i].continues_assistant == cont]
            if not idx:
                continue
            t0 = time.perf_counter()
            outputs = self.llm.chat([[dict(m) for m in requests[i].messages] for i in idx],
                                    sampling_params=[self._sampling_params(requests[i].params) for i in idx],
                                    use_tqdm=False, add_generation_prompt=not cont,
                                    continue_final_message=cont)
            per = (time.perf_counter() - t0) / len(idx)
            for i, o in zip(idx, outputs):
                p = requests[i].params
                res = GenerationResult([c.text for c in o.outputs], len(o.prompt_token_ids or []),
                                       sum(len(c.token_ids) for c in o.outputs), per,
                                       finish_reasons=[c.finish_reason for c in o.outputs])
                if p.temperature == 0 and p.n > 1:
                    res.repeat_decoding(p.n)
                out[i] = res
                gate.done(requests[i], res)
        return out
