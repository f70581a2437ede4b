"""Log lines as JSON objects, one a line (``LOG_FORMAT=json``), for a log system to read.

Each line carries the time (UTC, ISO 8601), level, logger and message, and the ids the
``LogContextFilter`` stamped on the record: ``request_id``, ``run_id``, ``conversation_id``
and ``trace_id`` (``null`` when the line belongs to none); an exception's traceback goes in
``exc_info``. Plain text stays the default (``make run``).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter"]

# What the filter stamps (``-`` when unknown), and the key each goes under.
_IDS = (
    ("request_id", "request_id"),
    ("run", "run_id"),
    ("conversation", "conversation_id"),
    ("trace_id", "trace_id"),
)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, with the request's, run's, conversation's and trace's ids."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for attribute, key in _IDS:
            value = getattr(record, attribute, None)
            line[key] = None if value in (None, "-") else value
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)
