"""Multi-turn code-interpreter rollouts (R1-Code-Interpreter): text <-> ```python block <-> interpreter output.

A policy writes text; when a generation step ends with a complete ```python block, the block runs in the trajectory's
own :class:`factory.sandbox.session.InterpreterSession` (state kept between calls, per-call CPU/wall limits) and its
output comes back as an interpreter turn (``Code Execution Results:`` + an ```output fence,
:func:`factory.answers.r1ci.observation_text`); the policy continues after it. A trajectory ends at a
``<<<final answer>>>``, at a step without a code block, at ``max_calls`` interpreter calls (R1-CI: 8; a step asking for
a ninth ends it) or when a step runs out of tokens. Every turn is recorded (text, token ids, the cell's status and
CPU/wall seconds) and the trajectory is scored with the R1-CI reward (:func:`factory.answers.r1ci.score_trajectory`).

Policies: :class:`HFPolicy` (exact token ids) and :class:`BackendPolicy` (any generation backend). The RL side:
:func:`trajectory_batch` / :func:`grpo_step` (the loss mask is 0 on interpreter output), and the trainers'
multi-turn formats :func:`verl_sft_row` / :func:`verl_rl_row` / :func:`trl_row` (interpreter turns as ``tool``).
"""
from __future__ import annotations

import contextlib
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import torch

from factory.answers.r1ci import code_blocks, observation_text, score_trajectory
from factory.answers.checks import extract_final_answer

MAX_CALLS = 8                 # R1-CI: at most 8 interpreter calls per answer
CALL_WALL_S = 60.0            # R1-CI: 60 s per script
FINAL = re.compile(r"<<<.*?>>>", re.S)
CODE_DONE = re.compile(r"```python[ \t]*\n.*?```", re.S)

MODES = {   # R1-CI answers each task with several agent modes; each is a system prompt
    "text": "Solve the task by reasoning step by step in plain text. Do not write code. End with the final answer "
            "as <<<answer>>>.",
    "code": "Solve the task by writing Python code. Put the code in one ```python block; it will be executed and "
            "its printed output shown to you as 'Code Execution Results'. Then give the final answer as "
            "<<<answer>>>.",
    "mixed": "Reason step by step. Whenever computing or checking helps, write one ```python block; it is "
             "executed and its output shown to you. You may do this several times. End with the final answer as "
             "<<<answer>>>.",
    "verify": "First reason in text to an answer, then check it with one ```python block (it is executed and its "
              "output shown to you), then give the final answer as <<<answer>>>.",
}


def step_done(text: str) -> bool:
    """A generation step is over once it holds a complete ```python block or a final answer."""
    return bool(CODE_DONE.search(text) or FINAL.search(text))


@dataclass
class Turn:
    role: str                       # assistant | interpreter
    text: str
    token_ids: list[int] = field(default_factory=list)
    status: str | None = None       # interpreter: the cell's status (ok | error | timeout | killed | closed)
    cpu_s: float | None = None
    wall_s: float | None = None
    finish: str | None = None       # assistant: code | answer | stop | length

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "token_ids"} | {"n_tokens": len(self.token_ids)}


@dataclass
class Trajectory:
    key: dict                       # caller's identity of the trajectory (problem, mode, sample index, ...)
    messages: list[dict]            # the prompt: [system, user]
    ground_truth: dict
    prompt_ids: list[int] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    end: str | None = None          # answer | no_code | max_calls | length | max_tokens
    reward: dict | None = None
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return sum(t.role == "interpreter" for t in self.turns)

    @property
    def response_ids(self) -> list[int]:
        return [i for t in self.turns for i in t.token_ids]

    @property
    def loss_mask(self) -> list[int]:
        """1 for every policy token, 0 for every interpreter-output token (the RL loss ignores those)."""
        return [int(t.role == "assistant") for t in self.turns for _ in t.token_ids]

    @property
    def response_text(self) -> str:
        return "".join(t.text for t in self.turns)

    def score(self) -> dict:
        self.reward = score_trajectory([{"role": t.role, "text": t.text} for t in self.turns],
                                       self.ground_truth).as_dict()
        return self.reward


