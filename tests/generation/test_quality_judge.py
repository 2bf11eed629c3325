"""Skywork-OR1 LLM-as-judge quality votes: verdict parsing, then `factory judge-quality` over real HTTP (a real
OpenAI-compatible server on 127.0.0.1 answering scripted verdicts) on real HumanEval problems, into a real
lake, and the gold.problem_quality threshold.

Scripted panel (two judges x 16 answers, several verdict spellings):
* HumanEval/0: both judges always valid                      -> 32 valid, kept;
* HumanEval/2: judge-a 5 valid + 11 invalid, judge-b 4 valid + 12 unparsed -> 9 valid, kept (the boundary);
* HumanEval/4: judge-a 4 valid + 12 invalid, judge-b 4 valid + 12 echoes of the instruction -> 8, dropped;
* HumanEval/7: never judged                                   -> absent from the view.
"""
from __future__ import annotations

import json
import re

import pytest

from factory.errors import FactoryError, Interrupted
from factory.generation.quality_judge import Judge, answer_text, build_judge_messages, parse_vote
from factory.stages.ingest import ingest_source
from factory.stages.judge_quality import run_quality_votes
from factory.lake.commit import stage_run
from tests.generation.conftest import FakeOpenAIServer
from tests.lakeutil import factory_cli, init_lake, snapshot_id
from tests.lakeutil import query as q

PARSE_CASES = {
    "plain": ("The statement is clear.\nVERDICT: VALID", "valid"),
    "lower_case": ("verdict: invalid", "invalid"),
    "bold_label": ("**VERDICT:** VALID", "valid"),
    "bold_line": ("Examples contradict the text.\n**VERDICT: INVALID**", "invalid"),
    "code_span_dash": ("Final verdict - `valid`", "valid"),
    "heading_then_bare_word": ("## Final verdict\n**Invalid.**", "invalid"),
    "verdict_is": ("After checking the examples, the verdict is INVALID.", "invalid"),
    "last_marker_wins": ("VERDICT: INVALID\nOn reflection the example is right.\nVERDICT: VALID", "valid"),
    "last_on_one_line": ("VERDICT: VALID, no wait, VERDICT: INVALID", "invalid"),
    "marker_then_word_below": ("VERDICT:\nVALID", "valid"),
    "echoed_instruction": ("Answer with VERDICT: VALID or VERDICT: INVALID", "unparsed"),
    "echoed_in_code_spans": ("`VERDICT: VALID` or `VERDICT: INVALID`", "unparsed"),
    "echo_then_answer": ("End with VERDICT: VALID or VERDICT: INVALID.\nVERDICT: INVALID", "invalid"),
    "slash_alternatives": ("VERDICT: VALID/INVALID", "unparsed"),
    "echo_cut_off": (" INVALID\nVERDICT: VALID or VERD", "invalid"),   # SmolLM2, 6 tokens: the echo is no vote
    "prose_only": ("The problem is valid and well posed.", "unparsed"),
    "negated": ("VERDICT: not valid", "unparsed"),
    "longer_word": ("VERDICT: VALIDATED", "unparsed"),
    "think_ignored": ("<think>VERDICT: INVALID</think>\nVERDICT: VALID", "valid"),
    "unclosed_think": ("<think>hmm, VERDICT: VALID maybe", "unparsed"),
    "cut_off": ("The statement defines the input but the", "unparsed"),
    "empty": ("", "unparsed"),
}


@pytest.mark.parametrize("name", list(PARSE_CASES))
def test_parse_vote(name):
    completion, expected = PARSE_CASES[name]
    assert parse_vote(completion) == expected
    assert parse_vote(None) == "unparsed"


