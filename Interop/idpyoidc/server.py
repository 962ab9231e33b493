#!/usr/bin/env python3
"""A DPoP-capable OAuth 2.0 authorization server for TokenKit's interop tests: IdentityPython's idpyoidc.

Test-only: listens on 127.0.0.1, signs in a fixed user without asking (idpyoidc's NoAuthn), and has one public
client. The OAuth work is idpyoidc's own `Server` (its authorization endpoint, its token endpoint for the
`authorization_code` and `refresh_token` grants, its RFC 8414 metadata), with its DPoP add-on
(`idpyoidc.server.oauth2.add_on.dpop.add_support`) on the token endpoint: the add-on verifies each proof, records
the key's thumbprint on the grant, and the tokens minted from that grant carry `cnf.jkt` and are typed `DPoP`.

This file is only the HTTP around it (stdlib `http.server`), plus a protected resource, `GET /resource`, that takes
`Authorization: DPoP <token>` and a `DPoP` proof. What checks what there is in `Interop/README.md`.

Usage: server.py [--port N] [--state-dir DIR]. Prints `http://127.0.0.1:<port>` on one line once it serves.
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from cryptojwt.jwk.jwk import key_from_jwk_dict
from cryptojwt.jws.jws import factory as jws_factory
from cryptojwt.utils import as_unicode
from idpyoidc.server import Server
from idpyoidc.server.configure import ASConfiguration
from idpyoidc.server.oauth2.add_on.dpop import DPoPProof

CLIENT_ID = "tokenkit-dpop"
REDIRECT_URI = "http://127.0.0.1/tokenkit-dpop/callback"
USER = "alice"
# How far a proof's `iat` may be from the server's clock at the resource (seconds, either way).
IAT_WINDOW = 60
# The proof algorithms the add-on is told to accept (it keeps those cryptojwt supports).
DPOP_ALGS = ["ES256"]


def b64url_sha256(text):
    digest = hashlib.sha256(text.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def configuration(base_url, state_dir):
    return {
        "issuer": base_url,
        "httpc_params": {"verify": False, "timeout": 4},
        "keys": {
            "private_path": os.path.join(state_dir, "jwks.json"),
            "key_defs": [{"type": "EC", "crv": "P-256", "use": ["sig"]}],
            "uri_path": "jwks.json",
            "read_only": False,
        },
        "token_handler_args": {
            "jwks_def": {
                "private_path": os.path.join(state_dir, "token_jwks.json"),
                "read_only": False,
                "key_defs": [{"type": "OCT", "bytes": "24", "use": ["enc"], "kid": "code"}],
            },
            "code": {"kwargs": {"lifetime": 600}},
            # JWT access tokens, so `cnf.jkt` is visible to whoever holds the token.
            "token": {
                "class": "idpyoidc.server.token.jwt_token.JWTToken",
                "kwargs": {"lifetime": 3600},
            },
            "refresh": {"kwargs": {"lifetime": 86400}},
        },
        "cookie_handler": {
            "class": "idpyoidc.server.cookie_handler.CookieHandler",
            "kwargs": {
                "keys": {
                    "private_path": os.path.join(state_dir, "cookie_jwks.json"),
                    "key_defs": [
                        {"type": "OCT", "use": ["enc"], "kid": "enc"},
                        {"type": "OCT", "use": ["sig"], "kid": "sig"},
                    ],
                    "read_only": False,
                },
                "name": {"session": "idpy_session", "register": "idpy_rp", "session_management": "idpy_sman"},
            },
        },
        "endpoint": {
            "server_metadata": {
                "path": ".well-known/oauth-authorization-server",
                "class": "idpyoidc.server.oauth2.server_metadata.ServerMetadata",
                "kwargs": {"client_authn_method": None},
            },
            "authorization": {
                "path": "authorization",
                "class": "idpyoidc.server.oauth2.authorization.Authorization",
                "kwargs": {"client_authn_method": None, "response_types_supported": ["code"]},
            },
            "token": {
                "path": "token",
                "class": "idpyoidc.server.oauth2.token.Token",
                "kwargs": {
                    "client_authn_method": ["public"],
                    "grant_types_helpers": {
                        "authorization_code": {
                            "class": "idpyoidc.server.oauth2.token_helper.access_token.AccessTokenHelper"
                        },
                        "refresh_token": {
                            "class": "idpyoidc.server.oauth2.token_helper.refresh_token.RefreshTokenHelper"
                        },
                    },
                },
            },
        },
        "add_on": {
            "pkce": {
                "function": "idpyoidc.server.oauth2.add_on.pkce.add_support",
                "kwargs": {"essential": True, "code_challenge_method": "S256"},
            },
            "dpop": {
                "function": "idpyoidc.server.oauth2.add_on.dpop.add_support",
                "kwargs": {"dpop_signing_alg_values_supported": DPOP_ALGS, "dpop_endpoints": ["token"]},
            },
        },
        "authentication": {
            "anon": {
                "acr": "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword",
                "class": "idpyoidc.server.user_authn.user.NoAuthn",
                "kwargs": {"user": USER},
            }
        },
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {
                "grant_config": {
                    "usage_rules": {
                        "authorization_code": {
                            "supports_minting": ["access_token", "refresh_token"],
                            "max_usage": 1,
                        },
                        "access_token": {},
                        "refresh_token": {"supports_minting": ["access_token", "refresh_token"]},
                    },
                    "expires_in": 43200,
                }
            },
        },
        "template_dir": state_dir,
    }


class Fixture:
    """idpyoidc's `Server` and what the resource endpoint remembers."""

    def __init__(self, base_url, state_dir):
        self.base_url = base_url
        self.server = Server(ASConfiguration(configuration(base_url, state_dir), base_path=state_dir), cwd=state_dir)
        self.context = self.server.context
        # The add-on writes `dpop_signing_alg_values_supported` (RFC 9449 section 5.1) into the metadata, but
        # idpyoidc 5.0.0's `Server` builds its metadata anew after running the add-ons, which drops it; and its
        # refresh grant types the new token `DPoP` only when the metadata has it (without this line: `Bearer`, with
        # `cnf.jkt` in the token all the same). Put back what the add-on wrote.
        self.context.provider_info["dpop_signing_alg_values_supported"] = self.context.add_on["dpop"]["algs_supported"]
        self.context.cdb[CLIENT_ID] = {
            "client_id": CLIENT_ID,
            "redirect_uris": [(REDIRECT_URI, {})],
            "response_types_supported": ["code"],
            "token_endpoint_auth_method": "none",
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "allowed_scopes": ["read", "write", "offline_access"],
        }
        self.lock = threading.Lock()
        self.serial = threading.Lock()
        self.spent_jtis = set()
        # Counters, and the thumbprint of each proof the token endpoint accepted, by grant type (public values only).
        self.stats = {
            "token_ok": 0, "token_refused": 0, "resource_ok": 0, "resource_refused": 0, "refusals": [],
            "bound": {"authorization_code": [], "refresh_token": []},
        }

    def count(self, key, reason=None):
        with self.lock:
            self.stats[key] += 1
            if reason:
                self.stats["refusals"].append(reason)

    # The token endpoint.

    def token(self, headers, body):
        endpoint = self.server.get_endpoint("token")
        request = dict(parse_qsl(body, keep_blank_values=True))
        http_info = {"headers": headers, "url": self.base_url + "/token", "method": "POST"}
        try:
            parsed = endpoint.parse_request(request, http_info=http_info)
        except DPoPRefused as err:
            return self.token_error(400, "invalid_dpop_proof", f"idpyoidc refused the proof: {err}")
        except Exception as err:  # idpyoidc raises for a client it cannot authenticate, among others
            return self.token_error(400, "invalid_request", f"{type(err).__name__}: {err}")
        if "error" in parsed:
            return self.token_error(400, parsed["error"], parsed.get("error_description", ""))
        try:
            result = endpoint.process_request(request=parsed, http_info=http_info)
        except Exception as err:
            return self.token_error(400, "invalid_grant", f"{type(err).__name__}: {err}")
        if "error" in result:
            return self.token_error(400, result["error"], result.get("error_description", ""))
        response = endpoint.do_response(request=parsed, **result)
        self.count("token_ok")
        with self.lock:
            self.stats["bound"].setdefault(parsed.get("grant_type", "?"), []).append(parsed.get("dpop_jkt"))
        return 200, {"Content-Type": "application/json", "Cache-Control": "no-store"}, response["response"]

    def token_error(self, status, error, description):
        self.count("token_refused", f"token: {error}: {description}")
        return status, {"Content-Type": "application/json", "Cache-Control": "no-store"}, json.dumps(
            {"error": error, "error_description": description})

    # The protected resource.

    def resource(self, method, path, headers):
        """`Authorization: DPoP <token>` and a proof: 200 with what was checked, or 401 with a DPoP challenge."""
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "dpop" or not token:
            return self.challenge(None, "no DPoP token")
        # The server's record of the token: idpyoidc's session manager (its JWT handler verifies the token's
        # signature and expiry), the grant it belongs to, and the thumbprint the token endpoint bound it to.
        try:
            info = self.context.session_manager.get_session_info_by_token(
                token, grant=True, handler_key="access_token")
            grant = info["grant"]
            record = self.context.session_manager.find_token(info["branch_id"], token)
        except Exception as err:
            return self.challenge("invalid_token", f"unknown token: {type(err).__name__}")
        if record is None or not record.is_active():
            return self.challenge("invalid_token", "token not active")
        # The grant's record (the add-on's `dpop_jkt`); idpyoidc types the token record itself `DPoP` on refresh
        # only, so that is not what is checked.
        bound_jkt = grant.extra.get("dpop_jkt")
        if not bound_jkt:
            return self.challenge("invalid_token", "token not DPoP-bound")
        proof_text = headers.get("dpop")
        if not proof_text or "," in proof_text:
            return self.challenge("invalid_dpop_proof", "exactly one DPoP header expected")
        # idpyoidc's own proof parsing: the JWS signature under the embedded `jwk` (cryptojwt), then the claims
        # and header it requires (`typ` `dpop+jwt`, `alg` not `none`, `jti`, `htm`, `htu`, `iat`).
        try:
            proof = DPoPProof().verify_header(proof_text)
            if proof is None:
                raise ValueError("not a JWS")
            proof.verify()
        except Exception as err:
            return self.challenge("invalid_dpop_proof", f"idpyoidc: {type(err).__name__}: {err}")
        if proof["alg"] not in DPOP_ALGS:
            return self.challenge("invalid_dpop_proof", "alg")
        if not proof.key:  # as the add-on does: the key from the header's `jwk`
            proof.key = key_from_jwk_dict(proof["jwk"])
        thumbprint = as_unicode(proof.key.thumbprint("SHA-256"))
        # RFC 9449 section 4.3 and 7.1, checked here: idpyoidc has no resource-server check that a conforming client
        # passes (see `idpyoidc_check` below).
        problems = []
        if proof["htm"] != method:
            problems.append("htm")
        if proof["htu"] != self.base_url + path:
            problems.append("htu")
        if abs(time.time() - proof["iat"]) > IAT_WINDOW:
            problems.append("iat")
        if proof.get("ath") != b64url_sha256(token):
            problems.append("ath")
        if thumbprint != bound_jkt:
            problems.append("cnf.jkt")
        if problems:
            return self.challenge("invalid_dpop_proof", "proof: " + ", ".join(problems))
        with self.lock:
            replayed = (thumbprint, proof["jti"]) in self.spent_jtis
            self.spent_jtis.add((thumbprint, proof["jti"]))
        if replayed:
            return self.challenge("invalid_dpop_proof", "proof: jti replayed")
        self.count("resource_ok")
        payload = jws_factory(token).jwt.payload()
        body = {
            "user": grant.sub if hasattr(grant, "sub") else None,
            "client_id": payload.get("client_id"),
            "scope": payload.get("scope"),
            "jkt": thumbprint,
            "token_cnf_jkt": (payload.get("cnf") or {}).get("jkt"),
            "grant_dpop_jkt": bound_jkt,
            "record_token_type": record.token_type,
            "idpyoidc_check": self.idpyoidc_resource_check(method, path, headers, token),
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(body)

    def idpyoidc_resource_check(self, method, path, headers, token):
        """What idpyoidc's own resource-side DPoP check (`userinfo_post_parse_request`) says of this request."""
        from idpyoidc.message import Message
        from idpyoidc.server.oauth2.add_on.dpop import userinfo_post_parse_request

        http_info = {"headers": headers, "url": self.base_url + path, "method": method}
        try:
            userinfo_post_parse_request(Message(), CLIENT_ID, self.context, {"token": token}, http_info=http_info)
            return "accepted"
        except Exception as err:
            return f"refused: {err}"

    def revoke(self, body):
        """`POST /debug/revoke` with `token=<access token>`: idpyoidc's record of it is revoked (the JWT is unchanged),
        so the resource answers `invalid_token` and the client has to refresh."""
        token = dict(parse_qsl(body)).get("token", "")
        try:
            info = self.context.session_manager.get_session_info_by_token(token, handler_key="access_token")
            self.context.session_manager.find_token(info["branch_id"], token).revoke()
        except Exception as err:
            return 400, {"Content-Type": "application/json"}, json.dumps({"error": type(err).__name__})
        return 200, {"Content-Type": "application/json"}, json.dumps({"revoked": True})

    def challenge(self, error, reason):
        self.count("resource_refused", f"resource: {reason}")
        value = f'DPoP algs="{" ".join(DPOP_ALGS)}"'
        if error:
            value += f', error="{error}"'
        return 401, {"WWW-Authenticate": value, "Content-Type": "application/json"}, json.dumps(
            {"error": error or "invalid_request", "reason": reason})

    # The authorization endpoint, and the metadata.

    def authorization(self, query, headers):
        endpoint = self.server.get_endpoint("authorization")
        http_info = {"headers": headers, "url": self.base_url + "/authorization", "method": "GET"}
        try:
            parsed = endpoint.parse_request(query, http_info=http_info)
            if "error" in parsed:
                return 400, {"Content-Type": "application/json"}, parsed.to_json()
            result = endpoint.process_request(parsed, http_info=http_info)
            if "error" in result:
                return 400, {"Content-Type": "application/json"}, json.dumps(
                    {"error": result["error"], "error_description": result.get("error_description", "")})
            response = endpoint.do_response(request=parsed, **result)
        except Exception as err:
            return 400, {"Content-Type": "application/json"}, json.dumps(
                {"error": "invalid_request", "error_description": f"{type(err).__name__}: {err}"})
        return 302, {"Location": response["response"]}, ""

    def metadata(self):
        endpoint = self.server.get_endpoint("server_metadata")
        result = endpoint.process_request()
        response = endpoint.do_response(request=None, **result)
        return 200, {"Content-Type": "application/json", "Cache-Control": "max-age=3600"}, response["response"]


class DPoPRefused(Exception):
    """What idpyoidc's DPoP add-on raised at the token endpoint."""


def report_refusals(function):
    """Wraps the add-on's check so that what it raises is told apart from other failures (its checks stay its own)."""

    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as err:
            raise DPoPRefused(f"{type(err).__name__}: {err}") from err

    return wrapper


class Handler(BaseHTTPRequestHandler):
    fixture = None
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # the access log carries codes and tokens: none is printed
        pass

    def headers_dict(self):
        return {name.lower(): value for name, value in self.headers.items()}

    def send(self, status, headers, body):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8") if length else ""

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def dispatch(self, method):
        try:
            # One request at a time through idpyoidc: its session manager is not written for threads.
            with self.fixture.serial:
                self.route(method)
        except Exception as err:  # a bug here, not a refusal: the type and the stack (no values) go to stderr
            traceback.print_exc(file=sys.stderr)
            self.send(500, {"Content-Type": "application/json"}, json.dumps(
                {"error": "server_error", "error_description": type(err).__name__}))

    def route(self, method):
        url = urlsplit(self.path)
        body = self.read_body()
        fixture = self.fixture
        if url.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            self.send(*fixture.metadata())
        elif url.path == "/jwks.json":
            jwks = fixture.context.keyjar.export_jwks_as_json(issuer_id="")
            self.send(200, {"Content-Type": "application/json"}, jwks)
        elif url.path == "/authorization" and method == "GET":
            self.send(*fixture.authorization(url.query, self.headers_dict()))
        elif url.path == "/token" and method == "POST":
            self.send(*fixture.token(self.headers_dict(), body))
        elif url.path == "/resource":
            self.send(*fixture.resource(method, url.path, self.headers_dict()))
        elif url.path == "/debug/revoke" and method == "POST":
            self.send(*fixture.revoke(body))
        elif url.path == "/debug/stats":
            with fixture.lock:
                self.send(200, {"Content-Type": "application/json"}, json.dumps(fixture.stats))
        else:
            self.send(404, {"Content-Type": "application/json"}, json.dumps({"error": "not_found"}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state-dir")
    args = parser.parse_args()
    state_dir = args.state_dir or tempfile.mkdtemp(prefix="idpyoidc-")
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    fixture = Fixture(base_url, state_dir)
    token_endpoint = fixture.server.get_endpoint("token")
    token_endpoint.post_parse_request = [
        report_refusals(step) if getattr(step, "__module__", "") == "idpyoidc.server.oauth2.add_on.dpop" else step
        for step in token_endpoint.post_parse_request
    ]
    Handler.fixture = fixture
    print(base_url, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
