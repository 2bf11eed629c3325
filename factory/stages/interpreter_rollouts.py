"""`factory interpreter-rollouts`: the R1-Code-Interpreter recipe's steps on final-answer problems.

- ``sample``: K agent modes x M answers per final-answer problem (ReasoningGym / SymBench / BBH-style tasks,
  test kind ``answer``), each a multi-turn trajectory (text <-> ```python <-> interpreter output, at most 8 calls,
  per-call limits) run by :mod:`factory_train.rl.multiturn` in its own sandboxed interpreter session, scored with
  the R1-CI reward -> silver.interpreter_rollouts (a rollout already there is not run again);
- ``curriculum``: p per task = correct rollouts / rollouts of the policy, potential 4p(1-p), stage k = the top
  25k % by potential (stage 4: every task) -> gold.r1ci_tasks (the recipe's rows replaced in one run);
- ``release``: one release per stage (``RECIPE-tasks-stageK-DATE``: the stage's gold.r1ci_tasks rows and their
  rollouts), each exported in the trainers' multi-turn formats (:func:`export_stage`).

Without rollouts, the same problems reach trainers through gold.answer_tasks (`factory release create --view
gold.answer_tasks`, `factory export --format verl|trl-grpo`: factory.answers.tasks); that view shows this stage's
pass rate, potential and curriculum stage once ``curriculum`` ran.

Generation happens outside the lake transaction; each step commits once. ``run_step(lake, action=..., ...)`` is
the recipe pipeline's entry (recipes/r1-code-interpreter.yaml).
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from factory.errors import FactoryError

DEFAULT_MODES = ("text", "code", "mixed", "verify")
STAGE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
ROLLOUTS = "silver.interpreter_rollouts"
TASKS = "gold.r1ci_tasks"


# -- reading final-answer problems -------------------------------------------------------------------------
def answer_problems(con, sources: list[str] | None = None, limit_per_source: int | None = None) -> list[dict]:
    """Final-answer problems (one ``answer`` test each) with their ground truths, in problem_id order."""
    from factory.ingest.reasoning_gym import answer_ground_truth

    where = "AND p.source IN (SELECT unnest(?::VARCHAR[]))" if sources else ""
    rows = con.execute(f"""
        SELECT p.problem_id, p.source, p.source_id, p.question, p.split, p.metadata, t.expected, t.comparison, t.atol
        FROM silver.problems p JOIN silver.tests t USING (problem_id)
        WHERE t.kind = 'answer' {where}
        QUALIFY row_number() OVER (PARTITION BY p.problem_id ORDER BY t.ordinal) = 1
        ORDER BY p.source, p.problem_id""", [sources] if sources else []).fetchall()
    out, per = [], {}
    for pid, source, sid, question, split, meta, expected, rule, atol in rows:
        if limit_per_source is not None and per.get(source, 0) >= limit_per_source:
            continue
        per[source] = per.get(source, 0) + 1
        meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
        out.append({"problem_id": pid, "source": source, "source_id": sid, "question": question, "split": split,
                    "ground_truth": answer_ground_truth(expected, rule, meta, atol)})
    return out


def prompt_messages(question: str, mode: str) -> list[dict]:
    from factory_train.rl.multiturn import MODES

    if mode not in MODES:
        raise FactoryError(f"unknown agent mode {mode!r}; known: {', '.join(MODES)}")
    return [{"role": "system", "content": MODES[mode]}, {"role": "user", "content": question}]


def _rows(con, sql: str, params=()) -> list[tuple]:
    """Rows of a read query; a lake made before this stage's tables existed has none yet (the next stage run
    adds them), which reads as no rows."""
    import duckdb

    try:
        return con.execute(sql, list(params)).fetchall()
    except duckdb.CatalogException:
        return []


# -- sample ------------------------------------------------------------------------------------------------
def load_policy(model: str | None, backend: str = "transformers", *, max_new_tokens: int, temperature: float,
                base_url: str | None = None):
    """(policy, model label): the transformers policy (exact token ids; default SmolLM2-135M GGUF) or a generation
    backend (openai-compatible server / vllm) continuing the assistant message (text only: no token ids)."""
    from factory_train.rl.multiturn import BackendPolicy, HFPolicy

    if backend in ("transformers", "hf"):
        from factory.generation.hf_backend import load_model, resolve_model_path

        mdl, tok = load_model(resolve_model_path(None if model in (None, "smollm2") else model))
        mdl.eval()
        return HFPolicy(mdl, tok, max_new_tokens=max_new_tokens, temperature=temperature), model or "smollm2"
    from factory.generation import make_backend

    kw = {"base_url": base_url, "continue_final_message": True} if backend == "openai" and base_url else {}
    policy = BackendPolicy(make_backend(backend, model, **kw), max_new_tokens=max_new_tokens, temperature=temperature)
    return policy, model or backend


def sample_rollouts(lake=None, *, model: str = "smollm2", policy=None, sources: list[str] | None = None,
                    limit_per_source: int | None = None, modes=DEFAULT_MODES, answers: int = 5, seed: int = 0,
                    max_calls: int = 8, cpu_s_per_call: float = 10.0, wall_s_per_call: float = 60.0,
                    memory_mb: int = 512, max_new_tokens: int = 256, temperature: float = 1.0, batch_size: int = 16,
                    backend: str = "transformers", base_url: str | None = None, log=print) -> dict:
    """Run the missing rollouts and commit them (one stage run). ``policy`` (an HFPolicy / BackendPolicy) is
    used as given, labelled ``model``; otherwise ``model`` is loaded (see :func:`load_policy`)."""
    from functools import partial

    import torch

    from factory.ingest.normalize import stable_hash
    from factory.lake import connect
    from factory.lake.commit import stage_run, utcnow
    from factory.sandbox.session import InterpreterSession
    from factory_train.rl.multiturn import Trajectory, run_rollouts

    modes = list(modes)
    settings = {"max_calls": max_calls, "cpu_s_per_call": cpu_s_per_call, "wall_s_per_call": wall_s_per_call,
                "memory_mb": memory_mb, "max_new_tokens": max_new_tokens, "temperature": temperature}
    with connect(lake, read_only=True) as con:
        problems = answer_problems(con, sources, limit_per_source)
        done = {r[0] for r in _rows(con, f"SELECT rollout_id FROM {ROLLOUTS}")}
    if not problems:
        raise FactoryError("no final-answer problems in the lake" + (f" for sources {sources}" if sources else "")
                           + ": run `factory ingest reasoning-gym --tasks ...` (or ingest jsonl --test-format answer)")
    todo = []
    for p in problems:
        for mode in modes:
            msgs = prompt_messages(p["question"], mode)
            for k in range(answers):
                rid = stable_hash(p["problem_id"], model, mode, k, seed, settings)
                if rid in done:
                    continue
                todo.append(Trajectory({"rollout_id": rid, "problem_id": p["problem_id"], "mode": mode,
                                        "sample_index": k, "seed": seed}, msgs, p["ground_truth"]))
    config = {"model": model, "modes": modes, "answers": answers, "seed": seed, "sources": sources,
              "limit_per_source": limit_per_source, **settings}
    if not todo:
        log(f"interpreter-rollouts: all {len(problems) * len(modes) * answers} rollouts already in the lake")
        return {"problems": len(problems), "new_rollouts": 0, "status": "idle",
                "summary": "every rollout already in the lake"}
    if policy is None:
        policy, _ = load_policy(model, backend, max_new_tokens=max_new_tokens, temperature=temperature,
                                base_url=base_url)
    torch.manual_seed(seed)
    session = partial(InterpreterSession, cpu_s_per_call=cpu_s_per_call, wall_s_per_call=wall_s_per_call,
                      memory_mb=memory_mb, idle_timeout_s=max(120.0, 4 * wall_s_per_call))
    t0 = time.perf_counter()
    run_rollouts(policy, todo, session, max_calls=max_calls, batch_size=batch_size, log=log)
    seconds = time.perf_counter() - t0
    now = utcnow()
    with stage_run("interpreter-rollouts", config, lake=lake) as run:
        rows = [_row(t, model, settings, now, run.run_id) for t in todo]
        run.write(ROLLOUTS, rows)
        run.summary = (f"{len(rows)} rollouts of {len(problems)} problems ({model}, modes {','.join(modes)} x "
                       f"{answers}): {sum(r['correct'] for r in rows)} correct, {seconds:.0f}s")
    return {"problems": len(problems), "new_rollouts": len(rows), "seconds": seconds,
            "correct": sum(r["correct"] for r in rows), "summary": run.summary}


def _row(t, model: str, settings: dict, now, run_id: str) -> dict:
    r = t.reward
    mask = t.loss_mask
    return {"rollout_id": t.key["rollout_id"], "problem_id": t.key["problem_id"], "model": model, "mode": t.key["mode"],
            "sample_index": t.key["sample_index"], "seed": t.key["seed"], "messages": json.dumps(t.messages),
            "turns": json.dumps([x.as_dict() for x in t.turns]), "response": t.response_text, "n_turns": r["turns"],
            "code_calls": r["code_calls"], "end_reason": t.end or "unknown", "answer": r["answer"], "score": r["score"],
            "correct": r["correct"], "format_ok": r["format_ok"], "reward": r["reward"], "policy_tokens": sum(mask),
            "interpreter_tokens": len(mask) - sum(mask), "seconds": t.seconds, "settings": json.dumps(settings),
            "created_at": now, "run_id": run_id}


# -- curriculum --------------------------------------------------------------------------------------------
def stage_members(potential: dict[str, float], fractions=STAGE_FRACTIONS) -> dict[str, list[str]]:
    """stageK -> the top ceil(f_K x n) tasks by potential (ties: problem_id), highest potential first."""
    ranked = sorted(potential, key=lambda p: (-potential[p], p))
    return {f"stage{i + 1}": ranked[:math.ceil(f * len(ranked))] for i, f in enumerate(fractions)}


def build_curriculum(lake=None, *, recipe: str = "r1-code-interpreter", model: str = "smollm2",
                     sources: list[str] | None = None, fractions=STAGE_FRACTIONS, min_rollouts: int = 1,
                     log=print) -> dict:
    """p, potential and stages per task from the policy's rollouts -> gold.r1ci_tasks (one stage run)."""
    from factory.lake import connect
    from factory.lake.commit import config_hash, stage_run

    fractions = [float(f) for f in fractions]
    if not fractions or fractions[-1] != 1.0 or fractions != sorted(fractions) or fractions[0] <= 0:
        raise FactoryError(f"stage fractions must increase and end at 1.0 (R1-CI: 0.25, 0.5, 0.75, 1.0), got {fractions}")
    with connect(lake, read_only=True) as con:
        problems = {p["problem_id"]: p for p in answer_problems(con, sources)}
        stats = _rows(con, f"""
            SELECT problem_id, count(*), count(*) FILTER (WHERE correct), avg(reward)
            FROM {ROLLOUTS} WHERE model = ? GROUP BY problem_id""", [model])
        per_mode = _rows(con, f"SELECT problem_id, mode, avg(correct::INT) FROM {ROLLOUTS} WHERE model = ? "
                         "GROUP BY ALL ORDER BY ALL", [model])
    modes: dict = {}
    for pid, mode, rate in per_mode:
        modes.setdefault(pid, {})[mode] = round(float(rate), 6)
    rows, potential = {}, {}
    for pid, n, correct, mean_reward in stats:
        if pid not in problems or n < min_rollouts:
            continue
        p = correct / n
        potential[pid] = 4 * p * (1 - p)
        rows[pid] = (n, correct, p, float(mean_reward))
    if not rows:
        raise FactoryError(f"no rollouts of model {model!r} for final-answer problems: run "
                           "`factory interpreter-rollouts sample` first")
    members = stage_members(potential, fractions)
    stages_of = {pid: [s for s, ids in members.items() if pid in set(ids)] for pid in rows}
    rhash = config_hash({"recipe": recipe, "model": model, "sources": sources, "fractions": fractions,
                         "min_rollouts": min_rollouts})
    with stage_run("interpreter-rollouts", {"action": "curriculum", "recipe": recipe, "model": model,
                                            "sources": sources, "fractions": fractions}, lake=lake) as run:
        out = []
        for pid, (n, correct, p, mean_reward) in sorted(rows.items()):
            prob = problems[pid]
            out.append({"recipe": recipe, "problem_id": pid, "source": prob["source"], "source_id": prob["source_id"],
                        "split": prob["split"], "question": prob["question"],
                        "ground_truth": json.dumps(prob["ground_truth"], sort_keys=True), "model": model,
                        "rollouts": n, "correct": correct, "pass_rate": p, "potential": potential[pid],
                        "mean_reward": mean_reward, "mode_pass_rate": json.dumps(modes.get(pid, {}), sort_keys=True),
                        "curriculum_stage": int(stages_of[pid][0].removeprefix("stage")),
                        "stages": json.dumps(stages_of[pid]), "recipe_hash": rhash})
        run.delete(TASKS, "recipe = ?", [recipe])
        run.write(TASKS, out)
        counts = {s: len(ids) for s, ids in members.items()}
        run.summary = f"{recipe}: {len(out)} tasks, stages " + ", ".join(f"{s}={c}" for s, c in counts.items())
    log(run.summary)
    content = config_hash({"rows": [(r["problem_id"], r["rollouts"], r["correct"], r["stages"]) for r in out],
                           "recipe_hash": rhash})
    return {"recipe": recipe, "tasks": len(out), "stages": counts, "content_hash": content, "recipe_hash": rhash,
            "run_id": run.run_id, "summary": run.summary,
            "potential": {pid: potential[pid] for pid in sorted(potential)}}


