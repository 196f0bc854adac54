"""The triple graph's linking rules, one place for a full build and for the union an add extends.

Which triple endpoints become entities (GEAR §3: entities link triples into a graph): named ones, unless
the corpus has almost no capitalised endpoints (lower-cased text), where every endpoint links; and not the
hubs, endpoints in more than ``GraphConfig.max_entity_share`` of the passages, which would link everything.
"""

from __future__ import annotations

#: Leading subjects (and as many objects) sampled to decide whether the corpus names its endpoints.
NAMED_SAMPLE = 5000
#: Below this share of names in that sample every endpoint links (``link_entities=all``).
MIN_NAMED_SHARE = 0.05
#: A hub is in more than this many passages, however small the corpus.
MIN_HUB_PASSAGES = 20


def too_few_named(named: int, sampled: int) -> bool:
    """Whether ``named`` of ``sampled`` endpoints is too few for name-only linking."""
    return bool(sampled) and named < MIN_NAMED_SHARE * sampled


def hub_cap(max_entity_share: float, n_passages: int) -> float:
    """Passages an endpoint may be in before it is a hub."""
    return max(MIN_HUB_PASSAGES, max_entity_share * n_passages)
