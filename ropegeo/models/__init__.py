"""Models: reading a ``config.json`` as transformers runs it, and the shipped records.

``ropegeo.models.manifest`` reads a configuration (or a shipped record) into a
:class:`~ropegeo.models.manifest.RopeManifest`; ``model_types`` holds what each model type does
beyond its rope block; ``class_defaults`` what transformers fills in when a field is absent.
"""

from ropegeo.models.manifest import ConfigError, RopeManifest, load_model, read_config, resolve, shipped_models

__all__ = ["ConfigError", "RopeManifest", "load_model", "read_config", "resolve", "shipped_models"]
