"""Interpreter sessions (factory.sandbox.session): state across cells, limits, and the sandbox's isolation
and integrity for a long-lived interpreter - one real sandboxed host process per session."""
from __future__ import annotations

import dataclasses
import time

import pytest

from factory.sandbox.session import CellResult, InterpreterSession, SessionLimit, SessionPool

ROOT = __file__.rsplit("/tests/", 1)[0]


@pytest.fixture(scope="module")
def sess():
    with InterpreterSession(cpu_s_per_call=2, wall_s_per_call=6, memory_mb=256, idle_timeout_s=120,
                            output_bytes=4096) as s:
        yield s


def test_state_persists_and_cells_answer_like_a_notebook(sess):
    assert sess.run("import math\nx = 20").status == "ok"
    r = sess.run("print('half', x // 2)\nmath.sqrt(x * 2 - 4) * 7")
    assert (r.status, r.stdout, r.result, r.error) == ("ok", "half 10\n", "42.0", None)
    assert sess.run("x = None\nx").result is None              # a None value has no repr line, as in Jupyter
    r = sess.run("def f(n):\n    return 1 / n\nf(0)")
    assert r.status == "error" and "ZeroDivisionError" in r.error and "<cell" in r.error and "return 1 / n" in r.error
    assert sess.run("f(4)").result == "0.25"                    # an error keeps the state
    r = sess.run("import sys\nprint('to err', file=sys.stderr)\nraise SystemExit(3)")
    assert r.status == "error" and "SystemExit" in r.error and r.stderr == "to err\n"
    assert sess.run("f(2)").result == "0.5"                     # exit() ends the cell, not the session
    assert sess.run("def broken(:").status == "error"
    assert isinstance(r, CellResult) and dataclasses.is_dataclass(r)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.status = "ok"


def test_infinite_loop_times_out_and_the_next_call_works(sess):
    sess.run("kept = 7")
    r = sess.run("while True:\n    pass")
    assert r.status == "timeout" and "restarted" in r.error
    assert r.wall_s <= 6 + 1.0
    r = sess.run("1 + 1")
    assert (r.status, r.result) == ("ok", "2")
    assert "NameError" in sess.run("kept").error                # documented: a timeout restarts the interpreter
    r = sess.run("import time\ntime.sleep(30)")                  # blocked, no CPU: the wall limit ends it
    assert r.status == "timeout" and r.wall_s < 8
    assert sess.run("'alive'").result == "'alive'"


def test_output_is_capped(sess):
    r = sess.run("print('x' * 10_000_000)\n'done'")
    assert r.status == "ok" and r.result == "'done'"
    assert len(r.stdout.encode()) < 4096 + 200 and "output truncated" in r.stdout
    r = sess.run("'y' * 1_000_000")
    assert len(r.result) < 20_000 and "truncated" in r.result


def test_memory_bomb_kills_the_interpreter_only(sess):
    r = sess.run("b = bytearray(600 * 1024 * 1024)")
    assert r.status in ("killed", "error"), r
    if r.status == "killed":
        assert "memory" in r.error.lower() or "died" in r.error
    else:
        assert "MemoryError" in r.error
    assert sess.run("2 * 21").result == "42"


