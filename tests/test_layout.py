"""The package's shape: imports run one way (share/__init__.py), and no module grows too big."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SHARE = Path(__file__).parent.parent / "share"
MAX_LINES = 400

# What each part of share may import (besides itself), as share/__init__.py draws it.
LEAVES = {"config", "errors", "metrics"}
ALLOWED = {
    "root": {"web"},  # share/__init__.py: create_app() for gunicorn
    "web": {"collections", "core", "compute", "analysis", "pprof", "store"} | LEAVES,
    "cli": {"web", "collections", "core", "compute", "analysis", "pprof", "store"} | LEAVES,
    "collections": {"core", "compute", "analysis", "pprof", "store"} | LEAVES,
    "core": {"compute", "analysis", "pprof", "store"} | LEAVES,
    "compute": {"analysis", "pprof", "store"} | LEAVES,
    "analysis": {"pprof"} | LEAVES,
    "pprof": {"errors"},
    "store": {"errors"},
    "config": set(),
    "errors": set(),
    "metrics": set(),
}


# share.analysis's folders, lowest first: each imports only the ones before it (its __init__).
ANALYSIS_LAYERS = ["measure", "model", "refine", "flame", "combine", "reports", "views"]
MAX_MODULES = 15  # Python modules directly in one folder of share/, __init__ not counted
STATIC = SHARE.parent / "static"


def modules() -> list[Path]:
    return sorted(p for p in SHARE.rglob("*.py") if "_proto" not in p.parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of share it imports, each import resolved to the module it names
    (a package's name is its __init__; share.pprof._proto's generated code counts as modules)."""
    paths = modules() + sorted((SHARE / "pprof" / "_proto").glob("*.py"))
    names = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name = module_name(path)
        targets = set()
        for target in imported(path, name):
            while target not in names and "." in target:
                target = target.rpartition(".")[0]
            if target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def part_of(dotted: str) -> str:
    """share.web.api -> web, share.core -> core, share -> root."""
    names = dotted.split(".")
    return "root" if len(names) == 1 else names[1]


def module_name(path: Path) -> str:
    rel = path.relative_to(SHARE.parent).with_suffix("")
    names = list(rel.parts)
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names)


def imported(path: Path, name: str | None = None) -> set[str]:
    """Every module of share that path imports, anywhere in it (functions, TYPE_CHECKING too)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "share")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "share":
                # `from . import x` names a submodule: count the submodule, not the package.
                subs = [f"{target}.{a.name}" for a in node.names] if not node.module else []
                found.update(subs or [target])
    return found


def test_parts_are_the_documented_ones() -> None:
    parts = {part_of(module_name(p)) for p in modules()}
    assert parts == set(ALLOWED), "a new part of share: add it to share/__init__.py and here"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SHARE.parent)))
def test_imports_run_one_way(path: Path) -> None:
    source = part_of(module_name(path))
    upward = sorted(
        target
        for target in imported(path)
        if (dest := part_of(target)) != source and dest not in ALLOWED[source]
    )
    assert not upward, f"{source} may not import {upward} (see share/__init__.py)"


def test_the_walker_sees_an_upward_import(tmp_path: Path) -> None:
    """The check can fail: a store module importing the web tier is caught."""
    bad = tmp_path / "probe.py"
    bad.write_text("def f():\n    from ..web import app\n")
    targets = imported(bad, "share.store.probe")
    assert targets == {"share.web"} and "web" not in ALLOWED["store"]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SHARE.parent)))
def test_no_module_is_over_the_size(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{lines} lines: split it by responsibility"


def test_every_package_says_what_it_owns() -> None:
    for init in SHARE.rglob("__init__.py"):
        if "_proto" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 200, f"{init} needs a docstring saying what it owns"


def test_the_upload_client_loads_neither_flask_nor_numpy() -> None:
    """`pprof-share upload` starts fast: the CLI's dispatch and client import no heavy stack."""
    code = (
        "import sys; import share.cli, share.cli.client; share.cli.build_parser(); "
        "print(sorted(m for m in ('flask', 'numpy', 'werkzeug', 'boto3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_layout_lists_every_module() -> None:
    readme = (SHARE.parent / "README.md").read_text()
    layout = readme[readme.index("## Layout") :]
    for path in modules():
        rel = path.relative_to(SHARE)
        if rel.name == "__main__.py" or (rel.name == "__init__.py" and len(rel.parts) > 1):
            continue
        listed = f"share/{rel}" if len(rel.parts) == 1 else f"\n  {rel.name} "
        assert listed in layout, f"README's Layout section does not list share/{rel}"


def test_no_import_cycle() -> None:
    """Imports inside functions and under TYPE_CHECKING count: two modules that import each
    other cannot be read one without the other."""
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_graph_sees_a_function_level_import(tmp_path: Path) -> None:
    """An import inside a function names its module (what the cycle check walks)."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..model.stacks import stacks\n")
    assert imported(probe, "share.analysis.views.probe") == {"share.analysis.model.stacks"}


def test_analysis_folders_import_only_lower_ones() -> None:
    graph = import_graph()
    folders = {p.name for p in (SHARE / "analysis").iterdir() if (p / "__init__.py").exists()}
    assert folders == set(ANALYSIS_LAYERS), "a new folder of share.analysis: place it here"
    upward = []
    for name, targets in graph.items():
        parts = name.split(".")
        if parts[:2] != ["share", "analysis"] or len(parts) < 4:
            continue
        for target in targets:
            tparts = target.split(".")
            inside = tparts[:2] == ["share", "analysis"] and len(tparts) >= 3
            if inside and ANALYSIS_LAYERS.index(tparts[2]) > ANALYSIS_LAYERS.index(parts[2]):
                upward.append(f"{name} -> {target}")
    assert not upward, "share/analysis/__init__.py orders the folders: " + ", ".join(upward)


@pytest.mark.parametrize(
    "folder",
    sorted({p.parent for p in modules()}),
    ids=lambda p: str(p.relative_to(SHARE.parent)),
)
def test_no_folder_is_over_the_size(folder: Path) -> None:
    count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
    assert count <= MAX_MODULES, f"{count} modules: give {folder.name}/ folders by idea"


@pytest.mark.parametrize(
    "path", sorted(STATIC.rglob("*.js")), ids=lambda p: str(p.relative_to(SHARE.parent))
)
def test_no_script_is_over_the_size(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{lines} lines: split it by responsibility"
