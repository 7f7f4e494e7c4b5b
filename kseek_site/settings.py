"""KernelSeek settings: one module, every deployment choice read from the environment.

DATABASE_URL   unset: SQLite in the data folder; e.g. postgres://user@127.0.0.1:5432/kernelseek
KSEEK_SQLITE_BUSY_TIMEOUT_S  on SQLite: how long a write waits for another's lock before it fails (20)
REDIS_URL      unset: in-memory channel layer (one server process); e.g. redis://127.0.0.1:6379/0
SECRET_KEY     unset: generated once into the data folder
KSEEK_LARGE_GAIN_RATIO  the gain after a question (best speedup after / before) that counts as large (1.2)
KSEEK_DATA_DIR where SQLite, the secret key and the generated admin password live (default: ./data); kept
               private: the folder mode 0700, the database 0600 (made so, or narrowed to it at every start)
DEBUG          off unless set to 1/true
ALLOWED_HOSTS  comma-separated (default: localhost, 127.0.0.1, [::1])
CSRF_TRUSTED_ORIGINS  comma-separated origins, for a deployment behind a proxy
KSEEK_TRUSTED_PROXIES  how many proxies stand in front and append to X-Forwarded-For (default 0: it is not read)
KSEEK_LOGIN_FAILURE_LIMIT, KSEEK_LOGIN_COOLOFF_MINUTES  wrong passwords per (username, address) before that pair
               is locked out (5), and for how long (15)
KSEEK_TRACE_UPLOAD_MAX_BYTES  the largest trace file the import takes (32 MiB); a released kernel's development
               trace is held to it decompressed (runs/services/development.py)
KSEEK_BEHIND_TLS_PROXY  1 where a TLS proxy stands in front (docs/deployment.md): secure cookies, HSTS, the SSL
               redirect, and the proxy's X-Forwarded-Proto trusted (default off: plain http, as `make run` serves)
KSEEK_HSTS_SECONDS  with KSEEK_BEHIND_TLS_PROXY: how long browsers keep to https (default 31536000, one year)
KSEEK_WEBHOOK_URL  where a JSON POST (Slack-compatible) goes when a run waits for review, succeeds or fails
               (default unset: none is sent; runs/notify.py)
KSEEK_SITE_URL  the dashboard's public address (https://kseek.example.org), for absolute run links in the
               webhook's notices (default unset: the links are paths)
KSEEK_CHANNEL_PREFIX  with REDIS_URL: the prefix of this site's channels and groups on Redis, so that sites
               sharing one Redis server do not hear each other (default: derived from SECRET_KEY, one per site)
"""

import os
from datetime import timedelta
from pathlib import Path

from kseek_site.envconfig import (
    PRIVATE_FOLDER_MODE,
    channel_layers_config,
    database_config,
    env_bool,
    env_float,
    env_http_url,
    env_int,
    env_list,
    narrow_mode,
    secret_key_from,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("KSEEK_DATA_DIR", BASE_DIR / "data")).resolve()
# Whoever makes it makes it 0700 (envconfig.private_data_folder); one an older version made 0755 is narrowed here.
narrow_mode(DATA_DIR, PRIVATE_FOLDER_MODE)

SECRET_KEY = secret_key_from(DATA_DIR)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",  # first, so that `runserver` serves ASGI (websockets) too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "runs",
    "questionbank",
]

MIDDLEWARE = [
    # Outermost: a HEAD's body is emptied after every other middleware has made it (kseek_site/head_requests.py).
    "kseek_site.head_requests.EmptyHeadBody",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires: it turns a lockout into the lockout page
]

ROOT_URLCONF = "kseek_site.urls"
ASGI_APPLICATION = "kseek_site.asgi.application"

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

DATABASES = {
    "default": database_config(
        os.environ.get("DATABASE_URL"),
        DATA_DIR,
        sqlite_busy_timeout_s=env_int("KSEEK_SQLITE_BUSY_TIMEOUT_S", 20, minimum=1),
    )
}
CHANNEL_LAYERS = channel_layers_config(
    os.environ.get("REDIS_URL"), prefix=os.environ.get("KSEEK_CHANNEL_PREFIX"), secret_key=SECRET_KEY
)
# Question effectiveness: a gain after a question at or above this ratio counts as a large gain.
KSEEK_LARGE_GAIN_RATIO = env_float("KSEEK_LARGE_GAIN_RATIO", 1.2, minimum=1.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Every password check (the login page, the admin's) goes through django-axes first: it refuses a locked-out
# (username, address) pair before the password is looked at, and records each failure in the database.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("KSEEK_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("KSEEK_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # one user's typos lock neither other users nor other places
AXES_RESET_ON_SUCCESS = True  # a right password clears that pair's count
# Tries made while locked out are refused without being counted, so the lock ends at the time the page says.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_CALLABLE = "kseek_site.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "kseek_site.login_throttle.client_ip"
# Behind a proxy, REMOTE_ADDR is the proxy's: set this to the number of proxies that append to X-Forwarded-For.
KSEEK_TRUSTED_PROXIES = env_int("KSEEK_TRUSTED_PROXIES", 0, minimum=0)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Served straight from the finders: no collectstatic step, and the files are the ones in the checkout.
# A deployment that wants collectstatic names its folder in KSEEK_STATIC_ROOT.
STATIC_ROOT = os.environ.get("KSEEK_STATIC_ROOT") or None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Uploads: a file part above FILE_UPLOAD_MAX_MEMORY_SIZE is written to a temporary file as it arrives (never held
# in memory); DATA_UPLOAD_MAX_MEMORY_SIZE bounds the other fields (file parts do not count towards it). The trace
# import refuses a file above KSEEK_TRACE_UPLOAD_MAX_BYTES before reading it, and reads the rest line by line.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440  # Django's default, 2.5 MiB, stated: the import relies on it
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# The optional webhook (runs/notify.py) and the address its links start with.
KSEEK_WEBHOOK_URL = env_http_url("KSEEK_WEBHOOK_URL")
KSEEK_SITE_URL = env_http_url("KSEEK_SITE_URL").rstrip("/")

KSEEK_TRACE_UPLOAD_MAX_BYTES = env_int("KSEEK_TRACE_UPLOAD_MAX_BYTES", 32 * 1024 * 1024, minimum=1)

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the dashboard's small scripts read it for their POSTs
X_FRAME_OPTIONS = "DENY"

# Behind a TLS proxy (docs/deployment.md): one switch, so that a deployment cannot turn on half of it. Off, the
# site serves plain http on loopback as `make run` does. On, the proxy's X-Forwarded-Proto says whether the
# browser's request came over https (the proxy must set it, overwriting any the client sent, and daphne must be
# reachable only through the proxy); plain http is redirected, the session and CSRF cookies are sent over https
# only, and browsers are told to keep to https (HSTS). `manage.py check --deploy` is then clean.
KSEEK_BEHIND_TLS_PROXY = env_bool("KSEEK_BEHIND_TLS_PROXY", False)
if KSEEK_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("KSEEK_HSTS_SECONDS", 365 * 24 * 3600, minimum=1)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # Before SecurityMiddleware's redirect: a proxy that does not set X-Forwarded-Proto is named in the log.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware"),
        "kseek_site.proxy_headers.MissingForwardedProtoWarning",
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # A 403 is expected: logged in one line, without its traceback (kseek_site/logfilters.py).
    "filters": {"expected_denials": {"()": "kseek_site.logfilters.ExpectedDenialsInOneLine"}},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django.request": {"filters": ["expected_denials"]},
    },
}
