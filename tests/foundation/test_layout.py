"""The package layout (#19), checked over the source with `ast` (nothing is imported):

    lake core (factory.lake, factory.errors)  <-  engines  <-  stages (factory.stages.*)  <-  factory.cli

* the lake core imports nothing of factory but itself, factory.errors and factory.assets;
* factory/ holds no loose modules besides cli.py, reward.py, errors.py and progress.py;
* the reward and the sandbox never import the service (factory.serve): no back-arrow;
* engines (every other module of factory/) never import factory.stages;
* a stage never imports another stage, except the orchestrators (ORCHESTRATORS), which run several;
* nothing imports factory.cli; cli registers every stage module, each of which has ``register(sub, add_lake)``;
* docs/architecture.md's stage -> reads -> writes table is the one generated from data_catalog.yaml.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

FACTORY = REPO_ROOT / "factory"
CORE = ("factory.lake", "factory.errors", "factory.assets")   # factory.assets: where the shipped files live
TOP_LEVEL = {"__init__.py", "cli.py", "reward.py", "errors.py", "progress.py"}   # factory/*.py; the rest is in packages
ORCHESTRATORS = {"demo", "recipe"}   # run several stages in order: the only stages that may import others
PYTHON_DIRS = ("factory", "tests", "bench", "train", "eval")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every module a file imports (at the top or inside functions), relative imports resolved;
    ``from pkg import name`` counts as importing ``pkg.name`` too (it may be a submodule)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def stage_of(module: str) -> str | None:
    """'factory.stages.train.rl' -> 'train'; None outside the stages."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["factory", "stages"] else None


def factory_modules() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sorted(FACTORY.rglob("*.py"))}


def test_lake_core_imports_only_itself():
    bad = {m: sorted(i for i in imps if within(i, "factory") and i != "factory" and not any(within(i, c) for c in CORE))
           for m, imps in factory_modules().items() if any(within(m, c) for c in CORE)}
    assert not {m: v for m, v in bad.items() if v}, \
        "the lake core may import only factory.lake / factory.errors / factory.assets"


def test_engines_never_import_stages():
    bad = {m: sorted(i for i in imps if within(i, "factory.stages") or within(i, "factory.cli"))
           for m, imps in factory_modules().items()
           if not within(m, "factory.stages") and m != "factory.cli"}
    assert not {m: v for m, v in bad.items() if v}, "engines and the lake core never import factory.stages"


def test_stages_do_not_import_each_other():
    bad = {}
    for m, imps in factory_modules().items():
        own = stage_of(m)
        if own is None or own in ORCHESTRATORS:
            continue
        others = sorted(i for i in imps if stage_of(i) not in (None, own))
        if others:
            bad[m] = others
    assert not bad, f"a stage imports another stage (only {sorted(ORCHESTRATORS)} may): {bad}"


def test_nothing_imports_the_cli():
    bad = [str(p.relative_to(REPO_ROOT)) for d in PYTHON_DIRS for p in sorted((REPO_ROOT / d).rglob("*.py"))
           if module_name(p) != "factory.cli" and any(within(i, "factory.cli") for i in imports(p))]
    assert not bad, f"factory.cli is the entry point only (run it with python -m factory.cli): {bad}"


def _cli_stages() -> list[str]:
    tree = ast.parse((FACTORY / "cli.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["STAGES"]:
            return list(ast.literal_eval(node.value))
    raise AssertionError("factory/cli.py has no STAGES tuple")


def _stage_paths() -> dict[str, Path]:
    out = {}
    for p in sorted((FACTORY / "stages").iterdir()):
        if p.suffix == ".py" and p.name != "__init__.py":
            out[p.stem] = p
        elif (p / "__init__.py").is_file():
            out[p.name] = p / "__init__.py"
    return out


def _defines_register(path: Path) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == "register" and [a.arg for a in n.args.args] ==
               ["sub", "add_lake"] for n in ast.parse(path.read_text()).body)


def test_every_stage_registers_its_subcommands_and_cli_lists_them():
    stages, listed = _stage_paths(), _cli_stages()
    assert len(set(listed)) == len(listed)
    assert not [s for s in listed if s not in stages], "cli.STAGES names a module missing from factory/stages"
    missing = sorted(set(stages) - set(listed))
    assert not missing, f"stage modules the CLI does not register: {missing}"
    assert not [s for s, p in stages.items() if not _defines_register(p)], "a stage without register(sub, add_lake)"


def test_no_stage_modules_outside_stages():
    stray = sorted(p.name for p in FACTORY.glob("*.py") if p.stem.endswith("_stage") or p.stem == "stages")
    assert not stray, f"stage modules belong in factory/stages/: {stray}"


def test_architecture_stage_table_is_generated_from_the_catalog():
    from factory.lake.stage_table import replace_table, stage_table_markdown

    readme = (REPO_ROOT / "docs" / "architecture.md").read_text()
    assert replace_table(readme, stage_table_markdown()) == readme, \
        "docs/architecture.md's stage table differs from data_catalog.yaml: run python -m factory.lake.stage_table"


def test_no_loose_modules_at_the_top_level():
    loose = sorted(p.name for p in FACTORY.glob("*.py") if p.name not in TOP_LEVEL)
    assert not loose, f"factory/ top level holds only {sorted(TOP_LEVEL)}; move these into their package: {loose}"


def test_reward_and_sandbox_never_import_the_service():
    bad = {m: sorted(i for i in imps if within(i, "factory.serve"))
           for m, imps in factory_modules().items() if within(m, "factory.reward") or within(m, "factory.sandbox")}
    assert not {m: v for m, v in bad.items() if v}, "no back-arrow: the reward / sandbox import factory.serve"


def test_setup_ships_exactly_the_assets_the_package_reads():
    """setup.py copies factory.assets.SHIPPED into the wheel; the two lists agree and every entry exists."""
    from factory.assets import SHIPPED

    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    listed = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["SHIPPED"])
    assert tuple(listed) == SHIPPED
    assert all((REPO_ROOT / name).exists() for name in SHIPPED)
    assert not any((FACTORY / "assets" / name).exists() for name in SHIPPED), \
        "a copy of the assets inside the checkout would shadow the repository's own files"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (each an import circle), by Tarjan's algorithm."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _module_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (a name that is not a module counts as its nearest module)."""
    files = {module_name(p): p for d in ("factory", "train", "eval") for p in sorted((REPO_ROOT / d).rglob("*.py"))}

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    return {m: {r for i in imports(p) if (r := resolve(i)) not in (None, m)} for m, p in files.items()}


def test_no_import_circles():
    """#49: no module imports itself through others, function-level imports included (a circle means the two
    modules are one job split badly: the shared piece gets its own module)."""
    assert not _cycles(_module_graph())


def test_packages_import_one_way():
    """#49: factory's subpackages form no circle either (no back-arrow: release -> recipes and recipes -> release
    would be one); the package graph is a DAG."""
    def package(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if parts[0] == "factory" and len(parts) > 1 else parts[0]

    graph: dict[str, set[str]] = {}
    for m, targets in _module_graph().items():
        graph.setdefault(package(m), set()).update(package(t) for t in targets if package(t) != package(m))
    assert not _cycles(graph)
