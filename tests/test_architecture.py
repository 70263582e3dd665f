"""The house rules of the package layout (issue 35), checked from the code's own imports.

The import graph is computed with ast over every module of grove_gitops and the backends package, counting
every import: module level, inside functions, and under ``if TYPE_CHECKING`` (a circle hidden behind a
function-local import is still a circle: the two modules cannot be understood or tested one without the other).
The same graph, grouped by top-level module or package (a *room*), must stack without climbing back up but
where ``ALLOWED_CLIMBS`` says why; ``python tests/test_architecture.py`` prints the figures of the house.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "grove_gitops": ROOT / "grove_gitops",
    "grove_gitops_backends": ROOT / "backends" / "grove_gitops_backends",
}


def _module_name(package: str, base: Path, path: Path) -> str:
    parts = [package, *path.relative_to(base).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, base in PACKAGES.items():
        for path in sorted(base.rglob("*.py")):
            found[_module_name(package, base, path)] = path
    return found


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The innermost known module that ``name`` (a module or a name inside one) refers to."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, text: str, modules: dict[str, Path]) -> set[str]:
    """The package modules ``text`` (the code of ``module`` at ``path``) imports, wherever the
    import statement is: module level, a function body, an ``if TYPE_CHECKING`` block."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text, filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            # ``from pkg import mod`` imports the submodule when there is one, else a name of pkg.
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            target = _target(name, modules)
            # A module importing its own package runs the package's __init__, which Python does
            # first anyway; only arrows between rooms count.
            if target is not None and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (a package's __init__ counts as the package's module)."""
    modules = _modules()
    return {
        module: imports_of(module, path, path.read_text(encoding="utf-8"), modules) for module, path in modules.items()
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = counter[0]
                    counter[0] += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return components


def _a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle through the component's first module, for the failure message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for succ in sorted(graph[node] & members):
                if succ == start:
                    return [*paths[node], start]
                if succ not in paths:
                    paths[succ] = [*paths[node], succ]
                    nxt.append(succ)
        frontier = nxt
    return component


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for succ in graph[todo.pop()]:
            if succ not in seen:
                seen.add(succ)
                todo.append(succ)
    return seen


def test_the_graph_sees_every_kind_of_import() -> None:
    # Guards the checker itself: function-local, TYPE_CHECKING, relative and ``from pkg import mod``
    # imports all make arrows; a name imported from a module points at that module.
    modules = {name: Path(name) for name in ("grove_gitops", "grove_gitops.a", "grove_gitops.b", "grove_gitops.c")}
    modules |= {"grove_gitops.d": Path("d"), "grove_gitops.e": Path("e"), "grove_gitops.p": Path("p")}
    modules["grove_gitops.p.q"] = Path("grove_gitops/p/q.py")
    text = """
from typing import TYPE_CHECKING
from grove_gitops.b import Thing
from grove_gitops import c
import grove_gitops.d
if TYPE_CHECKING:
    from grove_gitops.e import Other
def later():
    from .p.q import f
