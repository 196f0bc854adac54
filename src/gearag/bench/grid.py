"""The rows of the bench table: which method runs with which options, per dataset and embedder.

Table-2 layout (GEAR paper): each base retriever alone, with NaiveGE and with
SyncGE; then the multi-step systems and the peers. Rows whose method is not
registered (``titlelink``, a SiReRAG pool) are left out, so the grid follows
the registry. Ablations add the settings the papers ablate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gearag.bench.datasets import Dataset
from gearag.registry import REGISTRY

#: Methods whose rows carry the dataset's step budget (GEAR App. B.1: 4 MuSiQue, 2 2Wiki/HotpotQA).
STEPPED = ("gear", "ircot", "hipporag-ircot")


@dataclass(frozen=True)
class Row:
    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)
    #: Only the first N questions (expensive settings).
    limit: int | None = None
    ablation: bool = False


def grid(ds: Dataset, embedder: str, *, ablations: bool = True) -> list[Row]:
    """Every row for one dataset and embedder, in table order."""
    rows: list[Row] = []
    for base in ("bm25", "dense", "hybrid"):
        rows.append(Row(base, base))
        rows.append(Row(f"{base} + NaiveGE", "naivege", {"base": base}))
        rows.append(Row(f"{base} + SyncGE-offline", "syncge", {"base": base}))
    for name in REGISTRY.names("method"):
        if name == "titlelink":
            rows.append(Row("title-link", name))
    rows.append(Row("IRCoT (bm25)", "ircot", {"base": "bm25"}))
    rows.append(Row("HippoRAG", "hipporag"))
    rows.append(Row("HippoRAG 2", "hipporag2"))
    rows.append(Row("HippoRAG w/ IRCoT", "hipporag-ircot"))
    rows.append(Row("GEAR-offline (bm25)", "gear", {"base": "bm25"}))
    for name in REGISTRY.names("method"):
        if name.startswith("sirerag"):
            rows.append(Row(f"SiReRAG ({name})", name))
    if ablations:
        rows += [
            # What moved the offline numbers, each switched off (PPR over the passage graph, resolution, passage
            # nodes, the chain agent, the output ranking; docs/benchmarks-log.md, er_dev section); "beams" is
            # GEAR's Algorithm 1 + Eq. 3 as printed.
            Row("bm25 + SyncGE-offline, Alg. 1 beams (PPR off)", "syncge", {"base": "bm25", "graph": "beams"},
                ablation=True),
            Row("bm25 + SyncGE-offline, PPR + Alg. 1 fused", "syncge", {"base": "bm25", "graph": "both"},
                ablation=True),
            Row("bm25 + SyncGE-offline, resolution off", "syncge", {"base": "bm25", "about_weight": 0.0},
                ablation=True),
            Row("bm25 + SyncGE-offline, passage nodes off", "syncge", {"base": "bm25", "passage_nodes": False},
                ablation=True),
            Row("GEAR-offline, Eq. 9 output", "gear", {"base": "bm25", "final": "rrf"}, ablation=True),
            Row("GEAR-offline, Alg. 1 + Eq. 9 (PPR off)", "gear", {"base": "bm25", "graph": "beams", "final": "rrf"},
                ablation=True),
            Row("GEAR-offline, resolution off", "gear", {"base": "bm25", "about_weight": 0.0}, ablation=True),
            Row("GEAR-offline, chain agent off", "gear", {"base": "bm25", "chain_agent": False}, ablation=True),
            # Table 4's diversity ablation and our neighbour scope, on Algorithm 1 (they do not touch PPR).
            Row("bm25 + SyncGE-offline (beams), no diversity", "syncge",
                {"base": "bm25", "graph": "beams", "diversity": False}, ablation=True),
            Row("bm25 + SyncGE-offline (beams), Alg. 1 scope", "syncge",
                {"base": "bm25", "graph": "beams", "scope": "all"}, ablation=True),
            Row("HippoRAG, no node specificity", "hipporag", {"node_specificity": False}, ablation=True),
            Row("HippoRAG, no synonym edges", "hipporag", {"synonym_neighbours": 0}, ablation=True),
            Row("HippoRAG 2, no passage seeds", "hipporag2", {"passage_weight": 0.0}, ablation=True),
        ]
        if embedder != "wordllama":
            # Exact neural path scores re-encode every candidate path: measured on 100 questions.
            rows.append(Row("bm25 + SyncGE-offline, approx. path scores (100 q)", "syncge",
                            {"base": "bm25", "scoring": "sum"}, limit=100, ablation=True))
            rows.append(Row("bm25 + SyncGE-offline, exact path scores (100 q)", "syncge",
                            {"base": "bm25", "scoring": "exact"}, limit=100, ablation=True))
    out = []
    for row in rows:
        options = dict(row.options)
        if row.method in STEPPED:
            options["max_steps"] = ds.max_steps
        if embedder != "wordllama" and row.method in ("naivege", "syncge", "gear") and "scoring" not in options:
            options["scoring"] = "sum"  # the default grid uses the cheap approximation for neural embedders
        out.append(Row(row.label, row.method, options, row.limit, row.ablation))
    return out


#: Named row selections for ``--methods``. ``llm``: the rows whose retrieval an LLM engine plays — GEAR, SyncGE,
#: IRCoT, HippoRAG 2, and GEAR as the paper prints it (Alg. 1 beams, Eq. 9 output; an ablation row, so only
#: with ``--ablations``).
PRESETS: dict[str, tuple[str, ...]] = {
    "llm": ("GEAR-offline (bm25)", "bm25 + SyncGE-offline", "IRCoT (bm25)", "HippoRAG 2",
            "GEAR-offline, Alg. 1 + Eq. 9 (PPR off)"),
}


def select(rows: list[Row], methods: str | None) -> list[Row]:
    """Rows whose method (registry name) or label is in the comma-separated ``methods``, or that a preset name
    (:data:`PRESETS`) lists; all when None."""
    if not methods:
        return rows
    wanted = {m.strip() for m in methods.split(",") if m.strip()}
    for name in wanted - PRESETS.keys():
        if name not in {r.method for r in rows} and name not in {r.label for r in rows}:
            REGISTRY.entry("method", name)  # a one-line error naming the choices for an unknown method
    for preset in wanted & PRESETS.keys():
        wanted = (wanted - {preset}) | set(PRESETS[preset])
    return [r for r in rows if r.method in wanted or r.label in wanted]
