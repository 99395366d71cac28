"""PyTensor's module path for the configuration object:
``from opweave.configdefaults import config`` is :data:`opweave.config`."""

from __future__ import annotations

from opweave.configparser import config

__all__ = ["config"]