def test_judge_specs_and_prompt():
    assert Judge.parse("org/model").label("org/model") == "org/model"
    j = Judge.parse("org/model@prompt=brief,temperature=1")
    assert (j.model, j.prompt, j.temperature) == ("org/model", "brief", 1.0)
    assert j.label("org/model") == "org/model@prompt=brief,temperature=1.0"
    assert Judge.parse("@temperature=0.7").model is None and Judge.parse("default").model is None
    assert Judge.parse("team@v2").model == "team@v2"          # an '@' without settings belongs to the name
    for bad in ("m@seed=1", "m@prompt=long"):
        with pytest.raises(ValueError):
            Judge.parse(bad)
    question = 'def add(a, b):\n    """Add two numbers.\n    >>> add(1, 2)\n    3\n    """\n'
    (msg,) = build_judge_messages(question, starter_code=question)
    assert msg["role"] == "user" and question.strip() in msg["content"] and "Starter code" not in msg["content"]
    assert "self-contained" in msg["content"] and msg["content"].endswith("VERDICT: VALID or VERDICT: INVALID")
    (brief,) = build_judge_messages("Sum a list.", starter_code="def total(xs):\n    pass", prompt="brief")
    assert "Starter code:\n```python\ndef total(xs):" in brief["content"] and "first line" in brief["content"]
    user, opened = build_judge_messages("Sum a list.", prompt="prefill")   # small local models: answer opened
    assert [user] == build_judge_messages("Sum a list.", prompt="brief")
    assert opened == {"role": "assistant", "content": "VERDICT:"}
    assert [parse_vote(answer_text([user, opened], c)) for c in (" VALID", " INVALID\nThe", " IN", "")] == [
        "valid", "invalid", "unparsed", "unparsed"]


VALID = ["VERDICT: VALID", "**VERDICT:** valid", "Clear and solvable.\nVerdict - `VALID`", "## Verdict\n**Valid**"]
INVALID = ["VERDICT: INVALID", "The examples disagree.\n**VERDICT: INVALID**", "verdict: invalid."]
SCRIPT = {  # (judge, entry point) -> number of valid answers, and what the other answers are
    ("judge-a", "has_close_elements"): (16, None), ("judge-b", "has_close_elements"): (16, None),
    ("judge-a", "truncate_number"): (5, "invalid"), ("judge-b", "truncate_number"): (4, "unparsed"),
    ("judge-a", "mean_absolute_deviation"): (4, "invalid"), ("judge-b", "mean_absolute_deviation"): (4, "echo"),
}
OTHER = {"invalid": lambda i: INVALID[i % len(INVALID)], "unparsed": lambda i: "I am not sure about this one.",
         "echo": lambda i: "Answer on the first line with exactly VERDICT: VALID or VERDICT: INVALID"}
JUDGED = ["HumanEval/0", "HumanEval/2", "HumanEval/4"]


class PanelServer(FakeOpenAIServer):
    """Answers the judge prompt per (model, problem) from SCRIPT; answer i of a request is choice i."""

    def reply(self, body, index):
        entry = re.search(r"def (\w+)\(", body["messages"][-1]["content"]).group(1)
        n_valid, other = SCRIPT.get((body["model"], entry), (16, None))
        k = index if not self.ignore_n else sum(1 for b in self.bodies if b["messages"] == body["messages"]) - 1
        return VALID[k % len(VALID)] if k < n_valid else OTHER[other](k)


@pytest.fixture
def lake(tmp_path, shared_data):
    path = init_lake(tmp_path / "lake")
    ingest_source("humaneval", [shared_data / "humaneval" / "HumanEval.jsonl.gz"], lake=path)
    return path


def ids(lake, source_ids=JUDGED) -> dict[str, str]:
    return dict(q(lake, "SELECT source_id, problem_id FROM silver.problems WHERE list_contains(?, source_id)",
                  [source_ids]))


def quality(lake, params=None) -> dict:
    if params:
        with stage_run("transform", {"names": ["gold.problem_quality"]}, lake=lake) as run:
            run.materialize(["gold.problem_quality"], params)
    return {r[0]: r[1:] for r in q(lake, """
        SELECT p.source_id, g.judges, g.votes, g.valid_votes, g.invalid_votes, g.unparsed_votes,
               g.valid_by_judge, g.keep FROM gold.problem_quality g JOIN silver.problems p USING (problem_id)""")}


