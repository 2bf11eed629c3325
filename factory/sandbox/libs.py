"""`factory sandbox-libs`: the libraries SandboxFusion's image gives programs, installed once with the ordinary clients
so that `factory serve` runs such programs offline: the javatuples jar (Debian's ``libjavatuples-java``), the npm
package lodash, and matplotlib (Jupyter cells that plot). Idempotent: what is there is kept.

The jars and node modules go to :func:`libs_dir` (``~/.cache/factory/sandbox-libs``: ``java/*.jar``,
``node_modules/``), which the sandbox binds read-only at ``/opt/factory-libs`` (:mod:`.languages`: on Java's class
path, Node's ``NODE_PATH``); matplotlib goes into the environment `factory serve` runs from (its packages are the
sandbox's). Uses only the standard library: ``python3 -m factory.sandbox.libs`` works before the project is
installed (CI: ``--only java node``)."""
from __future__ import annotations

import argparse
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys

DEBIAN_JARS = {"libjavatuples-java": "javatuples"}   # Debian package -> its jar in /usr/share/java
NPM_PACKAGES = {"lodash": "lodash@4"}
PYTHON_PACKAGES = ("matplotlib",)
KINDS = ("java", "node", "python")


def libs_dir() -> str:
    """Where the jars and node modules live (the user's own home, read from the password database: the sandbox's
    environment has HOME=/tmp)."""
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = os.path.expanduser("~")
    return os.path.join(home, ".cache", "factory", "sandbox-libs")


def _run(argv: list[str], quiet: bool = False) -> bool:
    print("  $", " ".join(argv), flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(argv, env=env, stdout=subprocess.DEVNULL if quiet else None).returncode == 0


def _apt(package: str) -> bool:
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    install = sudo + ["apt-get", "install", "-y", "-qq", package]
    # a fresh machine's package lists may be empty: update once, then try again
    return _run(install, True) or (_run(sudo + ["apt-get", "update", "-qq"], True) and _run(install, True))


def install_java(d: str) -> list[str]:
    """Each Debian jar linked into d/java (installed with apt-get when absent); returns what failed."""
    if shutil.which("javac") is None:
        print("java: no JDK here (apt-get install default-jdk-headless): skipped")
        return []
    os.makedirs(os.path.join(d, "java"), exist_ok=True)
    failed = []
    for package, jar in DEBIAN_JARS.items():
        src, link = f"/usr/share/java/{jar}.jar", os.path.join(d, "java", f"{jar}.jar")
        if not os.path.exists(src) and not _apt(package):
            failed.append(f"{package} (apt-get install {package})")
            continue
        if not os.path.lexists(link):
            os.symlink(src, link)   # under /usr: the same path inside the sandbox
        print(f"java: {link} -> {src}")
    return failed


def install_node(d: str) -> list[str]:
    if shutil.which("node") is None:
        print("node: no Node.js here (apt-get install nodejs): skipped")
        return []
    if shutil.which("npm") is None and not _apt("npm"):
        return ["npm (apt-get install npm)"]
    failed = []
    for name, spec in NPM_PACKAGES.items():
        if not os.path.exists(os.path.join(d, "node_modules", name, "package.json")) and not _run(
                ["npm", "install", "--prefix", d, "--no-audit", "--no-fund", spec]):
            failed.append(f"npm package {spec}")
            continue
        print(f"node: {os.path.join(d, 'node_modules', name)}")
    return failed


def install_python() -> list[str]:
    missing = [p for p in PYTHON_PACKAGES if importlib.util.find_spec(p) is None]
    if missing and not _run([sys.executable, "-m", "pip", "install", *missing]):
        return [f"{' '.join(missing)} (pip install into {sys.prefix})"]
    print(f"python: {', '.join(PYTHON_PACKAGES)} importable by {sys.executable}")
    return []


def install(only=KINDS) -> list[str]:
    """Everything of ``only`` installed; returns what could not be (empty: all there)."""
    d = libs_dir()
    failed = (install_java(d) if "java" in only else []) + (install_node(d) if "node" in only else [])
    return failed + (install_python() if "python" in only else [])


def main(only=KINDS) -> None:
    """Install; exit 1 naming what could not be installed."""
    failed = install(only)
    for f in failed:
        print(f"sandbox-libs: could not install {f}", file=sys.stderr)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="factory sandbox-libs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=KINDS, default=list(KINDS), help="install only these (default all)")
    main(ap.parse_args().only)
