"""The languages programs may be written in, and where their toolchains are.

Python runs in the warm interpreter of the zygote (function-style and stdio tests); other languages run stdio
and harness tests only, compiled once per job and run per test inside the sandbox (:mod:`.compiled`).

Names follow SandboxFusion's ``language`` field (``cpp``, ``java``, ``nodejs``/``javascript``, ``rust``,
``python``).  A toolchain is found on the system path (or, for Rust, in rustup's toolchains under the user's
``~/.cargo``/``~/.rustup``); a language whose toolchain is absent is a clear error naming the Debian package.
"""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil

from .libs import libs_dir

PYTHON = "python"
SUPPORTED = ("python", "cpp", "java", "javascript", "rust")
ALIASES = {"python": "python", "python3": "python", "py": "python", "cpp": "cpp", "c++": "cpp", "cxx": "cpp",
           "java": "java", "javascript": "javascript", "nodejs": "javascript", "node": "javascript",
           "js": "javascript", "rust": "rust", "rs": "rust"}
PACKAGES = {"cpp": "g++", "java": "default-jdk-headless", "javascript": "nodejs", "rust": "rustc"}
TOOLS = {"cpp": "g++", "java": "javac", "javascript": "node", "rust": "rustc"}
SOURCE_FILE = {"cpp": "main.cpp", "javascript": "main.js", "rust": "main.rs"}

SRC_DIR = "/tmp/src"       # the compile step's source (root-owned, read-only)
BUILD_DIR = "/tmp/build"   # what the compiler writes (the sandbox uid's, in the compile step's own /tmp)
BIN_DIR = "/tmp/.prog"     # the artifact in each test's fresh /tmp (root-owned, read-only)
RUST_MOUNT = "/opt/factory-toolchains/rust"   # where a rustup toolchain appears inside the sandbox
LIBS_MOUNT = "/opt/factory-libs"   # `factory sandbox-libs`'s directory inside the sandbox (:mod:`.libs`), read-only

COMPILE_CPU_S = 10.0           # CPU seconds for one compilation (SandboxFusion's compile_timeout default)
COMPILE_WALL_FACTOR = 3.0      # wall backstop = max(factor * compile CPU, 10 s)
COMPILE_OUTPUT_CAP = 1 << 20   # compiler output beyond this stops the compilation (a compile error)
COMPILE_MESSAGE_CAP = 4000     # characters of compiler output a verdict keeps
MAX_ARTIFACT_FILES = 512       # class files a Java compilation may leave
MAX_ARTIFACT_BYTES = 256 << 20


class UnknownLanguage(ValueError):
    pass


class ToolchainMissing(RuntimeError):
    pass


def normalize(name: str | None) -> str:
    """The canonical name of a language (SandboxFusion's names and common aliases); None is Python.  An unknown
    name raises :class:`UnknownLanguage` listing the supported ones."""
    if name is None:
        return PYTHON
    key = str(name).strip().lower()
    if key in ALIASES:
        return ALIASES[key]
    raise UnknownLanguage(f"unknown language {name!r}: supported languages are "   # every spelling, canonical first
                          f"{', '.join(list(SUPPORTED) + [a for a in ALIASES if a not in SUPPORTED])}")


def _which(tool: str, extra: tuple[str, ...] = ()) -> str | None:
    dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/bin", "/usr/bin", "/bin", *extra]
    return shutil.which(tool, path=os.pathsep.join(d for d in dirs if d))


def _homes() -> list[str]:
    try:
        pw_home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        pw_home = None
    return list(dict.fromkeys(h for h in (os.environ.get("HOME"), pw_home) if h))


def _rustc() -> tuple[str, list[str]] | None:
    """(the real rustc binary, directories to bind).  A rustup proxy (``~/.cargo/bin/rustc``) is resolved to its
    default toolchain's binary: the sandbox has no home directory, hence no rustup settings."""
    cargo_bins = tuple(os.path.join(h, ".cargo", "bin") for h in _homes())
    path = _which("rustc", cargo_bins)
    if path is None:
        return None
    real = os.path.realpath(path)
    if os.path.basename(real).startswith("rustup"):
        roots = [os.environ.get("RUSTUP_HOME")] + [os.path.join(h, ".rustup") for h in _homes()]
        for root in [r for r in roots if r and os.path.isdir(r)]:
            default = None
            with contextlib.suppress(OSError), open(os.path.join(root, "settings.toml")) as f:
                m = re.search(r'^default_toolchain\s*=\s*"([^"]+)"', f.read(), re.M)
                default = m.group(1) if m else None
            found = sorted(glob.glob(os.path.join(root, "toolchains", "*", "bin", "rustc")))
            pick = [p for p in found if default and os.path.basename(os.path.dirname(os.path.dirname(p)))
                    .startswith(default)] or found
            if pick:
                return pick[0], [os.path.dirname(os.path.dirname(pick[0]))]
        return None
    return real, [os.path.dirname(os.path.dirname(real))]


_CACHE: dict = {}


