"""Decontamination precision and recall per method on the audit labels (audit/decontam/*.csv).

    factory init --lake L && factory ingest --all --data-dir ../shared/data --lake L
    # optional, for the test method on generated tests: factory execute --select reference --lake L &&
    #   factory hidden-tests --lake L
    python bench/decontam_audit.py --lake L [--out bench/results/decontam_audit.json] [--ship]

Prints a table (one row per method: precision, recall, recall on lineage / planted copies, false positives) and
writes the JSON; ``--ship`` also writes audit/decontam/measured.json, the figures every release card quotes.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness import ROOT, parser, table, timed, write  # noqa: I001  (first: the repository on sys.path)

ORDER = ("default", "text", "test", "lineage", "text_literal", "literal_default")
NAMES = {"default": "default (text + test + lineage)", "text": "text (evidence rule)", "test": "test",
         "lineage": "lineage", "text_literal": "text, literal rule (any shared 9-gram)",
         "literal_default": "literal text + test + lineage"}


def main(argv=None) -> int:
    from factory.stages.decontam import audit_decontam

    ap = parser(__doc__, "decontam_audit.json", {"--audit-dir": str(ROOT / "audit" / "decontam")})
    ap.add_argument("--lake", required=True)
    ap.add_argument("--ship", action="store_true", help="also write audit/decontam/measured.json")
    args = ap.parse_args(argv)
    seconds, result = timed(audit_decontam, args.lake, args.audit_dir)
    result["seconds"] = round(seconds, 1)
    result["lake"] = str(args.lake)
    print(f"labels: {result['labels']}; planted copies: {result['planted']}; {result['seconds']} s")
    fmt = lambda v: None if v is None else f"{v:.3f}"
    print(table([{"method": NAMES[m], "flagged": r["flagged"], "precision": fmt(r["precision"]),
                  "recall": fmt(r["recall"]), **{f"recall {k}": fmt(r["by_kind"].get(k, {}).get("rate"))
                                                 for k in ("lineage", "planted")},
                  "false positives": r["false_positives"]} for m in ORDER for r in [result["methods"][m]]]))
    for m in ("default", "text", "test"):
        if ex := result["methods"][m]["false_examples"]:
            print("\n".join([f"{m} false positives (first {len(ex)}):"] + ["  " + e for e in ex]))
    write(args.out, result)
    if args.ship:
        keep = {m: {k: r[k] for k in ("flagged", "precision", "recall", "false_positives")}
                | {f"recall_{k}": r["by_kind"].get(k, {}).get("rate") for k in ("lineage", "planted")}
                for m in ORDER for r in [result["methods"][m]]}
        (Path(args.audit_dir) / "measured.json").write_text(json.dumps(
            {"labels": result["labels"], "planted": result["planted"], "methods": keep,
             "measured_on": "a lake of ../shared/data (bench/decontam_audit.py)"}, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
