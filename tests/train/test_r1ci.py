"""R1-Code-Interpreter (#34): ReasoningGym ingest, verifier-based answers, the R1-CI reward, multi-turn rollouts
against a real InterpreterSession, the loss mask, and the recipe's 4 curriculum stage releases on real tasks."""
from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
import torch

from factory.answers import check_answer, r1ci_reward, score_trajectory
from factory.answers.r1ci import observation_text
from factory.generation.base import Backend
from factory.generation.types import GenerationResult
from factory.lake import connect
from factory.sandbox.session import InterpreterSession
from factory.stages.ingest import ingest_reasoning_gym, ingest_source
from factory.stages.interpreter_rollouts import (
    answer_problems, build_curriculum, cut_stage_releases, sample_rollouts, stage_members,
)
from factory_train.rl.losses import ppo_clip_loss
from factory_train.rl.multiturn import (
    MODES, BackendPolicy, HFPolicy, Trajectory, grpo_step, run_rollouts, trajectory_batch,
)
from factory_train.tiny import byte_tokenizer, tiny_causal_lm
from tests.lakeutil import init_lake, query

pytest.importorskip("reasoning_gym")
TASKS = ["basic_arithmetic", "count_primes", "spell_backward"]


def session():
    return InterpreterSession(cpu_s_per_call=5, wall_s_per_call=20, memory_mb=512, idle_timeout_s=120)


def problems(lake, sources=None):
    con = connect(lake, read_only=True)
    try:
        return answer_problems(con, sources)
    finally:
        con.close()


@pytest.fixture(scope="module")
def rg_lake(tmp_path_factory):
    lake = init_lake(tmp_path_factory.mktemp("r1ci") / "lake")
    ingest_reasoning_gym(TASKS, 4, 7, lake=lake)
    return lake


# -- ingest ---------------------------------------------------------------------------------------------------
def test_reasoning_gym_ingest_is_seeded_and_idempotent(rg_lake, tmp_path):
    rows = query(rg_lake, "SELECT p.source, p.question, t.kind, t.comparison, t.expected FROM silver.problems p "
                          "JOIN silver.tests t USING (problem_id) ORDER BY p.problem_id")
    assert len(rows) == 12 and {r[0] for r in rows} == {f"reasoning-gym-{t}" for t in TASKS}
    assert {(r[2], r[3]) for r in rows} == {("answer", "reasoning_gym")}
    # same seed in another lake: the same rows; re-ingest: unchanged, nothing written
    other = init_lake(tmp_path / "other")
    ingest_reasoning_gym(TASKS[:1], 4, 7, lake=other)
    assert query(other, "SELECT problem_id, question FROM silver.problems ORDER BY 1") == \
        query(rg_lake, f"SELECT problem_id, question FROM silver.problems WHERE source = 'reasoning-gym-{TASKS[0]}' "
                       "ORDER BY 1")
    again = ingest_reasoning_gym(TASKS, 4, 7, lake=rg_lake)
    assert [r.status for r in again] == ["unchanged"] * 3
    # another seed: other items (refused over the existing source without --replace, fine as a new lake)
    third = init_lake(tmp_path / "third")
    ingest_reasoning_gym(["basic_arithmetic"], 4, 8, lake=third)
    assert set(query(third, "SELECT question FROM silver.problems")) != set(
        query(rg_lake, "SELECT question FROM silver.problems WHERE source = 'reasoning-gym-basic_arithmetic'"))
    # code-generation views leave them out (other_task)
    assert query(rg_lake, "SELECT count(*) FROM gold.rl_problems")[0][0] == 0


def test_unknown_or_unsupported_task_is_refused(tmp_path):
    from factory.errors import FactoryError
    lake = init_lake(tmp_path / "lake")
    with pytest.raises(FactoryError, match="unknown reasoning-gym task 'no_such_task'"):
        ingest_reasoning_gym(["no_such_task"], 2, 0, lake=lake)
    assert query(lake, "SELECT count(*) FROM silver.problems")[0][0] == 0