def test_fork_bomb_is_contained(sess):
    r = sess.run("import os\npids = []\ntry:\n    for _ in range(10_000):\n        pid = os.fork()\n"
                 "        if pid == 0:\n            import time; time.sleep(60); os._exit(0)\n"
                 "        pids.append(pid)\nexcept OSError as e:\n    print('refused', e.errno)\nlen(pids)")
    assert r.status in ("ok", "timeout", "killed"), r
    if r.status == "ok":
        assert "refused" in r.stdout and int(r.result) < 64
    # processes a cell starts end with it: the next cell sees none of them
    r = sess.run("import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
    assert r.status == "ok" and len(eval(r.result)) <= 2, r.result   # itself (and nothing else)


def test_no_network_no_host_no_project(sess):
    r = sess.run("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 53))")
    assert r.status == "error" and "OSError" in r.error
    r = sess.run("socket.getaddrinfo('pypi.org', 443)")
    assert r.status == "error"
    r = sess.run(f"import os\n[os.path.exists(p) for p in ({ROOT + '/factory'!r}, {ROOT + '/tests'!r}, "
                 f"{ROOT + '/data_catalog.yaml'!r}, '/work/shared', '/etc/shadow', '/home', '/sys/fs/cgroup', '/run', "
                 "'/var/run/docker.sock')]")
    assert r.result == str([False] * 9), r
    r = sess.run("open('/usr/bin/env', 'ab')")
    assert r.status == "error" and ("Read-only" in r.error or "Permission" in r.error)
    r = sess.run("os.getuid(), os.geteuid()")
    assert eval(r.result)[0] not in (0, None)
    r = sess.run("import ctypes\nctypes.CDLL(None).unshare(0x20000000), ctypes.get_errno()")   # seccomp
    assert r.status == "ok" and eval(r.result)[0] == -1


def test_sessions_cannot_reach_each_other():
    with InterpreterSession(cpu_s_per_call=2, idle_timeout_s=60) as a, \
            InterpreterSession(cpu_s_per_call=2, idle_timeout_s=60) as b:
        a.run("secret = 'A-SECRET'\nopen('/tmp/secret.txt', 'w').write(secret)\n"
              "import os\nos.makedirs('/dev/shm', exist_ok=True)\nopen('/dev/shm/s', 'w').write(secret)")
        assert a.run("open('/tmp/secret.txt').read()").result == "'A-SECRET'"
        r = b.run("import os, glob\n(os.path.exists('/tmp/secret.txt'), glob.glob('/tmp/*') + glob.glob('/dev/shm/*'),"
                  " 'secret' in globals())")
        assert r.result == "(False, [], False)", r
        # each session has its own pid namespace: A's interpreter pid names B's own process (or none) in B
        pid_b = int(b.run("os.getpid()").result)
        r = b.run(f"import os, signal\nhits = []\nfor p in range(1, 40000):\n    if p != {pid_b}:\n"
                  "        try:\n            os.kill(p, signal.SIGKILL); hits.append(p)\n"
                  "        except OSError:\n            pass\nhits")
        assert r.status == "ok" and r.result == "[]", r
        r = b.run("import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0factory')\n"
                  "except OSError as e:\n    print(type(e).__name__)")
        assert r.status == "ok"
        assert a.run("secret").result == "'A-SECRET'"        # A untouched


def test_idle_timeout_closes_the_session_and_close_is_final():
    s = InterpreterSession(cpu_s_per_call=1, idle_timeout_s=1.0)
    assert s.run("1").result == "1"
    time.sleep(2.5)
    r = s.run("1")
    assert r.status == "closed" and "idle" in r.error
    s.close()
    t = InterpreterSession(cpu_s_per_call=1)
    t.close()
    assert t.run("1").status == "closed"


def test_pool_keys_by_trajectory_bounds_live_sessions_and_frees_on_close():
    with SessionPool(max_sessions=2, cpu_s_per_call=2, idle_timeout_s=60) as pool:
        pool.run("t1", "v = 'one'")
        pool.run("t2", "v = 'two'")
        assert (pool.run("t1", "v").result, pool.run("t2", "v").result) == ("'one'", "'two'")
        with pytest.raises(SessionLimit, match="2 interpreter sessions are live"):
            pool.run("t3", "1")
        assert pool.close("t1") is True and pool.close("t1") is False
        assert pool.run("t3", "'three'").result == "'three'"
        assert pool.stats()["live"] == 2 and pool.stats()["refused_full"] == 1
        assert "NameError" in pool.run("t1", "v").error if pool.close("t2") else False   # fresh session for t1


def test_a_thread_left_spinning_between_cells_is_stopped():
    with InterpreterSession(cpu_s_per_call=2, idle_timeout_s=60) as s:
        r = s.run("import threading\nkept = 1\ndef spin():\n    while True:\n        pass\n"
                  "threading.Thread(target=spin, daemon=True).start()\n'started'")
        assert r.status == "ok"
        deadline = time.time() + 30
        while time.time() < deadline:   # the host restarts the interpreter once it used 2 s CPU while idle
            time.sleep(1.5)
            r = s.run("'kept' in globals()")
            if r.result == "False":
                break
        assert r.result == "False" and "between cells" in r.stderr, r
        assert s.run("6 * 7").result == "42"


def test_a_cell_writing_into_the_reply_channel_gets_a_fresh_interpreter(sess):
    sess.run("kept = 1")
    r = sess.run("import os\nos.write(4, b'\\x00\\x00\\x00\\x05hello')\n'forged?'")
    assert r.status == "error" and "ChannelError" in r.error and r.result is None
    r = sess.run("'kept' in globals(), 2 + 2")
    assert r.result == "(False, 4)"


def test_an_interpreter_that_exits_between_cells_is_replaced_before_the_next(sess):
    sess.run("import os, threading\nthreading.Timer(0.2, lambda: os._exit(0)).start()\nkept = 1")
    time.sleep(1.0)
    r = sess.run("'kept' in globals()")
    assert (r.status, r.result) == ("ok", "False") and "restarted before this cell" in r.stderr
    # a forged frame that parses but carries no cell number: refused, the interpreter is replaced, in step
    r = sess.run("import os, json\nd = json.dumps({'result': \"'forged'\", 'error': None}).encode()\n"
                 "os.write(4, len(d).to_bytes(4, 'big') + d)")
    assert r.status == "error" and "ChannelError" in r.error
    assert sess.run("1 + 1").result == "2"
    # one that carries this cell's number (read off the runner's frame) stands for the cell; the real reply that
    # follows it is skipped, whenever it arrives, and the next cells still get their own results
    r = sess.run("import os, json, sys\nn = sys._getframe(1).f_locals['msg']['cell']\n"
                 "d = json.dumps({'result': \"'forged'\", 'error': None, 'cell': n}).encode()\n"
                 "os.write(4, len(d).to_bytes(4, 'big') + d)\nimport time; time.sleep(0.2)")
    assert (r.status, r.result) == ("ok", "'forged'")
    assert sess.run("3 + 3").result == "6"
    assert sess.run("4 + 4").result == "8"
