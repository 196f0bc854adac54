"""Distributed index builds (extra ``ray``): the per-passage stages as Ray Data batches.

``import gearag.distributed`` is light; Ray is imported when a
:class:`RayExecutor` starts (:func:`require_ray` checks it is installed).
"""

from gearag.distributed.config import RayConfig
from gearag.distributed.ray_executor import RayExecutor, require_ray

__all__ = ["RayConfig", "RayExecutor", "require_ray"]
