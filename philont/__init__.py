"""philont: long-term, cross-session memory for AI agents in one SQLite file."""

from philont.errors import PhilontError
from philont.memory import Memory

__all__ = ["Memory", "PhilontError"]
__version__ = "0.1.0"
