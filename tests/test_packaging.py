"""The fresh-machine contract: README commands, CI script, dependency ranges, layering."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(python3 -m venv \.venv && [^\n]+)\n```", text)


def test_readme_gives_the_app_command_and_the_test_command():
    commands = readme_commands()
    venv = "python3 -m venv .venv && . .venv/bin/activate && python -m pip install -r requirements.txt && "
    assert f"{venv}streamlit run app.py" in commands
    assert f"{venv}python -m pytest -q" in commands


def test_ci_runs_exactly_the_readme_test_command():
    test_command = next(command for command in readme_commands() if "pytest" in command)
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


def _ranges(lines: list[str]) -> dict[str, str]:
    parsed = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        name = re.split(r"[<>=!~\[]", line, maxsplit=1)[0].strip().lower()
        parsed[name] = line[len(name):].strip()
    return parsed


def test_requirements_and_pyproject_agree_on_version_ranges():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # fedplan[opacus] pulls torch (a CUDA build of several GB from PyPI): optional, installed by .ci/run only
    lines = project["dependencies"] + [line for name, items in extras.items() if name not in ("all", "opacus")
                                       for line in items]
    declared = _ranges(lines)
    required = _ranges((ROOT / "requirements.txt").read_text().splitlines())
    assert required == declared and "opacus" not in required
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()
    assert extras["all"] == ["fedplan[app,sim,dask,symbolic,flower]"]


def test_the_core_needs_no_app_simulation_or_cluster_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = set(_ranges(project["dependencies"]))
    assert core == {"dp-accounting", "numpy", "scipy", "pyyaml"}


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) of every import in a file, relative imports resolved, ``from x import y`` read as
    ``x.y`` when that is a module of ours."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, id(node) in top_level))
            found += [(f"{node.module}.{alias.name}", id(node) in top_level) for alias in node.names]
    return found


def _module_files() -> dict[str, Path]:
    """fedplan's modules (as installed: ``fedplan.planner.cli``…) and their files in the checkout."""
    folders = {"fedplan": ROOT / "fedplan", "fedplan.bounds": ROOT / "bounds", "fedplan.planner": ROOT / "planner",
               "fedplan.app_pages": ROOT / "app_pages"}
    modules = {}
    for package, folder in folders.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join((package, *parts))] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """Module -> the fedplan modules it imports, anywhere in the file. A module-level import also runs the
    ``__init__`` of every package above the imported module (all but the root ``fedplan``, whose front-door
    functions import lazily and which nothing inside fedplan imports)."""
    modules = _module_files()
    graph = {}
    for name, path in modules.items():
        edges = set()
        for target, at_top in _imports(path):
            if target not in modules:
                continue
            edges.add(target)
            if at_top:
                parts = target.split(".")
                edges.update(".".join(parts[:depth]) for depth in range(2, len(parts)))
        graph[name] = edges - {name}
    return graph


def test_the_package_import_graph_has_no_loop():
    graph, state, stack = _import_graph(), {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                raise AssertionError("import loop: " + " -> ".join(stack[stack.index(target):] + [target]))
            if target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_simulations_and_bounds_import_no_adapter():
    graph = _import_graph()
    adapters = ("fedplan.planner.cli", "fedplan.app", "fedplan.app_pages")
    for name, edges in graph.items():
        if name.startswith(("fedplan.planner.simulate", "fedplan.bounds")):
            assert not [edge for edge in edges if edge.startswith(adapters)], name
        if name.startswith("fedplan.bounds"):
            assert all(edge.startswith("fedplan.bounds") for edge in edges), name


def test_bounds_is_pure_math():
    forbidden = {"streamlit", "altair", "pandas", "csv", "json", "yaml", "pathlib", "os", "sys", "io"}
    for path in (ROOT / "bounds").glob("*.py"):
        assert not ({module.split(".")[0] for module, _ in _imports(path)} & forbidden), path.name


def test_no_readme_or_docs_link_leaves_the_repository():
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        text = path.read_text()
        assert "../shared" not in text, path.name
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if re.match(r"[a-z]+://", target):
                continue
            assert (path.parent / target).resolve().is_relative_to(ROOT), (path.name, target)
            assert (path.parent / target).exists(), (path.name, target)
