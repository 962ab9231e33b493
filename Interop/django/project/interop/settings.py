"""Settings of the django-oauth-toolkit interop server. Test-only: never deploy this.

Startup values come from environment variables (see Interop/README.md); the OAuth
settings can be changed at run time through POST /debug/config.
"""
import os
import tempfile
from pathlib import Path


def _env_int(name, default):
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def _env_bool(name, default):
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be 0/1/true/false, got {raw!r}")


BASE_DIR = Path(__file__).resolve().parent.parent


def new_oidc_private_key():
    # A fresh RS256 key per process (nothing secret is checked in). Only the server process signs, so every
    # ID token of a run verifies against the JWKS that process publishes. POST /debug/signing_keys makes another.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()

# A fixed key is fine: the server only ever listens on 127.0.0.1 and holds test data.
SECRET_KEY = "interop-test-only-not-a-secret"
DEBUG = _env_bool("INTEROP_DJANGO_DEBUG", False)
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    # Django's own session authentication (the cookie-session interop: /session/*).
    "django.contrib.sessions",
    "oauth2_provider",
    "interop.apps.InteropConfig",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # CSRF applies to every unsafe request; DOT's token and revocation views and /debug/* are exempt.
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

# Django's defaults, spelled out because the cookie-session tests rely on them: a database-backed session in
# an HttpOnly `sessionid` cookie (two weeks), and a `csrftoken` cookie that a client echoes in `X-CSRFToken`.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
SESSION_COOKIE_NAME = "sessionid"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = 14 * 24 * 3600
CSRF_COOKIE_NAME = "csrftoken"
CSRF_HEADER_NAME = "HTTP_X_CSRFTOKEN"

ROOT_URLCONF = "interop.urls"
WSGI_APPLICATION = "interop.wsgi.application"
APPEND_SLASH = False

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("INTEROP_DB") or os.path.join(tempfile.gettempdir(), "interop-dot.sqlite3"),
        "OPTIONS": {
            # Concurrent refreshes from several client processes: wait for the write
            # lock instead of failing with "database is locked", and take it at the
            # start of every transaction (SQLite has no SELECT ... FOR UPDATE).
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}

# Cheap hashing (test-only): DOT hashes client secrets with the default hasher too, so
# every Basic-authenticated token request would otherwise pay ~0.5 s.
PASSWORD_HASHERS = ["interop.hashers.FastPBKDF2PasswordHasher"]

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = False

OAUTH2_PROVIDER = {
    "ACCESS_TOKEN_EXPIRE_SECONDS": _env_int("INTEROP_ACCESS_TOKEN_EXPIRE_SECONDS", 5),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": _env_int("INTEROP_REFRESH_TOKEN_GRACE_PERIOD_SECONDS", 0),
    "REFRESH_TOKEN_REUSE_PROTECTION": _env_bool("INTEROP_REFRESH_TOKEN_REUSE_PROTECTION", True),
    # `introspection`: DOT's /o/introspect/ also admits a bearer token with this scope (besides client authentication).
    "SCOPES": {"read": "Read", "write": "Write", "openid": "OpenID Connect", "introspection": "Introspect tokens"},
    "DEFAULT_SCOPES": ["read", "write"],
    # Counts reuse detections and grace-window replays for /debug/stats.
    "OAUTH2_VALIDATOR_CLASS": "interop.validators.CountingValidator",
    # Rebuild the oauthlib server per request so /debug/config changes to the
    # access-token lifetime take effect at once.
    "ALWAYS_RELOAD_OAUTHLIB_CORE": True,
    # OpenID Connect: ID tokens (RS256, `kid` from the key) for the authorization-code grant with `openid`;
    # discovery at /o/.well-known/openid-configuration, keys at /o/.well-known/jwks.json. The issuer is
    # derived from the request: http://127.0.0.1:<port>/o.
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": new_oidc_private_key(),
    # RP-initiated logout (end_session_endpoint in discovery), without the confirmation page when the ID token hint
    # names the signed-in user; DOT then also deletes that user's tokens for the client.
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    # The device authorization grant (RFC 8628) at /o/device-authorization/, for the client `interop-device`; the user
    # approves at /o/device/ (the tests post DOT's confirmation form). DOT does not answer slow_down.
    "OAUTH_DEVICE_VERIFICATION_URI": "http://127.0.0.1/o/device/",
    # RFC 9068 JWT access tokens (typ at+jwt, RS256 with the OIDC key above) for the client `interop-jwt` only;
    # every other client keeps DOT's opaque 30-character tokens (interop/access_tokens.py).
    "ACCESS_TOKEN_GENERATOR": "interop.access_tokens.generate",
    # Spelled out: without it oauthlib makes refresh tokens with ACCESS_TOKEN_GENERATOR too.
    "REFRESH_TOKEN_GENERATOR": "oauthlib.oauth2.rfc6749.tokens.random_token_generator",
}

# DOT's authorization view sends a visitor without a session here; the tests sign in first.
LOGIN_URL = "/session/login"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        # The password grant is deprecated by RFC 9700; DOT logs a warning per use.
        "oauth2_provider": {"handlers": ["console"], "level": "ERROR"},
    },
}
