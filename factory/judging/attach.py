"""Attach judging rules to problems (-> silver.checkers): rules stated by stdin/stdout problems (tolerance,
any-case answers) and checker programs from a folder (one ``<source_id>.py`` per problem).

The rules the factory ships (``checkers/<source>/`` in the checkout, ``factory/assets/checkers/`` in a wheel)
apply by default: `factory ingest` and `factory execute` call :func:`apply_shipped_rules` for their sources, so a
plain execute of CodeContests judges by them without a manual `factory checkers` step.
"""
from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

from factory.errors import InputError
from factory.judging.file_checker import ORIGIN as DATASET_ORIGIN, script_checker
from factory.judging.rules import Rule, checker_hash, detect_rule

CHECKER_COLUMNS = ("problem_id", "policy", "atol", "rtol", "code", "origin", "detail", "checker_hash")
PRELUDE = "_prelude.py"   # a folder's shared helpers, prepended to each of its checker programs (not a checker)


def _source_clause(sources: list[str] | None, alias: str = "pb") -> tuple[str, list]:
    if not sources:
        return "true", []
    return f"{alias}.source IN ({', '.join('?' for _ in sources)})", list(sources)


def checker_files(folder: Path) -> dict[str, Path]:
    """A folder's checker programs by problem key: the file's stem and the keys its ``ALSO = (...)`` names (one
    program for a problem the dataset lists under several ids)."""
    paths = sorted(p for p in folder.glob("*.py") if p.name != PRELUDE)
    files = {p.stem: p for p in paths}   # a file of its own wins over another file's ALSO
    for p in paths:
        try:
            body = ast.parse(p.read_text(encoding="utf-8"), filename=str(p)).body
        except SyntaxError:
            continue   # read_checker_file names the error when the file is used
        for node in body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["ALSO"]:
                try:
                    keys = ast.literal_eval(node.value)
                except ValueError:
                    keys = None
                if not isinstance(keys, (tuple, list)) or not all(isinstance(k, str) for k in keys):
                    raise InputError("ALSO must be a tuple of problem keys (source_id with '/' written '__')",
                                     file=str(p))
                for key in keys:
                    files.setdefault(key, p)
    return files


def read_checker_file(path: Path) -> str:
    """A checker program's source, checked to define ``check(input, expected, actual)`` (clear error otherwise),
    after its folder's ``_prelude.py`` where there is one."""
    code = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(code, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"checker does not parse: {exc.msg} (line {exc.lineno})", file=str(path)) from None
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not funcs:
        raise InputError("a checker must define check(input, expected, actual)", file=str(path))
    args = funcs[-1].args
    if len(args.args) + len(args.posonlyargs) != 3 and not args.vararg:
        raise InputError("check() must take three arguments: input, expected, actual", file=str(path))
    prelude = path.parent / PRELUDE
    return f"{prelude.read_text(encoding='utf-8')}\n\n{code}" if prelude.is_file() else code


def run_checkers(lake=None, sources: list[str] | None = None, checker_dir: str | Path | None = None,
                 detect: bool = True, unmatched_ok: bool = False) -> dict:
    """Attach judging rules to problems: rules stated by stdin/stdout problems (tolerance, any-case answers)
    when ``detect``, and checker programs from ``checker_dir`` (one ``<source_id>.py`` per problem, ``/`` in the
    id written ``__``; a checker file wins over a detected rule)."""
    from factory.lake.commit import stage_run, utcnow

    files = {}
    if checker_dir is not None:
        folder = Path(checker_dir)
        if not folder.is_dir():
            raise InputError("checker folder not found", file=str(folder))
        files = checker_files(folder)
    config = {"sources": sources, "detect": detect,
              "files": {k: checker_hash("program", None, None, p.read_text(encoding="utf-8"))
                        for k, p in files.items()}}
    with stage_run("checkers", config, lake=lake) as run:
        where, params = _source_clause(sources)
        problems = run.con.execute(f"""
            SELECT pb.problem_id, pb.source_id, pb.question, pb.test_format,
                   list(t.expected ORDER BY t.ordinal) FILTER (WHERE t.kind = 'stdio') AS outputs,
                   json_extract_string(pb.metadata, '$.generated_checker') AS dataset_checker
            FROM silver.problems pb LEFT JOIN silver.tests t USING (problem_id)
            WHERE {where} GROUP BY ALL ORDER BY pb.problem_id""", params).fetchall()
        found: dict[str, dict] = {}
        matched_keys = set()
        unusable = 0
        for problem_id, source_id, question, test_format, outputs, dataset_checker in problems:
            key = source_id.replace("/", "__")   # its checker file's stem
            if (path := files.get(key)) is not None:
                code = read_checker_file(path)
                matched_keys.add(key)
                found[problem_id] = _row(problem_id, Rule("program", None, None, "file", path.name), code)
            elif detect and dataset_checker and test_format == "stdio":
                # the dataset's own checker (open-r1/codeforces generated_checker), run as open-r1 runs it; one that
                # does not parse stays unwired (curate: gold.training_exclusions needs_checker)
                try:
                    code = script_checker(dataset_checker)
                except ValueError:
                    unusable += 1
                    continue
                found[problem_id] = _row(problem_id, Rule("program", None, None, DATASET_ORIGIN,
                                                          "the dataset's checker (metadata generated_checker)"), code)
            elif detect and test_format == "stdio" and (rule := detect_rule(question, outputs or [])) is not None:
                found[problem_id] = _row(problem_id, rule, None)
        unknown = sorted(set(files) - matched_keys)
        if unknown and not unmatched_ok:   # the shipped folder covers a whole dataset: a slice matches part of it
            raise InputError(f"{len(unknown)} checker file(s) name no selected problem, e.g. {unknown[0]}.py "
                             "(file name = source_id with '/' written '__')", file=str(checker_dir))
        ids = [p[0] for p in problems]
        owned = ["statement", "answers", DATASET_ORIGIN] if detect else []
        owned += ["file"] if files else []
        old = {r[0]: r for r in run.con.execute(
            f"SELECT {', '.join(CHECKER_COLUMNS)} FROM silver.checkers WHERE list_contains(?, problem_id) "
            "AND list_contains(?, origin)", [ids, owned]).fetchall()}
        keep_files = {pid for pid, r in old.items() if r[5] == "file" and "file" not in owned}
        new = {pid: r for pid, r in found.items() if pid not in keep_files}
        changed = {pid for pid in old.keys() | new.keys()
                   if pid not in new or tuple(new[pid][c] for c in CHECKER_COLUMNS) != old.get(pid)}
        if not changed:
            run.noop = True
        else:
            run.delete("silver.checkers", "list_contains(?, problem_id)", [sorted(changed)])
            now = utcnow()
            run.write("silver.checkers", [dict(new[pid], created_at=now) for pid in sorted(changed) if pid in new])
        counts = Counter(f"{r['policy']} ({r['origin']})" for r in found.values())
        report = {"problems": len(problems), "rules": len(found), "changed": len(changed), "by_rule": dict(counts),
                  "unusable_dataset_checkers": unusable}
        run.summary = json.dumps(report)
    report["run_id"] = None if run.noop else run.run_id
    return report


