"""Graphs for the page: an entity's bounded neighbourhood, and a step's beams with the evidence chain.

Both return ``{"nodes": [...], "edges": [...]}`` in the shape of
:class:`~gearag.server.models.GraphNode` / ``GraphEdge``: entities (and
literal values such as dates, which the triple graph does not link) and
passages are nodes; triples are labelled edges from subject to object;
``source`` edges tie a passage to the entities of its triples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from gearag.store.interface import IndexStore
from gearag.text import normalise_entity

_SCORE = re.compile(r"\s+\[-?[0-9.eE+-]+\]\s*$")
_TRIPLE = re.compile(r"^\((.*?); (.*?); (.*)\)$", re.DOTALL)
#: Edges per node on average before a neighbourhood stops growing (bounds dense hubs).
EDGES_PER_NODE = 4


def parse_triple(text: str) -> tuple[str, str, str] | None:
    """``"(s; p; o)"`` (the form traces use) → ``(s, p, o)``; None when it is not one."""
    m = _TRIPLE.match(text.strip())
    return (m.group(1), m.group(2), m.group(3)) if m else None


def parse_path(text: str) -> list[tuple[str, str, str]]:
    """A trace beam ``"(s; p; o) → (s; p; o)  [0.812]"`` → its triples."""
    body = _SCORE.sub("", text)
    return [t for t in (parse_triple(part) for part in body.split(" → ")) if t is not None]


def entity_ids(index: IndexStore) -> dict[str, int]:
    """Normalised entity name → entity id (built once per index)."""
    return index.cached("server:entity_ids", lambda: {name: i for i, name in enumerate(index.graph.entities)})


def _triple_rows(index: IndexStore) -> dict[tuple[str, str, str], int]:
    """(s, p, o) → the passage row of its first occurrence (built once per index)."""

    def build() -> dict[tuple[str, str, str], int]:
        t = index.triples
        out: dict[tuple[str, str, str], int] = {}
        for i in range(len(t)):
            out.setdefault((t.subjects[i], t.predicates[i], t.objects[i]), int(t.passage[i]))
        return out

    return index.cached("server:triple_rows", build)


def search_entities(index: IndexStore, query: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entities whose normalised name contains the normalised query: exact first, then prefix, then by degree."""
    q = normalise_entity(query)
    if not q:
        return []
    graph = index.graph
    hits = [(i, name) for i, name in enumerate(graph.entities) if q in name]
    hits.sort(key=lambda h: (h[1] != q, not h[1].startswith(q), -graph.degree(h[0]), h[1]))
    return [{"name": name, "degree": graph.degree(i)} for i, name in hits[:limit]]


class _Builder:
    """Accumulates nodes and edges with stable ids, at most ``max_nodes`` nodes."""

    def __init__(self, index: IndexStore, max_nodes: int) -> None:
        self.index = index
        self.max_nodes = max_nodes
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}
        self.truncated = False

    def full(self) -> bool:
        return len(self.nodes) >= self.max_nodes

    def node(self, key: str, label: str, kind: str, **extra: Any) -> str | None:
        if key not in self.nodes:
            if self.full():
                self.truncated = True
                return None
            self.nodes[key] = {"id": key, "label": label, "kind": kind, **extra}
        return key

    def entity(self, name: str) -> str | None:
        norm = normalise_entity(name)
        eid = entity_ids(self.index).get(norm)
        if eid is None:
            return self.node("v:" + (norm or name), name, "value")
        return self.node(f"e:{eid}", name, "entity")

    def passage(self, row: int) -> str | None:
        p = self.index.passages[row]
        return self.node(f"p:{row}", p.title or p.id, "passage", passage_id=p.id)

    def edge(self, source: str, target: str, label: str, kind: str, highlight: bool = False) -> None:
        key = f"{kind}:{source}|{label}|{target}"
        if key in self.edges:
            self.edges[key]["highlight"] = self.edges[key]["highlight"] or highlight
            return
        if len(self.edges) >= EDGES_PER_NODE * self.max_nodes:
            self.truncated = True
            return
        self.edges[key] = {"id": key, "source": source, "target": target, "label": label, "kind": kind,
                           "highlight": highlight}

    def triple(self, s: str, p: str, o: str, row: int | None, highlight: bool = False) -> None:
        a, b = self.entity(s), self.entity(o)
        if a is None or b is None:
            return
        self.edge(a, b, p, "triple", highlight)
        if row is not None:
            pid = self.passage(row)
            if pid is not None:
                self.edge(pid, a, "", "source")
        if highlight:
            self.nodes[a]["highlight"] = self.nodes[b]["highlight"] = True

    def out(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes.values()), "edges": list(self.edges.values()), "truncated": self.truncated}


def neighbourhood(index: IndexStore, entity: str, depth: int, max_nodes: int) -> dict[str, Any] | None:
    """Entities within ``depth`` triple hops of ``entity`` (breadth first, at most ``max_nodes`` nodes).

    None when the index has no such entity.
    """
    graph = index.graph
    start = entity_ids(index).get(normalise_entity(entity))
    if start is None:
        return None
    b = _Builder(index, max_nodes)
    b.node(f"e:{start}", entity.strip(), "entity", focus=True)
    frontier, seen = [start], {start}
    t = index.triples
    for _ in range(depth):
        following: list[int] = []
        for e in frontier:
            if b.full() and b.truncated:
                break
            tids = graph.entity_triples(e).tolist()
            for tid, fact in zip(tids, t.facts(tids), strict=True):  # one read per column, not per triple
                if b.full() and b.truncated:
                    break
                b.triple(fact.subject, fact.predicate, fact.object, int(t.passage[tid]))
                for other in (int(graph.head[tid]), int(graph.tail[tid])):
                    if other >= 0 and other not in seen:
                        seen.add(other)
                        following.append(other)
        frontier = following
        if not frontier:
            break
    if len(b.nodes) >= max_nodes and frontier:
        b.truncated = True
    return b.out()


def beams_graph(index: IndexStore, paths: Sequence[str], highlight: Iterable[Sequence[str]] = (),
                also: Iterable[Sequence[str]] = (), max_nodes: int = 120) -> dict[str, Any]:
    """A step's beams as a graph; triples in ``highlight`` (evidence, gist memory) are marked and drawn first.

    ``also`` adds further triples after the beams (the step's proximal triples, the gist memory):
    with PPR expansion (``graph=ppr``) a step has no beams, and these are what it worked from.
    """
    rows = _triple_rows(index)
    marked = {(t[0], t[1], t[2]) for t in highlight if len(t) == 3}
    b = _Builder(index, max_nodes)
    for s, p, o in sorted(marked):  # the evidence chain first, so the node limit never hides it
        b.triple(s, p, o, rows.get((s, p, o)), highlight=True)
    for path in paths:
        for s, p, o in parse_path(path):
            b.triple(s, p, o, rows.get((s, p, o)), highlight=(s, p, o) in marked)
    for t in also:
        if len(t) == 3:
            b.triple(t[0], t[1], t[2], rows.get((t[0], t[1], t[2])), highlight=(t[0], t[1], t[2]) in marked)
    return b.out()


def evidence_triples(evidence: Iterable[str]) -> list[tuple[str, str, str]]:
    return [t for t in (parse_triple(e) for e in evidence) if t is not None]
