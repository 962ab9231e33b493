#!/usr/bin/env python3
"""Mints JWS tokens with PyJWT and with jwcrypto, and writes a fixture directory for TokenKit's
JOSEIssuerTests (Tests/JOSEIssuerTests): the public keys as a JWKS, the tokens, the claims each valid
token must yield, and tokens that must be refused with a given reason.

    python generate.py OUTPUT_DIRECTORY

Every key is made fresh on each run; nothing secret is checked in. The directory holds:
- jwks.json: the public keys of both libraries, each exported by the library that made it;
- dpop.json: DPoP proofs and the access tokens bound to their keys (see dpop.py);
- manifest.json: the issuer, the audience, the authorized party, the HMAC secret (base64url), the library
  versions, and the tokens: {name, library, alg, token, expect: "valid" or a TokenVerificationError reason,
  and for a valid token the claims it must yield}.
"""

import base64
import json
import os
import secrets
import sys
import time
from importlib.metadata import version

import jwt as pyjwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwcrypto import jwk as cjwk
from jwcrypto import jws as cjws
from jwcrypto import jwt as cjwt
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

import dpop

ISSUER = "https://issuer.jose-interop.test"
AUDIENCE = "tokenkit-backend"
AUTHORIZED_PARTY = "https://app.jose-interop.test"

