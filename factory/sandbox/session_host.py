"""The isolated side of an interpreter session (:mod:`.session`): one host process per session.

Started by :class:`.session.InterpreterSession` as ``python -s`` with the sandbox's scrubbed environment. The
host takes a cgroup slot of its own (root: memory, pids, CPU accounting, one core), enters fresh mount, pid,
net, ipc and uts namespaces (plus a user namespace when not root), becomes pid 1 there, pivots into the
sandbox's minimal read-only root (:func:`.isolate.setup_worker_mounts`: no project, data, home, /run, /sys) with
a private tmpfs ``/tmp`` and ``/dev/shm``, and forks the *interpreter*: a child under a uid of its own, no
capabilities, ``no_new_privs``, the seccomp deny list and rlimits. The host (trusted, pid 1) never runs cell
code: it hands each cell to the interpreter, reads its stdout/stderr pipes with a cap, meters CPU (cgroup, or
``/proc`` without one) and wall time, and on a limit kills every process of the session (``kill(-1)`` as
pid 1). The interpreter keeps one namespace dict across cells (variables and imports persist).

Host <-> parent: length-prefixed JSON frames on two pipes (trusted). Interpreter -> host: the same framing, read
as untrusted bytes (size-capped, parsed defensively).
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import sys
import time

from factory.sandbox.spawn import enter_child, kill_processes, run_child
from factory.sandbox.zygote_io import recv as read_frame, write_all

HDR = struct.Struct(">I")
IDLE_POLL_S = 1.0               # how often the host checks an idle session's CPU
IDLE_CPU_S = 2.0                # CPU an idle session may use between cells before its interpreter is restarted
MAX_REPLY_BYTES = 4 << 20       # an interpreter reply frame larger than this ends the interpreter


# --------------------------------------------------------------------------- framing
def frame(obj) -> bytes:
    data = json.dumps(obj).encode()
    return HDR.pack(len(data)) + data


def send(fd: int, obj) -> None:
    write_all(fd, frame(obj))


def recv(fd: int, timeout: float | None = None):
    """One frame, or None on EOF; ``TimeoutError`` when nothing arrives within ``timeout``."""
    if timeout is not None and not select.select([fd], [], [], timeout)[0]:
        raise TimeoutError
    return read_frame(fd, json.loads)


# --------------------------------------------------------------------------- rich display (untrusted side)
INLINE_BACKEND = "_factory_inline_backend"   # matplotlib's backend in a session: figures become display data
MAX_DISPLAY_CHARS = 2 << 20                  # base64/HTML characters of one cell's display data together
_DISPLAYS: list = []                         # the current cell's display data (mime type -> data)


def _chars(bundle: dict) -> int:
    return sum(len(v) for v in bundle.values() if isinstance(v, str))


def _add_display(bundle: dict) -> None:
    size = _chars(bundle)
    over = {"text/plain": f"[display data of {size} characters over the cell's cap of {MAX_DISPLAY_CHARS}]"}
    _DISPLAYS.append(bundle if size <= MAX_DISPLAY_CHARS - sum(map(_chars, _DISPLAYS)) else over)


def _figure_bundle(fig) -> dict:
    import base64
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return {"text/plain": repr(fig), "image/png": base64.b64encode(buf.getvalue()).decode()}


def _flush_figures() -> None:
    """Every open matplotlib figure as display data (``image/png`` base64 + ``text/plain``), then closed: what
    Jupyter's inline backend does at ``plt.show()`` and at the end of a cell."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or INLINE_BACKEND not in str(pyplot.get_backend()):
        return
    from matplotlib._pylab_helpers import Gcf
    for manager in Gcf.get_all_fig_managers():
        fig = manager.canvas.figure
        try:
            _add_display(_figure_bundle(fig))
        except Exception as exc:  # noqa: BLE001 - a figure that cannot render is the cell's problem, said so
            _add_display({"text/plain": f"[figure could not be rendered: {type(exc).__name__}: {exc}]"})
    pyplot.close("all")