# -- answers and the reward -------------------------------------------------------------------------------------
def test_verifier_scores_the_right_answer_only(rg_lake):
    for p in problems(rg_lake):
        gt = p["ground_truth"]
        right = r1ci_reward(f"I worked it out.\n<<<{gt['answer']}>>>", gt)
        assert right.correct and right.reward == pytest.approx(1.1), p["source"]
        wrong = r1ci_reward("<<<definitely not it>>>", gt)
        assert not wrong.correct and wrong.reward == pytest.approx(0.1)
        broken = r1ci_reward(f"The answer is {gt['answer']}", gt)     # no <<<final answer>>> marker
        assert not broken.correct and not broken.format_ok and broken.reward == pytest.approx(-0.1)
    # the task's own verifier, not string equality: spell_backward gives partial credit, never "correct"
    sb = next(p for p in problems(rg_lake) if p["source"].endswith("spell_backward"))["ground_truth"]
    partial = check_answer(sb["answer"][:-1] + "#", sb)
    assert 0 < partial.score < 1 and not partial.correct


def test_reward_formula_cases():
    gt = {"rule": "numeric", "answer": "42"}
    code = "```python\nprint(6 * 7)\n```\n"
    obs = observation_text("42\n")
    assert r1ci_reward(f"{code}{obs}<<<42>>>", gt).as_dict() | {"note": ""} == {
        "reward": 1.1, "correct": True, "score": 1.0, "format_ok": True, "turns": 2, "code_calls": 1,
        "answer": "42", "note": ""}
    # a step with two code blocks breaks the format: 1 - 0.1
    assert r1ci_reward(f"{code}{code}{obs}<<<42>>>", gt).reward == pytest.approx(0.9)
    # 6 generation turns: no penalty; 7: -0.1
    assert r1ci_reward(code + obs * 0 + (code + obs) * 4 + f"{code}{obs}<<<42>>>", gt).turns == 6
    six = "".join(f"{code}{obs}" for _ in range(5)) + "<<<42>>>"
    seven = "".join(f"{code}{obs}" for _ in range(6)) + "<<<42>>>"
    assert r1ci_reward(six, gt).reward == pytest.approx(1.1)
    assert r1ci_reward(seven, gt).turns == 7 and r1ci_reward(seven, gt).reward == pytest.approx(1.0)
    assert r1ci_reward(seven.replace("<<<42>>>", "<<<41>>>"), gt).reward == pytest.approx(0.0)
    # the answer is the policy's: an interpreter printing <<<42>>> does not answer for it
    assert not r1ci_reward(f"{code}{observation_text('<<<42>>>')}no idea", gt).correct
    # rules: numeric tolerance and fractions, multiple choice letters, casefold
    assert check_answer("0.5", {"rule": "numeric", "answer": "1/2"}).correct
    assert check_answer("(B) blue", {"rule": "choice", "answer": "(B)"}).correct
    assert not check_answer("C", {"rule": "choice", "answer": "(B)"}).correct
    assert check_answer("  Hello   World", {"rule": "casefold", "answer": "hello world"}).correct
    with pytest.raises(ValueError, match="rule"):
        check_answer("1", {"rule": "regex", "answer": "1"})


def test_reward_entry_points_as_trainers_load_them():
    from tests.trainer_clients import openrlhf_reward_module, verl_reward_fn

    gt = json.dumps({"rule": "exact", "answer": "7"})
    assert verl_reward_fn("compute_score")("symbench", "<<<7>>>", gt) == pytest.approx(1.1)
    assert verl_reward_fn("r1ci_compute_score")("symbench", "<<<8>>>", gt)["score"] == pytest.approx(0.1)
    mod = openrlhf_reward_module()
    out = mod.r1ci_reward_func(["Q <<<7>>>", "Q 7"], ["Q ", "Q "], [gt, gt])
    assert out["rewards"].tolist() == pytest.approx([1.1, -0.1])
    convo = [{"role": "assistant", "content": "```python\nprint(7)\n```\n"}, {"role": "tool", "content": "7"},
             {"role": "assistant", "content": "<<<7>>>"}]
    assert mod.r1ci_trl_reward([convo], [gt]) == pytest.approx([1.1])


