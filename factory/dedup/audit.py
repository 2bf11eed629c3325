"""The decontamination audit: labelled (problem, benchmark item) pairs and the precision / recall of each method.

The labels live in the repository (``audit/decontam/*.csv``; ``audit/decontam/build.py`` rebuilds them from the
data files), never the data: a pair names its two problems by ``(source, source_id)``. Planted copies are not
stored either: ``planted.csv`` names a benchmark item and a transform of :data:`TRANSFORMS`, and
:func:`plant` makes the copy from the item's text when the audit runs.

Kinds of pairs (``label`` true / false / ambiguous; ambiguous pairs are listed but not scored):

* ``lineage`` (true): the same task in derived datasets - MBPP / sanitized MBPP / MBPP+ task id, HumanEval /
  HumanEval+ number, LeetCode slug across LeetCodeDataset files - read from the data files.
* ``planted`` (true): a paraphrased copy of a benchmark item made by one transform.
* ``same_statement`` / ``copy`` (true): two task ids with the same statement (one contains the other), or a
  statement copied across datasets (APPS <- CodeContests; LeetCode find-k-pairs-with-smallest-sums <- MBPP 408).
* ``stock_phrase`` / ``other_task`` (false): different tasks sharing a 9-gram of stock phrasing or example values.
* ``tiny_test`` / ``inputs_only`` / ``shared_test`` (false): different tasks sharing a small test, or test inputs
  whose expected values differ (MBPP 654 perimeter vs MBPP 458 area on ``(10, 20)``).
* ``sibling`` (ambiguous): LeetCode problem I / II of one setting.
"""
from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

LABEL_FIELDS = ("kind", "label", "source", "source_id", "benchmark", "benchmark_id", "methods", "basis")
PLANTED_FIELDS = ("transform", "benchmark", "benchmark_id")


# -- planted copies ------------------------------------------------------------------------------------------
_SYNONYMS = {
    "given": "provided", "return": "output", "returns": "outputs", "find": "compute", "write": "implement",
    "integer": "whole number", "integers": "whole numbers", "array": "list", "arrays": "lists",
    "number": "value", "numbers": "values", "string": "text", "strings": "texts", "function": "routine",
    "each": "every", "minimum": "smallest", "maximum": "largest", "determine": "figure out",
    "called": "named", "must": "has to", "contains": "holds", "consists": "is made up",
}
_WORD = re.compile(r"[A-Za-z]+")
_IDENT = re.compile(r"\b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b")
_NUM = re.compile(r"\b\d+\b")
_SENT = re.compile(r"(?<=[.!?])\s+")
_EXAMPLE = re.compile(r"(?i)\b(input|output|example)\b|>>>|\bassert\b")

TRANSFORMS = {
    "wrap": "the item between a new opening and closing sentence",
    "rename": "identifiers renamed (snake_case / camelCase words get a prefix) and, on example lines (Input /"
              " Output / Example / >>> / assert), every number n -> n+1 (other example values)",
    "reorder": "sentences rotated: the second half first",
    "reword": "every 4th replaceable word swapped for a synonym (given -> provided, array -> list, ...); "
              "items of at least 60 words",
    "truncate": "the first 60% of the words only (the examples and constraints dropped); items of at least 60 "
                "words",
}
LONG_ONLY = ("reword", "truncate")
LONG_WORDS = 60


def plant(text: str, transform: str) -> str:
    """A deterministic paraphrased copy of ``text`` (see :data:`TRANSFORMS`)."""
    if transform == "wrap":
        return ("Here is a practice problem from our course.\n\n" + text.strip()
                + "\n\nExplain your approach briefly, then write the code.")
    if transform == "rename":
        out = _IDENT.sub(lambda m: "my_" + m.group(0).lower(), text)
        bump = lambda line: _NUM.sub(lambda m: str(int(m.group(0)) + 1), line) if _EXAMPLE.search(line) else line
        return "\n".join(bump(line) for line in out.split("\n"))
    if transform == "reorder":
        sents = [s for s in _SENT.split(text.strip()) if s]
        half = len(sents) // 2
        return " ".join(sents[half:] + sents[:half]) if len(sents) > 1 else text
    if transform == "reword":
        count = 0

        def swap(m):
            nonlocal count
            w = m.group(0)
            rep = _SYNONYMS.get(w.lower())
            if rep is None:
                return w
            count += 1
            return rep if count % 4 == 0 else w
        return _WORD.sub(swap, text)
    if transform == "truncate":
        spans = [m.end() for m in _WORD.finditer(text)]
        return text[: spans[max(1, int(len(spans) * 0.6)) - 1]]
    raise ValueError(f"unknown planted transform {transform!r}; known: {', '.join(TRANSFORMS)}")


