"""The packages' import graph has no circle: no module of course/ or autograder/ imports,
at its top or inside a function, a module that imports it back (issue 41: a circle makes the
order of imports matter and hides which module owns what)."""
import ast
from pathlib import Path

from tests.conftest import ROOT


def import_graph(root: Path, package: str) -> dict:
    """module -> the package's modules it imports (anywhere in its code)."""
    graph = {}
    for path in (root / package).rglob("*.py"):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level \
                    and node.module.split(".")[0] == package:
                for alias in node.names:       # `from course import lm` imports course.lm
                    name = f"{node.module}.{alias.name}"
                    imported.add(name if (root / Path(*name.split("."))).with_suffix(".py").exists()
                                 else node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names if a.name.split(".")[0] == package)
        graph[module] = imported - {module}
    return graph


def circles(graph: dict) -> list:
    """Every group of modules that reach each other (Tarjan's strongly connected components)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v] & graph.keys():
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_course_and_autograder_have_no_import_circle():
    for package in ("course", "autograder"):
        assert circles(import_graph(ROOT, package)) == [], package


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from pkg import a\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
