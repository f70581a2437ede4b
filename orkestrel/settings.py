"""Django settings, 12-factor: everything that varies per deployment comes from the environment.

See the README for the variables. Defaults give a working single-process install on SQLite
with the in-memory channel layer.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
)
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
# ``make run`` writes a random key to the git-ignored .env once; ``make test`` exports one. A
# known key lets anyone forge sessions, so without one only a DEBUG server starts (and
# ``check --deploy`` still flags its key).
SECRET_KEY = env("SECRET_KEY", default="")
# The bearer token Prometheus sends to read ``/metrics`` (README, "Metrics"); blank: staff only.
METRICS_TOKEN = env("METRICS_TOKEN", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (any long random string, e.g. "
            "from `python -c 'import secrets; print(secrets.token_urlsafe(50))'`), or run "
            "`make run` once, which writes one to .env for this checkout."
        )
    SECRET_KEY = "django-insecure-orkestrel-debug-only-key"
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

# HTTPS. All off by default (``make run`` serves plain HTTP on localhost); a deployment behind
# TLS turns them on, and ``manage.py check --deploy`` is clean once it has (see the README).
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# Health probes often come over plain HTTP from inside, with no proxy header: answer them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Behind a TLS-terminating proxy: ``HTTP_X_FORWARDED_PROTO,https`` (the header as Django
# spells it, and the value that means HTTPS). Only set it when the proxy always sets the header.
_proxy_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_header and len(_proxy_header) != 2:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. 'HTTP_X_FORWARDED_PROTO,https'; "
        f"got {','.join(_proxy_header)!r}"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1]) if _proxy_header else None

# Every page is served with this policy. Scripts and styles come from files on this server;
# the admin's few inline ``<style>`` blocks and the API docs' init script carry the request's
# nonce (the ``csp`` context processor). ``data:`` images: the empty favicon and Swagger UI's
# icons. ``connect-src 'self'`` covers the chat's same-origin websocket.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "corsheaders",
    "orkestrel",
    "agents",
    "conversations",
    "workspaces",
]

MIDDLEWARE = [
    # First, so every answer (a redirect, a refusal, a preflight) carries ``X-Request-ID``.
    "orkestrel.middleware.RequestScopeMiddleware",
    # Before anything that answers on its own: a preflight is answered here, and any answer
    # to an allowed origin gets its CORS headers (``CORS_ALLOWED_ORIGINS``, off by default).
    "corsheaders.middleware.CorsMiddleware",
    # ``orkestrel.middleware``'s are Django's with their hooks on the event loop
    # (``orkestrel.checks`` runs the deployment checks that look for Django's by path).
    "orkestrel.middleware.SecurityMiddleware",
    "orkestrel.middleware.ContentSecurityPolicyMiddleware",
    "orkestrel.middleware.StaticFilesMiddleware",
    "orkestrel.middleware.SessionMiddleware",
    "orkestrel.middleware.CommonMiddleware",
    "orkestrel.middleware.CsrfViewMiddleware",
    "orkestrel.middleware.AuthenticationMiddleware",
    "orkestrel.middleware.MessageMiddleware",
    "orkestrel.middleware.XFrameOptionsMiddleware",
    "orkestrel.middleware.PrivateCacheControlMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# They say Django's own middleware is missing from ``MIDDLEWARE``: ours stands for it, and
# ``orkestrel.checks`` runs the checks that look for it (``orkestrel.security.W00N``).
SILENCED_SYSTEM_CHECKS = [
    "security.W001",
    "security.W002",
    "security.W003",
    "security.W010",
    "security.W013",
]

ROOT_URLCONF = "orkestrel.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]

ASGI_APPLICATION = "orkestrel.asgi.application"
WSGI_APPLICATION = "orkestrel.wsgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
# Reuse connections: the ASGI server runs its database work on one thread, and a new
# connection per call was a third of that thread's time under load.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the chat UI read while a run writes; the timeout rides out short write locks.
    # IMMEDIATE takes the write lock at BEGIN: a deferred transaction that reads and then
    # writes fails at once with "database is locked" when another writer got there first
    # (the timeout never applies to that upgrade), which two servers on one file hit daily.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
    "DATABASE_POOL", default=True
):
    # Under ASGI Django runs each sync view in a thread of the request's own, so a persistent
    # connection never outlives its request: without a pool every API request connected anew
    # (3.4 ms here, and a server process forked by PostgreSQL). Django's pool takes the place
    # of ``CONN_MAX_AGE``, which it refuses beside it.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN", default=2),
        "max_size": env.int("DATABASE_POOL_MAX", default=20),
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=30.0),
    }
# Database threads a burst of run starts may use at once (``orkestrel.db.Lanes``): PostgreSQL
# serves several connections at a time; SQLite has one writer, so its starts stay on the one
# database thread whatever this says.
DATABASE_LANES = (
    env.int("DATABASE_LANES", default=4)
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    else 1
)

REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default 5 s socket timeout equals channels-redis's blocking read:
            # without this, every idle socket's receive times out and the socket is dropped.
            # redis-py 8 caps a pool at 100 connections by default, and a busy server makes
            # bursts of concurrent layer calls (sockets joining, runs announcing and
            # publishing): past 100 they failed with "Too many connections". Keep processes
            # x this under Redis's maxclients (10,000 by default).
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": None,
                        "max_connections": env.int("REDIS_MAX_CONNECTIONS", default=1_000),
                    }
                ],
                "capacity": 10_000,
                "expiry": 60,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            # The default capacity of 100 drops frames silently under a fast stream.
            "CONFIG": {"capacity": 10_000, "expiry": 60},
        }
    }

# django-axes: after AXES_FAILURE_LIMIT failed logins for one username from one address, that
# pair is refused (even with the right password) until the cool-off has passed.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only a deployment that runs collectstatic sets STATIC_ROOT; otherwise WhiteNoise serves
# straight from the app and project static folders, with no build step.
STATIC_ROOT = env("STATIC_ROOT", default=None)
# collectstatic writes a gzip twin of every text file (WhiteNoise serves it to browsers that
# take gzip): the chat's first load is about a third of its size on the wire.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if STATIC_ROOT
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Collected files are served from STATIC_ROOT (with their gzip twins), not the source folders.
WHITENOISE_USE_FINDERS = not STATIC_ROOT

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    # API keys (``Authorization: Bearer <key>``) for programs; the session for the browser,
    # with CSRF enforced on its writes.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "agents.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["agents.api.permissions.ScopedKey"],
    "DEFAULT_THROTTLE_CLASSES": ["agents.api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env("API_THROTTLE_RATE", default="120/min")},
    # DRF's, refusing JSON nested too deep and text PostgreSQL cannot hold (400s, not 500s).
    "DEFAULT_PARSER_CLASSES": ["agents.api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "agents.api.errors.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "orkestrel API",
    "DESCRIPTION": (
        "Conversations, runs (followed over Server-Sent Events), workspaces and jobs of "
        "orkestrel agents. Authenticate with `Authorization: Bearer <api key>`."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page works offline: Swagger UI's assets are served from this server.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Named apart from the quotas' ``action``, another enum of that field name.
    "ENUM_NAME_OVERRIDES": {"InputActionEnum": "orkestrel.protocol.INPUT_ACTIONS"},
}

# CORS for browser front ends on other origins (django-cors-headers), for the two APIs only:
# none unless ``CORS_ALLOWED_ORIGINS`` names them (``https://app.example.com,...``). Programs
# send an API key, never cookies, so no credentials; a page may read the ids and limits.
CORS_ALLOWED_ORIGINS = env.list("CORS_ALLOWED_ORIGINS", default=[])
CORS_URLS_REGEX = r"^/(api|v1)/"
CORS_ALLOW_METHODS = ["DELETE", "GET", "OPTIONS", "PATCH", "POST", "PUT"]
CORS_ALLOW_HEADERS = ["authorization", "content-type", "last-event-id", "x-request-id"]
CORS_ALLOW_CREDENTIALS = False
CORS_EXPOSE_HEADERS = [
    "Location",
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-Request-ID",
]

_celery_broker = env("CELERY_BROKER_URL", default="")

# The project's own settings, in one namespace.
ORKESTREL = {
    "MAX_MESSAGE_CHARS": env.int("ORKESTREL_MAX_MESSAGE_CHARS", default=100_000),
    "MAX_IMAGE_BYTES": env.int("ORKESTREL_MAX_IMAGE_BYTES", default=5 * 1024 * 1024),
    # Documents a user attaches (PDF, DOCX, text): their size, and a PDF's pages (README).
    "MAX_DOCUMENT_BYTES": env.int("ORKESTREL_MAX_DOCUMENT_BYTES", default=10 * 1024 * 1024),
    "MAX_DOCUMENT_PAGES": env.int("ORKESTREL_MAX_DOCUMENT_PAGES", default=100),
    # Replies one user may have running at once, across every process (0: no cap).
    "MAX_RUNS_PER_USER": env.int("ORKESTREL_MAX_RUNS_PER_USER", default=20),
    # How deep a tree of delegated agent jobs may go (the ``delegate`` tool).
    "DELEGATE_MAX_DEPTH": env.int("ORKESTREL_DELEGATE_MAX_DEPTH", default=2),
    # Seconds between looks at a delegated child's row while its parent's card shows it.
    "DELEGATE_PROGRESS_SECONDS": env.float("ORKESTREL_DELEGATE_PROGRESS_SECONDS", default=1.0),
    # Seconds at least between the output reports of a running command tool (its card's tail).
    "COMMAND_PROGRESS_SECONDS": env.float("ORKESTREL_COMMAND_PROGRESS_SECONDS", default=0.5),
    # Seconds a tool call that ran out of time has to clean up before it is killed (at most 60).
    "TOOL_CLEANUP_SECONDS": env.float("ORKESTREL_TOOL_CLEANUP_SECONDS", default=2.0),
    # The largest API request body: room for a message's eight images in base64, and an import.
    "MAX_REQUEST_BYTES": env.int("ORKESTREL_MAX_REQUEST_BYTES", default=64 * 1024 * 1024),
    # Hosts ``http_fetch`` may reach even on private or loopback addresses.
    "HTTP_FETCH_ALLOW_HOSTS": env.list("ORKESTREL_HTTP_FETCH_ALLOW_HOSTS", default=[]),
    # Globs of the environment variable names an endpoint key or an HTTP tool header may be
    # read from, beside *_API_KEY and *_TOKEN; never one this file reads (agents.validators).
    "KEY_VARIABLES": env.list("ORKESTREL_KEY_VARIABLES", default=[]),
    # Seconds between the offline demo model's words (0 in tests).
    "DEMO_WORD_DELAY": env.float("ORKESTREL_DEMO_WORD_DELAY", default=0.03),
    # Where agent jobs run: "workers" (Celery's; the default once CELERY_BROKER_URL is set) or
    # "process" (the web process that took the job, as without a broker).
    "JOBS_ON": env("ORKESTREL_JOBS_ON", default="workers" if _celery_broker else "process"),
    # A job's holder beats this often; a job whose beat is older than the staleness is
    # taken over (its process or worker is gone): a lost worker's job moves within seconds.
    "JOB_HEARTBEAT_SECONDS": env.float("ORKESTREL_JOB_HEARTBEAT_SECONDS", default=2.0),
    "JOB_STALE_SECONDS": env.float("ORKESTREL_JOB_STALE_SECONDS", default=10.0),
    # Where chat and API runs execute: "web" (the process that took the message) or "workers"
    # (Celery's, on the job leases above; web processes then only hold sockets and streams).
    "RUNS_ON": env("ORKESTREL_RUNS_ON", default="web"),
    # Days each kind of record is kept (README, "Retention"); unset or 0: for ever. A profile's
    # ``retain_<kind>_days`` overrides these for its conversations and jobs.
    "RETENTION_DAYS": {
        kind: env.int(f"ORKESTREL_RETAIN_{kind.upper()}_DAYS", default=None)
        for kind in (
            "conversations",
            "runs",
            "run_events",
            "approvals",
            "decisions",
            "tool_failures",
            "jobs",
        )
    },
    # When the daily purge runs (a cron expression, UTC), on the scheduler's tick.
    "PURGE_CRON": env("ORKESTREL_PURGE_CRON", default="30 3 * * *"),
    # How often the scheduler looks for due schedules (seconds): in the server process when
    # jobs run there, on every Celery worker when they run on workers.
    "SCHEDULE_TICK_SECONDS": env.float("ORKESTREL_SCHEDULE_TICK_SECONDS", default=10.0),
}
if ORKESTREL["RUNS_ON"] not in ("web", "workers"):
    raise ImproperlyConfigured(
        f"ORKESTREL_RUNS_ON is {ORKESTREL['RUNS_ON']!r}: it must be 'web' or 'workers'."
    )
_runs_need = {
    "CELERY_BROKER_URL": (_celery_broker, "the broker that hands them runs"),
    "REDIS_URL": (REDIS_URL, "the channel layer their frames reach the web processes through"),
}
_runs_missing = [f"{name} ({why})" for name, (value, why) in _runs_need.items() if not value]
if ORKESTREL["RUNS_ON"] == "workers" and _runs_missing:
    raise ImproperlyConfigured(
        "ORKESTREL_RUNS_ON=workers runs chats on Celery workers: set "
        + " and ".join(_runs_missing)
        + "."
    )

# Celery (README, "Workers"): read by ``orkestrel.celery`` as ``<name>`` for each
# ``CELERY_<NAME>``. Without a broker nothing is sent and no worker is needed.
CELERY_BROKER_URL = _celery_broker or None
# A job's outcome lives on its row; nothing reads task results.
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", default="orkestrel")
# A message is acknowledged once its job has settled; a worker lost mid-job leaves it on the
# broker (and its job's lease expires: another worker takes the job over).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A job that loses the broker connection runs on and settles on its row; its message comes
# back and finds the job settled (or held), which does nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Each thread takes one message at a time: a waiting job stays on the broker for any worker.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Jobs wait on model servers, not on the CPU: threads, each blocking on the job it handed to
# the worker's one event loop, many per process (``celery worker -c`` changes how many).
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = 32
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis only: seconds before a message a lost worker had taken is delivered again. A job the
# worker had started moves sooner, when its lease expires (ORKESTREL_JOB_STALE_SECONDS).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each line names the request it was written for (``X-Request-ID``) and the run, when
    # there is one: `` [request_id=… run=…]`` (``orkestrel.request_scope``).
    "filters": {"context": {"()": "orkestrel.request_scope.LogContextFilter"}},
    # ``LOG_FORMAT=json``: one JSON object a line with the ids as keys (README, "Logs").
    "formatters": {
        "named": {"format": "%(levelname)s %(name)s: %(message)s%(context)s"},
        "json": {"()": "orkestrel.telemetry.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            "formatter": "json" if env("LOG_FORMAT", default="text") == "json" else "named",
        }
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    # httpx logs every request line at INFO; provider traffic is not operator news. Nor is
    # django-axes' banner at every start (its lockouts and failures still log).
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},
    },
}

# Django's own cap on a request body read into memory (2.5 MB by default) would refuse an API
# message carrying the images it documents; the API refuses a body over this with a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = ORKESTREL["MAX_REQUEST_BYTES"]
