"""voiced: a plugin-based voice pipeline daemon for the home."""

__version__ = "0.1.0"
