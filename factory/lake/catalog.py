"""The data catalog: `data_catalog.yaml` declares every table and view the factory may touch."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from factory.assets import ROOT as PROJECT_ROOT   # the checkout, or an installed wheel's factory/assets
from factory.errors import FactoryError
from factory.lake.connection import sql_string

CATALOG_PATH = PROJECT_ROOT / "data_catalog.yaml"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool
    default: str | None = None  # literal text after DEFAULT; fills rows that predate the column
    comment: str | None = None  # the `# ...` after the column's type in data_catalog.yaml (a lake column comment)

    def ddl(self) -> str:
        """Column definition for CREATE TABLE / ADD COLUMN. DuckLake only takes a literal default, so the value
        is written as a string literal and cast to the column type (DEFAULT 'false')."""
        return f'"{self.name}" {self.type}' + ("" if self.default is None else f" DEFAULT {sql_string(self.default)}")


@dataclass(frozen=True)
class TableSpec:
    """One declared table or view."""

    name: str  # schema.table
    layer: str
    kind: str  # table | view
    description: str
    producer: str
    primary_key: tuple[str, ...]
    columns: tuple[Column, ...]
    sql: str | None = None
    depends_on: tuple[str, ...] = field(default=())

    @property
    def schema(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def comment(self) -> str:
        """Its lake comment (COMMENT ON TABLE / VIEW): the description; a view's adds one ``column: description``
        line per column, since DuckLake (DuckDB 1.5.5) refuses COMMENT ON COLUMN on a view."""
        if self.kind != "view":
            return self.description
        return "\n".join([self.description] + [f"{c.name}: {c.comment}" for c in self.columns if c.comment])

    def sql_text(self) -> str:
        if not self.sql:
            raise FactoryError(f"{self.name} has no SQL file in data_catalog.yaml")
        return (PROJECT_ROOT / self.sql).read_text()

    def arrow_schema(self, skip: tuple[str, ...] = ()):
        """The pyarrow schema of this table's declared columns (minus ``skip``), for building rows to write."""
        import pyarrow as pa
        types = {"VARCHAR": pa.string(), "JSON": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
                 "DOUBLE": pa.float64(), "TIMESTAMP": pa.timestamp("us"), "BOOLEAN": pa.bool_()}
        return pa.schema([(c.name, types[c.type]) for c in self.columns if c.name not in skip])


@dataclass(frozen=True)
class Catalog:
    schemas: tuple[str, ...]
    tables: dict[str, TableSpec]
    fingerprint: str = ""   # sha256 of the catalog file's text: which declaration a lake's schema was synced to

    def __getitem__(self, name: str) -> TableSpec:
        try:
            return self.tables[name]
        except KeyError:
            raise FactoryError(f"table {name!r} is not declared in data_catalog.yaml "
                               f"(declared: {', '.join(sorted(self.tables))})") from None

    def stored_tables(self) -> list[TableSpec]:
        """Tables the stages write rows into (not views, not tables materialized from a SQL file)."""
        return [t for t in self.tables.values() if t.kind == "table" and not t.sql]

    def transforms(self) -> list[TableSpec]:
        """Entries backed by a SQL file, in dependency order."""
        return topo_sort([t for t in self.tables.values() if t.sql], self)


_REF = re.compile(r"\b(bronze|silver|gold|ops)\.([A-Za-z_][A-Za-z0-9_]*)")


_COMMENT = re.compile(r"--[^\n]*")


def sql_references(sql: str) -> set[str]:
    """Catalog names (schema.table) referenced by a SQL text (names in `--` comments do not count)."""
    return {f"{m.group(1)}.{m.group(2)}" for m in _REF.finditer(_COMMENT.sub("", sql))}


def topo_sort(specs: list[TableSpec], catalog: Catalog) -> list[TableSpec]:
    """Order SQL-backed entries so that each comes after the entries it reads."""
    by_name = {s.name: s for s in specs}
    order: list[TableSpec] = []
    state: dict[str, int] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise FactoryError(f"cycle in SQL transforms: {' -> '.join(chain + (name,))}")
        state[name] = 1
        for dep in catalog[name].depends_on:
            if dep in by_name:
                visit(dep, chain + (name,))
        state[name] = 2
        order.append(by_name[name])

    for s in sorted(by_name):
        visit(s, ())
    return order


