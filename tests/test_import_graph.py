"""The project's import graph: no module-level cycles and no hidden (function-level) imports.

The layers themselves are an import-linter contract (``pyproject.toml``, run by ``make test``);
these two properties are what that contract cannot state.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("orkestrel", "agents", "conversations", "workspaces")


def _sources() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def _function_level_imports(path: Path) -> list[str]:
    """Project imports inside a function body (``AppConfig.ready`` is Django's exception)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = child.name
            if function is not None and isinstance(child, ast.Import | ast.ImportFrom):
                modules = (
                    [alias.name for alias in child.names]
                    if isinstance(child, ast.Import)
                    else [child.module or ""]
                )
                relative = isinstance(child, ast.ImportFrom) and child.level > 0
                ours = relative or any(m.split(".")[0] in PACKAGES for m in modules)
                allowed = function == "ready" and path.name == "apps.py"
                if ours and not allowed:
                    found.append(f"{path.relative_to(ROOT)}:{child.lineno} in {function}()")
            visit(child, name)

    visit(tree, None)
    return found


def test_no_project_module_is_imported_inside_a_function():
    hidden = [line for path in _sources() for line in _function_level_imports(path)]
    assert hidden == []


def test_no_module_imports_a_module_that_imports_it_back():
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)
    modules = sorted(m for m in graph.modules if ".migrations" not in m)
    # Tarjan's strongly connected components over the direct imports.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.find_modules_directly_imported_by(module):
            if target not in index:
                connect(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            connect(module)
    assert cycles == []
