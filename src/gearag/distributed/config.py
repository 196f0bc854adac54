"""Settings of a build on Ray (``gearag index --ray [ADDRESS]``).

They change where the work runs, never the index: they are not part of the
index's :class:`~gearag.config.IndexConfig`; the manifest records them under
``build_executor``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gearag.errors import ConfigError
from gearag.options import setting

#: ``--ray`` without a value: start a Ray instance on this machine.
LOCAL = "local"
_HOST_PORT = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d+$")


def is_address(text: str) -> bool:
    """Whether ``text`` is a Ray address: ``local``, ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``."""
    return text in (LOCAL, "auto") or text.startswith("ray://") or bool(_HOST_PORT.match(text))


def check_address(address: str) -> str:
    """``address`` if :func:`is_address`, else a one-line error."""
    if is_address(address):
        return address
    raise ConfigError(f"--ray: {address!r} is not an address (give none for a local instance, auto, "
                      "ray://HOST:PORT or HOST:PORT)")


@dataclass(frozen=True)
class RayConfig:
    """Where and how the extract and embed stages run on Ray."""

    #: ``local`` starts a Ray instance here (stopped after the build); ``auto``
    #: joins the cluster this machine belongs to (``ray start``, ``$RAY_ADDRESS``);
    #: ``ray://HOST:PORT`` connects through Ray Client.
    address: str = setting(LOCAL, "Ray address: local (start one here), auto, ray://HOST:PORT.", name="ray")
    #: Passages per extraction batch (one Ray Data batch, one actor call, one
    #: retry unit). Embedding batches are ``--embed-batch`` texts.
    batch_size: int = setting(64, "Passages per Ray extraction batch.", name="ray_batch_size", min=1)
    #: Actors per stage, each holding one CPU and loading the extractor or
    #: embedder once; ``None``: one per CPU of the cluster.
    workers: int | None = setting(None, "Ray actors per stage (default: one per CPU of the cluster).",
                                  name="ray_workers", min=1)
    #: How often a batch is retried: after an exception in it (in the same
    #: worker) and, separately, after its worker died (on a restarted worker).
    retries: int = setting(3, "Retries of a failed Ray batch (exception or dead worker).", name="ray_retries",
                           min=0)

    def __post_init__(self) -> None:
        check_address(self.address)
