#!/usr/bin/env python3
"""Smoke test of the django-oauth-toolkit interop server, run against a live server.

    Interop/django/start
    .build-interop/venv/bin/python Interop/django/smoke_test.py [--base-url URL] [--expect-...]
    Interop/django/stop

It checks the server the Swift interop tests rely on: the password grant for both
clients, the protected endpoint and its RFC 6750 challenge, Django's CSRF-checked session
login and server-side session deletion, OIDC discovery, JWKS and an ID token from the
authorization-code grant, RFC 9068 JWT access tokens for the client interop-jwt, a real access-token expiry
on the server's clock (the only real wait, about 2 s), refresh-token rotation, the
server's rotation mode (reuse protection / grace window, read from /debug/config),
RFC 7009 revocation, the /debug hooks, and that /debug/stats counts what happened.
It never prints a token, a secret or a password. The last line is "N passed, M failed".
"""
import argparse
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "project"))
from interop import fixtures  # noqa: E402  (plain constants, no Django import)

CHALLENGE_MISSING = 'Bearer realm="interop"'
CHALLENGE_INVALID = 'Bearer realm="interop", error="invalid_token"'
EXPIRY_LIFETIME = 2


class Failure(Exception):
    pass


def check(condition, message):
    """Fail the current test with a message that never contains a credential."""
    if not condition:
        raise Failure(message)


class Server:
    def __init__(self, base_url):
        self.base = base_url.rstrip("/")
        # What this test saw the server do; compared with /debug/stats at the end.
        self.tally = Counter()

    def request(self, method, path, form=None, body=None, headers=None):
        data = None
        headers = dict(headers or {})
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, response_headers, raw = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, response_headers, raw = error.code, error.headers, error.read()
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {"_not_json": True}
        return status, response_headers, parsed

    # --- OAuth endpoints -------------------------------------------------------------

    def _client_auth(self, client, form, headers):
        if client == "confidential":
            pair = f"{fixtures.CONFIDENTIAL_CLIENT_ID}:{fixtures.CONFIDENTIAL_CLIENT_SECRET}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif client == "confidential-post":
            form["client_id"] = fixtures.CONFIDENTIAL_CLIENT_ID
            form["client_secret"] = fixtures.CONFIDENTIAL_CLIENT_SECRET
        elif client == "public":
            form["client_id"] = fixtures.PUBLIC_CLIENT_ID
        elif client == "jwt":
            pair = f"{fixtures.JWT_CLIENT_ID}:{fixtures.JWT_CLIENT_SECRET}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif client == "confidential-wrong-secret":
            pair = f"{fixtures.CONFIDENTIAL_CLIENT_ID}:not-the-secret"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            raise ValueError(client)

    def token(self, client, form):
        form, headers = dict(form), {}
        self._client_auth(client, form, headers)
        status, _, body = self.request("POST", "/o/token/", form=form, headers=headers)
        grant = form["grant_type"]
        if status == 200:
            self.tally[f"{grant}_ok"] += 1
        elif grant == "refresh_token" and body.get("error") == "invalid_grant":
            self.tally["refresh_invalid_grant"] += 1
        return status, body

    def login(self, client="confidential", user="alice"):
        status, body = self.token(
            client, {"grant_type": "password", "username": user, "password": fixtures.USERS[user]}
        )
        check(status == 200, f"password grant for {user} via {client} answered {status} {body.get('error')}")
        check(body.get("access_token") and body.get("refresh_token"), "password grant lacks a token")
        return body

    def refresh(self, client, refresh_token):
        return self.token(client, {"grant_type": "refresh_token", "refresh_token": refresh_token})

    def revoke(self, client, token, hint):
        form, headers = {"token": token, "token_type_hint": hint}, {}
        self._client_auth(client, form, headers)
        status, _, body = self.request("POST", "/o/revoke_token/", form=form, headers=headers)
        if status == 200:
            self.tally["revocations"] += 1
        return status, body

    def me(self, access_token=None, authorization=None):
        headers = {}
        if access_token is not None:
            headers["Authorization"] = f"Bearer {access_token}"
        if authorization is not None:
            headers["Authorization"] = authorization
        status, response_headers, body = self.request("GET", "/api/me", headers=headers)
        self.tally["api_ok" if status == 200 else "api_unauthorized"] += 1
        return status, response_headers.get("WWW-Authenticate"), body

    # --- /debug hooks ----------------------------------------------------------------

    def stats(self):
        status, _, body = self.request("GET", "/debug/stats")
        check(status == 200, f"/debug/stats answered {status}")
        return body

    def config(self, **changes):
        if changes:
            status, _, body = self.request("POST", "/debug/config", body=changes)
        else:
            status, _, body = self.request("GET", "/debug/config")
        check(status == 200, f"/debug/config answered {status}: {body.get('error')}")
        return body

    def post_debug(self, path, body=None):
        status, _, response = self.request("POST", path, body=body or {})
        check(status == 200, f"{path} answered {status}")
        return response


