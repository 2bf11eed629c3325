"""glibc's malloc tuned for the stages that stream MB-sized strings (curate, release, export, ingest): blocks up
to 32 MB come from the heap (not one mmap each, unmapped when freed) and up to 1 GB freed at the heap top is kept,
so building and dropping MB-sized rows reuses memory instead of faulting pages in again (docs/scale.md). Elsewhere
(not glibc, another OS) this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # glibc's ceiling on 64-bit (HEAP_MAX_SIZE / 2): larger blocks still get their own mmap
TRIM_THRESHOLD = 1 << 30    # free memory at the heap top kept up to this much before it is given back

_done = False


def keep_freed_memory() -> bool:
    """Tune this process's glibc malloc once (see the module doc); True when it took."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False   # not glibc (musl has no mallopt)
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done
