"""The REST API for integrations (DRF): API keys, conversations, runs over SSE, workspaces."""
