"""The lake core: connections, the catalog, the one commit path, read-only queries and SQL templating.

* :mod:`factory.lake.connection` - connect / attach a DuckLake lake (SQLite or PostgreSQL catalog, local or S3
  data), extensions, snapshots;
* :mod:`factory.lake.catalog` - data_catalog.yaml: every table and view, its producer and columns;
* :mod:`factory.lake.commit` - the one commit path: a stage run is one transaction + an ``ops.runs`` row;
* :mod:`factory.lake.query` - ``factory sql`` / ``shell`` output, shard predicates;
* :mod:`factory.lake.status` - ``factory status``, from the catalog alone;
* :mod:`factory.lake.templating` - the SQL transforms' parameters and ``{{ placeholder }}`` rendering.

The lake core imports nothing else of factory but :mod:`factory.errors`; the connection module's names are
re-exported here (``from factory.lake import connect``).
"""
from factory.lake.connection import (
    CATALOG_FILE, CONFIG_FILE, DATA_DIR, LAKE_ALIAS, attach_sql, connect, current_snapshot, existing_columns,
    extension_paths, lake_config, load_extensions, optional_extension, resolve_lake_dir, shared_catalog,
    write_lake_config,
)

__all__ = ["CATALOG_FILE", "CONFIG_FILE", "DATA_DIR", "LAKE_ALIAS", "attach_sql", "connect", "current_snapshot",
           "existing_columns", "extension_paths", "lake_config", "load_extensions", "optional_extension",
           "resolve_lake_dir", "shared_catalog", "write_lake_config"]