def _libs(sub: str, pattern: str = "") -> tuple[list, list[str]]:
    """(the binding of `factory sandbox-libs`'s directory, what of it ``sub`` holds as paths inside the sandbox)
    where it holds any; ``pattern``: the file names in ``sub`` (else ``sub`` itself)."""
    root = libs_dir()
    found = sorted(glob.glob(os.path.join(root, sub, pattern))) if pattern else [os.path.join(root, sub)]
    inside = [LIBS_MOUNT + p[len(root):] for p in found if os.path.exists(p)]
    return ([(root, LIBS_MOUNT)] if inside else []), inside


def toolchain(lang: str) -> dict | None:
    """Where ``lang``'s tools are (``{"bin": {...}, "paths": [...]}``), or None when absent; cached."""
    if lang in _CACHE:
        return _CACHE[lang]
    tc = None
    if lang == "cpp":
        gpp = _which("g++")
        tc = {"bin": {"cxx": gpp}, "paths": []} if gpp else None
    elif lang == "java":
        javac, java = _which("javac"), _which("java")
        if javac and java:
            home = os.path.dirname(os.path.dirname(os.path.realpath(javac)))
            bind, jars = _libs("java", "*.jar")   # javatuples & co: on the class path
            tc = {"bin": {"javac": javac, "java": java}, "paths": [home] + sorted(glob.glob("/etc/java-*")) + bind,
                  "jars": jars}
    elif lang == "javascript":
        node = _which("node") or _which("nodejs")
        bind, modules = _libs("node_modules")   # lodash & co: on NODE_PATH
        tc = {"bin": {"node": node}, "paths": bind, "node_path": modules} if node else None
    elif lang == "rust":
        found = _rustc()
        if found and not found[0].startswith("/usr/"):   # a home directory's rustup toolchain: at a neutral path
            tc = {"bin": {"rustc": RUST_MOUNT + found[0][len(found[1][0]):]}, "paths": [(found[1][0], RUST_MOUNT)]}
        elif found:
            tc = {"bin": {"rustc": found[0]}, "paths": found[1]}
    _CACHE[lang] = tc
    return tc


def missing_message(lang: str) -> str:
    msg = (f"language {lang!r} needs {TOOLS[lang]}, which is not installed here: install the Debian package "
           f"'{PACKAGES[lang]}' (apt-get install {PACKAGES[lang]})")
    if lang == "rust":
        msg += " or a rustup toolchain (~/.cargo/bin/rustc)"
    return msg


def require(lang: str) -> dict:
    """The toolchain of a non-Python language, or :class:`ToolchainMissing` naming the package to install."""
    tc = toolchain(lang)
    if tc is None:
        raise ToolchainMissing(missing_message(lang))
    return tc


def installed() -> list[str]:
    return [PYTHON] + [lang for lang in SUPPORTED[1:] if toolchain(lang) is not None]


def toolchain_paths() -> list:
    """Directories outside /usr, /bin, /lib the installed toolchains need inside the sandbox's minimal root: a
    path (bound at itself) or (host path, path inside)."""
    return list(dict.fromkeys(p for lang in SUPPORTED[1:] for p in (toolchain(lang) or {}).get("paths", [])))


# what java_code_only blanks: // and /* */ comments, text blocks, string and char literals (a string ends at its line)
_NOT_CODE = re.compile(r'//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)|"""(?:\\[\s\S]?|(?!""")[^\\])*(?:"""|\Z)'
                       r'|"(?:\\[\s\S]?|[^"\\\n])*["\n]?' r"|'(?:\\[\s\S]?|[^'\\\n])*['\n]?")


def java_code_only(source: str) -> str:
    """``source`` with its comments, string, character and text-block literals blanked (same length, newlines
    kept): what is left is the code, in which declarations can be looked for without being fooled by
    ``// A public class Pair would be overkill`` or ``"class Main"``."""
    return _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)   # blanked, its newlines kept


_MODS = r"(?:(?:public|protected|private|static|final|abstract|strictfp|sealed|non-sealed|synchronized|native)\s+" \
        r"|@[A-Za-z_$][\w$.]*(?:\s*\([^)]*\))?\s*)*"
_JAVA_TYPE = re.compile(r"(?<![\w$.])(" + _MODS + r")(class|interface|enum|record)\s+([A-Za-z_$][\w$]*)")
_BRACE = re.compile(r"[{}]")
_JAVA_MAIN = re.compile(r"(?<![\w$.])(" + _MODS + r")void\s+main\s*\(")


def _body_end(code: str, start: int) -> int:
    """Where the brace block opening at or after ``start`` closes (len(code) when it does not)."""
    i = code.find("{", start)
    if i < 0:
        return len(code)
    depth = 0
    for m in _BRACE.finditer(code, i):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    return len(code)


