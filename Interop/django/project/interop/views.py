"""Protected endpoint, counting token/revocation views, Django session login views, and the /debug/* hooks."""
import json
import os
import threading
from datetime import timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.contrib.auth import SESSION_KEY, authenticate, get_user_model, login
from django.contrib.sessions.models import Session
from django.http import HttpResponseNotAllowed, JsonResponse
from django.middleware.csrf import get_token
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import jwk_from_pem
from oauth2_provider import views as dot_views
from oauth2_provider.views import RevokeTokenView, TokenView

from . import stats

REALM = "interop"


def _json_body(content):
    try:
        value = json.loads(content or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class CountingTokenView(TokenView):
    """DOT's /o/token/, counting successes by grant_type and failures by error code."""

    def post(self, request, *args, **kwargs):
        request.body  # cache the raw body so request.POST stays readable after DOT
        response = super().post(request, *args, **kwargs)
        grant_type = request.POST.get("grant_type")
        body = _json_body(response.content)
        if response.status_code == 200:
            stats.token_success(grant_type, body.get("access_token"))
        else:
            stats.token_failure(grant_type, body.get("error"))
        return response


class CountingRevokeTokenView(RevokeTokenView):
    """DOT's RFC 7009 /o/revoke_token/, counting successful revocation requests."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:
            stats.add("revocations")
        return response


def _unauthorized(error):
    # RFC 6750 section 3.1: no error code when the request carried no bearer token.
    challenge = f'Bearer realm="{REALM}"'
    if error:
        challenge += f', error="{error}"'
    response = JsonResponse({"error": error or "unauthorized"}, status=401)
    response["WWW-Authenticate"] = challenge
    return response


def api_me(request):
    """GET /api/me: 200 {"user": ...} for a valid bearer token, else 401 with a challenge."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    authorization = request.headers.get("Authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer":
        stats.add("api_unauthorized")
        return _unauthorized(None)
    if not credentials.strip():
        stats.add("api_unauthorized")
        return _unauthorized("invalid_token")
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid or oauth_request.user is None:
        stats.add("api_unauthorized")
        return _unauthorized("invalid_token")
    stats.add("api_ok")
    token = oauth_request.access_token
    return JsonResponse(
        {
            "user": oauth_request.user.get_username(),
            "client_id": token.application.client_id,
            "scope": token.scope,
        }
    )


@csrf_exempt
def debug_stats(request):
    """GET /debug/stats: the counters, plus this server's pid and OAuth settings."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    body = stats.snapshot()
    body["pid"] = os.getpid()
    body["config"] = _config()
    return JsonResponse(body)


@csrf_exempt
def debug_reset(request):
    """POST /debug/reset: zero the counters."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    stats.reset()
    return JsonResponse(stats.snapshot())


_CONFIG_KEYS = {
    "access_token_expire_seconds": ("ACCESS_TOKEN_EXPIRE_SECONDS", int),
    "refresh_token_grace_period_seconds": ("REFRESH_TOKEN_GRACE_PERIOD_SECONDS", int),
    "refresh_token_reuse_protection": ("REFRESH_TOKEN_REUSE_PROTECTION", bool),
}
_config_lock = threading.Lock()


def _config():
    return {key: getattr(oauth2_settings, name) for key, (name, _) in _CONFIG_KEYS.items()}


@csrf_exempt
def debug_config(request):
    """GET /debug/config: the OAuth settings in force. POST a JSON subset to change them."""
    if request.method == "GET":
        return JsonResponse(_config())
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    try:
        changes = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"error": "body is not JSON"}, status=400)
    if not isinstance(changes, dict):
        return JsonResponse({"error": "body must be a JSON object"}, status=400)
    unknown = sorted(set(changes) - set(_CONFIG_KEYS))
    if unknown:
        return JsonResponse({"error": f"unknown keys: {unknown}", "known": sorted(_CONFIG_KEYS)}, status=400)
    for key, value in changes.items():
        kind = _CONFIG_KEYS[key][1]
        if kind is int and (type(value) is not int or value < 0):
            return JsonResponse({"error": f"{key} must be a non-negative integer"}, status=400)
        if kind is bool and type(value) is not bool:
            return JsonResponse({"error": f"{key} must be true or false"}, status=400)
    with _config_lock:
        for key, value in changes.items():
            settings.OAUTH2_PROVIDER[_CONFIG_KEYS[key][0]] = value
        oauth2_settings.reload()
    return JsonResponse(_config())


