"""The fixed, test-only credentials the interop server is seeded with."""
import os

# Users: username -> password. alice's password can be overridden by INTEROP_ALICE_PASSWORD.
USERS = {
    "alice": os.environ.get("INTEROP_ALICE_PASSWORD") or "alice-interop-password",
    "bob": "bob-interop-password",
    # Characters that form encoding must escape (RFC 6749 appendix B), and non-ASCII.
    "carol": "carol p@ss+w0rd&=%/:é",
}

# Confidential client: authenticates with HTTP Basic (client_secret_basic) or in the body.
CONFIDENTIAL_CLIENT_ID = "interop-confidential"
CONFIDENTIAL_CLIENT_SECRET = "interop-confidential-secret"

# Public client: no secret, sends client_id in the form body.
PUBLIC_CLIENT_ID = "interop-public"

# Confidential client whose secret needs escaping: HTTP Basic form-encodes ID and secret before
# joining them (RFC 6749 section 2.3.1), and DOT unquotes them (unquote_plus).
SPECIAL_CLIENT_ID = "interop-special"
SPECIAL_CLIENT_SECRET = "s3cret with spaces+plus/slash:colon%25&amp=é"

# OpenID Connect client (public, PKCE): the authorization-code grant with `openid` scope, ID tokens signed RS256
# with the server's key (OIDC_RSA_PRIVATE_KEY, made at every server start). The redirect URI is never fetched:
# the test reads the code from the 302's Location.
OIDC_CLIENT_ID = "interop-oidc"
OIDC_REDIRECT_URI = "http://127.0.0.1/interop-oidc/callback"
DEVICE_CLIENT_ID = "interop-device"
OIDC_OTHER_CLIENT_ID = "interop-oidc-other"
OIDC_POST_LOGOUT_REDIRECT_URI = "http://127.0.0.1/interop-oidc/signed-out"

# Confidential client (password grant, HTTP Basic) whose access tokens are RFC 9068 JWTs (`typ: at+jwt`, RS256 with
# the server's OIDC key, published in DOT's JWKS) instead of DOT's opaque strings: interop/access_tokens.py, which
# DOT calls as its ACCESS_TOKEN_GENERATOR. Refresh tokens stay opaque.
JWT_CLIENT_ID = "interop-jwt"
JWT_CLIENT_SECRET = "interop-jwt-secret"
JWT_ACCESS_TOKEN_CLIENT_IDS = frozenset({JWT_CLIENT_ID})

# The resource server that introspects opaque access tokens at /o/introspect/ (RFC 7662): a confidential client with the
# client-credentials grant. DOT admits any client that authenticates (HTTP Basic or the body) to its introspection view.
RESOURCE_SERVER_CLIENT_ID = "interop-resource-server"
RESOURCE_SERVER_CLIENT_SECRET = "interop-resource-server-secret"