def test_jsonl_answer_tasks_with_rules(tmp_path):
    lake = init_lake(tmp_path / "lake")
    src = tmp_path / "bbh_like.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"id": "q1", "input": "Which is blue? (A) sun (B) sky", "target": "(B)"},
        {"id": "q2", "input": "Is 7 prime? (A) yes (B) no", "target": "(A)"}]) + "\n")
    ingest_source("jsonl", [src], lake=lake, mapping={"question": "input", "tests": "target", "id": "id"},
                  test_format="answer", answer_rule="choice")
    got = {p["source_id"]: p["ground_truth"] for p in problems(lake)}
    assert got["q1"] == {"rule": "choice", "answer": "(B)"}
    assert r1ci_reward("<<<B>>>", got["q1"]).correct and not r1ci_reward("<<<A>>>", got["q1"]).correct
    from factory.errors import InputError
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "input": "?", "target": ""}) + "\n")
    with pytest.raises(InputError, match="bad.jsonl:1"):
        ingest_source("jsonl", [bad], lake=lake, mapping={"question": "input", "tests": "target", "id": "id"},
                      test_format="answer", answer_rule="numeric")


# -- multi-turn rollouts against a real interpreter -------------------------------------------------------------
class Scripted(Backend):
    """A scripted policy: ``script(calls_so_far, text_so_far, messages) -> next step``."""
    name = "scripted"

    def __init__(self, script):
        super().__init__("scripted")
        self.script = script

    def _run_one(self, req):
        partial = req.messages[-1]["content"] if req.messages[-1]["role"] == "assistant" else ""
        text = self.script(partial.count("Code Execution Results:"), partial, req.messages)
        return GenerationResult(completions=[text], finish_reasons=["stop"])


def test_rollout_keeps_interpreter_state_and_records_every_turn():
    def script(n, partial, messages):
        return ["Set up.\n```python\nx = 17 * 3\nprint(x)\n```\n",
                "Check.\n```python\nprint(x + 1)\n1 / 0\n```\n",
                "So <<<51>>>"][n]
    t = Trajectory({"problem_id": "p"}, [{"role": "user", "content": "17*3?"}], {"rule": "numeric", "answer": "51"})
    run_rollouts(BackendPolicy(Scripted(script), byte_tokenizer()), [t], session)
    roles = [x.role for x in t.turns]
    assert roles == ["assistant", "interpreter", "assistant", "interpreter", "assistant"]
    assert "51" in t.turns[1].text and t.turns[1].status == "ok"
    assert "52" in t.turns[3].text and "ZeroDivisionError" in t.turns[3].text and t.turns[3].status == "error"
    assert t.end == "answer" and t.reward["reward"] == pytest.approx(1.1) and t.reward["code_calls"] == 2


def test_rollout_stops_at_eight_calls_and_survives_a_timeout():
    def script(n, partial, messages):
        return "```python\nwhile True: pass\n```\n" if n == 0 else f"```python\nprint({n})\n```\n"
    t = Trajectory({"problem_id": "p"}, [{"role": "user", "content": "loop"}], {"rule": "exact", "answer": "x"})
    run_rollouts(BackendPolicy(Scripted(script)), [t],
                 lambda: InterpreterSession(cpu_s_per_call=1, wall_s_per_call=3, memory_mb=256, idle_timeout_s=60))
    assert t.turns[1].status == "timeout"
    assert t.calls == 8 and t.end == "max_calls" and t.reward["turns"] == 9
    # 9 steps > 6: -0.1, and the last step asks for code instead of answering: format -0.1
    assert t.reward["reward"] == pytest.approx(-0.2)