# -- policies ----------------------------------------------------------------------------------------------
class _RowStop:
    """Per-row stopping criterion for ``generate``: stop a row once its new text completes a step."""

    def __init__(self, tokenizer, prompt_len: int, batch: int):
        self.tokenizer, self.prompt_len = tokenizer, prompt_len
        self.stop_at: list[int | None] = [None] * batch

    def __call__(self, input_ids, scores, **kw):
        done = []
        for b in range(input_ids.shape[0]):
            if self.stop_at[b] is None:
                text = self.tokenizer.decode(input_ids[b, self.prompt_len:], skip_special_tokens=True)
                if step_done(text):
                    self.stop_at[b] = input_ids.shape[1] - self.prompt_len
            done.append(self.stop_at[b] is not None)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class HFPolicy:
    """A transformers causal LM generating from exact token ids (batched, left-padded): a trajectory's ids are
    exactly the ids generated (model turns) and the tokenised interpreter turns, so the loss mask is exact."""

    def __init__(self, model, tokenizer, *, max_new_tokens: int = 256, temperature: float = 1.0, top_p: float = 1.0):
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        from factory_train.rl.loop import _eos_ids

        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        im_end = [tokenizer.convert_tokens_to_ids("<|im_end|>")] if "<|im_end|>" in tokenizer.get_vocab() else []
        self.eos_ids = sorted({*_eos_ids(tokenizer, model), *im_end})

    def encode_prompt(self, messages: list[dict]) -> list[int]:
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def encode_text(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.no_grad()
    def step(self, prefixes: list[list[int]]) -> list[tuple[list[int], str, str]]:
        """One generation step per prefix: (new token ids, their text, finish: step | eos | length)."""
        pad = self.tokenizer.pad_token_id
        width = max(len(p) for p in prefixes)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prefixes])
        att = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prefixes])
        dev = next(self.model.parameters()).device
        stop = _RowStop(self.tokenizer, width, len(prefixes))
        from transformers import StoppingCriteriaList
        sample = self.temperature > 0
        out = self.model.generate(input_ids=ids.to(dev), attention_mask=att.to(dev), do_sample=sample,
                                  temperature=self.temperature if sample else None,
                                  top_p=self.top_p if sample else None, top_k=0 if sample else None,
                                  max_new_tokens=self.max_new_tokens, pad_token_id=pad, eos_token_id=self.eos_ids,
                                  stopping_criteria=StoppingCriteriaList([stop]))
        results = []
        eos = set(self.eos_ids)
        for b in range(len(prefixes)):
            new = out[b, width:].tolist()
            if stop.stop_at[b] is not None:
                new, finish = new[:stop.stop_at[b]], "step"
            else:
                end = next((k for k, t in enumerate(new) if t in eos), None)
                new, finish = (new[:end + 1], "eos") if end is not None else (new, "length")
            results.append((new, self.tokenizer.decode(new, skip_special_tokens=True), finish))
        return results


