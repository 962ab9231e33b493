"""The fixed, test-only credentials the interop server is seeded with."""
import os

# Users: username -> password. alice's password can be overridden by INTEROP_ALICE_PASSWORD.
USERS = {
    "alice": os.environ.get("INTEROP_ALICE_PASSWORD") or "alice-interop-password",
    "bob": "bob-interop-password",
}

# Confidential client: authenticates with HTTP Basic (client_secret_basic) or in the body.
CONFIDENTIAL_CLIENT_ID = "interop-confidential"
CONFIDENTIAL_CLIENT_SECRET = "interop-confidential-secret"

# Public client: no secret, sends client_id in the form body.
PUBLIC_CLIENT_ID = "interop-public"
