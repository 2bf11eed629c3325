"""A small seccomp-BPF deny list for candidate processes (x86_64), installed with ``no_new_privs`` set.

Refused with EPERM: the kernel keyrings (``add_key``, ``request_key``, ``keyctl`` -- a per-uid keyring would
carry data from one program to the next), reaching other processes (``ptrace``, ``process_vm_readv/writev``,
``kcmp``, ``pidfd_getfd``), changing namespaces or mounts (``unshare``, ``setns``, ``mount``, ``umount2``,
``pivot_root``, ``chroot``, the new mount API) and kernel facilities a program never needs (``bpf``,
``perf_event_open``, ``userfaultfd``).  x32 system calls are refused as a whole.  On another architecture
nothing is installed and :func:`install` returns False (recorded as degraded in the sandbox meta).
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct

DENIED_X86_64 = {
    "ptrace": 101, "add_key": 248, "request_key": 249, "keyctl": 250, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438, "unshare": 272, "setns": 308, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
}
_AUDIT_ARCH_X86_64 = 0xC000003E
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program() -> bytes:
    deny = _ERRNO | errno.EPERM
    nrs = sorted(DENIED_X86_64.values())
    out = [_insn(_LD_W_ABS, 0, 0, 4),                       # arch
           _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
           _insn(_RET_K, 0, 0, deny),                       # a foreign ABI (i386 via int 0x80): refuse
           _insn(_LD_W_ABS, 0, 0, 0),                       # syscall number
           _insn(_JGE_K, len(nrs) + 1, 0, 0x40000000)]      # x32 -> deny
    out += [_insn(_JEQ_K, len(nrs) - k, 0, nr) for k, nr in enumerate(nrs)]   # -> deny
    out += [_insn(_RET_K, 0, 0, _ALLOW), _insn(_RET_K, 0, 0, deny)]
    return b"".join(out)


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_CACHE: dict = {}


def prepare() -> bool:
    """Build the filter and resolve ``prctl`` once (the zygote does this, so a forked program only makes the
    system call)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    if "buf" not in _CACHE:
        code = program()
        _CACHE["buf"] = ctypes.create_string_buffer(code, len(code))
        _CACHE["prog"] = _Prog(len(code) // 8, ctypes.cast(_CACHE["buf"], ctypes.c_void_p))
        _CACHE["libc"] = ctypes.CDLL(None, use_errno=True)
        _CACHE["prctl"] = _CACHE["libc"].prctl
        _CACHE["ref"] = ctypes.byref(_CACHE["prog"])
    return True


def install() -> bool:
    if not prepare():
        return False
    if _CACHE["prctl"](_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _CACHE["ref"], 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter")
    return True