# -- releases and the multi-turn export --------------------------------------------------------------------
def cut_stage_releases(lake=None, *, recipe: str = "r1-code-interpreter", releases_dir=None,
                       date: str | None = None, export_dir=None, log=print) -> list[dict]:
    """One release per curriculum stage (its gold.r1ci_tasks rows + their rollouts), each exported to
    ``export_dir/<release>`` when given. A release with the same rows already on disk is reused."""
    from factory.lake import connect
    from factory.release.create import create_release
    from factory.release.locate import free_name, resolve_releases_dir, same_release, today

    date = date or today()
    with connect(lake, read_only=True) as con:
        stage_rows = _rows(con, f"SELECT s.stage, count(*) FROM {TASKS}, unnest(CAST(json_extract_string(stages, "
                           "'$[*]') AS VARCHAR[])) AS s(stage) WHERE recipe = ? GROUP BY 1 ORDER BY 1", [recipe])
        if not stage_rows:
            raise FactoryError(f"no gold.r1ci_tasks rows for recipe {recipe!r}: run `factory interpreter-rollouts "
                               "curriculum` first")
        content = con.execute(f"SELECT md5(string_agg(problem_id || stages || rollouts || correct, ',' ORDER BY "
                              f"problem_id)) FROM {TASKS} WHERE recipe = ?", [recipe]).fetchone()[0]
        model = con.execute(f"SELECT any_value(model) FROM {TASKS} WHERE recipe = ?", [recipe]).fetchone()[0]
    root = resolve_releases_dir(releases_dir)
    out = []
    for stage, n in stage_rows:
        base = f"{recipe}-tasks-{stage}-{date}"
        name = same_release(root, base, content, stage) or free_name(root, base)
        if not (root / name).exists():
            where = f"recipe = '{recipe}' AND list_contains(CAST(json_extract_string(stages, '$[*]') AS VARCHAR[]), '{stage}')"
            create_release(name, [TASKS, ROLLOUTS], lake=lake, releases_dir=releases_dir, row_filters={
                TASKS: where, ROLLOUTS: f"model = '{model}' AND problem_id IN (SELECT problem_id FROM {TASKS} WHERE {where})"},
                recipe={"name": recipe, "stage": stage, "content_hash": content, "reward": {"kind": "binary",
                        "source": "R1-CI: +1 correct final answer, +/-0.1 format, -0.1 beyond 6 turns"}})
            log(f"release {name}: cut ({n} tasks)")
        else:
            log(f"release {name}: unchanged, not cut again")
        info = {"release": name, "stage": stage, "tasks": n}
        if export_dir is not None:
            info["export"] = export_stage(name, Path(export_dir) / name, releases_dir=releases_dir)
        out.append(info)
    return out


