#!/usr/bin/env python3
"""Verifies DPoP proofs (RFC 9449) minted by TokenKit with jwcrypto and PyJWT, two implementations nobody
here wrote, and prints one verdict per proof as JSON.

    python verify_dpop.py CASES.json

CASES.json is a list of {"proof", "htm", "htu", "access_token" (or null), "nonce" (or null), "jkt", "now"}: what
the server expects for the request. Each verdict is {"ok": bool, "errors": [...], "thumbprint": str or null}.
A proof is accepted when, per RFC 9449 section 4.3:
- the header has typ "dpop+jwt", alg "ES256" and a public EC P-256 "jwk" with no private member;
- the signature verifies with that key, in jwcrypto and in PyJWT;
- the payload has a string jti, htm and htu equal to the expected ones, an integer iat within 60 s of "now";
- ath is present exactly when an access token is, and is base64url(SHA-256(access token)), computed here;
- nonce is present exactly when expected, and equal;
- the key's RFC 7638 thumbprint (computed by jwcrypto) equals the expected jkt.
"""

import base64
import hashlib
import json
import sys

import jwt as pyjwt
from jwcrypto import jwk as cjwk
from jwcrypto import jws as cjws
from jwcrypto.common import json_decode


def verify(case):
    errors = []
    proof = case["proof"]
    try:
        header = pyjwt.get_unverified_header(proof)
    except Exception as error:  # noqa: BLE001 - any parse failure is a rejected proof
        return {"ok": False, "errors": ["header: %s" % type(error).__name__], "thumbprint": None}
    if header.get("typ") != "dpop+jwt":
        errors.append("typ")
    if header.get("alg") != "ES256":
        errors.append("alg")
    jwk_members = header.get("jwk")
    if not isinstance(jwk_members, dict):
        return {"ok": False, "errors": errors + ["jwk missing"], "thumbprint": None}
    if "d" in jwk_members:
        errors.append("jwk holds a private key")
    if jwk_members.get("kty") != "EC" or jwk_members.get("crv") != "P-256":
        errors.append("jwk is not EC P-256")
    try:
        key = cjwk.JWK(**jwk_members)
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "errors": errors + ["jwk: %s" % type(error).__name__], "thumbprint": None}
    thumbprint = key.thumbprint()
    if thumbprint != case["jkt"]:
        errors.append("jkt")

    # jwcrypto: signature and payload.
    payload = None
    try:
        token = cjws.JWS()
        token.deserialize(proof)
        token.verify(key, alg="ES256")
        payload = json_decode(token.payload)
    except Exception as error:  # noqa: BLE001
        errors.append("jwcrypto signature: %s" % type(error).__name__)

    # PyJWT: the same proof, verified again on its own.
    try:
        public = pyjwt.PyJWK(jwk_members, algorithm="ES256").key
        pyjwt.decode(proof, public, algorithms=["ES256"], options={"verify_aud": False, "verify_iat": False})
    except Exception as error:  # noqa: BLE001
        errors.append("pyjwt signature: %s" % type(error).__name__)

    if payload is not None:
        if not isinstance(payload.get("jti"), str) or len(payload["jti"]) < 16:
            errors.append("jti")
        if payload.get("htm") != case["htm"]:
            errors.append("htm")
        if payload.get("htu") != case["htu"]:
            errors.append("htu")
        iat = payload.get("iat")
        if not isinstance(iat, int) or abs(iat - case["now"]) > 60:
            errors.append("iat")
        token = case.get("access_token")
        expected_ath = None
        if token is not None:
            digest = hashlib.sha256(token.encode("ascii")).digest()
            expected_ath = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        if payload.get("ath") != expected_ath:
            errors.append("ath")
        if payload.get("nonce") != case.get("nonce"):
            errors.append("nonce")
    return {"ok": not errors, "errors": errors, "thumbprint": thumbprint}


def main():
    if len(sys.argv) != 2:
        print("usage: verify_dpop.py CASES.json", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    print(json.dumps([verify(case) for case in cases]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
