"""In-process counters behind GET /debug/stats (one server process, many threads)."""
import hashlib
import threading

_lock = threading.Lock()


def _zero():
    return {
        # Successful token-endpoint responses, by grant_type.
        "password_grants": 0,
        "refresh_grants": 0,
        # Successful refresh responses that handed out a pair already handed out before
        # (grace-window replay or a concurrent duplicate); included in refresh_grants.
        "refresh_grants_replayed": 0,
        # Successful RFC 7009 revocation requests (200, whether or not the token existed).
        "revocations": 0,
        # Failed refresh attempts answered with invalid_grant (reuse detections included).
        "reuse_detections_or_invalid_grants": 0,
        # Failed refresh attempts that presented a rotated-out or revoked refresh token
        # while REFRESH_TOKEN_REUSE_PROTECTION was on and its family still had a live
        # refresh token: DOT revoked the whole family (the session died). Presenting a
        # token of an already dead family again is an invalid_grant, not a new detection.
        "reuse_detections": 0,
        # Refreshes that presented an already rotated refresh token and were honoured
        # because it was within REFRESH_TOKEN_GRACE_PERIOD_SECONDS.
        "grace_replays": 0,
        # Failed token-endpoint responses by "<grant_type>:<error>".
        "token_failures": {},
        # Protected endpoint outcomes.
        "api_ok": 0,
        "api_unauthorized": 0,
        # Django session authentication (/session/*).
        "session_csrf": 0,
        "session_logins": 0,
        "session_login_failed": 0,
        "session_checks_ok": 0,
        "session_checks_null": 0,
        "session_api_ok": 0,
        "session_api_unauthorized": 0,
    }


_counters = _zero()
_refresh_pairs_seen = set()


def snapshot():
    """A deep copy of the counters."""
    with _lock:
        copy = dict(_counters)
        copy["token_failures"] = dict(_counters["token_failures"])
        return copy


def reset():
    """Zero every counter."""
    global _counters
    with _lock:
        _counters = _zero()
        _refresh_pairs_seen.clear()


def add(name, amount=1):
    """Add to one integer counter."""
    with _lock:
        _counters[name] += amount


def token_success(grant_type, access_token):
    """Count a successful token response; detects replays by a digest of the access token."""
    with _lock:
        if grant_type == "password":
            _counters["password_grants"] += 1
        elif grant_type == "refresh_token":
            _counters["refresh_grants"] += 1
            digest = hashlib.sha256((access_token or "").encode()).hexdigest()
            if digest in _refresh_pairs_seen:
                _counters["refresh_grants_replayed"] += 1
            _refresh_pairs_seen.add(digest)


def token_failure(grant_type, error):
    """Count a failed token response by grant type and OAuth error code."""
    key = f"{grant_type or 'none'}:{error or 'unknown'}"
    with _lock:
        failures = _counters["token_failures"]
        failures[key] = failures.get(key, 0) + 1
        if grant_type == "refresh_token" and error == "invalid_grant":
            _counters["reuse_detections_or_invalid_grants"] += 1