def test_loss_mask_excludes_interpreter_tokens_from_the_grpo_loss():
    tok = byte_tokenizer()
    model, _ = tiny_causal_lm(tok, seed=0)

    def script(n, partial, messages):
        return "```python\nprint(2 + 2)\n```\n" if n == 0 else "<<<4>>>"
    trajs = [Trajectory({"problem_id": "p", "seed": i}, [{"role": "user", "content": "2+2?"}],
                        {"rule": "numeric", "answer": "4" if i == 0 else "5"}) for i in range(2)]
    pol = BackendPolicy(Scripted(script), tok)
    run_rollouts(pol, trajs, session)
    for t in trajs:
        t.prompt_ids = tok(tok.eos_token + "user: 2+2?\n", add_special_tokens=False)["input_ids"]
    batch = trajectory_batch(trajs, tok.pad_token_id)
    mask = batch["response_mask"][0]
    inter = trajs[0].turns[1]
    start = len(trajs[0].turns[0].token_ids)
    assert mask[start:start + len(inter.token_ids)].sum() == 0 and mask[:start].all()
    assert int(mask.sum()) == sum(len(x.token_ids) for x in trajs[0].turns if x.role == "assistant")
    # the GRPO loss: no gradient and no effect from masked (interpreter / padding) tokens
    T = mask.shape[0]
    logp = torch.randn(2, T, requires_grad=True)
    adv = torch.tensor([[1.0], [-1.0]]).expand(2, T)
    loss, _ = ppo_clip_loss(logp.detach() - 0.1, logp, adv, batch["response_mask"])
    loss.backward()
    masked = batch["response_mask"] == 0
    assert masked.any() and torch.all(logp.grad[masked] == 0) and torch.all(logp.grad[~masked] != 0)
    changed = logp.detach().clone()
    changed[masked] += 5.0
    assert float(ppo_clip_loss(logp.detach() - 0.1, changed, adv, batch["response_mask"])[0]) == pytest.approx(
        float(loss.detach()), abs=1e-6)
    # one real masked update of the tiny policy runs
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    met = grpo_step(model, opt, trajs, tok.pad_token_id)
    assert torch.isfinite(torch.tensor(met["loss"]))


def test_hf_policy_token_ids_are_the_trajectory():
    tok = byte_tokenizer()
    model, _ = tiny_causal_lm(tok, seed=1)
    pol = HFPolicy(model, tok, max_new_tokens=12, temperature=1.0)
    torch.manual_seed(0)
    trajs = [Trajectory({"problem_id": "p", "seed": i}, [{"role": "system", "content": MODES["code"]},
                                                          {"role": "user", "content": "1+1?"}],
                        {"rule": "numeric", "answer": "2"}) for i in range(2)]
    run_rollouts(pol, trajs, session)
    for t in trajs:
        assert t.prompt_ids and t.turns and t.end in ("length", "no_code", "answer")
        assert t.response_text == tok.decode(t.response_ids, skip_special_tokens=True)
        assert len(t.loss_mask) == len(t.response_ids) and t.reward is not None


# -- the recipe: rollouts -> potential -> 4 stage releases -> multi-turn export -----------------------------------
def _solver(n, partial, messages):
    """Reads the task; in `code` / `mixed` mode computes basic arithmetic with the interpreter and answers with its
    output; otherwise (and for the other tasks) answers from text - right only sometimes."""
    mode = next(k for k, v in MODES.items() if v == messages[0]["content"])
    q = messages[1]["content"]
    m = re.match(r"Calculate (.*)\.$", q.strip())
    if m and mode in ("code", "mixed"):
        if n == 0:
            return f"```python\nprint({m.group(1)})\n```\n"
        out = re.findall(r"```output\n(.*?)\n```", partial, re.S)[-1].strip()
        return f"The interpreter says {out}. <<<{out}>>>"
    return f"<<<{len(q) % 7}>>>"


