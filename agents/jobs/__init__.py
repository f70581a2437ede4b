"""Agent jobs: the kit's durable queue over the database, run in the server process."""
