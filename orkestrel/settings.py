"""Django settings, 12-factor: everything that varies per deployment comes from the environment.

See the README for the variables. Defaults give a working single-process install on SQLite
with the in-memory channel layer.
"""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost", "testserver"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
)
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
# Local development gets a throwaway key; a deployment must set SECRET_KEY.
SECRET_KEY = env("SECRET_KEY", default="orkestrel-insecure-development-key-change-me")
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

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
    "channels",
    "agents",
    "conversations",
    "workspaces",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
WHITENOISE_USE_FINDERS = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "orkestrel API",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# The project's own settings, in one namespace.
ORKESTREL = {
    "MAX_MESSAGE_CHARS": env.int("ORKESTREL_MAX_MESSAGE_CHARS", default=100_000),
    "MAX_IMAGE_BYTES": env.int("ORKESTREL_MAX_IMAGE_BYTES", default=5 * 1024 * 1024),
    # Hosts ``http_fetch`` may reach even on private or loopback addresses.
    "HTTP_FETCH_ALLOW_HOSTS": env.list("ORKESTREL_HTTP_FETCH_ALLOW_HOSTS", default=[]),
    # Seconds between the offline demo model's words (0 in tests).
    "DEMO_WORD_DELAY": env.float("ORKESTREL_DEMO_WORD_DELAY", default=0.03),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    # httpx logs every request line at INFO; provider traffic is not operator news.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