# The verifier's algorithms and the key each gets: RSA sizes grow with the hash, as issuers do.
ASYMMETRIC = [
    ("RS256", ("RSA", 2048)),
    ("RS384", ("RSA", 3072)),
    ("RS512", ("RSA", 4096)),
    ("PS256", ("RSA", 2048)),
    ("PS384", ("RSA", 3072)),
    ("PS512", ("RSA", 4096)),
    ("ES256", ("EC", "P-256")),
    ("ES384", ("EC", "P-384")),
    ("EdDSA", ("OKP", "Ed25519")),
]
HMAC = ["HS256", "HS384", "HS512"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def claims(library: str, alg: str, now: int, **changes) -> dict:
    """The payload of one token: registered claims, Clerk's sid and azp, and custom claims of every JSON type."""
    audience = AUDIENCE if library == "pyjwt" else [AUDIENCE, "https://other.jose-interop.test"]
    payload = {
        "iss": ISSUER,
        "aud": audience,
        "sub": f"user_{library}_{alg.lower()}",
        "sid": f"sess_{secrets.token_hex(6)}",
        "azp": AUTHORIZED_PARTY,
        "jti": secrets.token_hex(8),
        "iat": now,
        "nbf": now - 5,
        "exp": now + 24 * 3600,
        "custom": {
            "name": "Zo\u00eb \u6771\u4eac \U0001f680 \"quoted\" \\ /",
            "roles": ["admin", "reader"],
            "premium": True,
            "level": 42,
            "ratio": 0.5,
            "nested": {"ok": False, "list": [1, 2, 3]},
        },
    }
    payload.update(changes)
    return {name: value for name, value in payload.items() if value is not None}


# ---- key generation, one library at a time ----


def pyjwt_private_key(spec):
    kind, param = spec
    if kind == "RSA":
        return rsa.generate_private_key(public_exponent=65537, key_size=param)
    if kind == "EC":
        return ec.generate_private_key(ec.SECP256R1() if param == "P-256" else ec.SECP384R1())
    return ed25519.Ed25519PrivateKey.generate()


def pyjwt_public_jwk(private_key, spec, kid: str, alg: str) -> dict:
    """PyJWT's own JWK export of the public key, with kid, alg and use (as Clerk and Auth0 publish)."""
    exporter = {"RSA": RSAAlgorithm, "EC": ECAlgorithm, "OKP": OKPAlgorithm}[spec[0]]
    jwk = exporter.to_jwk(private_key.public_key(), as_dict=True)
    jwk.update({"kid": kid, "alg": alg, "use": "sig"})
    return jwk


def jwcrypto_private_key(spec, kid: str):
    kind, param = spec
    if kind == "RSA":
        return cjwk.JWK.generate(kty="RSA", size=param, kid=kid)
    return cjwk.JWK.generate(kty=kind, crv=param, kid=kid)


def jwcrypto_public_jwk(key) -> dict:
    """jwcrypto's own export: kid, no alg (the verifier must take the algorithm from its allow-list and the key)."""
    return json.loads(key.export_public())


# ---- signing ----


def pyjwt_sign(payload: dict, key, alg: str, kid) -> str:
    headers = {"kid": kid} if kid else None
    return pyjwt.encode(payload, key, algorithm=alg, headers=headers)


def jwcrypto_sign(payload: dict, key, alg: str, kid) -> str:
    header = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    token = cjwt.JWT(header=header, claims=payload)
    token.make_signed_token(key)
    return token.serialize()


def tamper(token: str) -> str:
    """Swaps the payload for another with a different sub, keeping the signature."""
    header, payload, signature = token.split(".")
    claims_ = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims_["sub"] = "user_someone_else"
    return ".".join([header, b64url(json.dumps(claims_, separators=(",", ":")).encode()), signature])


def expected(payload: dict) -> dict:
    audience = payload["aud"] if isinstance(payload["aud"], list) else [payload["aud"]]
    names = sorted(payload.keys())
    kept = {name: payload[name] for name in ["sub", "sid", "azp", "jti", "iat", "nbf", "exp", "custom"]}
    return dict(kept, audience=audience, names=names)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: generate.py OUTPUT_DIRECTORY")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    now = int(time.time())
    hmac_secret = secrets.token_bytes(64)
    jwks = []
    tokens = []

    def add(name, library, alg, token, expect, payload=None):
        entry = {"name": name, "library": library, "alg": alg, "token": token, "expect": expect}
        if expect == "valid":
            entry["claims"] = expected(payload)
        tokens.append(entry)

    # PyJWT: keys from `cryptography`, exported by PyJWT, tokens by jwt.encode.
    pyjwt_keys = {}
    for alg, spec in ASYMMETRIC:
        kid = f"pyjwt-{alg.lower()}"
        key = pyjwt_private_key(spec)
        pyjwt_keys[alg] = (key, kid, spec)
        jwks.append(pyjwt_public_jwk(key, spec, kid, alg))
        payload = claims("pyjwt", alg, now)
        add(f"pyjwt {alg}", "pyjwt", alg, pyjwt_sign(payload, key, alg, kid), "valid", payload)
    for alg in HMAC:
        payload = claims("pyjwt", alg, now)
        add(f"pyjwt {alg}", "pyjwt", alg, pyjwt_sign(payload, hmac_secret, alg, None), "valid", payload)

    # jwcrypto: keys generated and exported by jwcrypto, tokens by jwcrypto.jwt.
    jwcrypto_keys = {}
    for alg, spec in ASYMMETRIC:
        kid = f"jwcrypto-{alg.lower()}"
        key = jwcrypto_private_key(spec, kid)
        jwcrypto_keys[alg] = (key, kid, spec)
        jwks.append(jwcrypto_public_jwk(key))
        payload = claims("jwcrypto", alg, now)
        add(f"jwcrypto {alg}", "jwcrypto", alg, jwcrypto_sign(payload, key, alg, kid), "valid", payload)
    oct_key = cjwk.JWK(kty="oct", k=b64url(hmac_secret))
    for alg in HMAC:
        payload = claims("jwcrypto", alg, now)
        add(f"jwcrypto {alg}", "jwcrypto", alg, jwcrypto_sign(payload, oct_key, alg, None), "valid", payload)

    # Tokens to refuse, each with the reason TokenVerificationError must give.
    for library, keys, sign, fresh in [
        ("pyjwt", pyjwt_keys, pyjwt_sign, lambda spec, kid: pyjwt_private_key(spec)),
        ("jwcrypto", jwcrypto_keys, jwcrypto_sign, jwcrypto_private_key),
    ]:
        for alg in ["RS256", "ES256", "EdDSA"]:
            key, kid, spec = keys[alg]
            # Same kid as a published key, signed by another key of the same kind.
            add(f"{library} {alg} wrong key", library, alg, sign(claims(library, alg, now), fresh(spec, kid), alg, kid),
                "invalidSignature")
            add(f"{library} {alg} tampered payload", library, alg, tamper(sign(claims(library, alg, now), key, alg, kid)),
                "invalidSignature")
        key, kid, spec = keys["RS256"]
        add(f"{library} RS256 expired", library, "RS256",
            sign(claims(library, "RS256", now, iat=now - 7200, nbf=now - 7200, exp=now - 3600), key, "RS256", kid),
            "expired")
        add(f"{library} RS256 not yet valid", library, "RS256",
            sign(claims(library, "RS256", now, nbf=now + 3600), key, "RS256", kid), "notYetValid")
        add(f"{library} RS256 wrong issuer", library, "RS256",
            sign(claims(library, "RS256", now, iss="https://evil.jose-interop.test"), key, "RS256", kid),
            "issuerMismatch")
        add(f"{library} RS256 wrong audience", library, "RS256",
            sign(claims(library, "RS256", now, aud="someone-else"), key, "RS256", kid), "audienceMismatch")
        add(f"{library} RS256 wrong authorized party", library, "RS256",
            sign(claims(library, "RS256", now, azp="https://evil.jose-interop.test"), key, "RS256", kid),
            "partyNotAllowed")
        add(f"{library} RS256 without exp", library, "RS256",
            sign(claims(library, "RS256", now, exp=None), key, "RS256", kid), "missingClaim")
        add(f"{library} RS256 unknown kid", library, "RS256",
            sign(claims(library, "RS256", now), key, "RS256", f"{library}-retired"), "unknownKeyID")
        add(f"{library} HS256 wrong secret", library, "HS256",
            sign(claims(library, "HS256", now),
                 secrets.token_bytes(64) if library == "pyjwt" else cjwk.JWK(kty="oct", k=b64url(secrets.token_bytes(64))),
                 "HS256", None),
            "invalidSignature")

    # PyJWT key published with alg RS256, used for PS256: the key's own alg must win.
    key, kid, _ = pyjwt_keys["RS256"]
    add("pyjwt PS256 with an RS256 key", "pyjwt", "PS256", pyjwt_sign(claims("pyjwt", "PS256", now), key, "PS256", kid),
        "keyAlgorithmMismatch")
    # alg none, as PyJWT writes it (no signature) and with a kid of a published key.
    add("pyjwt none", "pyjwt", "none", pyjwt.encode(claims("pyjwt", "none", now), None, algorithm="none"),
        "unsignedToken")
    add("pyjwt none with kid", "pyjwt", "none",
        pyjwt.encode(claims("pyjwt", "none", now), None, algorithm="none", headers={"kid": "pyjwt-rs256"}),
        "unsignedToken")
    # The HS256 key-confusion attack: HMAC with the RSA public key's PEM as the secret, kid of the RSA key.
    # jwcrypto lets an oct key hold any bytes, so it can mint what PyJWT refuses to. The verifier's HMAC secret
    # has no kid, so a token naming the RSA key's kid finds no secret at all.
    rsa_key, rsa_kid, _ = jwcrypto_keys["RS256"]
    pem = rsa_key.export_to_pem(private_key=False)
    add("jwcrypto HS256 signed with the RSA public key", "jwcrypto", "HS256",
        jwcrypto_sign(claims("jwcrypto", "HS256", now), cjwk.JWK(kty="oct", k=b64url(pem)), "HS256", rsa_kid),
        "unknownKeyID")
    # A JWS in JSON serialization, not compact: the verifier accepts only compact tokens.
    ec_key, ec_kid, _ = jwcrypto_keys["ES256"]
    json_jws = cjws.JWS(json.dumps(claims("jwcrypto", "ES256", now)).encode())
    json_jws.add_signature(ec_key, None, json.dumps({"alg": "ES256", "kid": ec_kid}))
    add("jwcrypto ES256 JSON serialization", "jwcrypto", "ES256", json_jws.serialize(compact=False), "malformedToken")

    manifest = {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "authorizedParty": AUTHORIZED_PARTY,
        "hmacSecret": b64url(hmac_secret),
        "generatedAt": now,
        "libraries": {"PyJWT": pyjwt.__version__, "jwcrypto": version("jwcrypto"), "cryptography": version("cryptography")},
        "tokens": tokens,
    }
    with open(os.path.join(out, "jwks.json"), "w") as f:
        json.dump({"keys": jwks}, f, indent=1)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
    dpop.generate(out, now)
    valid = sum(1 for t in tokens if t["expect"] == "valid")
    print(f"jose: {len(jwks)} keys, {valid} valid and {len(tokens) - valid} invalid tokens in {out} "
          f"(PyJWT {pyjwt.__version__}, jwcrypto {version('jwcrypto')})", file=sys.stderr)


if __name__ == "__main__":
    main()
