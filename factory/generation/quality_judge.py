"""Skywork-OR1-style LLM-as-judge problem quality: the judge prompt, judge specs and verdict parsing.

A judge reads a problem statement and answers whether it is well posed (clear, self-contained, solvable,
examples consistent with the statement), ending with ``VERDICT: VALID`` or ``VERDICT: INVALID``. Each judge is
asked ``n`` times per problem; :func:`parse_vote` turns a completion into ``valid`` | ``invalid`` | ``unparsed``
(never ``valid`` unless the completion says so). The stage is :mod:`factory.stages.judge_quality`.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from .synth import strip_think

VOTES = ("valid", "invalid", "unparsed")
# bump when parse_vote changes what it returns: the next `factory judge-quality` re-derives stored votes from the
# silver.llm_calls ledger (no model calls). 2: a marker followed by "or" / "/" is an echoed instruction
PARSER_VERSION = 2

_CRITERIA = ("- clear: the task and the expected input/output are stated unambiguously;\n"
             "- self-contained: nothing needed to solve it is missing (no undefined terms, data or links);\n"
             "- solvable: a correct program exists and can be written from the statement alone;\n"
             "- consistent: every example agrees with the statement.")

# prompt variants: "reasoned" lets the judge think first (strong judges, enough tokens); "brief" is short and
# asks for the verdict on the first line (small models, small max_tokens); "prefill" is "brief" with the answer
# opened as "VERDICT:" for the model to continue (local backends only: OpenAI-compatible servers do not continue
# an assistant message). Whatever the variant, the last verdict marker counts.
_BRIEF = ("Is this programming problem well posed (clear, self-contained, solvable, examples consistent with the "
          "statement)?\n\nProblem:\n{problem}\n\n"
          "Answer on the first line with exactly VERDICT: VALID or VERDICT: INVALID, then give one short reason.")
PROMPTS = {
    "reasoned": ("You are reviewing a programming problem before it is used to train a code model.\n"
                 "Decide whether the problem is well posed:\n{criteria}\n\nProblem:\n{problem}\n\n"
                 "Think briefly about each point, then end your answer with one final line: "
                 "VERDICT: VALID or VERDICT: INVALID"),
    "brief": _BRIEF,
    "prefill": _BRIEF,
}
ASSISTANT_PREFIX = {"prefill": "VERDICT:"}
DEFAULT_PROMPT = "reasoned"


@dataclass(frozen=True)
class Judge:
    """One judge: a model plus optional per-judge overrides (prompt variant, temperature).

    ``label`` names the judge in the lake (``silver.quality_votes.judge``): the model alone, or
    ``model@prompt=brief,temperature=1.0`` when it overrides the run's settings, so the same model can sit on
    the panel twice.
    """

    model: str | None            # None: the backend's default model (transformers: bundled SmolLM2 GGUF)
    prompt: str | None = None
    temperature: float | None = None

    @classmethod
    def parse(cls, spec: str) -> "Judge":
        """``MODEL``, ``MODEL@prompt=brief,temperature=1.0`` or ``@temperature=1.0`` (backend default model);
        ``default`` also names the backend's default model."""
        model, overrides = spec, {}
        if "@" in spec and "=" in spec.rsplit("@", 1)[1]:
            model, tail = spec.rsplit("@", 1)
            for item in filter(None, (x.strip() for x in tail.split(","))):
                key, sep, value = item.partition("=")
                if not sep or key.strip() not in ("prompt", "temperature"):
                    raise ValueError(f"judge {spec!r}: overrides are prompt=... and temperature=..., got {item!r}")
                overrides[key.strip()] = value.strip()
        judge = cls(None if model.strip() in ("", "default") else model.strip(), overrides.get("prompt"),
                    float(overrides["temperature"]) if "temperature" in overrides else None)
        if judge.prompt is not None and judge.prompt not in PROMPTS:
            raise ValueError(f"judge {spec!r}: unknown prompt {judge.prompt!r}; choose one of {', '.join(PROMPTS)}")
        return judge

    def label(self, model_name: str) -> str:
        """The judge's name in the lake, given the model name the backend resolved."""
        extra = [] if self.prompt is None else [f"prompt={self.prompt}"]
        extra += [] if self.temperature is None else [f"temperature={float(self.temperature)!r}"]
        return f"{model_name}@{','.join(extra)}" if extra else model_name


def problem_text(question: str, starter_code: str | None = None) -> str:
    """The statement shown to the judge: the question, plus starter code when the question does not hold it."""
    text = question.strip()
    starter = (starter_code or "").strip()
    if starter and starter not in text:
        text += f"\n\nStarter code:\n```python\n{starter}\n```"
    return text


def build_judge_messages(question: str, starter_code: str | None = None, prompt: str = DEFAULT_PROMPT) -> list[dict]:
    """A user message asking for a validity verdict on the problem (plus the opened answer for "prefill")."""
    if prompt not in PROMPTS:
        raise ValueError(f"unknown judge prompt {prompt!r}; choose one of {', '.join(PROMPTS)}")
    body = PROMPTS[prompt].format(criteria=_CRITERIA, problem=problem_text(question, starter_code))
    messages = [{"role": "user", "content": body}]
    if prompt in ASSISTANT_PREFIX:
        messages.append({"role": "assistant", "content": ASSISTANT_PREFIX[prompt]})
    return messages


def answer_text(messages: list[dict], completion: str) -> str:
    """What the judge said: an opened assistant answer (prefill) followed by the model's continuation."""
    prefix = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""
    return prefix + completion


def prompt_hash(messages: list[dict]) -> str:
    """sha256[:16] of the judge messages: changes when the prompt template or the problem text does."""
    text = json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# "VERDICT: VALID", "**Verdict:** invalid", "Final verdict - `VALID`", "VERDICT=INVALID", "## Verdict: **Valid**"
_DECOR = r"[\s*_`#>:=\-\"'\[\]()]*"
_MARKER = re.compile(r"\bverdict\b(?:\s+is\b)?" + _DECOR + r"\b(in)?valid\b", re.I)
# a line that is only the word: "VALID", "**Invalid.**"
_BARE = re.compile(r"^" + _DECOR + r"(in)?valid" + r"[\s*_`.!\"')\]]*$", re.I)
# a marker followed by an alternative ("VERDICT: VALID or INVALID", "VALID/INVALID") echoes the instruction
# (also when cut off: "VERDICT: VALID or VERD")
_ALTERNATIVE = re.compile(r"^[\s*_`]*(/|\||\bor\b)", re.I)


def parse_vote(completion: str | None) -> str:
    """``valid`` | ``invalid`` | ``unparsed``: the last verdict marker wins (case-insensitive, markdown tolerated).

    Reasoning inside ``<think>`` is ignored (so is everything after an unclosed one). A line with a marker followed
    by an alternative (the instruction echoed back: "VERDICT: VALID or VERDICT: INVALID", "VALID/INVALID",
    "VERDICT: VALID or VERD" cut off) holds no vote. Anything unclear is ``unparsed``, which never counts as valid.
    """
    if not completion:
        return "unparsed"
    vote = None
    for line in strip_think(completion).splitlines():
        markers = list(_MARKER.finditer(line))
        if any(_ALTERNATIVE.match(line[m.end():]) for m in markers):
            continue
        if markers:
            vote = "invalid" if markers[-1].group(1) else "valid"
        elif (bare := _BARE.match(line)) is not None:
            vote = "invalid" if bare.group(1) else "valid"
    return vote or "unparsed"
