"""The fresh-machine contract: README commands, CI script, dependency ranges, layering."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(python -m pip install -r requirements\.txt && [^\n]+)\n```", text)


def test_readme_gives_the_app_command_and_the_test_command():
    commands = readme_commands()
    assert "python -m pip install -r requirements.txt && streamlit run app.py" in commands
    assert "python -m pip install -r requirements.txt && python -m pytest -q" in commands


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
    declared = _ranges(project["dependencies"] + project["optional-dependencies"]["test"])
    required = _ranges((ROOT / "requirements.txt").read_text().splitlines())
    assert required == declared
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_bounds_is_pure_math():
    forbidden = {"planner", "streamlit", "altair", "pandas", "csv", "json", "yaml", "pathlib", "os", "sys", "io"}
    for path in (ROOT / "bounds").glob("*.py"):
        assert not (_imported_modules(path) & forbidden), path.name