def planted_id(transform: str, benchmark: str, benchmark_id: str) -> str:
    return f"planted:{transform}:{benchmark}:{benchmark_id}"


def choose_planted(items: dict[str, list[tuple[str, str]]], per_source: int) -> list[dict]:
    """Deterministic planted sample: per benchmark source, items ordered by the SHA-1 of their id; each transform
    takes the next ``per_source`` items it applies to (an item is planted once: a second copy would make its own
    n-grams look like stock text). ``items``: source -> [(source_id, text)]."""
    rows = []
    for source in sorted(items):
        order = sorted(items[source], key=lambda it: hashlib.sha1(f"{source}/{it[0]}".encode()).hexdigest())
        used: set = set()
        for transform in TRANSFORMS:
            taken = 0
            for sid, text in order:
                if taken >= per_source:
                    break
                if sid in used or (transform in LONG_ONLY and len(_WORD.findall(text)) < LONG_WORDS) \
                        or plant(text, transform) == text:
                    continue
                used.add(sid)
                taken += 1
                rows.append({"transform": transform, "benchmark": source, "benchmark_id": sid})
    return rows


# -- label files ---------------------------------------------------------------------------------------------
def read_csv(path: Path, fields: tuple[str, ...]) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in fields if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}")
        rows = list(reader)
    for i, r in enumerate(rows, start=2):
        if "label" in r and r["label"] not in ("true", "false", "ambiguous"):
            raise ValueError(f"{path}:{i}: label must be true, false or ambiguous, got {r['label']!r}")
    return rows


def write_csv(path: Path, fields: tuple[str, ...], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(fields), lineterminator="\n")
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in fields} for r in rows)


# -- scoring -------------------------------------------------------------------------------------------------
def score(labels: list[dict], flagged: dict[str, set]) -> dict:
    """Precision and recall per method over the labelled pairs. ``flagged``: method -> {(source, source_id,
    benchmark, benchmark_id)} the method links. Precision counts the true/false pairs a method flags; recall is
    over the true pairs, overall and per kind."""
    scored = [r for r in labels if r["label"] in ("true", "false")]
    key = lambda r: (r["source"], r["source_id"], r["benchmark"], r["benchmark_id"])
    out = {}
    for method, pairs in flagged.items():
        hit = [r for r in scored if key(r) in pairs]
        tp = sum(r["label"] == "true" for r in hit)
        fp = len(hit) - tp
        trues = [r for r in scored if r["label"] == "true"]
        by_kind = {}
        for kind in sorted({r["kind"] for r in scored}):   # every kind has rows
            rows = [r for r in scored if r["kind"] == kind]
            k_hit = sum(key(r) in pairs for r in rows)
            by_kind[kind] = {"pairs": len(rows), "flagged": k_hit, "rate": round(k_hit / len(rows), 4),
                             "label": rows[0]["label"]}
        out[method] = {"flagged": len(hit), "true_positives": tp, "false_positives": fp,
                       "precision": round(tp / len(hit), 4) if hit else None,
                       "recall": round(tp / len(trues), 4) if trues else None, "by_kind": by_kind,
                       "false_examples": [f"{r['source']} {r['source_id']} ~ {r['benchmark']} {r['benchmark_id']} "
                                          f"({r['kind']}: {r['basis'][:120]})" for r in hit if r["label"] == "false"][:10],
                       "missed_examples": {kind: [f"{r['source']} {r['source_id']} ~ {r['benchmark']} {r['benchmark_id']}"
                                                  for r in trues if r["kind"] == kind and key(r) not in pairs][:10]
                                           for kind in ("lineage", "planted")}}
    return out