class BackendPolicy:
    """A factory.generation backend continuing the assistant message (OpenAI-compatible with vLLM's
    ``continue_final_message``, the vLLM backend, the transformers backend). Token ids come from ``tokenizer``
    (each turn tokenised on its own); without one the loss mask is empty (text-only rollouts for the lake)."""

    def __init__(self, backend, tokenizer=None, *, max_new_tokens: int = 256, temperature: float = 1.0,
                 top_p: float = 1.0, seed: int | None = None):
        self.backend, self.tokenizer = backend, tokenizer
        self.max_new_tokens, self.temperature, self.top_p, self.seed = max_new_tokens, temperature, top_p, seed

    def encode_text(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if self.tokenizer is not None else []

    def step_text(self, conversations: list[tuple[list[dict], str]], seeds: list[int | None]):
        from factory.generation.types import ChatRequest, SamplingParams

        reqs = [ChatRequest(list(messages) + ([{"role": "assistant", "content": partial}] if partial else []),
                            SamplingParams(n=1, temperature=self.temperature, top_p=self.top_p,
                                           max_tokens=self.max_new_tokens, seed=seed, stop=("```\n",)))
                for (messages, partial), seed in zip(conversations, seeds)]
        out = []
        for res in self.backend.generate(reqs):
            if res.error:
                raise RuntimeError(f"generation failed: {res.error}")
            text, reason = res.completions[0], (res.finish_reasons or [None])[0]
            if text.count("```python") > len(CODE_DONE.findall(text)):   # cut at the closing fence's stop
                text = text.rstrip("`\n") + "\n```"
            out.append((text, "step" if step_done(text) else ("length" if reason == "length" else "eos")))
        return out


# -- the rollout loop --------------------------------------------------------------------------------------
def _run_cells(sessions: dict, jobs: list[tuple[int, str]], session_factory, workers: int = 4) -> dict:
    def one(job):
        i, code = job
        if i not in sessions:
            sessions[i] = session_factory()
        return i, sessions[i].run(code)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        return dict(pool.map(one, jobs))


def run_rollouts(policy, trajectories: list[Trajectory], session_factory: Callable, *, max_calls: int = MAX_CALLS,
                 max_response_tokens: int = 4096, batch_size: int = 16, workers: int = 4,
                 log: Callable[[str], None] | None = None) -> list[Trajectory]:
    """Run every trajectory to its end (see the module docstring); returns them scored.

    ``session_factory()`` makes one interpreter session per trajectory (on its first code block);
    every session is closed when its trajectory ends. Trajectories advance in batches of ``batch_size``."""
    for i in range(0, len(trajectories), batch_size):
        _run_batch(policy, trajectories[i:i + batch_size], session_factory, max_calls, max_response_tokens, workers)
        if log:
            log(f"rollouts: {min(i + batch_size, len(trajectories))}/{len(trajectories)}")
    return trajectories


def _run_batch(policy, trajs: list[Trajectory], session_factory, max_calls: int, max_response_tokens: int,
               workers: int) -> None:
    sessions: dict = {}
    t0 = time.perf_counter()
    exact = isinstance(policy, HFPolicy)
    if exact:
        for t in trajs:
            t.prompt_ids = policy.encode_prompt(t.messages)
    active = list(range(len(trajs)))
    try:
        while active:
            if exact:
                outs = policy.step([trajs[i].prompt_ids + trajs[i].response_ids for i in active])
            else:
                got = policy.step_text([(trajs[i].messages, trajs[i].response_text) for i in active],
                                       [_seed(trajs[i]) for i in active])
                outs = [(policy.encode_text(text), text, finish) for text, finish in got]
            jobs = []
            for i, (ids, text, finish) in zip(active, outs):
                t = trajs[i]
                blocks, answered = code_blocks(text), extract_final_answer(text) is not None
                wants_code = finish == "step" and blocks and not answered
                t.turns.append(Turn("assistant", text, ids, finish="code" if wants_code else "answer" if answered
                                    else "length" if finish == "length" else "stop"))
                if not wants_code:
                    t.end = "answer" if answered else "length" if finish == "length" else "no_code"
                elif t.calls >= max_calls:
                    t.end = "max_calls"
                elif len(t.response_ids) >= max_response_tokens:
                    t.end = "max_tokens"
                else:
                    jobs.append((i, blocks[-1]))
            results = _run_cells(sessions, jobs, session_factory, workers) if jobs else {}
            for i, _code in jobs:
                cell = results[i]
                obs = observation_text(cell.stdout, cell.stderr, cell.result, cell.error, cell.status)
                trajs[i].turns.append(Turn("interpreter", obs, policy.encode_text(obs), status=cell.status,
                                           cpu_s=cell.cpu_s, wall_s=cell.wall_s))
                if cell.status == "closed":   # a trajectory whose session is gone cannot run code any more
                    trajs[i].end = "closed"
            active = [i for i, _code in jobs if trajs[i].end is None]
    finally:
        for s in sessions.values():
            with contextlib.suppress(Exception):
                s.close()
    per = (time.perf_counter() - t0) / max(1, len(trajs))
    for t in trajs:
        t.seconds = per
        t.score()


def _seed(t: Trajectory) -> int | None:
    s = t.key.get("seed")
    return None if s is None else int(s) * 1000 + len(t.turns)


# -- RL tensors and the masked GRPO update -------------------------------------------------------------------
def trajectory_batch(trajs: list[Trajectory], pad_id: int) -> dict:
    """``input_ids`` (prompts left-padded to one width, responses right-padded), ``attention_mask``,
    ``response_mask`` = the loss mask (policy tokens 1; interpreter output and padding 0), ``prompt_len``."""
    P = max(len(t.prompt_ids) for t in trajs)
    T = max(max(len(t.response_ids) for t in trajs), 1)
    ids, att, mask = [], [], []
    for t in trajs:
        r, m = t.response_ids, t.loss_mask
        ids.append([pad_id] * (P - len(t.prompt_ids)) + t.prompt_ids + r + [pad_id] * (T - len(r)))
        att.append([0] * (P - len(t.prompt_ids)) + [1] * (len(t.prompt_ids) + len(r)) + [0] * (T - len(r)))
        mask.append(m + [0] * (T - len(m)))
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(att),
            "response_mask": torch.tensor(mask, dtype=torch.float32), "prompt_len": P}


