"""Dependencies point one way: no module of Pulse imports, however indirectly, a module that
imports it (deferred and type-checking imports count too; a package's own submodules importing
the package they re-export from do not); and sources know nothing of their consumers."""

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
