"""A problem in another language than Python is asked for and judged in that language (#40: a training row must not
ask for Python while its reward judges C++).

Real MultiPL-E rows (HumanEval in C++, Java, JavaScript, Rust, as SandboxFusion's samples carry them with a
``gpt_solution`` the bench found correct natively, ``bench/results/multipl_e.json``) go through `factory ingest
multipl-e`, `factory curate`, `factory release create` and `factory export --format verl`; the exported prompt names
the language and its code fence, the ground truth carries the language, and `compute_score` judges a known-correct
answer in a fenced block of that language 1.0 and a wrong one 0.0. Harness verdicts are judged in the program's own
process, so these problems are excluded as `forgeable` unless a curation opts out, and the default reward scores
them 0.0 (docs/reward.md): both are asserted too.

The rows are read from a SandboxFusion checkout or git directory: $FACTORY_SANDBOXFUSION, else the mirror beside
the repository (../.mirror/bytedance+SandboxFusion/repo); where neither exists (CI), this project's own harness
problem in MultiPL-E's published schema is used, in C++ and JavaScript, with chat-style answers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from factory.sandbox import languages
from tests.conftest import REPO_ROOT
from tests.lakeutil import init_lake, query

FILES = {"cpp": "humaneval-cpp", "java": "humaneval-java", "javascript": "humaneval-js", "rust": "humaneval-rs"}
FENCE = {"cpp": "cpp", "java": "java", "javascript": "javascript", "rust": "rust"}
NAME = {"cpp": "C++", "java": "Java", "javascript": "JavaScript", "rust": "Rust"}
# a wrong body for each row's function (the prompt ends by opening it): a constant answer the tests reject
WRONG_BODY = {"cpp": "    return false;\n}\n", "javascript": "    return false;\n}\n", "rust": "    false\n}\n",
              "java": "        return new ArrayList<String>();\n    }\n}\n"}
PUBLISHED = ("name", "language", "prompt", "doctests", "original", "prompt_terminology", "tests", "stop_tokens")


def _sandboxfusion() -> Path | None:
    env = os.environ.get("FACTORY_SANDBOXFUSION")
    path = Path(env) if env else REPO_ROOT.parent / ".mirror" / "bytedance+SandboxFusion" / "repo"
    return path if path.exists() else None


def _rows(src: Path, config: str) -> list[dict]:
    rel = f"sandbox/tests/datasets/samples/Multi-PLE/{config}.jsonl"
    text = (src / rel).read_text() if (src / rel).exists() else subprocess.run(
        ["git", "--git-dir", str(src), "show", f"HEAD:{rel}"], check=True, capture_output=True, text=True).stdout
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _cli(*args, timeout=600):
    r = subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module")
def real_rows():
    """{language: MultiPL-E row + a right (``_right``) and a wrong (``_wrong``) answer}: SandboxFusion's MultiPL-E
    samples (natively verified solutions) where a checkout is at hand, else this project's own harness problem
    in MultiPL-E's published schema (tests/ingest_hub/test_multipl_e_ingest.py) with chat answers (C++, JS)."""
    src = _sandboxfusion()
    out = {}
    if src is not None:
        slices = json.loads((REPO_ROOT / "bench" / "results" / "multipl_e.json").read_text())["per_language"]
        for lang, config in FILES.items():
            if languages.toolchain(lang) is None:
                continue
            known = slices[lang]["slice_names"][0]   # natively known correct (the bench's slice)
            row = next(r for r in _rows(src, config) if r["name"] == known)
            out[lang] = {**row, "_right": "Here is the solution:\n\n" + row["gpt_solution"] + "\n",
                         "_wrong": f"```{FENCE[lang]}\n{row['prompt']}{WRONG_BODY[lang]}```\n"}
    else:
        from tests.ingest_hub.test_multipl_e_ingest import published
        from tests.sandbox.test_harness_languages import CHAT

        odd = {"cpp": "if (x & 1) ", "javascript": "if (x % 2) "}   # the wrong answer squares every number
        for lang in odd:
            if languages.toolchain(lang) is not None:
                assert odd[lang] in CHAT[lang]
                out[lang] = {**published(lang, f"HumanEval_900_odd_squares_{lang}"), "_right": CHAT[lang],
                             "_wrong": CHAT[lang].replace(odd[lang], "")}
    if not out:
        pytest.skip("no C++/Java/JavaScript/Rust toolchain here")
    return out


def test_multipl_e_rows_export_in_their_language_and_score_by_it(tmp_path, real_rows):
    from factory.reward import compute_score

    jsonl = tmp_path / "mple.jsonl"
    jsonl.write_text("".join(json.dumps({k: r[k] for k in PUBLISHED}) + "\n" for r in real_rows.values()))
    lake = init_lake(tmp_path / "lake")
    _cli("ingest", "multipl-e", "--path", str(jsonl), "--lake", str(lake))
    # harness verdicts are forgeable: excluded by default; this curation opts out of that reason to export them
    _cli("curate", "--lake", str(lake), "--set",
         'exclude=["contaminated","duplicate","other_task","environment","unvalidated"]')
    reasons = query(lake, "SELECT reason, detail, count(*) FROM gold.training_exclusions GROUP BY ALL")
    assert [(r, n) for r, _, n in reasons] == [("forgeable", len(real_rows))]
    assert "all harness" in reasons[0][1]
    _cli("release", "create", "mple", "--view", "gold.rl_problems", "--lake", str(lake))
    _cli("export", "mple", "--format", "verl", "--out", str(tmp_path / "verl"), "--lake", str(lake))
    rows = pq.read_table(tmp_path / "verl" / "test.parquet").to_pylist()
    assert len(rows) == len(real_rows)
    seen = set()
    for r in rows:
        gt = json.loads(r["reward_model"]["ground_truth"])
        lang = gt["language"]
        row = real_rows[lang]
        seen.add(lang)
        prompt = r["prompt"][0]["content"]
        # the prompt asks for the problem's language in its fence, never for Python
        assert prompt.endswith(f"Write a complete {NAME[lang]} solution in a single ```{FENCE[lang]} code block.")
        assert "Python" not in prompt and "```python" not in prompt
        assert row["prompt"].strip() in prompt and "Complete the function `" in prompt
        assert gt["prompt"] == row["prompt"] and gt["tests"][0]["kind"] == "harness"
        right, wrong = row["_right"], row["_wrong"]
        gts = r["reward_model"]["ground_truth"]
        assert compute_score(r["data_source"], right, gts, exclude_in_process=False) == 1.0, lang
        assert compute_score(r["data_source"], wrong, gts, exclude_in_process=False) == 0.0, lang
        # by default a harness verdict (in the program's own process) is never rewarded
        assert compute_score(r["data_source"], right, gts) == 0.0, lang
    assert seen == set(real_rows)

    # a recipe's release (gold.recipe_problems) carries the language too
    out = _cli("recipe", "run", "default", "--no-prepare", "--lake", str(lake))
    name = out.strip().splitlines()[-1].split("releases: ")[-1].split(",")[0].strip()
    _cli("export", name, "--format", "verl", "--out", str(tmp_path / "recipe-verl"), "--lake", str(lake))
    rows = pq.read_table(tmp_path / "recipe-verl" / "test.parquet").to_pylist()
    assert sorted(json.loads(r["reward_model"]["ground_truth"])["language"] for r in rows) == sorted(real_rows)
    assert all(f"single ```{FENCE[json.loads(r['reward_model']['ground_truth'])['language']]} code block"
               in r["prompt"][0]["content"] for r in rows)
