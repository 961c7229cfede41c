"""The package stays navigable: short functions, modules of one concern, no import cycles.

Measured on the source with ``ast`` (nothing is imported): no function over 120 lines, no module
over 1,000 lines, the whole package within its budget of 20,000 non-blank lines, and no cycle among
the module-level imports of ``ropegeo`` modules.
"""

import ast
import functools
import re
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


LINE_BUDGET = 20_000  # non-blank lines of Python in ropegeo/, every file counted


def non_blank_lines(root: Path) -> int:
    """Non-blank lines of every ``.py`` file below ``root`` (docstrings and comments count)."""
    return sum(sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
               for path in root.rglob("*.py"))


def test_package_within_its_line_budget():
    assert non_blank_lines(ROOT) <= LINE_BUDGET


def test_the_line_counter_counts_every_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text('"""doc"""\n\n   \nx = 1\n', encoding="utf-8")
    (tmp_path / "sub" / "b.py").write_text("# comment\n" * 3, encoding="utf-8")
    (tmp_path / "c.txt").write_text("not python\n", encoding="utf-8")
    assert non_blank_lines(tmp_path) == 5


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
    assert not any(m.startswith(("ropegeo.book.plots", "ropegeo.book.widgets", "ropegeo.book.exercises", "ropegeo.book.symbolic"))
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
    """Both modules sit in one subpackage of ropegeo (e.g. ropegeo.gates.a.*), not at its top level."""
    pa, pb = a.split("."), b.split(".")
    return len(pa) > 2 and pa[:-1] == pb[:-1]


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
    src = ("from ropegeo import _validate as v\nfrom ropegeo.gates.a.gate import _resolve, gate_a\n"
           "from ropegeo.book.widgets import _lab\nfrom ropegeo import margins\nx = margins._pair_margin\n"
           "from .c import _bad\n")
    hits = private_imports(ROOT / "gates" / "procedure.py", ast.parse(src))
    assert ("ropegeo.gates.procedure", "ropegeo.gates.a.gate", "_resolve") in hits
    assert ("ropegeo.gates.procedure", "ropegeo.book.widgets._lab", None) in hits
    assert ("ropegeo.gates.procedure", "ropegeo.margins", "_pair_margin") in hits
    assert not any(m == "ropegeo._validate" or n == "gate_a" for _, m, n in hits)
    assert not any(n == "_bad" for _, m, n in hits)  # one subpackage (ropegeo.gates.*)
    inside = "from ._lab import Lab\nfrom ropegeo.book.widgets._lab import STATIC\n"
    assert private_imports(ROOT / "book" / "widgets" / "kernel_lab.py", ast.parse(inside)) == []


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
    for path in sorted((ROOT / "book" / "widgets").glob("[!_]*.py")):
        m = re.search(r'_esm = esm_source\("(lab_\w+\.js)"\)', path.read_text(encoding="utf-8"))
        if not m:
            continue
        js = (ROOT / "book" / "static" / m.group(1)).read_text(encoding="utf-8")
        lab = importlib.import_module(module_name(path))
        for name, value in re.findall(r"export const (MAX_\w+) = ([0-9.e+]+);", js):
            assert hasattr(lab, name), f"{m.group(1)} exports {name}, {module_name(path)} has none"
            assert float(value) == getattr(lab, name), (m.group(1), name)
            checked += 1
    assert checked >= 5



# ---------------------------------------------------------------------------- one list of rules
#: Every spelling of an extension rule (``scaling.RULES``, ``"none"`` and ``scaling.RULE_ALIASES``).
RULE_WORDS = {"none", "raw", "pi", "interpolation", "linear", "ntk", "dynamic", "dynamic_ntk", "yarn", "longrope",
              "llama3"}


def spelled_rule_lists(path: Path, tree: ast.Module) -> list:
    """Module-level constants spelled out as a literal list of three or more extension rules."""
    out = []
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            continue  # names of functions, not of rules
        if isinstance(value, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts) \
                and sum(e.value in RULE_WORDS for e in value.elts) >= 3:
            out.append(f"{module_name(path)}:{node.lineno}")
    return out


def test_one_list_of_extension_rules():
    """``scaling.RULES`` is the one list; every other list of rules is derived from it (the concept,
    whatever the constant is called); each lab's JavaScript list equals its Python bounds."""
    import importlib
    import re

    bad = [hit for path, tree in modules() if module_name(path) != "ropegeo.scaling.rules"
           for hit in spelled_rule_lists(path, tree)]
    assert not bad, f"extension rules spelled out again (derive them from ropegeo.scaling.RULES): {bad}"
    from ropegeo import scaling

    static = ROOT / "book" / "static"
    core = re.search(r"export const RULES = \[([^\]]*)\]", (static / "ropegeo_core.js").read_text(encoding="utf-8"))
    assert tuple(re.findall(r'"(\w+)"', core.group(1))) == scaling.RULES
    checked = 0
    for path in sorted((ROOT / "book" / "widgets").glob("[!_]*.py")):
        m = re.search(r'_esm = esm_source\("(lab_\w+\.js)"\)', path.read_text(encoding="utf-8"))
        lab = importlib.import_module(module_name(path)) if m else None
        rules = next((c.BOUNDS for c in vars(lab).values() if "rule" in getattr(c, "BOUNDS", {})), {}) if lab else {}
        if "rule" not in rules:
            continue
        js = (static / m.group(1)).read_text(encoding="utf-8")
        name = re.search(r"pick\(p\.rule, (\w+),", js).group(1)
        listed = re.search(rf"const {name} = \[([^\]]*)\]", js).group(1)
        assert tuple(re.findall(r'"(\w+)"', listed)) == tuple(rules["rule"]), (m.group(1), name)
        assert set(rules["rule"]) <= set(scaling.NAMED_RULES), path.name
        checked += 1
    assert checked >= 4


def test_the_rule_list_finder_finds_one(tmp_path):
    src = ('OK = ("none", "linear")\nMINE = ("raw", "pi", "ntk")\nalso: tuple = ["yarn", "llama3", "dynamic"]\n'
           '__all__ = ["linear", "ntk", "yarn"]\n')
    path = ROOT / "book" / "x.py"
    assert spelled_rule_lists(path, ast.parse(src)) == ["ropegeo.book.x:2", "ropegeo.book.x:3"]

# --------------------------------------------------------------------------------- layers
#: The floors of the package, from the ground up: a module may import its own floor and those below.
#: Core (top-level modules and the rule table, ``ropegeo.scaling``: a RotaryOperator holds its rule)
#: < models < toy < gates < book, cli.
FLOORS = ("core|ropegeo.scaling", "ropegeo.models", "ropegeo.toy", "ropegeo.gates",
          "ropegeo.book|ropegeo.cli|ropegeo.examples")


def floor(module: str) -> int:
    for i, names in enumerate(FLOORS):
        if any(module == n or module.startswith(n + ".") for n in names.split("|")):
            return i
    if module == "ropegeo.__main__":
        return len(FLOORS) - 1
    return 0


def test_every_import_runs_down_the_floors():
    up = [f"{a} -> {b}" for a, deps in import_graph().items() for b in deps if floor(b) > floor(a)]
    assert not up, "imports that run back up: " + ", ".join(sorted(up))


def test_the_floors_know_every_subpackage():
    packages = {p.parent.relative_to(ROOT.parent).as_posix().replace("/", ".") for p in ROOT.glob("*/__init__.py")}
    named = {n for f in FLOORS for n in f.split("|")} - {"core"}
    assert packages == named, f"a subpackage without a floor: {sorted(packages - named)}"


def test_import_ropegeo_loads_the_core_only():
    """``import ropegeo`` loads no gate, trainer, figure or configuration reader."""
    import subprocess
    import sys

    code = "import sys, ropegeo; print(' '.join(m for m in sys.modules if m.startswith('ropegeo')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT.parent).stdout.split()
    assert loaded and all(floor(m) == 0 for m in loaded), loaded


#: Imports inside functions are for optional dependencies only (the book's extras, torch).
OPTIONAL_IMPORTS = {"tqdm", "torch", "sympy"}


def deferred_imports(tree: ast.Module) -> list:
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    out += [(node.lineno, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    out.append((node.lineno, "." * node.level + (node.module or "")))
    return [(line, m) for line, m in out if m.split(".")[0] not in OPTIONAL_IMPORTS]


def test_no_deferred_imports_but_optional_dependencies():
    bad = [f"{path.relative_to(ROOT)}:{line} {m}" for path, tree in modules() for line, m in deferred_imports(tree)]
    assert not bad, "imports inside functions (hoist them, or name the optional dependency): " + ", ".join(bad)


def test_the_deferred_import_finder_finds_one():
    tree = ast.parse("def f():\n    from ropegeo.gates import c\n    import tqdm\n")
    assert deferred_imports(tree) == [(2, "ropegeo.gates")]


# --------------------------------------------------------------------------------- one name per concept
#: Public names several modules define on purpose, each the same idea: every lab's ``reference``
#: computes that lab's numbers with ropegeo (the browser tests call it by this name).
SHARED_PROTOCOL_NAMES = {"reference"}
#: Names that must not name the head width (``head_dim`` does) or the model width (``d_model`` does).
WIDTH_ALIASES = {"d", "dim", "d_head", "head_width"}


def public_definitions() -> dict:
    out = {}
    for path, tree in modules():
        name = module_name(path)
        if name.rpartition(".")[2].startswith("_"):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                out.setdefault(node.name, []).append(name)
    return out


def test_no_public_name_means_two_things():
    twice = {n: m for n, m in public_definitions().items() if len(m) > 1 and n not in SHARED_PROTOCOL_NAMES}
    assert not twice, f"public names defined in several modules: {twice}"


def _own_nodes(fn):
    """The nodes of a function's body, without those of the functions and classes it defines."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def _called(node) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def softmax_copies(tree) -> list:
    """Functions that compute a softmax, whatever their name: ``exp`` of scores shifted by their
    maximum (``exp(x - x.max())``, ``exp(x - top)`` with ``top = x.max()``, or ``x -= top`` /
    ``x = x - top`` then ``exp(x)``), in a function that also sums (the normaliser)."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = list(_own_nodes(fn))
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        has_max = lambda e: any(isinstance(c, ast.Call) and _called(c) in ("max", "amax") or (  # noqa: E731
            isinstance(c, ast.Attribute) and c.attr == "reduceat" and getattr(c.value, "attr", "") == "maximum")
            for c in ast.walk(e))
        tops = {t.id for n in nodes if isinstance(n, ast.Assign) and has_max(n.value)
                for t in n.targets if isinstance(t, ast.Name)}
        shifted = lambda e: has_max(e) or bool(_names(e) & tops)  # noqa: E731
        moved = {n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Sub)
                 and isinstance(n.target, ast.Name) and shifted(n.value)}
        moved |= {t.id for n in nodes if isinstance(n, ast.Assign) and isinstance(n.value, ast.BinOp)
                  and isinstance(n.value.op, ast.Sub) and shifted(n.value.right)
                  for t in n.targets if isinstance(t, ast.Name)}
        exp_of_shift = any(_called(c) == "exp" and c.args and (
            isinstance(c.args[0], ast.BinOp) and isinstance(c.args[0].op, ast.Sub) and shifted(c.args[0].right)
            or bool(_names(c.args[0]) & moved)) for c in calls)
        sums = any(_called(c) in ("sum", "nansum") or (isinstance(c.func, ast.Attribute) and c.func.attr == "reduceat"
                   and getattr(c.func.value, "attr", "") == "add") for c in calls)
        if exp_of_shift and sums:
            found.append(fn.name)
    return found


#: Labelled controls for :func:`softmax_copies`: inline softmaxes it must find (the copies the
#: package held before they moved to ``ropegeo.softmax``) and code it must leave alone.
SOFTMAX_COPIES = {
    "one_line": "def f(x):\n    w = np.exp(x - x.max())\n    return w / w.sum()",
    "named_top": "def f(rows):\n    top = rows.max(axis=1, keepdims=True)\n    p = np.exp(rows - top)\n"
                 "    z = p.sum(axis=1)\n    return p / z[:, None]",
    "in_place": "def f(scores):\n    scores -= scores.max(axis=1, keepdims=True)\n    w = np.exp(scores)\n"
                "    return w / w.sum(axis=1)",
    "reassigned": "def f(z):\n    z = z - z.max()\n    p = np.exp(z)\n    p /= p.sum()\n    return p",
    "segments": "def f(e, starts, row):\n    top = np.maximum.reduceat(e, starts)\n    e -= top[row]\n"
                "    np.exp(e, out=e)\n    return e / np.add.reduceat(e, starts)[row]",
    "method": "class A:\n    def attend(self, s):\n        e = np.exp(s - np.max(s, axis=-1, keepdims=True))\n"
              "        return e / e.sum(axis=-1, keepdims=True)",
}
NOT_SOFTMAX = {
    "phasor": "def f(theta):\n    turn = np.exp(1j * theta)\n    return max(turn.real.sum(), 0)",
    "no_shift": "def f(x):\n    return np.exp(x).sum()",
    "shift_no_sum": "def f(x):\n    return np.exp(x - x.max())",
    "log_sum_exp": "def f(s):\n    return np.logaddexp.accumulate(s)",
    "caller": "def f(x):\n    return softmax(x).sum()",
}


def test_softmax_copies_finds_inline_softmaxes():
    """The concept check has labelled controls: it finds every inline copy and nothing else."""
    assert {k for k, src in SOFTMAX_COPIES.items() if softmax_copies(ast.parse(src))} == set(SOFTMAX_COPIES)
    assert not {k for k, src in NOT_SOFTMAX.items() if softmax_copies(ast.parse(src))}


def test_one_softmax():
    """One softmax: only ``ropegeo/softmax.py`` computes one (found by what the code does, not by name)."""
    where = {m for n, ms in public_definitions().items() if "softmax" in n for m in ms}
    copies = [f"{module_name(p)}.{name}" for p, tree in modules() if module_name(p) != "ropegeo.softmax"
              for name in softmax_copies(tree)]
    assert where == {"ropegeo.softmax"} and not copies, (where, copies)
    assert set(softmax_copies(ast.parse((ROOT / "softmax.py").read_text()))) >= {"softmax", "softmax_rows"}


def test_one_name_for_the_head_width():
    bad = []
    for path, tree in modules():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                bad += [f"{module_name(path)}.{node.name}({a.arg})" for a in args if a.arg in WIDTH_ALIASES]
    assert not bad, "a width parameter under another name than head_dim / d_model: " + ", ".join(bad)


#: Names of the schedule's width; every function that takes one and the base takes the width first.
SCHEDULE_WIDTHS = {"head_dim", "rotary_dim", "d", "rotaryDim", "headDim"}


def base_before_width(tree: ast.Module) -> list[str]:
    """Public top-level functions that take the base before the width (``frequencies(head_dim, base)`` is the order)."""
    bad = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            widths = [i for i, n in enumerate(names) if n in SCHEDULE_WIDTHS]
            if "base" in names and widths and widths[0] > names.index("base"):
                bad.append(node.name)
    return bad


def js_base_before_width(text: str) -> list[str]:
    """The same for the exported functions of the labs' JavaScript."""
    bad = []
    for name, params in re.findall(r"export function (\w+)\(([^)]*)\)", text):
        names = [p.split("=")[0].strip() for p in params.split(",")]
        widths = [i for i, n in enumerate(names) if n in SCHEDULE_WIDTHS]
        if "base" in names and widths and widths[0] > names.index("base"):
            bad.append(name)
    return bad


def test_the_width_comes_before_the_base():
    bad = [f"{module_name(p)}.{name}" for p, tree in modules() for name in base_before_width(tree)]
    static = ROOT / "book" / "static"
    bad += [f"{js.name}:{name}" for js in sorted(static.glob("*.js")) for name in js_base_before_width(js.read_text())]
    assert not bad, "the base before the width (frequencies(head_dim, base) is the order): " + ", ".join(bad)


def test_the_width_order_finders_find_one():
    tree = ast.parse("def f(base, head_dim): pass\ndef g(head_dim, base): pass\ndef _h(base, rotary_dim): pass\n"
                     "def k(x, *, base=1.0, rotary_dim=None): pass")
    assert base_before_width(tree) == ["f", "k"]
    js = "export function ntk(base, d, factor) {}\nexport function ok(d, base) {}\nfunction hidden(base, d) {}"
    assert js_base_before_width(js) == ["ntk"]


def test_modules_export_only_what_they_define():
    """Only package faces (``__init__.py``) re-export; a module's ``__all__`` lists its own names."""
    bad = []
    for path, tree in modules():
        if path.name == "__init__.py":
            continue
        defined, exported = set(), []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defined.add(n.id)
                if isinstance(t, ast.Name) and t.id == "__all__":
                    exported = [e.value for e in node.value.elts]
        bad += [f"{module_name(path)}.{n}" for n in exported if n not in defined]
    assert not bad, "names re-exported outside a package face: " + ", ".join(bad)