def expect_ok_refresh(server, client, refresh_token, what):
    status, body = server.refresh(client, refresh_token)
    check(status == 200, f"{what}: refresh answered {status} {body.get('error')}")
    check(body.get("access_token") and body.get("refresh_token"), f"{what}: refresh lacks a token")
    return body


def expect_invalid_grant(server, client, refresh_token, what):
    status, body = server.refresh(client, refresh_token)
    check(
        status == 400 and body.get("error") == "invalid_grant",
        f"{what}: expected 400 invalid_grant, got {status} {body.get('error')}",
    )


def expect_rejected_access(server, access_token, what):
    status, challenge, _ = server.me(access_token)
    check(status == 401, f"{what}: /api/me answered {status}, expected 401")
    check(challenge == CHALLENGE_INVALID, f"{what}: WWW-Authenticate was {challenge!r}")


def counter_delta(before, after, keys):
    return {key: after[key] - before[key] for key in keys}


ROTATION_KEYS = ("refresh_grants", "refresh_grants_replayed", "grace_replays", "reuse_detections")


def rotation_mode_behaviour(server, client):
    """The old refresh token after one rotation, in whatever mode the server is in."""
    config = server.config()
    reuse = config["refresh_token_reuse_protection"]
    grace = config["refresh_token_grace_period_seconds"]
    before = server.stats()

    first = server.login(client)
    second = expect_ok_refresh(server, client, first["refresh_token"], "first rotation")
    check(second["refresh_token"] != first["refresh_token"], "the refresh token did not rotate")
    check(second["access_token"] != first["access_token"], "the access token did not change")
    expect_rejected_access(server, first["access_token"], "the pre-rotation access token")

    expected = Counter(refresh_grants=1)
    if grace > 0:
        # Within the grace window DOT answers the old token with the pair it already
        # issued for it (the same access and refresh token), not a new pair.
        replay = expect_ok_refresh(server, client, first["refresh_token"], "old token within the grace window")
        check(replay["access_token"] == second["access_token"], "grace replay did not return the issued access token")
        check(replay["refresh_token"] == second["refresh_token"], "grace replay did not return the issued refresh token")
        status, _, _ = server.me(second["access_token"])
        check(status == 200, f"the rotated access token answered {status} after a grace replay")
        expected.update(refresh_grants=1, refresh_grants_replayed=1, grace_replays=1)
        # Step past the grace window without waiting.
        server.post_debug("/debug/age_revocations", {"seconds": grace + 1})

    expect_invalid_grant(server, client, first["refresh_token"], "old token outside any grace window")
    if reuse:
        # Reuse detected: DOT revokes the whole family, so the current pair dies too.
        expected.update(reuse_detections=1)
        expect_invalid_grant(server, client, second["refresh_token"], "current token after reuse detection")
        expect_rejected_access(server, second["access_token"], "current access token after reuse detection")
    else:
        third = expect_ok_refresh(server, client, second["refresh_token"], "current token without reuse protection")
        check(third["refresh_token"] != second["refresh_token"], "the refresh token did not rotate")
        expected.update(refresh_grants=1)

    if grace > 0:
        # A token two generations back is not honoured even inside the grace window:
        # the access token it minted was revoked by the next rotation.
        a = server.login(client)
        b = expect_ok_refresh(server, client, a["refresh_token"], "chain rotation 1")
        c = expect_ok_refresh(server, client, b["refresh_token"], "chain rotation 2")
        expect_invalid_grant(server, client, a["refresh_token"], "token two generations back within the grace window")
        expected.update(refresh_grants=2)
        if reuse:
            expect_invalid_grant(server, client, c["refresh_token"], "chain head after reuse detection")
            expected.update(reuse_detections=1)
        else:
            expect_ok_refresh(server, client, c["refresh_token"], "chain head without reuse protection")
            expected.update(refresh_grants=1)

    after = server.stats()
    got = counter_delta(before, after, ROTATION_KEYS)
    want = {key: expected[key] for key in ROTATION_KEYS}
    check(got == want, f"rotation counters moved by {got}, expected {want}")