def _signing_keys():
    active = oauth2_settings.OIDC_RSA_PRIVATE_KEY
    inactive = oauth2_settings.OIDC_RSA_PRIVATE_KEYS_INACTIVE
    return {
        "active": jwk_from_pem(active).thumbprint(),
        "inactive": [jwk_from_pem(pem).thumbprint() for pem in inactive],
    }


@csrf_exempt
def debug_signing_keys(request):
    """GET /debug/signing_keys: the `kid` of the key DOT signs with and of the keys it only publishes.

    POST {"action": "rotate"}: DOT's key rotation (OIDC_RSA_PRIVATE_KEYS_INACTIVE): a fresh key signs ID tokens
    and JWT access tokens from now on, and the previous signing key stays in the JWKS as an inactive key, so the
    tokens it signed still verify. POST {"action": "retire_inactive"}: the inactive keys leave the JWKS.
    """
    if request.method == "GET":
        return JsonResponse(_signing_keys())
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    action = _json_body(request.body).get("action")
    if action not in ("rotate", "retire_inactive"):
        return JsonResponse({"error": "action must be rotate or retire_inactive"}, status=400)
    from .settings import new_oidc_private_key

    with _config_lock:
        provider = settings.OAUTH2_PROVIDER
        if action == "rotate":
            previous = provider["OIDC_RSA_PRIVATE_KEY"]
            provider["OIDC_RSA_PRIVATE_KEYS_INACTIVE"] = [previous, *provider.get("OIDC_RSA_PRIVATE_KEYS_INACTIVE", [])]
            provider["OIDC_RSA_PRIVATE_KEY"] = new_oidc_private_key()
        else:
            provider["OIDC_RSA_PRIVATE_KEYS_INACTIVE"] = []
        oauth2_settings.reload()
    return JsonResponse(_signing_keys())


@csrf_exempt
def debug_expire_access_tokens(request):
    """POST /debug/expire_access_tokens: make every live access token expired now.

    Lets clients cross an access-token expiry without waiting on the server's clock.
    Optional JSON body {"user": "alice"} limits it to one user.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    now = timezone.now()
    tokens = get_access_token_model().objects.filter(expires__gt=now)
    user = _json_body(request.body).get("user")
    if user:
        tokens = tokens.filter(user__username=user)
    expired = tokens.update(expires=now - timedelta(seconds=1))
    return JsonResponse({"expired": expired})


@csrf_exempt
def debug_age_revocations(request):
    """POST /debug/age_revocations {"seconds": N}: move every refresh-token revocation N s back.

    Lets clients step past REFRESH_TOKEN_GRACE_PERIOD_SECONDS without waiting.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    seconds = _json_body(request.body).get("seconds")
    if type(seconds) is not int or seconds < 0:
        return JsonResponse({"error": "seconds must be a non-negative integer"}, status=400)
    rows = get_refresh_token_model().objects.filter(revoked__isnull=False)
    aged = 0
    for row in rows:
        row.revoked = row.revoked - timedelta(seconds=seconds)
        row.save(update_fields=["revoked"])
        aged += 1
    return JsonResponse({"aged": aged})


# --- Django's own session authentication (the cookie-session interop) ---------------------------------------
#
# A JSON client of Django's session login, as a browser-less app must drive it: GET /session/csrf for the
# `csrftoken` cookie (and the same token in the body), then POST /session/login with that cookie, the token in
# `X-CSRFToken` and an `Origin` (Django's CsrfViewMiddleware checks all three on unsafe methods). The answer
# sets the HttpOnly `sessionid` cookie (and a rotated `csrftoken`). None of these views is CSRF-exempt.