def _value_bundle(value) -> dict:
    """A value's display data: ``text/plain`` (its repr), and ``text/html`` where it has ``_repr_html_``
    (pandas DataFrames, styled tables)."""
    bundle = {"text/plain": repr(value)}
    html = getattr(value, "_repr_html_", None)
    if callable(html) and not isinstance(value, type):
        with contextlib.suppress(Exception):
            got = html()
            if isinstance(got, str):
                bundle["text/html"] = got
    return bundle


def display(*objs) -> None:
    """IPython's ``display(obj)`` in a session: each object's display data (a figure: its PNG)."""
    for obj in objs:
        is_figure = type(obj).__name__ == "Figure" and hasattr(obj, "savefig")
        _add_display(_figure_bundle(obj) if is_figure else _value_bundle(obj))


def install_display() -> None:
    """matplotlib draws with :data:`INLINE_BACKEND` (Agg, whose ``show()`` turns the figures into display data),
    an in-memory module found by a finder of our own: the sandbox has no project files to import from."""
    import importlib.abc
    import importlib.util

    class Inline(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, self) if name == INLINE_BACKEND else None

        def exec_module(self, module):
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            module.FigureCanvas = FigureCanvasAgg
            module.show = lambda *args, **kwargs: _flush_figures()

    sys.meta_path.append(Inline())
    os.environ["MPLBACKEND"] = f"module://{INLINE_BACKEND}"


