"""ASGI entry point: HTTP through Django, websockets through Channels."""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
# Django must be set up before anything imports models (consumers do).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agents.jobs.asgi import RestoreJobs  # noqa: E402
from agents.mcp_server import with_mcp  # noqa: E402
from agents.origins import SameOriginValidator  # noqa: E402
from agents.routing import websocket_urlpatterns  # noqa: E402
from agents.schedules.asgi import RunScheduler  # noqa: E402
from agents.socket_auth import socket_auth_stack  # noqa: E402
from orkestrel.request_gate import RequestGate  # noqa: E402
from orkestrel.request_threads import RequestThreads  # noqa: E402
from orkestrel.telemetry.asgi import traced  # noqa: E402

# Jobs a previous process left unfinished are restored when this one serves its first
# connection (Daphne sends no lifespan events) or at lifespan startup (uvicorn, hypercorn).
# The scheduler (due schedules, the daily purge) starts with them, when jobs run here.
# With traces on, every request and socket has its server span (``traced``).
application = traced(
    RunScheduler(
        RestoreJobs(
            ProtocolTypeRouter(
                {
                    # ``/mcp``: the MCP server (its own key and host checks, the SDK's body
                    # limit). Else a body over the limit or a URL with unstorable text refused
                    # unread (the gate); each request's sync work on a kept thread.
                    "http": with_mcp(RequestGate(RequestThreads(django_asgi_app))),
                    "websocket": SameOriginValidator(
                        socket_auth_stack(URLRouter(websocket_urlpatterns))
                    ),
                }
            )
        )
    )
)

# Everything loaded so far (Django, the apps, their modules) lives as long as the process:
# freezing it keeps the collector's full passes, which stall every stream at once, short.
gc.freeze()
