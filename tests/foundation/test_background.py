"""factory.streaming.background: the write-behind thread and the read-ahead iterator the streamed stages use."""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.streaming.background import WriteBehind, read_ahead


def test_calls_run_in_order_off_the_callers_thread():
    seen, threads = [], set()
    behind = WriteBehind(depth=2)
    for i in range(50):
        behind.submit(lambda i=i: (seen.append(i), threads.add(threading.get_ident())))
    behind.close()
    assert seen == list(range(50))
    assert threads and threading.get_ident() not in threads


def test_an_error_reaches_the_caller_and_later_calls_do_not_run():
    ran = []

    def boom():
        raise OSError("disk full")

    behind = WriteBehind(depth=1)
    behind.submit(boom)
    with pytest.raises(OSError, match="disk full"):
        for i in range(100):   # raised at a later submit (or at close below)
            behind.submit(ran.append, i)
            time.sleep(0.001)
        behind.close()
    behind.abort()
    assert len(ran) < 100


def test_drain_waits_for_what_was_submitted():
    done = []
    behind = WriteBehind(depth=4)
    for i in range(3):
        behind.submit(lambda i=i: (time.sleep(0.02), done.append(i)))
    behind.drain()
    assert done == [0, 1, 2]
    behind.close()


def test_abort_drops_waiting_calls():
    gate, ran = threading.Event(), []
    behind = WriteBehind(depth=8)
    behind.submit(gate.wait)
    for i in range(5):
        behind.submit(ran.append, i)
    threading.Timer(0.05, gate.set).start()
    behind.abort()
    assert ran == []


def test_parquet_written_behind_is_the_file_written_in_line(tmp_path):
    """The same tables through a ParquetWriter on the caller's thread and behind it: the same bytes."""
    tables = [pa.table({"k": list(range(i * 100, i * 100 + 100)), "v": ["x" * i] * 100}) for i in range(20)]
    with pq.ParquetWriter(tmp_path / "a.parquet", tables[0].schema, compression="zstd") as w:
        for t in tables:
            w.write_table(t)
    w2 = pq.ParquetWriter(tmp_path / "b.parquet", tables[0].schema, compression="zstd")
    behind = WriteBehind(depth=2)
    for t in tables:
        behind.submit(w2.write_table, t)
    behind.submit(w2.close)
    behind.close()
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_read_ahead_yields_everything_in_order_and_raises_the_producers_error():
    assert list(read_ahead(iter(range(1000)), depth=3)) == list(range(1000))

    def broken():
        yield 1
        yield 2
        raise ValueError("bad row group")

    got = []
    with pytest.raises(ValueError, match="bad row group"):
        for x in read_ahead(broken()):
            got.append(x)
    assert got == [1, 2]


def test_closing_read_ahead_early_stops_its_thread():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    it = read_ahead(endless(), depth=2)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    it.close()
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
    n = len(produced)
    time.sleep(0.05)
    assert len(produced) == n   # nothing read after the consumer left


def test_beside_returns_the_value_or_raises_the_error_of_its_call():
    from factory.streaming.background import Beside

    assert Beside(sum, [1, 2, 3]).result() == 6

    def bad(x, *, why):
        raise ValueError(why)

    with pytest.raises(ValueError, match="sha256 differs"):
        Beside(bad, 1, why="sha256 differs").result()
    assert Beside(time.sleep, 0)._thread.daemon   # an interrupted caller need not wait for it