def _row(problem_id: str, rule: Rule, code: str | None) -> dict:
    return {"problem_id": problem_id, "policy": rule.policy, "atol": rule.atol, "rtol": rule.rtol, "code": code,
            "origin": rule.origin, "detail": rule.detail,
            "checker_hash": checker_hash(rule.policy, rule.atol, rule.rtol, code)}


def shipped_folder(source: str) -> Path | None:
    """The checker programs the factory ships for a source (``checkers/<source>/``), or None."""
    from factory.assets import path

    folder = path("checkers", source)
    return folder if folder.is_dir() and any(folder.glob("*.py")) else None


def apply_shipped_rules(lake=None, sources: list[str] | None = None, con=None) -> dict[str, dict]:
    """Detected statement rules and shipped checker programs for each selected source that has a shipped folder
    and lacks any of its rules in silver.checkers (an unchanged lake: no run at all). Returns the reports.

    With ``con`` (a read-only connection of the caller's) the check reads through it and leaves it open when there
    is nothing to attach; when there is, it is closed before the commit (a SQLite catalog takes one writer and no
    open reader): the caller reconnects when the returned dict is not empty."""
    from factory.lake import connect
    from factory.lake.query import sql_string

    own = con is None
    con = connect(lake, read_only=True) if own else con
    try:
        present = [r[0] for r in con.execute("SELECT DISTINCT source FROM silver.problems").fetchall()]
        todo = {}
        # checkers the dataset ships in the problems' metadata (open-r1/codeforces generated_checker) and that
        # are not in silver.checkers yet: judged by them from the first execute on
        import duckdb   # here, not at the top: `factory --help` imports this module (via the checkers stage)

        selected = [s for s in present if not sources or s in sources]
        try:
            with_checkers = con.execute(f"""
                SELECT DISTINCT pb.source FROM silver.problems pb
                WHERE pb.source IN ({', '.join(map(sql_string, selected))})
                  AND json_extract_string(pb.metadata, '$.generated_checker') <> ''
                  AND pb.problem_id NOT IN (SELECT problem_id FROM silver.checkers
                                            WHERE origin IN ('{DATASET_ORIGIN}', 'file'))""").fetchall() if selected else []
        except duckdb.CatalogException:   # a lake from before silver.checkers existed: nothing to attach to
            with_checkers = []
        for (source,) in with_checkers:
            todo[source] = shipped_folder(source)
        for source in sorted(s for s in selected if shipped_folder(s)):
            stems = set(checker_files(shipped_folder(source)))
            rows = con.execute(f"""
                SELECT replace(pb.source_id, '/', '__'), bool_or(c.origin = 'file')
                FROM silver.problems pb LEFT JOIN silver.checkers c USING (problem_id)
                WHERE pb.source = {sql_string(source)} GROUP BY ALL""").fetchall()
            if any(key in stems and not has_file for key, has_file in rows):
                todo[source] = shipped_folder(source)
    finally:
        if own or todo:
            con.close()
    return {source: run_checkers(lake, [source], folder, unmatched_ok=True) for source, folder in todo.items()}
