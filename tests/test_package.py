"""What installs: one import name, ``callctx``, with a small public facade, and the layers
between its folders kept (no import cycles, counting lazy and TYPE_CHECKING imports)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import callctx

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"callctx": "tracing", "callctx.projection": "projection", "callctx.components": "components"}


def test_the_install_exposes_only_callctx(tmp_path):
    script = (
        "import importlib.util, json, callctx\n"
        "from callctx import agentic, setup, Agent, carry, Projection\n"
        "first = {n: importlib.util.find_spec(n) is not None for n in ('tracing', 'projection', 'components')}\n"
        "missing = [n for n in callctx.__all__ if not hasattr(callctx, n)]\n"
        "print(json.dumps({'first': first, 'missing': missing, 'file': callctx.__file__}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout)
    assert out["first"] == {"tracing": False, "projection": False, "components": False}
    assert out["missing"] == []


def test_a_folder_named_callctx_beside_a_script_does_not_shadow_the_install(tmp_path):
    """A user clones the repository into ``callctx/`` and writes a script beside the clone."""
    clone = tmp_path / "callctx"
    (clone / "tracing").mkdir(parents=True)
    (clone / "README.md").write_text("a clone\n")
    (tmp_path / "script.py").write_text("from callctx import Agent, setup\nprint(Agent.__module__)\n")
    proc = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "callctx.instrument.agent"


def test_the_wheel_carries_the_license_and_the_page_and_builds_without_warnings(tmp_path):
    import zipfile

    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), "-v", str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Warning" not in proc.stdout + proc.stderr.replace("WARNING: Location", ""), proc.stdout[-3000:]
    (wheel,) = tmp_path.glob("callctx-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    for page in ("index.html", "app.js", "app.css"):
        assert f"callctx/ui/static/{page}" in names
    assert "callctx/py.typed" in names and "callctx/components/cache_rules.yaml" in names


def test_the_facade_is_small_and_typed():
    assert 10 <= len(callctx.__all__) <= 18
    assert {"agentic", "Agent", "setup", "carry", "Projection", "model", "ContextComponent"} <= set(callctx.__all__)
    assert {"CallctxError", "ModelError", "OutputValidationError"} <= set(callctx.__all__)
    assert (Path(callctx.__file__).parent / "py.typed").is_file()


def _packages() -> dict[str, Path]:
    """Every package the repository's folders hold, by its installed name."""
    out = {}
    for name, folder in FOLDERS.items():
        base = ROOT / folder
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(base)
            dotted = ".".join([name, *rel.parts]) if rel.parts else name
            out[dotted] = init.parent
    return out


def test_pyproject_installs_every_package_under_callctx():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert conf["package-dir"] == FOLDERS
    data_only = {"callctx.ui.static"}  # the page's files: listed so that setuptools ships them as they are
    assert sorted(conf["packages"]) == sorted([*_packages(), *data_only])
    assert all(not (ROOT / "tracing" / "ui" / "static" / "__init__.py").exists() for _ in data_only)


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg, folder in _packages().items():
        for f in folder.glob("*.py"):
            mods[pkg if f.name == "__init__.py" else f"{pkg}.{f.stem}"] = f
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports, anywhere in the file (functions, TYPE_CHECKING)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(dotted: str) -> str | None:
        while dotted:
            if dotted in mods:
                return dotted
            dotted = dotted.rpartition(".")[0]
        return None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for t in targets:
            first = t.split(".")[0]
            assert first not in ("tracing", "projection", "components"), f"{path}: imports the folder name {t}"
            r = resolve(t)
            if r is not None and r != name:
                found.add(r)
    return found


def test_no_import_cycles_and_layers_kept():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    for m, deps in graph.items():
        if m.startswith("callctx.projection"):
            bad = [d for d in deps if not d.startswith("callctx.projection")]
            assert not bad, f"{m} (projection) imports {bad}"
        if m.startswith("callctx.components"):
            bad = [d for d in deps if not d.startswith(("callctx.components", "callctx.projection"))]
            assert not bad, f"{m} (components) imports {bad}"
    # Tarjan's strongly connected components: a cycle is one of more than one module.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    assert cycles == []


def test_no_file_imports_the_folder_names():
    for folder in ("tests", "bench"):
        for f in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text(), str(f))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                for n in names:
                    assert n.split(".")[0] not in ("tracing", "projection", "components"), f"{f}: imports {n}"
