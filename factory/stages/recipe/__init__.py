"""`factory recipe run|diff|list|show`: seed papers' data recipes (recipes/<name>.yaml) as runnable releases."""
from __future__ import annotations

import json
import sys


def register(sub, add_lake) -> None:
    rec = sub.add_parser("recipe", help="run a seed paper's data recipe (recipes/NAME.yaml) and cut its release")
    rsub = rec.add_subparsers(dest="recipe_command", required=True)

    p = rsub.add_parser("run", help="walk the recipe's pipeline: ingest, dedup, decontam, tests, sample, execute, "
                                    "curate, filter (rules), release NAME-<date>, export (steps already current "
                                    "are skipped and recorded)")
    add_lake(p)
    p.add_argument("name", help="recipe name (recipes/NAME.yaml) or a path to a recipe file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe parameter (its `params:`); VALUE is JSON or text")
    p.add_argument("--releases-dir", help="where releases go (default $FACTORY_RELEASES, else LAKE/releases)")
    p.add_argument("--data-dir", help="folder of dataset folders (e.g. ../shared/data) the ingest step reads")
    p.add_argument("--export-dir", help="where the export step writes (default $FACTORY_EXPORTS or next to the "
                                        "releases folder: exports/RELEASE/FORMAT)")
    p.add_argument("--no-prepare", action="store_true",
                   help="run only the filter and release steps (use the lake's current gold views)")
    p.add_argument("--no-release", action="store_true", help="commit the decisions only")
    p.add_argument("--date", help="release date label (default: today, UTC, YYYYMMDD)")
    p.add_argument("--skip", action="append", default=[], metavar="STEP",
                   help="leave out a pipeline step, rule or curriculum stage whose input is missing (the run "
                        "refuses otherwise); recorded in the release's manifest and card")
    p.set_defaults(fn=cmd_run)

    p = rsub.add_parser("diff", help="problems one recipe's release keeps and the other's does not, and why")
    add_lake(p)   # the lake whose releases folder (LAKE/releases) holds A and B, when --releases-dir is not given
    p.add_argument("a", help="release name, or recipe name (its newest release)")
    p.add_argument("b")
    p.add_argument("--releases-dir", help="where the releases are (default $FACTORY_RELEASES, else LAKE/releases)")
    p.add_argument("--json", dest="json_out", help="also write the diff as JSON to this file")
    p.set_defaults(fn=cmd_diff)

    p = rsub.add_parser("list", help="recipes in recipes/")
    p.set_defaults(fn=cmd_list)

    p = rsub.add_parser("show", help="a recipe's steps in order, each with its thresholds and paper source")
    p.add_argument("name")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true", help="the resolved recipe as JSON (parameters filled in)")
    p.add_argument("--dot", action="store_true", help="the pipeline graph in graphviz dot")
    p.set_defaults(fn=cmd_show)


def cmd_run(args) -> None:
    from factory.recipes import parse_overrides
    from factory.stages.recipe.run import run_recipe

    out = run_recipe(args.name, lake=args.lake, releases_dir=args.releases_dir,
                     overrides=parse_overrides(args.set), prepare=not args.no_prepare,
                     release=not args.no_release, date=args.date, skip=args.skip, data_dir=args.data_dir,
                     export_dir=args.export_dir)
    print("steps: " + "; ".join(f"{s['step']} {s['status']}" for s in out["steps"]))
    print(steps_resources(out["steps"]))
    stages = ", ".join(f"{k} {v}" for k, v in out["stages"].items())
    print(f"recipe {out['recipe']}: kept {out['kept']} of {out['candidates']} candidates"
          + (f"; stages: {stages}" if stages else "")
          + (f"; releases: {', '.join(out['releases'])}" if out["releases"] else ""))


def steps_resources(steps: list[dict]) -> str:
    """Each step's status, wall time and peak RSS (this process, since the step began) as an aligned table."""
    head = f"{'step':<16} {'status':<8} {'seconds':>9} {'peak RSS MB':>12}"
    lines = [head, "-" * len(head)] + [
        f"{s['step'][:16]:<16} {s['status']:<8} {s['seconds']:>9.1f} {s.get('peak_rss_mb', 0):>12}" for s in steps]
    lines.append(f"{'total':<16} {'':<8} {sum(s['seconds'] for s in steps):>9.1f} "
                 f"{max((s.get('peak_rss_mb', 0) for s in steps), default=0):>12}")
    return "\n".join(lines)


def cmd_diff(args) -> None:
    from factory.recipes.diff import diff_recipes, diff_text

    d = diff_recipes(args.a, args.b, releases_dir=args.releases_dir)
    print(diff_text(d))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(d, fh, indent=2, sort_keys=True)


def cmd_list(args) -> None:
    from factory.recipes import available_recipes, load_recipe

    for name in available_recipes():
        r = load_recipe(name)
        print(f"{name:<22} {len(r.pipeline)} steps, {len(r.rules)} rules, {len(r.stages)} stages  {r.title}")


def cmd_show(args) -> None:
    from factory.recipes.spec import load_recipe, parse_overrides, steps_text

    r = load_recipe(args.name, parse_overrides(args.set))
    if args.dot:
        from factory.recipes.pipeline import graph_dot
        print(graph_dot(r.pipeline, r.name))
    elif not args.json:
        print(steps_text(r))
    else:
        json.dump({**r.resolved(), "file": r.file, "title": r.title, "paper": r.paper, "recipe_hash": r.hash},
                  sys.stdout, indent=2, sort_keys=True)
        print()
