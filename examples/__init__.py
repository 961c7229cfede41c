"""Rotary implementations written the way model code writes them, for the README's Gate A examples."""