def test_two_judges_vote_n_times_keep_threshold_and_rerun_is_free(lake):
    problem = ids(lake)
    with PanelServer() as server:
        args = ["judge-quality", "--backend", "openai", "--base-url", server.base_url, "--judge", "judge-a",
                "--judge", "judge-b", "--n", "16", *[a for pid in problem.values() for a in ("--problem-id", pid)]]
        done = factory_cli(*args, lake=lake)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["complete"] and report["new_calls"] == 6 and len(server.bodies) == 6
        assert all(b["n"] == 16 for b in server.bodies)
        assert report["by_judge"] == {"judge-a": {"valid": 25, "invalid": 23, "unparsed": 0},
                                      "judge-b": {"valid": 24, "invalid": 0, "unparsed": 24}}
        rows = q(lake, "SELECT problem_id, judge, count(*), count(DISTINCT sample_index), count(DISTINCT request_hash)"
                       " FROM silver.quality_votes GROUP BY ALL ORDER BY ALL")
        assert sorted((pid, j) for pid, j, *_ in rows) == sorted((pid, j) for pid in problem.values()
                                                                  for j in ("judge-a", "judge-b"))
        assert {tuple(r[2:]) for r in rows} == {(16, 16, 1)}          # 2 judges x 16 answers = 32 rows a problem
        ledger = q(lake, "SELECT count(*) FROM silver.llm_calls WHERE purpose = 'quality'")
        assert ledger == [(6,)] and q(lake, """
            SELECT count(*) FROM silver.quality_votes v ANTI JOIN silver.llm_calls c USING (request_hash)""") == [(0,)]

        curated = factory_cli("curate", lake=lake)
        assert curated.returncode == 0, curated.stderr
        assert quality(lake) == {
            "HumanEval/0": (2, 32, 32, 0, 0, '{"judge-a":16,"judge-b":16}', True),
            "HumanEval/2": (2, 32, 9, 11, 12, '{"judge-a":5,"judge-b":4}', True),
            "HumanEval/4": (2, 32, 8, 12, 12, '{"judge-a":4,"judge-b":4}', False)}   # HumanEval/7: not judged
        assert quality(lake, {"quality_min_valid_votes": 8})["HumanEval/4"][-1] is True

        before = snapshot_id(lake)
        again = factory_cli(*args, lake=lake)
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        assert (report["skipped_done"], report["new_calls"], report["run_ids"]) == (6, 0, [])
        assert len(server.bodies) == 6 and snapshot_id(lake) == before
        assert q(lake, "SELECT count(*) FROM silver.quality_votes") == [(96,)]

        # new settings for the same judges: new requests, and the view counts each judge's latest request only
        report = run_quality_votes(lake, judges=["judge-a", "judge-b"], n=16, backend="openai", temperature=1.0,
                                   base_urls=server.base_url, problem_ids=list(problem.values()))
        assert report["new_calls"] == 6 and q(lake, "SELECT count(*) FROM silver.quality_votes") == [(192,)]
        assert {k: v[:2] for k, v in quality(lake).items()} == dict.fromkeys(JUDGED, (2, 32))


def test_server_error_mid_request_writes_no_partial_votes(lake):
    problem = ids(lake)
    with PanelServer() as server:
        server.ignore_n = True        # like llama.cpp: one answer per HTTP call, so 4 calls per request
        server.plan = [("ok",)] * 6 + [500]   # judge-b's request for the first problem dies after 2 of 4 answers
        kw = dict(judges=["judge-a", "judge-b"], n=4, backend="openai", base_urls=[server.base_url],
                  problem_ids=list(problem.values()), chunk=1, concurrency=1, max_retries=0)
        report = run_quality_votes(lake, **kw)
        assert report["failed_requests"] == 1 and not report["complete"] and "injected 500" in report["stopped"]
        assert q(lake, "SELECT pb.source_id, v.judge, count(*) FROM silver.quality_votes v "
                       "JOIN silver.problems pb USING (problem_id) GROUP BY ALL") == [("HumanEval/0", "judge-a", 4)]
        assert q(lake, "SELECT count(*) FROM silver.llm_calls") == [(1,)]   # the failed request is not cached
        assert len(server.bodies) == 7

        server.bodies.clear()
        report = run_quality_votes(lake, **kw)
        assert report["complete"] and report["skipped_done"] == 1 and report["new_calls"] == 5
        assert len(server.bodies) == 5 * 4     # judge-a on HumanEval/0 is not asked again
        assert q(lake, "SELECT count(*), count(DISTINCT (problem_id, judge)) FROM silver.quality_votes") == [(24, 6)]
        assert quality(lake, {"quality_min_valid_votes": 5})["HumanEval/0"] == (
            2, 8, 8, 0, 0, '{"judge-a":4,"judge-b":4}', True)


