"""A lake whose Parquet files live in S3-compatible object storage: a real S3 server process on loopback
(moto's standalone server), DuckDB's httpfs with credentials and endpoint from the usual AWS environment."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from factory.stages.ingest import ingest_source
from tests.lakeutil import init_lake
from tests.lakeutil import query as q
from tests.netutil import free_port, wait_for_port


@pytest.fixture
def s3_server(monkeypatch):
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("duckdb_extension_httpfs")
    exe = shutil.which("moto_server")
    if not exe:
        pytest.skip("moto[server] not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for k, v in {"AWS_ACCESS_KEY_ID": "factory", "AWS_SECRET_ACCESS_KEY": "factory-secret",
                 "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": url}.items():
        monkeypatch.setenv(k, v)
    wait_for_port(port)
    client = boto3.client("s3", endpoint_url=url)
    client.create_bucket(Bucket="lake-bucket")
    yield client
    proc.terminate()
    proc.wait(10)


def test_parquet_files_land_in_object_storage_and_read_back(s3_server, tmp_path):
    from factory.lake import write_lake_config

    lake = tmp_path / "s3lake"
    write_lake_config(lake, f"sqlite:{lake / 'catalog.sqlite'}", "s3://lake-bucket/factory/")
    init_lake(lake)
    ingest_source("humaneval", None, lake=lake)
    keys = [o["Key"] for o in s3_server.list_objects_v2(Bucket="lake-bucket").get("Contents", [])]
    assert keys and all(k.startswith("factory/") for k in keys)
    assert any(k.endswith(".parquet") and "problems" in k for k in keys)
    assert not (lake / "data").exists()                       # nothing written locally but the catalog
    assert q(lake, "SELECT count(*) FROM silver.problems")[0][0] == 164
    assert q(lake, "SELECT count(DISTINCT problem_id) FROM silver.tests WHERE kind = 'check'")[0][0] == 164