def run(server, args):
    ctx = {}
    tests = []

    def test(function):
        tests.append(function)
        return function

    @test
    def server_answers_with_the_expected_configuration():
        stats = server.stats()
        check(isinstance(stats.get("pid"), int), "/debug/stats has no pid")
        config = server.config()
        ctx["config"] = config
        expectations = {
            "refresh_token_reuse_protection": args.expect_reuse_protection,
            "refresh_token_grace_period_seconds": args.expect_grace,
            "access_token_expire_seconds": args.expect_access_token_seconds,
        }
        for key, value in expectations.items():
            if value is not None:
                check(config[key] == value, f"{key} is {config[key]!r}, expected {value!r}")

    @test
    def reset_zeroes_every_counter():
        server.stats()  # make sure something ran before
        server.post_debug("/debug/reset")
        stats = server.stats()
        for key, value in stats.items():
            if key in ("pid", "config"):
                continue
            check(value in (0, {}), f"{key} is {value!r} after reset")
        server.tally.clear()

    @test
    def password_grant_with_a_confidential_client_over_basic_auth():
        body = server.login("confidential")
        check(body.get("token_type") == "Bearer", "token_type is not Bearer")
        check(body.get("expires_in") == ctx["config"]["access_token_expire_seconds"], "expires_in differs from the setting")
        check(body.get("scope") == "read write", f"scope is {body.get('scope')!r}")
        ctx["session"] = body

    @test
    def password_grant_with_a_confidential_client_secret_in_the_body():
        server.login("confidential-post")

    @test
    def password_grant_with_a_public_client():
        body = server.login("public")
        check(body.get("token_type") == "Bearer", "token_type is not Bearer")
        status, _, me = server.me(body["access_token"])
        check(status == 200 and me.get("client_id") == fixtures.PUBLIC_CLIENT_ID, f"public token on /api/me: {status}")

    @test
    def wrong_client_secret_is_invalid_client():
        status, body = server.token(
            "confidential-wrong-secret",
            {"grant_type": "password", "username": "alice", "password": fixtures.USERS["alice"]},
        )
        check(status == 401 and body.get("error") == "invalid_client", f"got {status} {body.get('error')}")

    @test
    def wrong_password_is_invalid_grant():
        status, body = server.token(
            "confidential", {"grant_type": "password", "username": "alice", "password": "wrong"}
        )
        check(status == 400 and body.get("error") == "invalid_grant", f"got {status} {body.get('error')}")

    @test
    def token_errors_a_client_must_classify():
        status, _, body = server.request(
            "POST",
            "/o/token/",
            form={"grant_type": "refresh_token", "refresh_token": ctx["session"]["refresh_token"],
                  "client_id": fixtures.PUBLIC_CLIENT_ID},
        )
        check(status == 400 and body.get("error") == "invalid_grant", f"another client's token: {status} {body.get('error')}")
        server.tally["refresh_invalid_grant"] += 1
        status, body = server.token("confidential", {"grant_type": "refresh_token"})
        check(status == 400 and body.get("error") == "invalid_request", f"missing refresh_token: {status} {body.get('error')}")
        status, body = server.token("confidential", {"grant_type": "client_credentials"})
        check(status == 400 and body.get("error") == "unauthorized_client", f"client_credentials: {status} {body.get('error')}")
        status, headers, body = server.request(
            "POST",
            "/o/token/",
            form={"grant_type": "refresh_token", "refresh_token": ctx["session"]["refresh_token"],
                  "client_id": fixtures.CONFIDENTIAL_CLIENT_ID},
        )
        check(status == 401 and body.get("error") == "invalid_client", f"no secret: {status} {body.get('error')}")
        check(headers.get("WWW-Authenticate") == 'Bearer error="invalid_client"', "invalid_client challenge differs")

    @test
    def token_responses_are_not_cached_and_scope_can_narrow():
        form, headers = {"grant_type": "password", "username": "alice", "password": fixtures.USERS["alice"]}, {}
        server._client_auth("confidential", form, headers)
        status, response_headers, body = server.request("POST", "/o/token/", form=form, headers=headers)
        check(status == 200, f"password grant answered {status}")
        server.tally["password_ok"] += 1
        check(response_headers.get("Cache-Control") == "no-store", "token response lacks Cache-Control: no-store")
        status, narrowed = server.token(
            "confidential", {"grant_type": "refresh_token", "refresh_token": body["refresh_token"], "scope": "read"}
        )
        check(status == 200 and narrowed.get("scope") == "read", f"narrowed refresh: {status} {narrowed.get('scope')!r}")

    @test
    def protected_call_with_a_valid_token_answers_the_user():
        status, challenge, body = server.me(ctx["session"]["access_token"])
        check(status == 200, f"/api/me answered {status}")
        check(body.get("user") == "alice", f"user is {body.get('user')!r}")
        check(body.get("client_id") == fixtures.CONFIDENTIAL_CLIENT_ID, "client_id differs")
        check(challenge is None, "a 200 carried WWW-Authenticate")

    @test
    def protected_call_without_a_token_gets_a_bare_challenge():
        status, challenge, _ = server.me()
        check(status == 401, f"/api/me answered {status}")
        check(challenge == CHALLENGE_MISSING, f"WWW-Authenticate was {challenge!r}")

    @test
    def protected_call_with_an_unknown_token_gets_invalid_token():
        expect_rejected_access(server, "not-a-token", "unknown token")
        status, challenge, _ = server.me(authorization="Bearer ")
        check(status == 401 and challenge == CHALLENGE_INVALID, f"empty bearer: {status} {challenge!r}")

    @test
    def access_token_expires_on_the_server_clock():
        original = ctx["config"]["access_token_expire_seconds"]
        server.config(access_token_expire_seconds=EXPIRY_LIFETIME)
        try:
            issued = time.monotonic()
            body = server.login("confidential")
        finally:
            server.config(access_token_expire_seconds=original)
        check(body.get("expires_in") == EXPIRY_LIFETIME, f"expires_in is {body.get('expires_in')}")
        status, _, _ = server.me(body["access_token"])
        check(status == 200, f"fresh token answered {status}")
        # The one real wait: the server's clock cannot be injected.
        deadline = issued + EXPIRY_LIFETIME + 5
        while True:
            status, challenge, _ = server.me(body["access_token"])
            if status != 200 or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        waited = time.monotonic() - issued
        check(status == 401, f"token still accepted {waited:.1f} s after issue")
        check(challenge == CHALLENGE_INVALID, f"WWW-Authenticate was {challenge!r}")
        check(waited >= EXPIRY_LIFETIME - 0.5, f"token rejected after only {waited:.1f} s")
        ctx["expired"] = body

    @test
    def one_refresh_after_expiry_rotates_the_pair():
        before = server.stats()
        old = ctx["expired"]
        new = expect_ok_refresh(server, "confidential", old["refresh_token"], "refresh after expiry")
        check(new["refresh_token"] != old["refresh_token"], "the refresh token did not rotate")
        check(new["access_token"] != old["access_token"], "the access token did not change")
        check(new.get("expires_in") == ctx["config"]["access_token_expire_seconds"], "expires_in differs")
        status, _, me = server.me(new["access_token"])
        check(status == 200 and me.get("user") == "alice", f"refreshed token answered {status}")
        after = server.stats()
        check(after["refresh_grants"] - before["refresh_grants"] == 1, "refresh_grants did not move by exactly 1")

    @test
    def old_refresh_token_follows_the_server_mode_confidential():
        rotation_mode_behaviour(server, "confidential")

    @test
    def old_refresh_token_follows_the_server_mode_public():
        rotation_mode_behaviour(server, "public")

    @test
    def revoked_refresh_token_is_invalid_grant():
        body = server.login("confidential")
        status, _ = server.revoke("confidential", body["refresh_token"], "refresh_token")
        check(status == 200, f"revocation answered {status}")
        expect_invalid_grant(server, "confidential", body["refresh_token"], "revoked refresh token")
        # Revoking a refresh token deletes the access token bound to it.
        expect_rejected_access(server, body["access_token"], "access token of a revoked refresh token")

    @test
    def revoked_rotated_refresh_token_is_invalid_grant_for_a_public_client():
        body = server.login("public")
        rotated = expect_ok_refresh(server, "public", body["refresh_token"], "public refresh")
        status, _ = server.revoke("public", rotated["refresh_token"], "refresh_token")
        check(status == 200, f"revocation answered {status}")
        expect_invalid_grant(server, "public", rotated["refresh_token"], "revoked rotated refresh token")

    @test
    def revoking_the_access_token_also_revokes_its_refresh_token():
        body = server.login("confidential")
        status, _ = server.revoke("confidential", body["access_token"], "access_token")
        check(status == 200, f"revocation answered {status}")
        expect_rejected_access(server, body["access_token"], "revoked access token")
        expect_invalid_grant(server, "confidential", body["refresh_token"], "refresh token of a revoked access token")

    @test
    def revoking_an_unknown_token_answers_200():
        status, _ = server.revoke("confidential", "not-a-token", "refresh_token")
        check(status == 200, f"revocation of an unknown token answered {status}")

    @test
    def expire_hook_ends_access_tokens_without_waiting():
        body = server.login("confidential", user="bob")
        status, _, me = server.me(body["access_token"])
        check(status == 200 and me.get("user") == "bob", f"fresh token answered {status}")
        expired = server.post_debug("/debug/expire_access_tokens", {"user": "bob"})
        check(expired.get("expired", 0) >= 1, "the hook expired no token")
        expect_rejected_access(server, body["access_token"], "token after the expire hook")
        renewed = expect_ok_refresh(server, "confidential", body["refresh_token"], "refresh after the expire hook")
        status, _, _ = server.me(renewed["access_token"])
        check(status == 200, f"refreshed token answered {status}")

    @test
    def stats_count_what_happened():
        stats = server.stats()
        tally = server.tally
        want = {
            "password_grants": tally["password_ok"],
            "refresh_grants": tally["refresh_token_ok"],
            "revocations": tally["revocations"],
            "reuse_detections_or_invalid_grants": tally["refresh_invalid_grant"],
            "api_ok": tally["api_ok"],
            "api_unauthorized": tally["api_unauthorized"],
        }
        got = {key: stats[key] for key in want}
        check(got == want, f"/debug/stats says {got}, the test saw {want}")
        check(stats["token_failures"].get("password:invalid_client") == 1, "invalid_client not counted")
        check(stats["token_failures"].get("refresh_token:invalid_client") == 1, "refresh invalid_client not counted")
        check(stats["token_failures"].get("refresh_token:invalid_request") == 1, "invalid_request not counted")
        check(stats["token_failures"].get("client_credentials:unauthorized_client") == 1, "unauthorized_client not counted")
        check(stats["token_failures"].get("password:invalid_grant") == 1, "wrong password not counted")
        check(
            stats["token_failures"].get("refresh_token:invalid_grant") == tally["refresh_invalid_grant"],
            "refresh invalid_grant failures not counted by error code",
        )
        reuse = ctx["config"]["refresh_token_reuse_protection"]
        grace = ctx["config"]["refresh_token_grace_period_seconds"]
        # 2 clients x (1 detection, +1 for the chain check when there is a grace window).
        check(stats["reuse_detections"] == ((2 * (2 if grace else 1)) if reuse else 0), "reuse_detections differs")
        check(stats["grace_replays"] == (2 if grace else 0), "grace_replays differs")
        check(stats["refresh_grants_replayed"] == stats["grace_replays"], "refresh_grants_replayed differs")

    @test
    def runtime_config_switches_the_rotation_mode():
        original = ctx["config"]
        flipped = {
            "refresh_token_reuse_protection": not original["refresh_token_reuse_protection"],
            "refresh_token_grace_period_seconds": 0 if original["refresh_token_grace_period_seconds"] else 30,
        }
        try:
            config = server.config(**flipped)
            check(all(config[key] == value for key, value in flipped.items()), "config did not change")
            rotation_mode_behaviour(server, "confidential")
        finally:
            server.config(
                refresh_token_reuse_protection=original["refresh_token_reuse_protection"],
                refresh_token_grace_period_seconds=original["refresh_token_grace_period_seconds"],
            )
        check(server.config() == original, "config was not restored")

    def cookies_from(headers):
        found = {}
        for line in headers.get_all("Set-Cookie") or []:
            name, _, rest = line.strip().partition("=")
            found[name] = rest.split(";", 1)[0]
        return found

    def django_login(user="alice"):
        """Django's session login as a client must do it (CSRF cookie, X-CSRFToken, Origin); the cookies."""
        status, headers, body = server.request("GET", "/session/csrf")
        check(status == 200, f"/session/csrf answered {status}")
        csrf = cookies_from(headers).get("csrftoken")
        check(csrf and body.get("csrfToken"), "/session/csrf set no csrftoken cookie or token")
        credentials = {"username": user, "password": fixtures.USERS[user]}
        status, _, _ = server.request("POST", "/session/login", body=credentials)
        check(status == 403, f"login without the CSRF token answered {status}, not 403")
        status, headers, body = server.request(
            "POST", "/session/login", body=credentials,
            headers={"Cookie": f"csrftoken={csrf}", "X-CSRFToken": csrf, "Origin": server.base},
        )
        check(status == 200, f"login with the CSRF token answered {status}")
        cookies = cookies_from(headers)
        check(cookies.get("sessionid"), "login set no sessionid cookie")
        check(body.get("user", {}).get("id") == user, "login did not answer the user")
        return cookies

    @test
    def django_session_login_check_and_server_side_deletion():
        session = django_login()["sessionid"]
        cookie = {"Cookie": f"sessionid={session}"}
        status, _, body = server.request("GET", "/session/get-session", headers=cookie)
        check(status == 200 and body.get("user", {}).get("id") == "alice", "get-session did not find the session")
        check(body.get("session", {}).get("expiresAt", "").endswith("Z"), "get-session has no expiresAt")
        status, _, body = server.request("GET", "/session/notes", headers=cookie)
        check(status == 200 and body.get("user") == "alice", f"protected view answered {status}")
        status, _, _ = server.request("GET", "/session/notes")
        check(status == 401, f"protected view without a session answered {status}")
        body = server.post_debug("/debug/delete_sessions", {"user": "alice"})
        check(body.get("deleted", 0) >= 1, "delete_sessions deleted nothing")
        status, _, body = server.request("GET", "/session/get-session", headers=cookie)
        check(status == 200 and body is None, "get-session after the deletion is not null")
        status, _, _ = server.request("GET", "/session/notes", headers=cookie)
        check(status == 401, f"protected view after the deletion answered {status}")

    @test
    def oidc_discovery_jwks_and_an_id_token_from_the_code_flow():
        import hashlib
        import secrets

        status, _, discovery = server.request("GET", "/o/.well-known/openid-configuration")
        check(status == 200, f"discovery answered {status}")
        issuer = server.base + "/o"
        check(discovery.get("issuer") == issuer, "discovery issuer is not <base>/o")
        status, headers, jwks = server.request("GET", "/o/.well-known/jwks.json")
        check(status == 200 and "max-age" in (headers.get("Cache-Control") or ""), "JWKS without max-age")
        kids = {key.get("kid") for key in jwks.get("keys", []) if key.get("kty") == "RSA" and key.get("alg") == "RS256"}
        check(len(kids) == 1, "the JWKS does not hold one RS256 key")
        session = django_login()["sessionid"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": fixtures.OIDC_CLIENT_ID, "redirect_uri": fixtures.OIDC_REDIRECT_URI,
            "scope": "openid", "code_challenge": challenge, "code_challenge_method": "S256", "nonce": "smoke",
        })

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        request = urllib.request.Request(
            f"{server.base}/o/authorize/?{query}", headers={"Cookie": f"sessionid={session}"})
        try:
            urllib.request.build_opener(NoRedirect).open(request, timeout=30)
            check(False, "authorize did not redirect")
        except urllib.error.HTTPError as error:
            check(error.code == 302, f"authorize answered {error.code}")
            location = urllib.parse.urlparse(error.headers["Location"])
        check(location.path == urllib.parse.urlparse(fixtures.OIDC_REDIRECT_URI).path, "redirected elsewhere")
        code = urllib.parse.parse_qs(location.query)["code"][0]
        status, _, body = server.request("POST", "/o/token/", form={
            "grant_type": "authorization_code", "code": code, "redirect_uri": fixtures.OIDC_REDIRECT_URI,
            "client_id": fixtures.OIDC_CLIENT_ID, "code_verifier": verifier,
        })
        check(status == 200 and body.get("id_token"), f"the code exchange answered {status} without an id_token")
        header_part, payload_part, _ = body["id_token"].split(".")

        def decoded(part):
            return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

        header, claims = decoded(header_part), decoded(payload_part)
        check(header.get("alg") == "RS256" and header.get("kid") in kids, "the ID token is not RS256 under the JWKS key")
        check(claims.get("iss") == issuer and claims.get("aud") == fixtures.OIDC_CLIENT_ID, "iss or aud differs")
        check(claims.get("nonce") == "smoke", "the nonce did not come back")

    @test
    def rfc9068_jwt_access_tokens_for_the_jwt_client_only():
        def decoded(part):
            return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

        status, _, jwks = server.request("GET", "/o/.well-known/jwks.json")
        check(status == 200, f"JWKS answered {status}")
        kids = {key.get("kid") for key in jwks.get("keys", [])}
        body = server.login("jwt")
        parts = body["access_token"].split(".")
        check(len(parts) == 3, "the interop-jwt access token is not a compact JWS")
        check("." not in body["refresh_token"], "the refresh token is not opaque")
        header, claims = decoded(parts[0]), decoded(parts[1])
        check(header.get("typ") == "at+jwt" and header.get("alg") == "RS256", "header is not typ at+jwt, RS256")
        check(header.get("kid") in kids, "the kid is not in DOT's JWKS")
        check(claims.get("iss") == server.base + "/o" and claims.get("aud") == server.base + "/api", "iss or aud")
        check(claims.get("client_id") == fixtures.JWT_CLIENT_ID, "client_id differs")
        check(all(claims.get(name) for name in ("sub", "iat", "exp", "jti", "scope")), "an RFC 9068 claim is missing")
        check(claims["exp"] - claims["iat"] == body.get("expires_in"), "exp - iat is not expires_in")
        status, _, me = server.me(body["access_token"])
        check(status == 200 and me.get("client_id") == fixtures.JWT_CLIENT_ID, f"/api/me with the JWT answered {status}")
        status, refreshed = server.refresh("jwt", body["refresh_token"])
        check(status == 200 and refreshed["access_token"].count(".") == 2, f"refresh answered {status}")
        check(server.me(body["access_token"])[0] == 401, "the rotated-out JWT still works at DOT")
        check(server.me(refreshed["access_token"])[0] == 200, "the refreshed JWT does not work at DOT")
        opaque = server.login("confidential")["access_token"]
        check("." not in opaque, "another client's access token is not opaque")

    @test
    def bad_config_is_refused():
        status, _, body = server.request("POST", "/debug/config", body={"no_such_setting": 1})
        check(status == 400, f"unknown key answered {status}")
        status, _, body = server.request("POST", "/debug/config", body={"access_token_expire_seconds": -1})
        check(status == 400, f"negative lifetime answered {status}")

    passed = failed = 0
    for function in tests:
        name = function.__name__
        try:
            function()
        except Failure as failure:
            failed += 1
            print(f"FAIL {name}: {failure}", flush=True)
        except Exception as error:  # an unexpected error is a failure too, without its args
            failed += 1
            print(f"FAIL {name}: unexpected {type(error).__name__}", flush=True)
        else:
            passed += 1
            print(f"PASS {name}", flush=True)
    return passed, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    port = os.environ.get("INTEROP_PORT", "8765")
    parser.add_argument("--base-url", default=f"http://127.0.0.1:{port}")
    parser.add_argument("--expect-reuse-protection", type=int, choices=(0, 1))
    parser.add_argument("--expect-grace", type=int)
    parser.add_argument("--expect-access-token-seconds", type=int)
    args = parser.parse_args()
    if args.expect_reuse_protection is not None:
        args.expect_reuse_protection = bool(args.expect_reuse_protection)
    try:
        config = Server(args.base_url).config()
    except OSError as error:
        print(f"FAIL server_is_reachable: {args.base_url}: {type(error).__name__}", flush=True)
        print("0 passed, 1 failed", flush=True)
        return 1
    print(f"interop smoke test against {args.base_url} with {json.dumps(config, sort_keys=True)}", flush=True)
    passed, failed = run(Server(args.base_url), args)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