def java_names(source: str) -> tuple[str, str]:
    """(source file name, main class) of a Java program, read from its code (comments and literals are not
    code): the file is named for its public top-level type (javac requires it); the main class is the top-level
    type that declares a ``static void main(`` (modifiers in any order: ``public static``, ``static public``,
    ``final``, annotations), the public one where several do; else the public type; else ``Main``."""
    code = java_code_only(source)
    top = [(m.group(3), re.search(r"\bpublic\b", m.group(1)) is not None, m.end(), _body_end(code, m.end()))
           for m in _JAVA_TYPE.finditer(code) if code.count("{", 0, m.start()) == code.count("}", 0, m.start())]
    public = next((t[0] for t in top if t[1]), None)   # top-level types: (name, is public, body start, body end)
    owners = (next((t for t in top if t[2] <= m.start() < t[3]), None) for m in _JAVA_MAIN.finditer(code)
              if re.search(r"\bstatic\b", m.group(1)))
    with_main = [t for t in dict.fromkeys(owners) if t is not None]
    main = next((t[0] for t in with_main if t[1]), None) or (with_main[0][0] if with_main else None) \
        or public or "Main"
    return f"{public or main}.java", main


def program_spec(lang: str, source: str) -> dict:
    """What the zygote needs to build and run a program (trusted side): its source file name and, for Java,
    the main class."""
    if lang == "java":
        file, main = java_names(source)
        return {"name": lang, "file": file, "main": main}
    return {"name": lang, "file": SOURCE_FILE[lang]}


def compile_argv(spec: dict, memory_mb: int) -> list[str] | None:
    """The compiler command (inside the sandbox), or None for a language that runs its source."""
    lang, tc = spec["name"], require(spec["name"])
    src = f"{SRC_DIR}/{spec['file']}"
    if lang == "cpp":
        return [tc["bin"]["cxx"], "-O2", "-std=gnu++17", "-pipe", "-fmax-errors=20", "-o", f"{BUILD_DIR}/main", src]
    if lang == "rust":
        return [tc["bin"]["rustc"], "-O", "--edition", "2021", "--crate-name", "main", "-C", "codegen-units=4",
                "-o", f"{BUILD_DIR}/main", src]
    if lang == "java":
        heap = max(64, min(1024, memory_mb // 2))
        return [tc["bin"]["javac"], f"-J-Xmx{heap}m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1",
                "-J-XX:-UsePerfData", "-J-Xshare:auto", "-encoding", "UTF-8", "-nowarn", "-d", BUILD_DIR,
                *(["-cp", ":".join(tc["jars"])] if tc["jars"] else []), src]
    return None


MAX_STACK_MB = 1024   # HotSpot's largest -Xss (ThreadStackSize is at most 1 GiB); the same cap for C++/Rust
MIN_STACK_MB = 64


def stack_mb(memory_mb: int, lang: str) -> int:
    """The stack a compiled program's main thread gets: its memory limit, as contest judges give, within [64 MiB,
    1 GiB] (glibc gives every thread a stack of RLIMIT_STACK: beyond memory, overcommit would refuse threads)."""
    return max(MIN_STACK_MB, min(int(memory_mb), MAX_STACK_MB))


def stack_bytes(spec: dict, memory_mb: int) -> int | None:
    """RLIMIT_STACK to set before exec (C++, Rust: the main thread's stack grows up to it); None: leave it."""
    return stack_mb(memory_mb, spec["name"]) << 20 if spec["name"] in ("cpp", "rust") else None


def run_argv(spec: dict, memory_mb: int) -> list[str]:
    """The command that runs the placed artifact of one program (inside the sandbox)."""
    lang, tc = spec["name"], require(spec["name"])
    if lang in ("cpp", "rust"):
        return [f"{BIN_DIR}/main"]
    if lang == "java":   # assertions on (-ea), as SandboxFusion and contest judges run Java
        heap = max(32, int(memory_mb * 0.6))
        return [tc["bin"]["java"], f"-Xmx{heap}m", f"-Xss{stack_mb(memory_mb, lang)}m", "-ea",
                "-XX:+UseSerialGC", "-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp",
                ":".join([BIN_DIR] + tc["jars"]), spec["main"]]
    return [tc["bin"]["node"], f"--max-old-space-size={max(32, int(memory_mb * 0.6))}", f"{BIN_DIR}/main.js"]


def run_env(spec: dict) -> dict:
    """Environment a placed program runs with besides the sandbox's own: Node's NODE_PATH (`factory sandbox-libs`)."""
    tc = require(spec["name"])
    return {"NODE_PATH": ":".join(tc["node_path"])} if tc.get("node_path") else {}


_FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.S)
_TAGS = {"cpp": ("cpp", "c++", "cxx", "cc"), "java": ("java",), "javascript": ("javascript", "js", "node", "nodejs"),
         "rust": ("rust", "rs")}


def fenced_block(text: str, lang: str, k: int = -1) -> str:
    """Block ``k`` (-1: the last) of the fenced blocks in ``text`` tagged with ``lang``, else of all of them, else
    ``text``."""
    blocks = [(tag.strip().lower(), body) for tag, body in _FENCE.findall(text)]
    tagged = [body for tag, body in blocks if tag in _TAGS.get(lang, (lang,))]
    return tagged[k] if tagged else (blocks[k][1] if blocks else text)


def extract_source(text: str, lang: str) -> str | None:
    """A program in ``lang`` from a model's completion: the last fenced block tagged with the language, else the
    last fenced block, else the whole text; None when that is empty."""
    code = fenced_block(text or "", lang)
    return code if code.strip() else None
