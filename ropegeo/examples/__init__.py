"""Rotary implementations written the way model code writes them, shipped with the package so that
``python -m ropegeo gate-a ropegeo.examples.rope:llama2 ...`` runs from any folder, after any install.

``rope``: Llama 2, Llama 3.1, GPT-J and Llama 2 served in bfloat16 (correctly, and with its angles
formed in bfloat16), in plain numpy. ``CONFIG``: the path of Llama 3.1 8B's ``config.json`` (its
rotary fields), for ``--config PATH``.
"""

from pathlib import Path

__all__ = ["CONFIG"]

#: Llama 3.1 8B's ``config.json`` (meta-llama/Llama-3.1-8B, its rotary fields), shipped as a file.
CONFIG = Path(__file__).with_name("config.json")