_DEFAULT = re.compile(r"\s+DEFAULT\s+(.+)$", re.I)


def _parse_column(table: str, name: str, decl: str) -> Column:
    """`TYPE`, `TYPE!` (NOT NULL) or either followed by `DEFAULT literal` (e.g. `BOOLEAN! DEFAULT false`)."""
    if not isinstance(decl, str) or not decl.strip():
        raise FactoryError(f"data_catalog.yaml: {table}.{name}: column type must be a non-empty string")
    decl = decl.strip()
    default = None
    if match := _DEFAULT.search(decl):
        default = match.group(1).strip().strip("'")
        decl = decl[:match.start()].strip()
        if not default:
            raise FactoryError(f"data_catalog.yaml: {table}.{name}: DEFAULT needs a literal value")
    return Column(name=name, type=decl.rstrip("!").strip(), not_null=decl.endswith("!"), default=default)


_COMMENTED = re.compile(r"^(\s+)([A-Za-z_][A-Za-z0-9_]*):\s*[^#\n]*?\s#\s*(.+?)\s*$")
_ENTRY = re.compile(r"^  ([a-z_]+\.[a-z_0-9]+):\s*$")


def column_comments(text: str) -> dict[tuple[str, str], str]:
    """{(table, column): comment} from the catalog text: YAML drops comments, and a column's trailing
    ``# ...`` is what it means (its lake column comment)."""
    out: dict[tuple[str, str], str] = {}
    table, in_columns = None, False
    for line in text.splitlines():
        if entry := _ENTRY.match(line):
            table, in_columns = entry.group(1), False
            continue
        if table and line.strip() == "columns:":
            in_columns = True
            continue
        if in_columns and line.strip() and not line.startswith("      "):
            in_columns = False
        found = _COMMENTED.match(line) if in_columns else None
        if found and len(found.group(1)) == 6:
            out[(table, found.group(2))] = found.group(3)
    return out


def load_catalog(path: Path | str = CATALOG_PATH) -> Catalog:
    """Parse and validate the catalog file."""
    import yaml

    path = Path(path)
    text = path.read_text()
    raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))   # libyaml: ~10x the pure parser
    comments = column_comments(text)
    schemas = tuple(raw.get("schemas", []))
    tables: dict[str, TableSpec] = {}
    for name, entry in (raw.get("tables") or {}).items():
        schema = name.split(".", 1)[0]
        if "." not in name or schema not in schemas:
            raise FactoryError(f"{path}: table {name!r} must be schema.table with schema in {schemas}")
        if missing := [k for k in ("layer", "kind", "description", "producer", "columns") if k not in entry]:
            raise FactoryError(f"{path}: table {name!r} lacks required field {missing[0]!r}")
        if entry["kind"] not in ("table", "view"):
            raise FactoryError(f"{path}: table {name!r}: kind must be table or view")
        cols = tuple(replace(_parse_column(name, c, t), comment=comments.get((name, c)))
                     for c, t in entry["columns"].items())
        pk = tuple(entry.get("primary_key") or ())
        if missing := [k for k in pk if k not in {c.name for c in cols}]:
            raise FactoryError(f"{path}: table {name!r}: primary key columns {missing} not declared")
        sql = entry.get("sql")
        deps: tuple[str, ...] = ()
        if sql:
            sql_path = PROJECT_ROOT / sql
            if not sql_path.is_file():
                raise FactoryError(f"{path}: table {name!r}: SQL file {sql} does not exist")
            deps = tuple(sorted(sql_references(sql_path.read_text()) - {name}))
        elif entry["kind"] == "view":
            raise FactoryError(f"{path}: view {name!r} needs a sql file")
        tables[name] = TableSpec(name=name, layer=entry["layer"], kind=entry["kind"], description=entry["description"],
                                 producer=entry["producer"], primary_key=pk, columns=cols, sql=sql, depends_on=deps)
    catalog = Catalog(schemas=schemas, tables=tables, fingerprint=hashlib.sha256(text.encode()).hexdigest()[:16])
    for spec in tables.values():
        if unknown := [d for d in spec.depends_on if d not in tables]:
            raise FactoryError(f"{path}: {spec.name} ({spec.sql}) reads undeclared tables {unknown}")
    return catalog


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    return load_catalog(CATALOG_PATH)
