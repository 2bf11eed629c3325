"""SandboxFusion's ``fetch_files``: files a program wrote, read back after it ended.

Only the program's own scratch can be read: its working directory ``/tmp`` (a relative path, or ``/tmp/...``) and,
for SandboxFusion's endpoints, ``/mnt`` (both fresh tmpfs mounts of that one run, inside its worker's private mount
namespace: never the host's /tmp or /mnt). :func:`check_path` refuses anything else before the program runs;
:func:`read_back` runs in the zygote once every process of the program is dead, walks each path from the scratch
root without following any symbolic link, and sends only regular files on that very tmpfs (a bind-mounted venv
under /tmp, a hard link to elsewhere or a FIFO is refused), at most :data:`MAX_FETCH_BYTES` together, to the pool
kernel to kernel (``splice``: the bytes never enter the zygote's memory).
"""
from __future__ import annotations

import errno
import os
import stat

MAX_FETCH_FILES = 256          # paths one request may fetch
MAX_FETCH_BYTES = 16 << 20     # their bytes together (base64 in the answer: about 21 MiB)
MAX_PATH, MAX_DEPTH = 255, 16
ROOTS = ("tmp", "mnt")         # the program's own scratch directories, by their first path component
RESERVED = (".prog",)          # /tmp/.prog: a compiled program's artifact (placed by the zygote, not written by it)
MISSING = "no such file"


def check_path(path) -> tuple[str, list[str]]:
    """(scratch root, components below it) of a fetch_files entry; ValueError saying why it is refused."""
    if not isinstance(path, str) or not path or "\0" in path or len(path) > MAX_PATH:
        raise ValueError(f"must be a non-empty path of at most {MAX_PATH} characters")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError("'..' is not allowed")
    root = "/tmp"
    if path.startswith("/"):
        if len(parts) < 2 or parts[0] not in ROOTS:
            raise ValueError("an absolute path must be under /tmp or /mnt (the program's own directories); "
                             "nothing outside the sandbox is ever returned")
        root, parts = "/" + parts[0], parts[1:]
    if not parts or len(parts) > MAX_DEPTH or (root == "/tmp" and parts[0] in RESERVED):
        raise ValueError(f"must name a file at most {MAX_DEPTH} levels deep (not under /tmp/{RESERVED[0]})")
    return root, parts


def _open_below(root: str, parts: list[str]) -> int:
    """An fd of the regular file ``root/parts`` on ``root``'s own file system, no link followed; OSError why not."""
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        dev = os.fstat(fd).st_dev
        for name in parts[:-1]:
            nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    st = os.fstat(f)
    if not stat.S_ISREG(st.st_mode) or st.st_dev != dev:
        os.close(f)
        raise OSError(errno.EPERM, "not a regular file the program wrote in its own directory")
    return f


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return MISSING
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link or not a directory on the way: links are not followed"
    return exc.strerror or str(exc)


def read_back(router, idx: int, i: int, paths: list[str], worker_ns: bool) -> dict:
    """In the zygote, after the program's processes are gone: each readable path's bytes as the job's segment
    ``file:<k>`` of test ``i``; returns ``{"fetched": [k, ...], "fetch_errors": {k: why}}``."""
    fetched, errors, total = [], {}, 0
    for k, path in enumerate(paths):
        if not worker_ns:
            errors[k] = "needs the sandbox's namespaces (a /tmp of the program's own), not available here"
            continue
        try:
            f = _open_below(*check_path(path))
        except (ValueError, OSError) as exc:
            errors[k] = _why(exc) if isinstance(exc, OSError) else str(exc)
            continue
        try:
            size = os.fstat(f).st_size
            if total + size > MAX_FETCH_BYTES:
                errors[k] = (f"{size} bytes: over this verifier's cap of {MAX_FETCH_BYTES >> 20} MiB for the fetched "
                             f"files together ({total} bytes already)")
                continue
            router.frame(idx, i, f"file:{k}", f, size)
            total += size
            fetched.append(k)
        finally:
            os.close(f)
    return {"fetched": fetched, "fetch_errors": errors}
