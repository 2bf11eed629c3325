"""`factory mutate`: deterministic AST mutants of reference programs -> silver.programs (origin=mutant).

Mutant ids hash (problem, code), so re-running with the same settings adds nothing.
"""
from __future__ import annotations

import json

from factory.ingest.normalize import stable_hash
from factory.testgen.mutants import OPERATORS, mutants


def run_mutate(lake=None, sources: list[str] | None = None, max_per_program: int = 10, seed: int = 0,
               operators: tuple[str, ...] = OPERATORS) -> dict:
    """Add up to max_per_program mutants of every reference program; returns counts per source."""
    from factory.lake.commit import stage_run, utcnow

    config = {"sources": sources, "max_per_program": max_per_program, "seed": seed, "operators": list(operators)}
    with stage_run("mutate", config, lake=lake) as run:
        where = f"AND pb.source IN ({', '.join('?' for _ in sources)})" if sources else ""
        refs = run.con.execute(f"""
            SELECT p.program_id, p.problem_id, p.code, pb.source FROM silver.programs p
            JOIN silver.problems pb USING (problem_id)
            WHERE p.origin = 'reference' {where} ORDER BY p.program_id""", sources or []).fetchall()
        existing = {r[0] for r in run.con.execute(
            "SELECT program_id FROM silver.programs WHERE origin = 'mutant'").fetchall()}
        rows, per_source, unparsable = [], {}, 0
        now = utcnow()
        for program_id, problem_id, code, source in refs:
            try:
                found = mutants(code, max_mutants=max_per_program, seed=seed, operators=operators)
            except (SyntaxError, ValueError, RecursionError):
                unparsable += 1
                continue
            for index, m in enumerate(found):
                mid = stable_hash(problem_id, "mutant", m.code)
                if mid in existing:
                    continue
                existing.add(mid)
                rows.append({"program_id": mid, "problem_id": problem_id, "origin": "mutant", "model": None,
                             "sample_index": index, "code": m.code, "raw_completion": None,
                             "extraction_status": None, "reported_pass_rate": None,
                             "parent_program_id": program_id, "created_at": now,
                             "metadata": json.dumps({"operator": m.operator, "location": list(m.location),
                                                     "description": m.description})})
                per_source[source] = per_source.get(source, 0) + 1
        run.write("silver.programs", rows)
        report = {"references": len(refs), "mutants_added": len(rows), "unparsable_references": unparsable,
                  "by_source": per_source}
        run.summary = json.dumps(report)
    report["run_id"] = run.run_id
    return report


def register(sub, add_lake) -> None:
    """Add `mutate` to the `factory` parser."""
    p = sub.add_parser("mutate", help="deterministic AST mutants of reference programs (origin=mutant)")
    add_lake(p)
    p.add_argument("--source", action="append", help="only these sources (repeatable)")
    p.add_argument("--max-per-program", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=cmd_mutate)


def cmd_mutate(args) -> None:
    report = run_mutate(args.lake, args.source, args.max_per_program, args.seed)
    print(f"{report['mutants_added']} mutants of {report['references']} references "
          f"({report['unparsable_references']} unparsable); by source: {report['by_source']}")
