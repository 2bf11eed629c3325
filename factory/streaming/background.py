"""Two cores for the streamed stages: Parquet encoding, compression and file reads release the GIL, so a
background thread can do them while the main thread builds the next batch in Python.

- :class:`WriteBehind` runs write calls in order on one thread, at most ``depth`` of them waiting (memory: the
  tables they hold);
- :func:`read_ahead` iterates an iterator on a thread, at most ``depth`` items ahead;
- :class:`Beside` runs one call on a daemon thread (a check that need not hold up an interrupted process).

An error on the thread is raised in the caller at its next call; closing (or an error in the caller) stops the
thread before the caller goes on, so no write lands after the caller removed its files.
"""
from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_STOP = object()


class WriteBehind:
    """Calls ``fn(*args)`` in submission order on one background thread; :meth:`submit` blocks while ``depth``
    calls wait. :meth:`close` waits for every call and raises the first error; :meth:`abort` drops the calls
    still waiting and waits for the running one."""

    def __init__(self, depth: int = 2, name: str = "write-behind"):
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._error: BaseException | None = None
        self._dropping = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                if self._error is not None or self._dropping:
                    continue   # after an error or an abort: skip the rest, keep draining so submit never blocks
                fn, args = item
                try:
                    fn(*args)
                except BaseException as exc:   # noqa: BLE001 - handed to the caller
                    self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            self._dropping = True
            raise error

    def submit(self, fn: Callable[..., Any], *args) -> None:
        self._raise()
        if not self._thread.is_alive():
            raise RuntimeError("WriteBehind used after close")
        self._queue.put((fn, args))

    def drain(self) -> None:
        """Wait until every call submitted so far has run; raise the first error one of them raised (the thread
        goes on: one call in progress at a time, so what it holds is at most one call's arguments)."""
        if self._thread.is_alive():
            self._queue.join()
        self._raise()

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def close(self) -> None:
        """Wait for every submitted call; raise the first error one of them raised."""
        self._stop()
        self._raise()

    def abort(self) -> None:
        """Drop what waits, wait for the call in progress (its error is dropped too)."""
        self._dropping = True
        self._stop()
        self._error = None


def read_ahead(items: Iterator[T], depth: int = 2, name: str = "read-ahead") -> Iterator[T]:
    """``items`` produced on a background thread, at most ``depth`` ahead of the consumer (file reads and
    decompression overlap the consumer's work). Closing the returned generator stops the thread."""
    q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()
    failed: list[BaseException] = []

    def put(item, first_try: bool = False) -> bool:
        """Put ``item``, waiting while the queue is full; False once the consumer stopped (``first_try``: try once
        even then)."""
        while first_try or not stop.is_set():
            first_try = False
            with contextlib.suppress(queue.Full):
                q.put(item, timeout=0.1)
                return True
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item) or stop.is_set():
                    return
        except BaseException as exc:   # noqa: BLE001 - raised in the consumer
            failed.append(exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None and stop.is_set():
                with contextlib.suppress(Exception):
                    close()
            put(_STOP, first_try=True)

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _STOP:
                break
            yield item
        if failed:
            raise failed[0]
    finally:
        stop.set()
        while thread.is_alive():   # unblock a producer waiting on a full queue
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.1)
        thread.join()


class Beside:
    """``fn(*args, **kwargs)`` on a daemon thread, started at once; :meth:`result` waits for it and returns its
    value or raises its error. Daemon: a Ctrl-C in the caller need not wait for it (the process may exit)."""

    def __init__(self, fn: Callable[..., T], *args, name: str = "beside", **kwargs):
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = fn(*args, **kwargs)
            except BaseException as exc:   # noqa: BLE001 - handed to the caller
                self._error = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
