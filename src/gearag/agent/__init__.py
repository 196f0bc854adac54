"""The GEAR agent (§5): multi-step retrieval with gist memory, reasoning and query rewriting.

Its settings are importable from here (``from gearag.agent import AgentConfig``) as from
:mod:`gearag.agent.config`; the loop itself is :mod:`gearag.agent.loop`.
"""

from gearag.agent.config import AgentConfig, AgentEngineConfig

__all__ = ["AgentConfig", "AgentEngineConfig"]
