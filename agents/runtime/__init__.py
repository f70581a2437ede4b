"""The runtime: turns operator-configured rows into a live ``orkestrel.core`` agent."""
