"""SandboxFusion's own runner tests, unchanged, against a live `factory serve` over real HTTP (issue 42).

    python bench/sandboxfusion_suite.py --sandboxfusion /path/to/SandboxFusion [--out bench/results/sandboxfusion_suite.json]

``--sandboxfusion``: a checkout of bytedance/SandboxFusion or its git directory (the `fetch` mirror). Its
``sandbox/tests/runners/test_{python,cpp,java,nodejs,rust,jupyter,isolation}.py`` are copied into a scratch
directory next to a shim of the ``sandbox`` package they import (bench/sandboxfusion_shim: the request/response
models written from SandboxFusion's field lists, and an ASGI app that forwards each request to the server), a
``factory serve`` starts on a free loopback port, pytest runs the files, and each test is classified: pass,
fail or env (needs the internet, or a library of SandboxFusion's image that `factory sandbox-libs` has not installed
here: lodash, the javatuples jar, matplotlib)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from harness import ROOT, parser, timed, write  # noqa: I001  (first: the repository on sys.path)

from tests.serve.conftest import Server  # noqa: E402  (starts `factory serve` on a free loopback port)

FILES = ("python", "cpp", "java", "nodejs", "rust", "jupyter", "isolation")
ENV = {"test_isolation_network_external_access": "the internet (fetches an external site)"}
NEEDS_LIB = {"test_nodejs_lodash_dep": "lodash", "test_java_external_jar": "javatuples jar",
             "test_jupyter_plot": "matplotlib"}


def env_tests() -> dict:
    """ENV, plus each test whose library (in SandboxFusion's image) `factory sandbox-libs` has not installed here."""
    import importlib.util

    from factory.sandbox import languages
    have = {"lodash": bool((languages.toolchain("javascript") or {}).get("node_path")),
            "javatuples jar": any("javatuples" in j for j in (languages.toolchain("java") or {}).get("jars", [])),
            "matplotlib": importlib.util.find_spec("matplotlib") is not None}
    return {**ENV, **{t: f"{lib}: not installed here (factory sandbox-libs installs it)"
                      for t, lib in NEEDS_LIB.items() if not have[lib]}}


def read_test(src: Path, name: str) -> str:
    rel = f"sandbox/tests/runners/test_{name}.py"
    if (src / rel).exists():
        return (src / rel).read_text()
    return subprocess.run(["git", "--git-dir", str(src), "show", f"HEAD:{rel}"], check=True, capture_output=True,
                          text=True).stdout


def main() -> None:
    ap = parser(__doc__, "sandboxfusion_suite.json", {"--workers": 2})
    ap.add_argument("--sandboxfusion", required=True, type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sfsuite-"))
    try:
        shutil.copytree(ROOT / "bench" / "sandboxfusion_shim", work, dirs_exist_ok=True)
        (work / "tests").mkdir()
        for name in FILES:
            (work / "tests" / f"test_{name}.py").write_text(read_test(args.sandboxfusion, name))
        server = Server("--workers", str(args.workers))
        try:
            env = dict(os.environ, SFSUITE_URL=server.url, NO_PROXY="127.0.0.1,localhost")
            wall = timed(subprocess.run, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                                          f"--junitxml={work / 'junit.xml'}"], cwd=work, env=env,
                         capture_output=True)[0]
        finally:
            server.stop(timeout=60)
        env_why = env_tests()
        per_file: dict[str, dict] = {}
        for case in ET.parse(work / "junit.xml").iter("testcase"):
            f = case.get("classname").split(".")[-1]
            name = case.get("name").split("[")[0]
            failed = case.find("failure") is not None or case.find("error") is not None
            kind = "pass" if not failed else ("env" if name in env_why else "fail")
            per_file.setdefault(f, {"pass": 0, "fail": 0, "env": 0, "tests": {}})
            per_file[f][kind] += 1
            per_file[f]["tests"][case.get("name")] = kind
        total = {k: sum(v[k] for v in per_file.values()) for k in ("pass", "fail", "env")}
        result = {"files": per_file, "total": total, "wall_s": round(wall, 1), "why": env_why}
        write(args.out, result)
        for f, v in per_file.items():
            print(f"{f:18s} pass {v['pass']:2d}  fail {v['fail']:2d}  env {v['env']}")
        print("total", total)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