def _session_user(request):
    user = request.user
    return {"id": user.get_username(), "username": user.get_username(), "email": user.email or None}


def _session_answer(request):
    # BetterAuth's get-session shape, which TokenKit's CookieSessionStrategy reads: {"session": {...}, "user": {...}}.
    expires = request.session.get_expiry_date().astimezone(dt_timezone.utc)
    return {
        "session": {
            "userId": request.user.get_username(),
            "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%S.") + f"{expires.microsecond // 1000:03d}Z",
        },
        "user": _session_user(request),
    }


@ensure_csrf_cookie
def session_csrf(request):
    """GET /session/csrf: sets the `csrftoken` cookie and returns the token ({"csrfToken": ...})."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    stats.add("session_csrf")
    return JsonResponse({"csrfToken": get_token(request)})


def session_login(request):
    """POST /session/login {"username", "password"} (JSON or form), CSRF-checked: Django's `login()`."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if request.content_type == "application/json":
        body = _json_body(request.body)
    else:
        body = request.POST
    username, password = body.get("username"), body.get("password")
    if not isinstance(username, str) or not isinstance(password, str):
        return JsonResponse({"error": "username and password are required"}, status=400)
    user = authenticate(request, username=username, password=password)
    if user is None:
        stats.add("session_login_failed")
        return JsonResponse({"error": "invalid credentials"}, status=401)
    login(request, user)
    stats.add("session_logins")
    return JsonResponse(_session_answer(request))


def session_get(request):
    """GET /session/get-session: the session ({"session": ..., "user": ...}) or `null` (200) without one."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    if not request.user.is_authenticated:
        stats.add("session_checks_null")
        return JsonResponse(None, safe=False)
    stats.add("session_checks_ok")
    return JsonResponse(_session_answer(request))


def session_notes(request):
    """The session-protected resource: 401 (no challenge) without a session.

    GET returns {"user": ..., "notes": [...]}; POST (CSRF-checked) appends {"note": "..."}.
    """
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    if not request.user.is_authenticated:
        stats.add("session_api_unauthorized")
        return JsonResponse({"error": "not signed in"}, status=401)
    notes = request.session.get("notes", [])
    if request.method == "POST":
        note = _json_body(request.body).get("note")
        if not isinstance(note, str):
            return JsonResponse({"error": "note must be a string"}, status=400)
        notes = notes + [note]
        request.session["notes"] = notes
    stats.add("session_api_ok")
    return JsonResponse({"user": request.user.get_username(), "notes": notes})


@csrf_exempt
def debug_delete_sessions(request):
    """POST /debug/delete_sessions {"user": "alice"}: delete that user's Django sessions server-side (every
    session without a body): a logout elsewhere, an admin action, a session store wiped."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    user = _json_body(request.body).get("user")
    deleted = 0
    for row in Session.objects.all():
        owner_id = row.get_decoded().get(SESSION_KEY)
        if user:
            owner = get_user_model().objects.filter(pk=owner_id).first() if owner_id else None
            if owner is None or owner.get_username() != user:
                continue
        row.delete()
        deleted += 1
    return JsonResponse({"deleted": deleted})


class DeviceAuthorizationView(dot_views.DeviceAuthorizationView):
    """DOT's device authorization endpoint, working round one incompatibility of the pinned versions: oauthlib 4.0.1's
    answer carries `scope`, which DOT 3.4.1's DeviceCodeResponse does not take (a TypeError, so a 500). RFC 8628
    section 3.2 has no `scope` member; it is dropped before DOT reads the answer."""

    def create_device_authorization_response(self, request):
        headers, response, status = super().create_device_authorization_response(request)
        if status == 200 and isinstance(response, dict):
            response.pop("scope", None)
        return headers, response, status
