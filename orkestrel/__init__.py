"""orkestrel: a Django application that runs LLM agents; the kit lives in ``orkestrel.core``."""

__version__ = "0.1.0"