def export_stage(release: str, out, *, releases_dir=None, sft_min_reward: float = 1.0) -> dict:
    """A stage release in the trainers' multi-turn formats, under ``out``:

    - ``verl_rl/{train,test}.parquet``: verl RL rows for its multi-turn agent loop (prompt = [system, user] of the
      ``mixed`` mode, ``agent_name`` tool_agent, ``extra_info.tools_kwargs.code_interpreter``, ground truth = the
      answer check that factory.reward's ``r1ci_compute_score`` applies);
    - ``verl_sft/train.parquet``: verl MultiTurnSFTDataset rows (``messages``: the rollouts with reward >=
      ``sft_min_reward``, R1-CI's SFT keeps correct trajectories; interpreter turns are ``tool`` messages, so
      verl's loss mask is 0 on them);
    - ``trl_sft/train.parquet``: TRL conversational prompt / completion rows of the same trajectories
      (``assistant_only_loss=True`` trains on the assistant turns only);
    - ``export.json``: counts and where each format's loss mask comes from."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from factory.release.locate import load_manifest
    from factory.release.export import view_rows
    from factory_train.rl.multiturn import Trajectory, Turn, trl_row, verl_rl_row, verl_sft_row

    path, manifest = load_manifest(release, releases_dir)
    tasks = view_rows(path, manifest, TASKS)
    rollouts = view_rows(path, manifest, ROLLOUTS) or []
    if tasks is None:
        raise FactoryError(f"release {release!r} holds no {TASKS} (not an interpreter-rollouts stage release)")
    out = Path(out)
    for sub in ("verl_rl", "verl_sft", "trl_sft"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    by_split: dict[str, list] = {}
    for i, t in enumerate(tasks):
        split = "test" if t["split"] == "test" else "train"
        row = verl_rl_row(prompt_messages(t["question"], "mixed"), json.loads(t["ground_truth"]), i,
                          data_source=t["source"], split=split, problem_id=t["problem_id"])
        row["extra_info"].update(potential=t["potential"], pass_rate=t["pass_rate"],
                                 curriculum_stage=t["curriculum_stage"])
        by_split.setdefault(split, []).append(row)
    for split, rows in by_split.items():
        pq.write_table(pa.Table.from_pylist(rows), out / "verl_rl" / f"{split}.parquet")
    sft, trl = [], []
    for r in rollouts:
        if r["reward"] < sft_min_reward:
            continue
        turns = [Turn(x["role"], x["text"]) for x in json.loads(r["turns"])]
        traj = Trajectory({"problem_id": r["problem_id"]}, json.loads(r["messages"]), {}, turns=turns,
                          reward={"reward": r["reward"]})
        sft.append({**verl_sft_row(traj), "problem_id": r["problem_id"], "mode": r["mode"]})
        trl.append({**trl_row(traj), "problem_id": r["problem_id"]})
    text, msg = pa.string(), pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    for rows, sub, fields in ((sft, "verl_sft", [("messages", msg), ("reward", pa.float64()), ("problem_id", text),
                                                 ("mode", text)]),
                              (trl, "trl_sft", [("prompt", msg), ("completion", msg), ("problem_id", text)])):
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), out / sub / "train.parquet")
    info = {"release": release, "tasks": len(tasks), "rl_rows": {k: len(v) for k, v in by_split.items()},
            "sft_rows": len(sft), "rollouts": len(rollouts),
            "loss_mask": "interpreter output is a `tool` message (verl MultiTurnSFTDataset: loss_mask 0 on non-"
                         "assistant messages; TRL assistant_only_loss) or, in RL, the agent loop's tool response "
                         "(response_mask 0); factory_train.rl.multiturn.trajectory_batch builds the same mask"}
    (out / "export.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return info


# -- the recipe pipeline's entry and the CLI ---------------------------------------------------------------
def _count(lake, sql: str, params=()) -> int:
    from factory.lake import connect

    with connect(lake, read_only=True) as con:
        rows = _rows(con, sql, params)
    return rows[0][0] if rows else 0


def run_step(lake=None, action: str = "sample", **params) -> dict:
    """Recipe pipeline entry: ``action`` = sample | curriculum | release. A lake without final-answer problems
    (a code-only lake) leaves each action idle, so the recipe's code half runs on its own."""
    if not _count(lake, "SELECT count(*) FROM silver.tests WHERE kind = 'answer'"):
        return {"status": "idle", "summary": "no final-answer problems (`factory ingest reasoning-gym --tasks ...`)"}
    if action == "sample":
        return sample_rollouts(lake, **params)
    if action == "curriculum":
        if not _count(lake, f"SELECT count(*) FROM {ROLLOUTS} WHERE model = ?", [params.get("model", "smollm2")]):
            return {"status": "idle", "summary": "no rollouts of the policy yet"}
        return {k: v for k, v in build_curriculum(lake, **params).items() if k != "potential"}
    if action == "release":
        if not _count(lake, f"SELECT count(*) FROM {TASKS} WHERE recipe = ?", [params.get("recipe", "r1-code-interpreter")]):
            return {"status": "idle", "summary": "no curriculum rows yet"}
        if params.get("export_dir") is None:
            from factory.release.locate import resolve_releases_dir
            params["export_dir"] = resolve_releases_dir(params.get("releases_dir")) / "exports"
        rels = cut_stage_releases(lake, **params)
        return {"releases": rels, "summary": "; ".join(f"{r['release']} ({r['tasks']} tasks)" for r in rels)}
    raise FactoryError(f"interpreter_rollouts: unknown action {action!r} (sample | curriculum | release)")


