"""DOT's ACCESS_TOKEN_GENERATOR: RFC 9068 JWT access tokens for one client, DOT's opaque tokens for the rest.

django-oauth-toolkit 3.4.1 issues opaque access tokens and has no RFC 9068 profile of its own. What it does offer
is the ACCESS_TOKEN_GENERATOR setting: a callable that oauthlib's BearerToken calls with the oauthlib request to
make the `access_token` string. Everything else stays DOT's: it stores the string (AccessToken.token is a
TextField, looked up by its SHA-256 `token_checksum`), checks it at /api/me, rotates and revokes it, and publishes
the signing key at /o/.well-known/jwks.json, which its OIDC discovery document names. The JWT is signed with
DOT's own OIDC key (OIDC_RSA_PRIVATE_KEY, through DOT's cached jwcrypto loader, the same way DOT signs ID
tokens, with the `kid` DOT's JWKS publishes for that key).

Only clients in fixtures.JWT_ACCESS_TOKEN_CLIENT_IDS get JWTs; every other client gets oauthlib's default random
token, so the opaque-token interop tests run unchanged. REFRESH_TOKEN_GENERATOR must be set too (settings.py):
oauthlib otherwise makes refresh tokens with the access-token generator.
"""
import json
import time
import uuid

from jwcrypto import jwt
from oauthlib.oauth2.rfc6749.tokens import random_token_generator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import jwk_from_pem

from . import fixtures


def resource_identifier(issuer):
    """The `aud` of the JWT access tokens: this server's protected resource (/api/me), named by URL.

    DOT has no audience for access tokens; RFC 9068 section 3 asks for the resource server's identifier. The
    issuer is `http://127.0.0.1:<port>/o`, so this is `http://127.0.0.1:<port>/api`.
    """
    base = issuer[: -len("/o")] if issuer.endswith("/o") else issuer
    return base + "/api"


def generate(request, refresh_token=False):
    """The access token for this token request: an RFC 9068 JWT for the JWT clients, else DOT's random token."""
    client = getattr(request, "client", None)
    if refresh_token or client is None or client.client_id not in fixtures.JWT_ACCESS_TOKEN_CLIENT_IDS:
        return random_token_generator(request, refresh_token)
    issuer = oauth2_settings.oidc_issuer(request)
    now = int(time.time())
    claims = {
        "iss": issuer,
        # oauthlib sets request.expires_in (ACCESS_TOKEN_EXPIRE_SECONDS) before calling the generator; DOT
        # stores the same lifetime on the AccessToken row.
        "exp": now + int(request.expires_in),
        "aud": resource_identifier(issuer),
        # The same subject DOT puts in its ID tokens (OAuth2Validator.get_jwt_bearer_token: str(user.pk)).
        "sub": str(request.user.pk),
        "client_id": client.client_id,
        "iat": now,
        "jti": uuid.uuid4().hex,
        "scope": " ".join(request.scopes or []),
    }
    key = jwk_from_pem(oauth2_settings.OIDC_RSA_PRIVATE_KEY)
    header = {"typ": "at+jwt", "alg": "RS256", "kid": key.thumbprint()}
    token = jwt.JWT(header=json.dumps(header), claims=json.dumps(claims))
    token.make_signed_token(key)
    return token.serialize()
