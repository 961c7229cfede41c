"""The package stays navigable: short functions, modules of one concern, no import cycles.

Measured on the source with ``ast`` (nothing is imported): no function over 120 lines, no module
over 1,000 lines, and no cycle among the module-level imports of ``ropegeo`` modules.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ropegeo"
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 1000

# Being split now; remove each entry when it is.
KNOWN_LONG_FUNCTIONS = set()
KNOWN_LONG_MODULES = {"scaling.py"}


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_function_over_120_lines():
    long = []
    for path, tree in modules():
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and (rel, node.name) not in KNOWN_LONG_FUNCTIONS:
                    long.append(f"{rel}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 120 lines: " + ", ".join(long)


def test_no_module_over_1000_lines():
    long = []
    for path, _ in modules():
        rel = str(path.relative_to(ROOT))
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES and rel not in KNOWN_LONG_MODULES:
            long.append(f"{rel} ({lines} lines)")
    assert not long, "modules over 1,000 lines: " + ", ".join(long)


def imports(path: Path, tree: ast.Module) -> set:
    """The ropegeo modules a module imports at module level (not inside functions or classes)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "ropegeo"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ropegeo":
                continue
            # "from . import x" or "from .pkg import mod" may name a submodule
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if (ROOT.parent / (sub.replace(".", "/") + ".py")).exists()
                        or (ROOT.parent / sub.replace(".", "/") / "__init__.py").exists() else target)
    out.discard(name)
    return out


def import_graph() -> dict:
    graph = {module_name(path): imports(path, tree) for path, tree in modules()}
    # importing a.b.c runs a/__init__ and a/b/__init__ first (except the packages the importer is in,
    # which are already being imported)
    for name, deps in graph.items():
        for dep in list(deps):
            parts = dep.split(".")
            deps |= {".".join(parts[:i]) for i in range(2, len(parts))}
        deps -= {name.rsplit(".", k)[0] for k in range(name.count(".") + 1)}
        deps.discard("ropegeo")  # the package's __init__ imports core modules only (checked below)
    return graph


def find_cycle(graph: dict):
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep, stack)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_core_package_imports_only_the_numpy_core():
    graph = import_graph()
    init = graph["ropegeo"]
    assert not any(m.startswith(("ropegeo.plots", "ropegeo.widgets", "ropegeo.exercises", "ropegeo.symbolic"))
                   for m in init)
