"""Programs in other languages, in the zygote: compile once per job, run per test (stdio tests only).

The compiler is untrusted input's first reader (template-recursion bombs, ``#include </dev/random>``, megabytes
of diagnostics), so it runs exactly like a program: a fresh sandboxed child (namespaces, the program's uid,
seccomp, cgroup memory/pids, rlimits incl. file size) in a fresh ``/tmp`` of its own, metered by the zygote
against its own CPU budget (:data:`.languages.COMPILE_CPU_S` or the job's), a wall backstop and an output cap;
everything it started is killed before the zygote looks at what it wrote.  The artifact (regular files only,
opened without following links or blocking) is copied kernel-to-kernel into memfds the zygote keeps, and
placed, root-owned and read-only, into each test's fresh ``/tmp`` (:data:`.languages.BIN_DIR`), where a fresh
sandboxed process execs it with the test's stdin.  The program can reach neither the source of another
program nor the tests: it gets its own artifact, its stdin, and nothing else.
"""
from __future__ import annotations

import contextlib
import os
import stat

from . import languages as L
from .meter import watch
from .spawn import kill_candidates, spawn
from .zygote_io import set_nonblock


def _copy(src: int, dst: int, n: int, src_off: int = 0, short: str = "short copy") -> None:
    """``n`` bytes of ``src`` from ``src_off`` to the start of the fresh file ``dst``, kernel to kernel (the bytes
    never pass through the zygote's memory; sendfile, since memfd and tmpfs are different file systems); OSError
    ``short`` when ``src`` ends first."""
    done = 0
    while done < n:
        got = os.sendfile(dst, src, src_off + done, n - done)
        if not got:
            raise OSError(short)
        done += got


def copy_to_new(path: str, src: int, n: int, src_off: int = 0, mode: int = 0o444, uid: int | None = None) -> None:
    """A new file ``path`` (never an existing one, nor through a link) holding ``n`` bytes of ``src`` from
    ``src_off`` (:func:`_copy`), with ``mode`` and, given ``uid``, owned by it."""
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        _copy(src, out, n, src_off)
        if uid:
            os.fchown(out, uid, uid)
    finally:
        os.close(out)


def exec_body(argv: list[str], stack: int | None = None, env: dict | None = None):
    """Exec ``argv`` in the sandboxed child; ``stack``: RLIMIT_STACK for the new program (its main thread's
    stack grows up to it; capped at the hard limit); ``env``: added to the sandbox's environment."""
    def body(_data: bytes) -> None:
        from .candidate import default_signals
        import resource
        import signal
        default_signals()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if stack:
            hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
            want = stack if hard == resource.RLIM_INFINITY else min(stack, hard)
            resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
        os.execve(argv[0], argv, {**os.environ, **(env or {})})
    return body


class Program:
    """A built program: its artifact files in memfds (name, memfd, size) and the command that runs it."""

    def __init__(self, files: list[tuple[str, int, int]], argv: list[str], stack: int | None = None,
                 env: dict | None = None):
        self.files, self.body = files, exec_body(argv, stack, env)

    def place(self) -> None:
        """Into the current (fresh) /tmp: root-owned, read-only; the program cannot change it for a later test
        (and each test's /tmp is discarded anyway)."""
        os.mkdir(L.BIN_DIR, 0o755)
        for name, fd, size in self.files:
            path = os.path.join(L.BIN_DIR, name)
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            copy_to_new(path, fd, size, mode=0o555)
        os.chmod(L.BIN_DIR, 0o555)

    def close(self) -> None:
        for _, fd, _ in self.files:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.files = []


def _keep(path: str, name: str) -> tuple[str, int, int]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{name} is not a regular file")
        mem = os.memfd_create("artifact", os.MFD_CLOEXEC)
        _copy(fd, mem, st.st_size)
        return name, mem, st.st_size
    finally:
        os.close(fd)