# --------------------------------------------------------------------------- the interpreter (untrusted side)
def interpreter_main(cmd_fd: int, reply_fd: int, result_cap: int) -> None:
    """Runs in the sandboxed child: cells in one namespace, notebook style (the last expression's repr)."""
    import ast
    import builtins
    import linecache
    import traceback

    ns = {"__name__": "__main__", "__builtins__": builtins, "display": display}
    install_display()
    n = 0
    while True:
        msg = recv(cmd_fd)
        if msg is None:
            os._exit(0)
        n += 1
        name = f"<cell {n}>"
        code = msg["code"]
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        result = error = None
        _DISPLAYS.clear()
        try:
            tree = ast.parse(code, name, "exec")
            last = ast.Expression(tree.body.pop().value) if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, name, "exec"), ns)
            if last is not None:
                value = eval(compile(last, name, "eval"), ns)
                if value is not None:
                    ns["_"] = value
                    bundle = _value_bundle(value)   # Jupyter's execute_result: after what the cell displayed
                    result = bundle["text/plain"]
                    if len(result) > result_cap:
                        result = result[:result_cap] + f"... [repr truncated at {result_cap} characters]"
                    bundle["text/plain"] = result
                    _add_display(bundle)
            _flush_figures()   # figures the cell drew and did not show: displayed, as Jupyter's inline backend
        except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt of a cell end the cell only
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next   # our own frames are not the cell's
            error = "".join(traceback.format_exception(type(exc), exc, tb))
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if error is not None and len(error) > result_cap:
            error = error[:result_cap // 2] + "\n...\n" + error[-result_cap // 2:]
        send(reply_fd, {"result": result, "error": error, "display": list(_DISPLAYS), "cell": msg.get("cell")})


# --------------------------------------------------------------------------- the host (trusted, pid 1)
class Host:
    def __init__(self, ctl_in: int, ctl_out: int, cfg: dict):
        from . import cgroup, isolate
        self.iso = isolate
        self.ctl_in, self.ctl_out, self.cfg = ctl_in, ctl_out, cfg
        self.root = os.geteuid() == 0
        self.outer_pid = os.getpid()
        slot_limits = {"memory_mb": cfg["memory_mb"], "max_procs": cfg["max_procs"]}
        self.slot, notes = (cgroup.make_slot(f"factory-sbx-{self.outer_pid}-session", slot_limits) if self.root
                            else (None, ["not root"]))
        self.degraded = [] if self.slot else ["no cgroup (" + "; ".join(notes) + "): memory via RLIMIT_AS"]
        # the session's own sandbox (isolate.enter_worker_sandbox); the project checkout is never bound in
        why = isolate.enter_worker_sandbox(self.root, self.slot, (ctl_in, ctl_out), isolate.interpreter_paths(),
                                           loopback=True)
        if why:
            self.degraded.append(f"no namespaces ({why})" if why.startswith("unshare") else why)
        self.worker_ns = why is None
        if self.worker_ns:
            isolate.program_scratch(cfg["tmpfs_mb"], mount_it=True)
        self.plan = {"worker_ns": self.worker_ns, "drop_caps": not self.root, "nproc_rlimit": True,
                     "as_rlimit": self.slot is None, "env_is_safe": False, "seccomp": True,
                     "sandbox_uid": 100000 + self.outer_pid if self.root else None, "nproc_base": 4096}
        self.pid = None            # the interpreter
        self.pipes: dict = {}
        self.reaped_cpu = 0.0      # CPU of processes reaped by us (no cgroup)
        self.note = ""             # told with the next cell (the interpreter was restarted while idle)
        self.cell = 0              # the cell number sent with a cell and echoed in its reply

    # ---- the interpreter process
    def _interpreter_child(self, out_w: int, err_w: int, cmd_r: int, rep_w: int) -> None:
        enter_child(self.slot, {1: out_w, 2: err_w, 3: cmd_r, 4: rep_w})
        self._isolate_child()
        sys.stdout, sys.stderr = (open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                                  for fd in (1, 2))
        sys.stdin = open(0, "r", closefd=False)
        interpreter_main(3, 4, self.cfg["result_chars"])

    def start_interpreter(self) -> None:
        (cmd_r, cmd_w), (rep_r, rep_w), (out_r, out_w), (err_r, err_w) = (os.pipe() for _ in range(4))
        pid = os.fork()
        if pid == 0:
            run_child(lambda: self._interpreter_child(out_w, err_w, cmd_r, rep_w))
        for fd in (cmd_r, rep_w, out_w, err_w):
            os.close(fd)
        for fd in (rep_r, out_r, err_r):
            os.set_blocking(fd, False)
        self.pid = pid
        self.pipes = {"cmd": cmd_w, "reply": rep_r, "out": out_r, "err": err_r}

    def _isolate_child(self) -> None:
        iso, cfg = self.iso, self.cfg
        os.chdir("/tmp" if self.worker_ns else "/")
        os.environ.clear()
        os.environ.update(iso.SAFE_ENV)
        # the per-call CPU limit is the host's to meter; RLIMIT_CPU (set_rlimits: 1.5 x cpu_s + 2 for no tests)
        # bounds one interpreter's whole life
        limits = {k: cfg[k] for k in ("max_open_files", "max_file_mb", "max_procs", "memory_mb")}
        limits["cpu_s"] = cfg["interpreter_cpu_s"] / 1.5
        iso.set_rlimits(self.plan, limits, 0)
        iso.drop_privileges(self.plan, "candidate")

    def kill_all(self) -> None:
        """Every process of the session but the host (pid 1 of its namespace: ``kill(-1)``)."""
        if self.worker_ns or self.pid:
            kill_processes(self.worker_ns, [self.pid], self.slot)
        self.reap(block_for=self.pid)
        for fd in self.pipes.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pid, self.pipes = None, {}

    def kill_strays(self) -> None:
        """After a cell: end the processes it started (the interpreter stays)."""
        if not self.worker_ns:
            return
        me = {1, self.pid}
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) not in me:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(name), signal.SIGKILL)
        self.reap()

    def reap(self, block_for: int | None = None) -> int | None:
        """Reap zombies (we are pid 1); returns the wait status of ``block_for`` if given."""
        status = None
        if block_for:
            with contextlib.suppress(ChildProcessError):
                _, status, ru = os.wait4(block_for, 0)
                self.reaped_cpu += ru.ru_utime + ru.ru_stime
        with contextlib.suppress(ChildProcessError):
            while (got := os.wait4(-1, os.WNOHANG))[0]:
                self.reaped_cpu += got[2].ru_utime + got[2].ru_stime
        return status

    def cpu_s(self) -> float:
        if self.slot:
            return self.slot.cpu_ns() / 1e9
        tck = os.sysconf("SC_CLK_TCK")
        total = self.reaped_cpu
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():
                with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{name}/stat") as f:
                    total += sum(map(int, f.read().rsplit(")", 1)[1].split()[11:13])) / tck
        return total

    # ---- one cell
    def run_cell(self, code: str, cpu_limit: float, wall_limit: float) -> dict:
        if self.pid is not None and self._stale_reply():   # exited between cells, or a forged frame
            self.kill_all()
            self.note += ("[session: the interpreter was restarted before this cell: it had exited, or an earlier "
                          "cell wrote into its reply channel; variables and imports are gone]\n")
        restarted = self.pid is None
        if restarted:
            self.start_interpreter()
        cap = self.cfg["output_bytes"]
        out = {"out": bytearray(), "err": bytearray()}
        total = {"out": 0, "err": 0}
        reply = bytearray()
        self.cell += 1
        pending = memoryview(frame({"code": code, "cell": self.cell}))
        os.set_blocking(self.pipes["cmd"], False)
        oom0 = self.slot.oom_kills() if self.slot else 0
        c0, t0 = self.cpu_s(), time.monotonic()
        status, parsed = None, None
        while status is None:
            cpu, wall = self.cpu_s() - c0, time.monotonic() - t0
            if cpu > cpu_limit or wall > wall_limit:
                status = "timeout"
                break
            rlist = [self.pipes["reply"], self.pipes["out"], self.pipes["err"]]
            wlist = [self.pipes["cmd"]] if pending else []
            wait = max(0.001, min(0.05, wall_limit - wall, cpu_limit - cpu))
            r, w, _ = select.select(rlist, wlist, [], wait)
            if w:
                try:
                    pending = pending[os.write(self.pipes["cmd"], pending):]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    pending = None
            for key in ("out", "err"):
                if self.pipes[key] in r:
                    self._drain(key, out, total, cap)
            if self.pipes["reply"] in r:
                try:
                    chunk = os.read(self.pipes["reply"], 1 << 16)
                except BlockingIOError:
                    continue
                reply += chunk
                if not chunk or len(reply) > MAX_REPLY_BYTES:   # the interpreter exited, or an oversized reply
                    status = "killed"
                    break
                while len(reply) >= HDR.size and len(reply) >= HDR.size + (n := HDR.unpack(reply[:HDR.size])[0]):
                    try:
                        parsed = json.loads(bytes(reply[HDR.size:HDR.size + n]).decode("utf-8", "replace"))
                        if not isinstance(parsed, dict):
                            raise ValueError
                    except (ValueError, RecursionError):   # a frame the cell wrote itself: the channel is not trusted
                        parsed = None    # to stay in step, so the interpreter is replaced
                    cell = parsed.get("cell") if parsed else None
                    if type(cell) is int and cell < self.cell:   # the real reply of an earlier cell that forged
                        del reply[:HDR.size + n]                  # its own: skipped, the next frame is read
                        parsed = None
                        continue
                    if cell != self.cell or len(reply) != HDR.size + n:
                        parsed = None   # no cell number (forged), a later one, or more bytes after the frame
                    status = "done"
                    break
        cpu, wall = self.cpu_s() - c0, time.monotonic() - t0
        error = result = None
        display = []
        for key in ("out", "err"):   # what the cell wrote before it returned or was stopped
            self._drain(key, out, total, cap)
        if status == "done" and parsed is None:
            self.kill_all()
            status, error = "error", ("ChannelError: the cell wrote into the interpreter's reply channel; the "
                                      "interpreter was restarted: variables and imports of earlier cells are gone")
        elif status == "done":
            self.kill_strays()
            result, error, shown = (parsed.get(k) for k in ("result", "error", "display"))
            result, error = (x if isinstance(x, str) else None for x in (result, error))
            display = [{k: v for k, v in d.items() if isinstance(k, str) and isinstance(v, str)}
                       for d in (shown if isinstance(shown, list) else []) if isinstance(d, dict)]
            status = "error" if error else "ok"
        else:
            self.kill_all()
            lost = "the interpreter was restarted: variables and imports of earlier cells are gone"
            if status == "timeout":
                error = (f"TimeoutError: the cell used {cpu:.2f} s CPU / {wall:.2f} s wall, over its limit of "
                         f"{cpu_limit:g} s CPU / {wall_limit:g} s wall; {lost}")
            elif self.slot and self.slot.oom_kills() > oom0:
                error = f"MemoryError: the session went over its memory limit of {self.cfg['memory_mb']} MB; {lost}"
            else:
                error = f"InterpreterDied: the interpreter process died during the cell (os._exit, a crash); {lost}"
        text = {key: bytes(out[key]).decode("utf-8", "replace")
                + (f"\n[output truncated: {total[key]} bytes written, {cap} kept]\n" if total[key] > cap else "")
                for key in ("out", "err")}
        return {"stdout": text["out"], "stderr": text["err"], "result": result, "error": error, "status": status,
                "cpu_s": round(cpu, 6), "wall_s": round(wall, 6), "restarted": restarted, "display": display}

    def _stale_reply(self) -> bool:
        try:
            os.read(self.pipes["reply"], 1 << 16)   # bytes: out of step; b"": the interpreter has exited
            return True
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _drain(self, key: str, out: dict, total: dict, cap: int) -> None:
        fd = self.pipes.get(key)
        if fd is None:
            return
        for _ in range(64):
            try:
                chunk = os.read(fd, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                return
            total[key] += len(chunk)
            room = cap - len(out[key])
            if room > 0:
                out[key] += chunk[:room]

    def serve(self) -> None:
        self.start_interpreter()   # warm before "ready": the first cell costs what any cell costs
        send(self.ctl_out, {"ready": {"cgroup": self.slot.version if self.slot else None, "namespaces": self.worker_ns,
                                      "minimal_root": bool(self.worker_ns and self.iso.MINIMAL_ROOT.get("on")),
                                      "uid": self.plan.get("sandbox_uid"), "seccomp": True, "degraded": self.degraded}})
        idle, budget = self.cfg["idle_timeout_s"], self.cfg.get("idle_cpu_s", IDLE_CPU_S)
        last, cpu_mark = time.monotonic(), self.cpu_s()
        idle_used = 0.0   # CPU used between cells by this interpreter (all idle spells together)
        try:
            while True:
                left = idle - (time.monotonic() - last)
                if left <= 0:
                    break   # idle: the session ends; the parent sees EOF and reports it closed
                try:
                    msg = recv(self.ctl_in, timeout=min(left, IDLE_POLL_S))
                except TimeoutError:
                    msg = False
                # between cells nothing should run: a thread or process a cell left spinning is stopped
                now_cpu = self.cpu_s()
                idle_used, cpu_mark = idle_used + max(0.0, now_cpu - cpu_mark), now_cpu
                if self.pid is not None and idle_used > budget:
                    self.kill_all()
                    self.note = (f"[session: the interpreter was restarted before this cell: it used "
                                 f"{idle_used:.1f} s CPU between cells (a background thread?); variables and imports "
                                 f"are gone]\n")
                if msg is False:
                    continue
                if msg is None or msg.get("op") == "close":
                    break
                if msg.get("op") == "run":
                    if self.pid is None:
                        idle_used = 0.0
                    reply = self.run_cell(msg["code"], msg["cpu_s"], msg["wall_s"])
                    if self.note:
                        reply["stderr"], self.note = self.note + reply["stderr"], ""
                    send(self.ctl_out, reply)
                    last, cpu_mark = time.monotonic(), self.cpu_s()
        except (OSError, EOFError, ValueError):
            pass
        finally:
            self.kill_all()


def forkserver_main(sock_fd: int) -> None:
    """A warm, single-threaded parent of session hosts (a fork, not a fresh ``python -s`` per session).

    Per request on its socket (a JSON config with the session's two control pipes as SCM_RIGHTS) it forks one
    host and answers its pid; it exits when the socket closes (its parent is gone). Hosts are auto-reaped."""
    for name in ("ast", "linecache", "traceback", "json", "math", "collections", "itertools", "re", "resource"):
        __import__(name)
    import socket
    from . import cgroup, isolate, seccomp  # noqa: F401 - before the pivot: the root has no project
    seccomp.prepare()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    sock = socket.socket(fileno=sock_fd)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        except OSError:
            return
        if not msg:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            def host():
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                sock.close()
                os.setsid()
                cfg = recv(fds[0])
                if cfg is not None:
                    Host(fds[0], fds[1], cfg).serve()
            run_child(host, failure_code=1)
        for fd in fds:
            os.close(fd)
        sock.sendall(frame({"pid": pid}))

