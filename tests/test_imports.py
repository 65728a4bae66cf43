"""Dependencies point one way: no module of Pulse imports, however indirectly, a module that
imports it (deferred and type-checking imports count too; a package's own submodules importing
the package they re-export from do not); sources know nothing of their consumers; and no two
packages under pulse/ import each other.

For that last rule the units are the first level under pulse/: each package, a directory of Python
files with or without an ``__init__.py`` (pulse/inbound/, with every module beneath it at any depth),
and each single module (pulse/config.py, pulse/pause.py).
pulse/__init__.py belongs to none. Two units are tied when a file of each imports the other: every
``import`` and ``from ... import`` in a file counts, wherever it stands (at the top, in a function,
under ``if TYPE_CHECKING``), a relative one resolved, and ``from pulse import config`` names the
unit ``config``. Imports within a unit do not count.
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pulse", "actors", "schedules")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def imports(found: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in found.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            graph[name] |= {t for t in targets if t in found and t != name and not name.startswith(t + ".")}
    return graph


def reached(graph: dict[str, set[str]], module: str) -> set[str]:
    """The modules ``module`` imports, however indirectly."""
    found: set[str] = set()
    stack = [module]
    while stack:
        for other in graph[stack.pop()] - found:
            found.add(other)
            stack.append(other)
    return found


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


DOMAINS = ("pulse.oncall", "pulse.cleanup", "pulse.uptime", "pulse.metrics", "pulse.calculated", "pulse.notifications")

# (importer, imported): no module of the first package imports, however indirectly, one of the second.
# Metrics polls and uptime checks store their values and know nothing of what reads them (the
# calculated domain's triggers mark what a value feeds); the calculated domain's claim does not
# depend on how the loop claims; on-call writes what a page needs into its notifications, which
# deliver it as any other; each domain registers its own gauges (`pulse.exporter` imports them),
# and the telemetry core knows none.
FORBIDDEN = [
    ("pulse.metrics", "pulse.calculated"),
    ("pulse.uptime", "pulse.calculated"),
    ("pulse.calculated", "pulse.recurring.loop"),
    ("pulse.notifications", "pulse.oncall"),
    *(("pulse.telemetry", domain) for domain in DOMAINS),
]


def forbidden(graph: dict[str, set[str]]) -> list[str]:
    """The imports `FORBIDDEN` rules out, as "module -> imported"."""
    return [
        f"{module} -> {other}"
        for importer, imported in FORBIDDEN
        for module in list(graph)
        if within(module, importer)
        for other in sorted(reached(graph, module))
        if within(other, imported)
    ]


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(group)

    for module in list(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it():
    assert cycles(imports(modules())) == []


def test_no_domain_imports_one_that_consumes_it():
    found = modules()
    assert "pulse.telemetry.gauges" in found and "pulse.notifications.delivery" in found
    assert forbidden(imports(found)) == []


def test_a_forbidden_import_is_found_however_indirect():
    graph = defaultdict(set, {"pulse.uptime.record": {"pulse.db"}, "pulse.db": {"pulse.calculated.due"}})
    assert forbidden(graph) == ["pulse.uptime.record -> pulse.calculated.due"]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def named(path: Path, package: Path) -> str:
    """The module ``path`` is, under the directory ``package`` holds (``pulse.inbound.app``)."""
    return ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path, module: str) -> set[str]:
    """Every module (or name) an import statement anywhere in ``path`` names, relative ones resolved:
    ``from pulse import config, db`` names ``pulse``, ``pulse.config`` and ``pulse.db``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def ties(root: Path) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """The units under ``root``/pulse that import each other: for each pair (in name order), the
    files of the first that import the second, and of the second that import the first."""
    package = root / "pulse"
    units = {p.name for p in package.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    units |= {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    importers: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        module = named(path, package)
        if module == "pulse":
            continue
        own = module.split(".")[1]
        named_units = {name.split(".")[1] for name in imported(path, module) if name.startswith("pulse.")}
        for other in sorted(named_units & units - {own}):
            importers[own, other].append(path.relative_to(root).as_posix())
    return {(a, b): (importers[a, b], importers[b, a]) for a, b in sorted(importers) if a < b and (b, a) in importers}


def problems(found: dict[tuple[str, str], tuple[list[str], list[str]]]) -> list[str]:
    """A line for each tie ``found``, naming a file of each side."""
    return [
        f"{first(forth)} imports pulse.{b}, and {first(back)} imports pulse.{a}"
        for (a, b), (forth, back) in found.items()
    ]


def first(files: list[str]) -> str:
    return files[0] + (f" (and {len(files) - 1} more)" if len(files) > 1 else "")


def test_no_two_packages_import_each_other():
    assert problems(ties(ROOT)) == []


def test_a_tie_is_found_however_deep_or_deferred(tmp_path):
    """A tie is found through a function's import, a relative one, a type-checking one, a package's
    submodule and a package without ``__init__.py``; an import one way only, or within a unit, is
    none."""
    files = {
        "pulse/__init__.py": "",
        "pulse/inbound/__init__.py": "from pulse.inbound import app\n",
        "pulse/inbound/deep/server.py": "def serve():\n    from pulse.heartbeats.routes import routes\n",
        "pulse/heartbeats/routes.py": "from ..inbound import tokens\n",
        "pulse/config.py": "from pulse import db\n",
        "pulse/db.py": "import pulse.pause\n",
        "pulse/pause.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pulse.db import Database\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = ties(tmp_path)
    assert found == {
        ("db", "pause"): (["pulse/db.py"], ["pulse/pause.py"]),
        ("heartbeats", "inbound"): (["pulse/heartbeats/routes.py"], ["pulse/inbound/deep/server.py"]),
    }
    assert problems(found) == [
        "pulse/db.py imports pulse.pause, and pulse/pause.py imports pulse.db",
        "pulse/heartbeats/routes.py imports pulse.inbound, and pulse/inbound/deep/server.py imports pulse.heartbeats",
    ]