def _collect(spec: dict) -> list[tuple[str, int, int]]:
    """The compiler's output files (regular files only; a link, fifo or device is ignored)."""
    if spec["name"] in ("cpp", "rust"):
        return [_keep(os.path.join(L.BUILD_DIR, "main"), "main")]
    out, total = [], 0
    try:
        for root, dirs, files in os.walk(L.BUILD_DIR):
            for f in files:
                path = os.path.join(root, f)
                if not f.endswith(".class") or not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                if len(out) >= L.MAX_ARTIFACT_FILES:
                    raise OSError(f"more than {L.MAX_ARTIFACT_FILES} class files")
                out.append(_keep(path, os.path.relpath(path, L.BUILD_DIR)))
                total += out[-1][2]
                if total > L.MAX_ARTIFACT_BYTES:
                    raise OSError("compiled classes too large")
    except OSError:
        for _, fd, _ in out:
            os.close(fd)
        raise
    return out


def build(z, idx: int, hdr: dict, memfd: int) -> tuple[Program | None, dict | None]:
    """(program, None) or (None, the outcome every test of the job gets: a compile error or infra)."""
    spec, plan = hdr["lang"], z.plan
    if not plan.get("worker_ns"):
        return None, {"outcome": "infra", "emsg": f"{spec['name']} programs need the sandbox's namespaces, which "
                                                   "are not available here (degraded sandbox)"}
    try:
        cargv = L.compile_argv(spec, int(z.limits["memory_mb"]))
        rargv = L.run_argv(spec, int(z.limits["memory_mb"]))
        stack = L.stack_bytes(spec, int(z.limits["memory_mb"]))
        env = L.run_env(spec)
    except L.ToolchainMissing as exc:
        return None, {"outcome": "infra", "emsg": str(exc), "etype": "ToolchainMissing"}
    blob = tuple(hdr["cand"])
    if cargv is None:   # runs its source: the source is the artifact
        mem = os.memfd_create("artifact", os.MFD_CLOEXEC)
        _copy(memfd, mem, blob[1], blob[0])
        return Program([(spec["file"], mem, blob[1])], rargv, env=env), None
    base = z.limits
    lim = dict(base, cpu_s=float(hdr.get("compile_cpu_s") or L.COMPILE_CPU_S), max_output_bytes=L.COMPILE_OUTPUT_CAP,
               wall_factor=L.COMPILE_WALL_FACTOR, wall_min_s=10.0)
    z.isolate.program_scratch(base["tmpfs_mb"], True)
    r, w = os.pipe()
    try:
        os.mkdir(L.SRC_DIR, 0o755)
        copy_to_new(os.path.join(L.SRC_DIR, spec["file"]), memfd, blob[1], blob[0])
        os.mkdir(L.BUILD_DIR, 0o700)
        uid = plan.get("sandbox_uid")
        if uid:
            os.chown(L.BUILD_DIR, uid, uid)
        z.limits = lim   # the compiler's rlimits (CPU) come from the compile budget
        try:
            pid = spawn(z, "compile", {1: w, 2: w}, None, -1, exec_body(cargv), plan, 1)
        finally:
            z.limits = base
        os.close(w)
        w = None
        set_nonblock(r)
        st = {"keep": 4 * L.COMPILE_MESSAGE_CAP, "kept": {}, "total": 0, "limit": lim["max_output_bytes"]}
        reason, status, meter = watch(z, pid, [(r, idx, -1, "compile")], st, lim)   # capped, as stream 'compile'
        info = dict(meter.numbers(), oom=meter.oom())
        statuses = {pid: status}
        kill_candidates(z, plan, statuses)   # nothing the compiler started outlives it
        status = statuses[pid]
        compile_ms = info["cpu_ms"]
        if reason is None and status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            try:
                files = _collect(spec)
            except OSError as exc:
                return None, {"outcome": "compile_error", "why": "artifact", "emsg": str(exc)[:300],
                              "compile_ms": compile_ms}
            return Program(files, rargv, stack, env), {"compile_ms": compile_ms}
        if reason == "parent":
            return None, {"outcome": "infra", "emsg": "pool closed"}
        why = reason or ("memory" if info.get("oom") else "exit")
        return None, {"outcome": "compile_error", "why": why, "exit_status": status, "compile_ms": compile_ms,
                      "compile_wall_ms": info["wall_ms"], "peak_kb": info.get("peak_kb")}
    finally:
        for fd in (r, w):
            if fd is not None:
                os.close(fd)
        z.isolate.program_scratch(0, False)   # the compile step's /tmp is never reused
