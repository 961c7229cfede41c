"""The package stays navigable: short functions, modules of one concern, no import cycles.

Measured on the source with ``ast`` (nothing is imported): no function over 120 lines, no module
over 1,000 lines, and no cycle among the module-level imports of ``ropegeo`` modules.
"""

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "ropegeo"
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 1000

# Being split now; remove each entry when it is.
KNOWN_LONG_FUNCTIONS: set = set()
KNOWN_LONG_MODULES: set = set()


@functools.lru_cache(maxsize=None)
def _parse(path: Path, text: str) -> ast.Module:
    return ast.parse(text, filename=str(path))


def modules():
    # each module parsed once per test process (keyed on its text: an edit is parsed again); the
    # checks only read the trees
    for path in sorted(ROOT.rglob("*.py")):
        yield path, _parse(path, path.read_text(encoding="utf-8"))


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


# --------------------------------------------------------------------------------- private names
#: Shared internal helpers every module may use.
SHARED_PRIVATE = {"ropegeo._validate", "ropegeo._json"}
#: Private names still imported across modules, each until its owner makes it public.
#: Private names one module may import from another (none: a name shared across modules is public).
ALLOWED_PRIVATE: set = set()


def _target(name: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _same_subpackage(a: str, b: str) -> bool:
    """Both modules sit in one subpackage of ropegeo (e.g. ropegeo.behaviour.*), not at its top level."""
    pa, pb = a.split("."), b.split(".")
    return len(pa) > 2 and len(pb) > 2 and pa[1] == pb[1]


def private_imports(path: Path, tree: ast.Module) -> list:
    """``(importer, module, name)`` for each private ropegeo name a module takes from another module.

    Counted: ``from ropegeo.x import _name``, ``from ropegeo._x import name`` (a private module),
    and ``x._name`` where ``x`` is a ropegeo module imported under that name; anywhere in the module.
    Not counted: the shared helpers (``_validate``, ``_json``), imports within one subpackage.
    """
    name = module_name(path)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(name, path, node)
            if target.split(".")[0] != "ropegeo":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                is_module = (ROOT.parent / (full.replace(".", "/") + ".py")).exists() or \
                    (ROOT.parent / full.replace(".", "/") / "__init__.py").exists()
                module, attr = (full, None) if is_module else (target, alias.name)
                if is_module:
                    aliases[alias.asname or alias.name] = full
                found.append((name, module, attr))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ropegeo" and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append((name, aliases[node.value.id], node.attr))
    out = []
    for importer, module, attr in found:
        if module in SHARED_PRIVATE or module == importer or _same_subpackage(importer, module):
            continue
        private_module = any(p.startswith("_") and p != "__init__" for p in module.split(".")[1:])
        private_name = attr is not None and attr.startswith("_") and not attr.startswith("__")
        if private_module or private_name:
            out.append((importer, module, attr))
    return out


def test_no_private_imports_across_modules():
    bad = [hit for path, tree in modules() for hit in private_imports(path, tree) if hit not in ALLOWED_PRIVATE]
    assert not bad, "private names used across modules: " + ", ".join(
        f"{a} uses {m}" + (f".{n}" if n else "") for a, m, n in bad)


def test_the_private_import_finder_finds_one(tmp_path):
    src = ("from . import _validate as v\nfrom .gate_a import _resolve, gate_a\nfrom .widgets import _lab\n"
           "from . import margins\nx = margins._pair_margin\n")
    hits = private_imports(ROOT / "audit.py", ast.parse(src))
    assert ("ropegeo.audit", "ropegeo.gate_a", "_resolve") in hits
    assert ("ropegeo.audit", "ropegeo.widgets._lab", None) in hits
    assert ("ropegeo.audit", "ropegeo.margins", "_pair_margin") in hits
    assert not any(m == "ropegeo._validate" or n == "gate_a" for _, m, n in hits)
    inside = "from ._lab import Lab\nfrom .heads import _check_head\n"
    assert private_imports(ROOT / "widgets" / "kernel_lab.py", ast.parse(inside)) == []


# --------------------------------------------------------------------------------- limits
#: Modules left out of the MAX_* comparison (none).
LIMITS_SKIPPED: tuple = ()
#: Same name, different value, allowed (none).
KNOWN_LIMIT_CLASHES: set = set()


def _constant(node):
    """The value of a literal arithmetic expression (``2**48``, ``1 << 20``, ``1e6``), else None."""
    try:
        return eval(compile(ast.Expression(node), "<limit>", "eval"), {"__builtins__": {}}, {})
    except Exception:
        return None


def limits() -> dict:
    """``{name: {module: value}}`` for every public ``MAX_*`` assigned at a module's top level."""
    out = {}
    for path, tree in modules():
        name = module_name(path)
        if (name.split(".") + [""])[1].startswith(LIMITS_SKIPPED):
            continue
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id.startswith("MAX_"):
                    out.setdefault(t.id, {})[name] = _constant(node.value)
    return out


def test_no_two_limits_share_a_name_with_different_values():
    clashes = []
    for limit, where in limits().items():
        if len(set(where.values())) > 1 and (limit, frozenset(where)) not in KNOWN_LIMIT_CLASHES:
            clashes.append(f"{limit}: " + ", ".join(f"{m} = {val!r}" for m, val in sorted(where.items())))
    assert not clashes, "limits named alike with different values: " + "; ".join(clashes)


def test_known_limit_clashes_are_still_real():
    found = limits()
    for limit, where in KNOWN_LIMIT_CLASHES:
        values = {m: found.get(limit, {}).get(m) for m in where}
        assert len(set(values.values())) > 1, f"{limit} no longer clashes in {sorted(where)}: drop the entry"


def test_lab_bounds_match_their_javascript():
    """Every ``export const MAX_*`` of a lab's JavaScript equals the Python lab's limit of that name."""
    import importlib
    import re

    checked = 0
    for path in sorted((ROOT / "widgets").glob("[!_]*.py")):
        m = re.search(r'_esm = esm_source\("(lab_\w+\.js)"\)', path.read_text(encoding="utf-8"))
        if not m:
            continue
        js = (ROOT / "static" / m.group(1)).read_text(encoding="utf-8")
        lab = importlib.import_module(module_name(path))
        for name, value in re.findall(r"export const (MAX_\w+) = ([0-9.e+]+);", js):
            assert hasattr(lab, name), f"{m.group(1)} exports {name}, {module_name(path)} has none"
            assert float(value) == getattr(lab, name), (m.group(1), name)
            checked += 1
    assert checked >= 5
