"""Models: reading a ``config.json`` as transformers runs it, and the shipped records."""

from ropegeo.models.manifest import ConfigError, RopeManifest, load_model, read_config, resolve, shipped_models

__all__ = ["ConfigError", "RopeManifest", "load_model", "read_config", "resolve", "shipped_models"]