def test_interrupt_rolls_back_the_chunk_in_flight(lake, monkeypatch):
    import factory.stages.judge_quality as stage

    problem = ids(lake)
    calls = {"n": 0}

    def parse_then_interrupt(text):
        calls["n"] += 1
        if calls["n"] > 2 * 4:        # the second chunk (second problem): Ctrl-C while writing its votes
            raise KeyboardInterrupt("SIGINT")
        return parse_vote(text)

    with PanelServer() as server:
        kw = dict(judges=["judge-a", "judge-b"], n=4, backend="openai", base_urls=server.base_url,
                  problem_ids=list(problem.values()), chunk=1)
        monkeypatch.setattr(stage, "parse_vote", parse_then_interrupt)
        with pytest.raises(Interrupted, match="1 of 3 problems committed"):
            run_quality_votes(lake, **kw)
        assert q(lake, "SELECT count(*), count(DISTINCT problem_id) FROM silver.quality_votes") == [(8, 1)]
        assert q(lake, "SELECT count(*) FROM silver.llm_calls") == [(2,)]
        monkeypatch.setattr(stage, "parse_vote", parse_vote)
        report = run_quality_votes(lake, **kw)
        assert report["complete"] and report["skipped_done"] == 2 and report["new_calls"] == 4
        assert q(lake, "SELECT count(*) FROM silver.quality_votes") == [(24,)]


def test_parser_change_rederives_votes_from_the_ledger(lake, monkeypatch):
    import factory.stages.judge_quality as stage

    problem = ids(lake, ["HumanEval/2"])
    with PanelServer() as server:
        kw = dict(judges=["judge-a", "judge-b"], n=16, backend="openai", base_urls=server.base_url,
                  problem_ids=list(problem.values()))
        monkeypatch.setattr(stage, "PARSER_VERSION", 1)
        monkeypatch.setattr(stage, "parse_vote", lambda text: "valid")     # an old, too lenient parser
        assert run_quality_votes(lake, **kw)["votes"]["valid"] == 32
        monkeypatch.undo()
        report = run_quality_votes(lake, **kw)
        assert (report["reparsed"], report["cached_calls"], report["new_calls"]) == (2, 2, 0)
        assert len(server.bodies) == 2 and report["votes"] == {"valid": 9, "invalid": 11, "unparsed": 12}
        assert q(lake, "SELECT parser_version, count(*) FROM silver.quality_votes GROUP BY 1") == [(2, 32)]
        assert quality(lake)["HumanEval/2"][2:5] == (9, 11, 12)
        assert run_quality_votes(lake, **kw)["skipped_done"] == 2


def test_repeated_judge_and_bad_settings_are_refused(lake):
    with PanelServer() as server:
        with pytest.raises(FactoryError, match="judges repeat"):
            run_quality_votes(lake, judges=["m", "m"], backend="openai", base_urls=server.base_url, limit=1)
        with pytest.raises(FactoryError, match="overrides"):
            run_quality_votes(lake, judges=["m@top_k=3"], backend="openai", base_urls=server.base_url, limit=1)
        with pytest.raises(FactoryError, match="prefill prompt needs a local backend"):
            run_quality_votes(lake, judges=["m"], backend="openai", base_urls=server.base_url, prompt="prefill")
        assert server.bodies == []
    with pytest.raises(FactoryError, match="non-negative integer"):
        quality(lake, {"quality_min_valid_votes": "9; DROP TABLE x"})
