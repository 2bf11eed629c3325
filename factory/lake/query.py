"""Ad-hoc access to the lake: query output formats, an interactive shell, name checks and shard predicates."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import duckdb

from factory.errors import FactoryError, InputError, did_you_mean
from factory.lake import LAKE_ALIAS, attach_sql, connect, extension_paths, resolve_lake_dir
from factory.lake.connection import CATALOG_FILE, CONFIG_FILE, sql_string


def shard_predicate(shard: tuple[int, int] | None, column: str) -> str:
    """SQL that keeps the rows whose ``column`` hashes to i mod n (``--shard i/n``: n drivers split one selection
    and commit into one lake); ``true`` without a shard."""
    if shard is None:
        return "true"
    i, n = shard
    if not (n >= 1 and 0 <= i < n):
        raise InputError(f"--shard {i}/{n}: need 0 <= i < n")
    return f"hash({column}) % {int(n)} = {int(i)}"


def table_exists(con, name: str) -> bool:
    """Whether the lake has table/view ``schema.name`` (a lake made before it was declared may not)."""
    schema, table = name.split(".")
    if not (schema.isidentifier() and table.isidentifier()):
        raise ValueError(f"not a table name: {name!r}")
    # duckdb_columns(): duckdb_tables() estimates every DuckLake table's size; literals, not parameters (sql_string)
    return bool(con.execute(f"SELECT 1 FROM duckdb_columns() WHERE database_name = '{LAKE_ALIAS}' AND schema_name = "
                            f"{sql_string(schema)} AND table_name = {sql_string(table)} LIMIT 1").fetchall())


def check_known(con, kind: str, names, sql: str, hint: str) -> None:
    """Every name of a filter (``--source``, ``--model``) must exist in the lake: a typo is an error listing the
    valid names, never an empty selection that exits 0. ``sql`` selects the valid names."""
    names = [names] if isinstance(names, str) else list(names or [])
    if not names:
        return
    valid = sorted(str(r[0]) for r in con.execute(sql).fetchall() if r[0] is not None)
    if unknown := [n for n in names if n not in valid]:
        listed = ", ".join(valid) if valid else f"none yet ({hint})"
        raise FactoryError(f"unknown {kind} {', '.join(map(repr, unknown))}; the lake's {kind}s: {listed}"
                           f"{did_you_mean(unknown[0], valid)}")


def check_sources(lake, sources) -> None:
    """``--source`` names sources that silver.problems holds (else an error listing them)."""
    if not sources:
        return
    with connect(lake, read_only=True) as con:
        check_known(con, "source", sources, "SELECT DISTINCT source FROM silver.problems",
                    "run `factory ingest` first")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'i/n' -> (i, n); None stays None."""
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--shard {text!r}: expected i/n, e.g. 0/4") from None
    return i, n


def write_result(con: duckdb.DuckDBPyConnection, query: str, fmt: str = "table", output: str | None = None) -> None:
    """Run a query and write its result as a table, CSV, JSON lines or Parquet."""
    try:
        rel = con.sql(query)
    except duckdb.Error as exc:
        raise FactoryError(f"query failed: {exc}") from exc
    if rel is None:
        return
    if fmt == "parquet":
        if not output:
            raise FactoryError("--format parquet needs --output FILE")
        rel.write_parquet(output)
        return
    out = open(output, "w") if output else sys.stdout
    try:
        if fmt == "table":
            out.write(str(rel) if output else "")
            if not output:
                rel.show(max_rows=200, max_width=200)
        elif fmt == "csv":
            # DuckDB's own CSV writer: it also renders LIST / STRUCT / MAP columns (pyarrow's refuses them)
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "result.csv"
                rel.write_csv(str(path), header=True)
                out.write(path.read_text(encoding="utf-8"))
        elif fmt == "json":
            cols = rel.columns
            for row in rel.fetchall():
                out.write(json.dumps(dict(zip(cols, row)), default=str, ensure_ascii=False) + "\n")
        else:
            raise FactoryError(f"unknown format {fmt!r}")
    finally:
        if output:
            out.close()


def init_sql(lake=None) -> str:
    """SQL that attaches the lake (read-only) in a plain duckdb CLI or Python session."""
    lake_dir = resolve_lake_dir(lake)
    if not ((lake_dir / CATALOG_FILE).is_file() or (lake_dir / CONFIG_FILE).is_file()):
        raise FactoryError(f"no lake at {lake_dir} (run `factory init --lake {lake_dir}` first, or name an "
                           "existing lake with --lake DIR)")
    paths = extension_paths()
    loads = [f"LOAD '{p}';" for p in paths.values()] if paths else ["INSTALL ducklake; INSTALL sqlite;",
                                                                     "LOAD ducklake; LOAD sqlite;"]
    return "\n".join(loads + [attach_sql(lake_dir, read_only=True) + ";", f"USE {LAKE_ALIAS};"])


def shell(lake=None) -> None:
    """A minimal SQL REPL (statements end with ';'), read-only, with the lake attached as the default catalog."""
    con = connect(lake, read_only=True)
    print(f"factory shell on {resolve_lake_dir(lake)} (read-only). End statements with ';'. Ctrl-D quits.")
    buf: list[str] = []
    while True:
        try:
            line = input("factory> " if not buf else "     ...> ")
        except EOFError:
            print()
            break
        buf.append(line)
        if line.rstrip().endswith(";"):
            query = "\n".join(buf)
            buf = []
            try:
                rel = con.sql(query)
                if rel is not None:
                    rel.show(max_rows=100, max_width=200)
            except duckdb.Error as exc:
                print(f"error: {exc}")
    con.close()
