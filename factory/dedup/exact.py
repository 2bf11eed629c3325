"""Exact dedup keys: normalised problem text and normalised code, hashed per row."""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import re
import tokenize as pytokenize
import unicodedata
import warnings
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from .lsh import _arrow, _conn, _registered

_NON_WORD = re.compile(r"[\W_]+")


def normalize_text(text: str | None) -> str:
    """Problem-text key: NFKC, casefold, every run of punctuation/symbols/underscores/whitespace
    becomes one space, stripped. ``"Write  a Function!"`` and ``"write a function"`` are equal."""
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip() if text else ""


class _StripDocstrings(ast.NodeTransformer):
    def _strip(self, node):
        self.generic_visit(node)
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return node

    visit_Module = visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _strip


def normalize_code(code: str | None) -> str:
    """Python-code key: parse, drop docstrings (module/class/def), ``ast.unparse`` (removes
    comments, canonicalises whitespace, quotes and parentheses). Unparseable code falls back to
    ``tokenize``: drop comments and blank/indent tokens and join the remaining token strings
    with single spaces; text after a tokenizer error is kept whitespace-collapsed."""
    if not code:
        return ""
    with contextlib.suppress(SyntaxError, ValueError, RecursionError):
        with warnings.catch_warnings():  # invalid escape sequences in user code
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
        return ast.unparse(_StripDocstrings().visit(tree))
    skip = {pytokenize.COMMENT, pytokenize.NL, pytokenize.NEWLINE, pytokenize.INDENT,
            pytokenize.DEDENT, pytokenize.ENDMARKER}
    out, end = [], (1, 0)
    try:
        for t in pytokenize.generate_tokens(io.StringIO(code).readline):
            if t.type not in skip:
                out.append(t.string)
            end = t.end
    except (pytokenize.TokenError, IndentationError, SyntaxError):
        lines = code.splitlines(keepends=True)  # keep the untokenised rest, whitespace-collapsed
        rest = lines[end[0] - 1][end[1]:] + "".join(lines[end[0]:]) if end[0] <= len(lines) else ""
        out.extend(rest.split())
    return " ".join(out)


def exact_hashes(values: Sequence[str | None] | pa.Array, kind: str = "text") -> pa.Array:
    """One key per row: hex BLAKE2b-128 of ``normalize_text`` (kind="text") or
    ``normalize_code`` (kind="code"). Null/empty input hashes the empty string."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    norm = {"text": normalize_text, "code": normalize_code}[kind]
    # identical inputs (a reference shared by sources, repeated samples) are normalised once
    key = functools.cache(lambda v: hashlib.blake2b(norm(v).encode("utf-8"), digest_size=16).hexdigest())
    return pa.array([key(v) for v in values], pa.string())


def exact_pairs(doc_ids: pa.Array, keys: pa.Array, con: duckdb.DuckDBPyConnection | None = None,
                skip_empty: bool = True) -> pa.Table:
    """Star edges ``(doc_id_a=min id of the key group, doc_id_b)`` for every duplicated key
    (DuckDB ``GROUP BY key``). With ``skip_empty`` the hash of "" never links documents."""
    con = _conn(con)
    empty = exact_hashes([""])[0].as_py()
    where = f"WHERE key <> '{empty}'" if skip_empty else ""
    with _registered(con, exact=pa.table({"doc_id": doc_ids, "key": keys})) as (t,):
        return _arrow(con.execute(f"""
            WITH g AS (SELECT key, min(doc_id) AS anchor FROM {t} {where} GROUP BY key HAVING count(*) > 1)
            SELECT g.anchor AS doc_id_a, d.doc_id AS doc_id_b FROM {t} d JOIN g USING (key)
            WHERE d.doc_id <> g.anchor ORDER BY doc_id_a, doc_id_b
        """))