"""
    found = imports_of("grove_gitops.a", Path("grove_gitops/a.py"), text, modules)
    assert found == {"grove_gitops.b", "grove_gitops.c", "grove_gitops.d", "grove_gitops.e", "grove_gitops.p.q"}
    cycles = find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycles == [["a", "b", "c"]]
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_import_circles() -> None:
    graph = import_graph()
    circles = [" -> ".join(_a_cycle(graph, component)) for component in find_cycles(graph)]
    assert circles == [], "import circles:\n" + "\n".join(circles)


#: What renders one source tree for a user: the CLI's render / validate, diff's sides, watch, the controller.
RENDER_ENTRIES = (
    "grove_gitops.cli.check",
    "grove_gitops.cli.render",
    "grove_gitops.cli.validate",
    "grove_gitops.diff.sides",
    "grove_gitops.gitops.watch",
    "grove_gitops.gitops.controller",
)


def _fleet(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == "grove_gitops.fleet" or m.startswith("grove_gitops.fleet."))


def test_the_single_cluster_render_does_not_pass_through_fleet() -> None:
    graph = import_graph()
    # The pipeline, top-down, knows nothing of fleets.
    assert _fleet(_reachable(graph, "grove_gitops.pipeline")) == []
    for entry in RENDER_ENTRIES:
        # No render entry point hands a source to the fleet package itself ...
        assert _fleet(graph[entry]) == [], entry
        # ... and each reaches the pipeline (directly or through the one dispatch, sourcetree).
        assert "grove_gitops.pipeline" in _reachable(graph, entry), entry


def test_only_the_dispatch_imports_fleet() -> None:
    graph = import_graph()
    importers = sorted(m for m, targets in graph.items() if _fleet(targets) and not _fleet({m}))
    assert importers == ["grove_gitops.sourcetree"]
    # The dispatch's single-cluster branch is the pipeline, called directly.
    assert "grove_gitops.pipeline" in graph["grove_gitops.sourcetree"]


def test_fleet_is_a_client_of_the_pipeline() -> None:
    graph = import_graph()
    fleet = _fleet(set(graph))
    assert [m for m in fleet if "grove_gitops.pipeline" in graph[m]] != []
    # Never the other way round: nothing the fleet builds on calls back into the dispatch.
    assert "grove_gitops.sourcetree" not in {t for m in fleet for t in _reachable(graph, m)}


def test_every_module_says_what_it_owns() -> None:
    # An opening docstring of at least a sentence; what it says is the reviewer's to judge.
    missing = [
        name
        for name, path in _modules().items()
        if len(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "") < 40
    ]
    assert missing == []


# --- Rooms, floors and the arrows between them ----------------------------------------------------
#
# A *room* is a top-level module or sub-package of grove_gitops (``grove_gitops.agent``,
# ``grove_gitops.render``); the backends package is one room. An *arrow* is a room importing another.
# With the listed climbs taken out the rooms form a stack: a room's *floor* is one above the highest
# room it imports, and every arrow points down. An arrow not listed below that closes a circle
# between rooms (a *climb* back up) fails the build.


def room_of(module: str) -> str:
    """The room ``module`` lives in."""
    if module.split(".")[0] == "grove_gitops_backends":
        return "grove_gitops_backends"
    return ".".join(module.split(".")[:2])


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """room -> the other rooms its modules import."""
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        rooms.setdefault(room_of(module), set()).update(room_of(t) for t in targets)
    for room, targets in rooms.items():
        targets.discard(room)
    return rooms


def floors(rooms: dict[str, set[str]]) -> dict[str, int]:
    """The floor of every room of an acyclic room graph: 0 for a room that imports no other."""
    found: dict[str, int] = {}

    def floor(room: str, path: tuple[str, ...]) -> int:
        assert room not in path, "a circle between rooms: " + " -> ".join((*path, room))
        if room not in found:
            found[room] = 1 + max((floor(t, (*path, room)) for t in rooms[room]), default=-1)
        return found[room]

    for room in sorted(rooms):
        floor(room, ())
    return found


def fewest_climbs(rooms: dict[str, set[str]]) -> set[tuple[str, str]]:
    """A smallest set of arrows whose removal leaves no circle between rooms (exact: per tangle,
    the best bottom-to-top order of its rooms by dynamic programming over subsets)."""
    climbs: set[tuple[str, str]] = set()
    for tangle in find_cycles(rooms):
        assert len(tangle) <= 16, f"a tangle of {len(tangle)} rooms is too large to measure: {tangle}"
        n = len(tangle)
        # best[mask]: the fewest climbs with the rooms of ``mask`` on the lowest floors (and how it
        # was reached); placing room v next, above them all, costs one climb for each placed room
        # that imports v.
        imports = [{tangle.index(t) for t in rooms[r] if t in tangle} for r in tangle]
        best: dict[int, tuple[int, int, int]] = {0: (0, -1, -1)}  # mask -> (climbs, last room, previous mask)
        for mask in range(1 << n):
            if mask not in best:
                continue
            for v in range(n):
                if mask & (1 << v):
                    continue
                cost = best[mask][0] + sum(1 for u in range(n) if mask & (1 << u) and v in imports[u])
                nxt = mask | (1 << v)
                if nxt not in best or cost < best[nxt][0]:
                    best[nxt] = (cost, v, mask)
        order: list[int] = []
        mask = (1 << n) - 1
        while mask:
            _, v, mask = best[mask]
            order.append(v)
        order.reverse()  # bottom first
        position = {v: i for i, v in enumerate(order)}
        climbs |= {(tangle[u], tangle[v]) for u in range(n) for v in imports[u] if position[v] > position[u]}
    return climbs


def measure(graph: dict[str, set[str]]) -> dict[str, int]:
    """The figures of the house: rooms, floors (with the fewest climbs taken out), arrows between
    rooms, climbs (the fewest arrows that must go for no circle between rooms) and circles between
    modules."""
    rooms = room_graph(graph)
    climbs = fewest_climbs(rooms)
    stacked = {room: {t for t in targets if (room, t) not in climbs} for room, targets in rooms.items()}
    return {
        "rooms": len(rooms),
        "floors": 1 + max(floors(stacked).values()),
        "arrows": sum(len(targets) for targets in rooms.values()),
        "climbs": len(climbs),
        "circles": len(find_cycles(graph)),
    }


#: The arrows between rooms that still climb back up, each with why it stays. The list can only
#: shrink: a climb not listed here fails, and so does a listed one that no longer climbs.
ALLOWED_CLIMBS: dict[tuple[str, str], str] = {
    ("grove_gitops.prcheck", "grove_gitops.cli"): (
        "prcheck/__main__.py is the `python -m grove_gitops.prcheck` entry point (the GitHub Action's"
        " documented call): an entry point runs the command, which sits on top by nature"
    ),
}


def test_the_measure_sees_rooms_floors_and_climbs() -> None:
    # Guards the measure itself on a small house: a.x and a.y are one room; b <-> c is a tangle
    # that one climb removes; d sits on top.
    graph = {
        "grove_gitops.a.x": {"grove_gitops.a.y"},
        "grove_gitops.a.y": set(),
        "grove_gitops.b": {"grove_gitops.a.x", "grove_gitops.c"},
        "grove_gitops.c": {"grove_gitops.b"},
        "grove_gitops.d": {"grove_gitops.b"},
        "grove_gitops_backends.e": {"grove_gitops.a.y"},
    }
    rooms = room_graph(graph)
    assert rooms["grove_gitops.a"] == set() and rooms["grove_gitops.b"] == {"grove_gitops.a", "grove_gitops.c"}
    assert len(fewest_climbs(rooms)) == 1
    assert measure(graph) == {"rooms": 5, "floors": 3, "arrows": 5, "climbs": 1, "circles": 1}
    assert floors({"p": {"q"}, "q": set()}) == {"p": 1, "q": 0}


def test_rooms_climb_back_up_only_where_listed() -> None:
    rooms = room_graph(import_graph())
    stacked = {room: {t for t in targets if (room, t) not in ALLOWED_CLIMBS} for room, targets in rooms.items()}
    tangles = [" -> ".join(_a_cycle(stacked, tangle)) for tangle in find_cycles(stacked)]
    assert tangles == [], "rooms that import each other (move the shared piece down a floor):\n" + "\n".join(tangles)


def test_every_listed_climb_still_climbs() -> None:
    rooms = room_graph(import_graph())
    stale = [arrow for arrow in ALLOWED_CLIMBS if arrow[1] not in rooms.get(arrow[0], set())
             or arrow[0] not in _reachable(rooms, arrow[1])]
    assert stale == [], f"no longer a climb, take it off ALLOWED_CLIMBS: {stale}"
    # And the list is as short as the house allows.
    assert len(ALLOWED_CLIMBS) == len(fewest_climbs(rooms))


def test_plan_and_the_read_models_do_not_import_the_agent() -> None:
    # The plan a reviewer reads and the migration's checks share the agent's read models, which sit
    # below all three in grove_gitops.readmodel; none of them climbs into the agent for them.
    graph = import_graph()
    above = ("grove_gitops.agent", "grove_gitops.plan", "grove_gitops.migrate", "grove_gitops.gitops")
    for room, forbidden in (("grove_gitops.plan", ("grove_gitops.agent",)), ("grove_gitops.readmodel", above)):
        climbs = sorted(
            f"{m} -> {t}" for m, targets in graph.items() if room_of(m) == room
            for t in targets if room_of(t) in forbidden
        )
        assert climbs == [], climbs
    assert "grove_gitops.readmodel" in room_graph(graph)["grove_gitops.plan"]


if __name__ == "__main__":
    print(measure(import_graph()))