def grpo_step(policy, optimizer, trajs: list[Trajectory], pad_id: int, *, loss_mode: str = "vanilla",
              loss_agg_mode: str = "token-mean", group_key: str = "problem_id") -> dict:
    """One GRPO update on scored trajectories: group-normalised R1-CI rewards per ``key[group_key]``,
    broadcast over the loss mask, so interpreter tokens carry neither advantage nor loss."""
    from factory_train.rl.advantages import compute_grpo_outcome_advantage, outcome_to_token_rewards
    from factory_train.rl.loop import policy_update

    batch = trajectory_batch(trajs, pad_id)
    scores = torch.tensor([float(t.reward["reward"]) for t in trajs])
    groups = {}
    index = [groups.setdefault(t.key.get(group_key), len(groups)) for t in trajs]
    adv, _ = compute_grpo_outcome_advantage(outcome_to_token_rewards(scores, batch["response_mask"]),
                                            batch["response_mask"], index=index)
    batch.update(advantages=adv * batch["response_mask"], positive=scores >= 1.0)
    return policy_update(policy, optimizer, batch, loss_mode, loss_agg_mode)


# -- trainer formats ---------------------------------------------------------------------------------------
def chat_messages(t: Trajectory) -> list[dict]:
    """The trajectory as chat messages: prompt, then assistant turns and interpreter turns as ``tool``."""
    return list(t.messages) + [{"role": "assistant" if x.role == "assistant" else "tool", "content": x.text}
                               for x in t.turns]


def verl_sft_row(t: Trajectory) -> dict:
    """verl MultiTurnSFTDataset row (``messages``; loss on assistant messages only, tool turns masked)."""
    return {"messages": chat_messages(t), "reward": float(t.reward["reward"]) if t.reward else None}


def trl_row(t: Trajectory) -> dict:
    """TRL conversational SFT row: ``prompt`` / ``completion`` messages (assistant_only_loss masks tool turns)."""
    msgs = chat_messages(t)
    return {"prompt": msgs[:len(t.messages)], "completion": msgs[len(t.messages):]}


def verl_rl_row(messages: list[dict], ground_truth: dict, index: int, *, data_source: str, split: str = "train",
                problem_id: str | None = None, max_calls: int = MAX_CALLS, cpu_s: float = CALL_WALL_S) -> dict:
    """verl RL row for its multi-turn agent loop (``agent_name`` tool_agent, the code-interpreter tool's kwargs
    in ``extra_info.tools_kwargs``; ground truth = the answer check factory.reward's r1ci entry points read)."""
    return {"data_source": data_source, "prompt": messages, "ability": "reasoning", "agent_name": "tool_agent",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(ground_truth, sort_keys=True)},
            "extra_info": {"index": index, "split": split, "problem_id": problem_id, "need_tools_kwargs": True,
                           "tools_kwargs": {"code_interpreter": {"create_kwargs": {"max_calls": max_calls,
                                                                                   "cpu_s_per_call": cpu_s}}}}}
