"""No import circle among the scripts of tools/ (each can be read, and imported, on its own).

The scripts of tools/ and of its folders (tools/site/, tools/rise/) import each other by module name
(each puts tools/ on sys.path); an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _graph() -> dict[str, set[str]]:
    modules = {p.stem: p for p in [*TOOLS.glob("*.py"), *TOOLS.glob("*/*.py")]}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
        graph[name] = found & set(modules)
    return graph


def _cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = "done"
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_import_circle_in_tools():
    graph = _graph()
    assert "make_student_notebooks" in graph["navigation"]
    assert "navigation" not in graph["make_student_notebooks"]
    assert {"publish", "slide_metadata"} <= graph["build"], "tools/site/build.py is read too"
    assert "slide_metadata" in graph["present_setup"], "an import inside a function counts"
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_check_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
