"""philont: long-term, cross-session memory for AI agents in one SQLite file."""

from philont.errors import PhilontError

__all__ = ["PhilontError"]
__version__ = "0.1.0"