def register(sub, add_lake) -> None:
    p = sub.add_parser("interpreter-rollouts", help="R1-Code-Interpreter: multi-turn interpreter rollouts of "
                       "final-answer tasks, potential 4p(1-p), 4 curriculum stage releases")
    act = p.add_subparsers(dest="action", required=True)
    s = act.add_parser("sample", help="K modes x M answers per final-answer problem -> silver.interpreter_rollouts")
    add_lake(s)
    s.add_argument("--model", default="smollm2", help="transformers model dir/.gguf (default smollm2: SmolLM2-135M) "
                                                      "or the served model's name")
    s.add_argument("--backend", default="transformers", help="transformers | openai | vllm")
    s.add_argument("--base-url", help="openai backend URL (vLLM's continue_final_message is used)")
    s.add_argument("--sources", help="comma-separated sources (default: every final-answer source)")
    s.add_argument("--limit-per-source", type=int, help="first N problems of each source")
    s.add_argument("--modes", default=",".join(DEFAULT_MODES), help="agent modes (R1-CI: 4)")
    s.add_argument("--answers", type=int, default=5, help="answers per mode (R1-CI: 5)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--max-calls", type=int, default=8, help="interpreter calls per answer (R1-CI: 8)")
    s.add_argument("--cpu-s", type=float, default=10.0, help="CPU seconds per interpreter call")
    s.add_argument("--wall-s", type=float, default=60.0, help="wall seconds per interpreter call (R1-CI: 60)")
    s.add_argument("--max-new-tokens", type=int, default=256, help="tokens per generation step")
    s.add_argument("--temperature", type=float, default=1.0)
    s.add_argument("--batch-size", type=int, default=16)
    c = act.add_parser("curriculum", help="p, potential 4p(1-p), stages -> gold.r1ci_tasks")
    add_lake(c)
    c.add_argument("--recipe", default="r1-code-interpreter")
    c.add_argument("--model", default="smollm2")
    c.add_argument("--sources")
    c.add_argument("--fractions", default="0.25,0.5,0.75,1.0")
    r = act.add_parser("release", help="one release per stage, exported in verl / TRL multi-turn formats")
    add_lake(r)
    r.add_argument("--recipe", default="r1-code-interpreter")
    r.add_argument("--releases-dir")
    r.add_argument("--date")
    r.add_argument("--export-dir", help="write each stage's multi-turn export under DIR/<release>")
    p.set_defaults(fn=_cmd)


def _cmd(args) -> None:
    split = (lambda v: [x.strip() for x in v.split(",") if x.strip()] if v else None)
    if args.action == "sample":
        res = sample_rollouts(args.lake, model=args.model, backend=args.backend, base_url=args.base_url,
                              sources=split(args.sources), limit_per_source=args.limit_per_source,
                              modes=split(args.modes), answers=args.answers, seed=args.seed,
                              max_calls=args.max_calls, cpu_s_per_call=args.cpu_s, wall_s_per_call=args.wall_s,
                              max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                              batch_size=args.batch_size)
        print(res["summary"])
    elif args.action == "curriculum":
        res = build_curriculum(args.lake, recipe=args.recipe, model=args.model, sources=split(args.sources),
                               fractions=[float(x) for x in split(args.fractions)])
    else:
        for r in cut_stage_releases(args.lake, recipe=args.recipe, releases_dir=args.releases_dir, date=args.date,
                                    export_dir=args.export_dir):
            print(f"{r['release']}: {r['tasks']} tasks" + (f", export {r['export']['rl_rows']} RL rows, "
                                                           f"{r['export']['sft_rows']} SFT rows" if "export" in r else ""))