def test_recipe_cuts_four_stage_releases_and_exports_them(rg_lake, tmp_path):
    pol = BackendPolicy(Scripted(_solver), byte_tokenizer())
    modes = ("code", "text")     # interpreter sessions only where the solver computes (keeps the test short)
    res = sample_rollouts(rg_lake, model="scripted", policy=pol, modes=modes, answers=2, max_calls=8,
                          log=lambda *_: None)
    assert res["new_rollouts"] == 12 * 2 * 2
    again = sample_rollouts(rg_lake, model="scripted", policy=pol, modes=modes, answers=2, max_calls=8,
                            log=lambda *_: None)
    assert again["new_rollouts"] == 0                                   # rollouts already there are not rerun
    rows = query(rg_lake, "SELECT mode, code_calls, correct, reward, interpreter_tokens FROM "
                          "silver.interpreter_rollouts WHERE problem_id IN (SELECT problem_id FROM silver.problems "
                          "WHERE source = 'reasoning-gym-basic_arithmetic')")
    used = [r for r in rows if r[0] == "code" and r[1] == 1]      # the solver ran the expression
    assert used and all(r[4] > 0 for r in used)                            # interpreter tokens recorded (masked)
    assert all(r[3] == pytest.approx(1.1) for r in used if r[2]) and sum(r[2] for r in used) >= len(used) / 2
    cur = build_curriculum(rg_lake, model="scripted", log=lambda *_: None)
    assert cur["tasks"] == 12 and cur["stages"] == {"stage1": 3, "stage2": 6, "stage3": 9, "stage4": 12}
    pots = query(rg_lake, "SELECT pass_rate, potential, curriculum_stage FROM gold.r1ci_tasks ORDER BY potential DESC")
    assert all(pot == pytest.approx(4 * p * (1 - p)) for p, pot, _ in pots)
    assert [s for *_, s in pots] == sorted(s for *_, s in pots)        # higher potential, earlier stage
    rels = cut_stage_releases(rg_lake, releases_dir=tmp_path / "rel", date="20260101", export_dir=tmp_path / "exp",
                              log=lambda *_: None)
    assert [(r["stage"], r["tasks"]) for r in rels] == [("stage1", 3), ("stage2", 6), ("stage3", 9), ("stage4", 12)]
    s4 = tmp_path / "exp" / "r1-code-interpreter-tasks-stage4-20260101"
    rl = pq.read_table(s4 / "verl_rl" / "train.parquet").to_pylist()
    assert len(rl) == 12 and rl[0]["agent_name"] == "tool_agent"
    assert json.loads(rl[0]["reward_model"]["ground_truth"])["rule"] == "reasoning_gym"
    sft = pq.read_table(s4 / "verl_sft" / "train.parquet").to_pylist()
    assert sft and all(r["reward"] >= 1.0 for r in sft)
    assert any(m["role"] == "tool" and "Code Execution Results" in m["content"] for r in sft for m in r["messages"])
    # verl's own RL dataset reads the stage export: chat prompt, tools_kwargs for the agent loop, the rule truth
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from factory.generation.tiny import build_tiny_tokenizer
    cfg = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 4096, "truncation": "error",
                            "filter_overlong_prompts": False, "return_raw_chat": True})
    ds = RLHFDataset(data_files=[str(s4 / "verl_rl" / "train.parquet")], tokenizer=build_tiny_tokenizer(), config=cfg)
    item = ds[0]
    assert len(ds) == 12 and item["raw_prompt"][0]["role"] == "system"
    assert item["tools_kwargs"]["code_interpreter"]["create_kwargs"]["max_calls"] == 8
    from tests.trainer_clients import verl_reward_fn
    truth = item["reward_model"]["ground_truth"]
    assert verl_reward_fn("compute_score")(item["data_source"], f"<<<{json.loads(truth)['answer']}>>>",
                                           truth) == pytest.approx(1.1)
    # a re-run with the same rows reuses the releases
    assert [r["release"] for r in cut_stage_releases(rg_lake, releases_dir=tmp_path / "rel", date="20260101",
                                                     log=lambda *_: None)] == [r["release"] for r in rels]


def test_stage_members_fractions():
    pot = {f"p{i}": v for i, v in enumerate([1.0, 0.0, 0.75, 0.5, 0.75, 0.0, 0.19])}
    st = stage_members(pot)
    assert [len(v) for v in st.values()] == [2, 4, 6, 7] and st["stage1"] == ["p0", "p2"]
