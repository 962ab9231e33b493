"""DPoP (RFC 9449) fixtures for TokenKit's DPoPInteropTests: proofs minted by PyJWT and by jwcrypto, and access
tokens bound to their keys with cnf.jkt (the thumbprint computed by jwcrypto), including hostile proofs that must
be refused with a given reason. Called by generate.py; writes dpop.json:

- issuer, audience, generatedAt, uri, method, libraries;
- jwks: the access-token issuer's public key (jwcrypto, ES256);
- cases: {name, library, alg, token, proof, method, uri, nonces, expect}, where expect is "valid" or a
  TokenVerificationError description without its type prefix, such as "invalidDPoPProof(htu)".
"""

import hashlib
import json
import os
import secrets
import sys
from importlib.metadata import version

import jwt as pyjwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwcrypto import jwk as cjwk
from jwcrypto import jwt as cjwt
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

ISSUER = "https://issuer.jose-interop.test"
AUDIENCE = "tokenkit-backend"
URI = "https://api.jose-interop.test/orders"
ALGORITHMS = [
    ("ES256", ("EC", "P-256")),
    ("ES384", ("EC", "P-384")),
    ("RS256", ("RSA", 2048)),
    ("PS256", ("RSA", 2048)),
    ("EdDSA", ("OKP", "Ed25519")),
]


def b64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def ath(token: str) -> str:
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


class PyJWTKey:
    """A key made by `cryptography`, its public JWK exported by PyJWT, proofs signed by jwt.encode."""

    library = "pyjwt"

    def __init__(self, spec):
        kind, param = spec
        if kind == "RSA":
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=param)
            exporter = RSAAlgorithm
        elif kind == "EC":
            self.private = ec.generate_private_key(ec.SECP256R1() if param == "P-256" else ec.SECP384R1())
            exporter = ECAlgorithm
        else:
            self.private = ed25519.Ed25519PrivateKey.generate()
            exporter = OKPAlgorithm
        self.public_jwk = exporter.to_jwk(self.private.public_key(), as_dict=True)
        self.private_jwk = exporter.to_jwk(self.private, as_dict=True)

    def thumbprint(self) -> str:
        # jwcrypto computes RFC 7638 for both libraries' keys.
        return cjwk.JWK(**self.public_jwk).thumbprint()

    def sign(self, claims: dict, alg: str, header: dict) -> str:
        headers = {name: value for name, value in header.items() if name != "alg"}
        return pyjwt.encode(claims, self.private, algorithm=alg, headers=headers)


class JWCryptoKey:
    """A key generated, exported and used for signing by jwcrypto."""

    library = "jwcrypto"

    def __init__(self, spec):
        kind, param = spec
        if kind == "RSA":
            self.key = cjwk.JWK.generate(kty="RSA", size=param)
        else:
            self.key = cjwk.JWK.generate(kty=kind, crv=param)
        self.public_jwk = json.loads(self.key.export_public())
        self.private_jwk = json.loads(self.key.export_private())

    def thumbprint(self) -> str:
        return self.key.thumbprint()

    def sign(self, claims: dict, alg: str, header: dict) -> str:
        token = cjwt.JWT(header=dict(header, alg=alg), claims=claims)
        token.make_signed_token(self.key)
        return token.serialize()


def generate(out: str, now: int) -> None:
    issuer_key = cjwk.JWK.generate(kty="EC", crv="P-256", kid="dpop-issuer")
    cases = []

    def access_token(jkt: str) -> str:
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user_dpop", "iat": now, "exp": now + 24 * 3600,
                  "jti": secrets.token_hex(8), "cnf": {"jkt": jkt}}
        token = cjwt.JWT(header={"alg": "ES256", "kid": "dpop-issuer", "typ": "at+jwt"}, claims=claims)
        token.make_signed_token(issuer_key)
        return token.serialize()

    def proof_claims(token, **changes) -> dict:
        claims = {"jti": secrets.token_urlsafe(16), "htm": "GET", "htu": URI, "iat": now}
        if token is not None:
            claims["ath"] = ath(token)
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def add(name, key, alg, token, proof, expect, method="GET", uri=URI, nonces=False):
        cases.append({"name": name, "library": key.library, "alg": alg, "token": token, "proof": proof,
                      "method": method, "uri": uri, "nonces": nonces, "expect": expect})

    keys = {}
    for make in (PyJWTKey, JWCryptoKey):
        for alg, spec in ALGORITHMS:
            key = make(spec)
            keys[(key.library, alg)] = key
            token = access_token(key.thumbprint())
            header = {"typ": "dpop+jwt", "jwk": key.public_jwk}
            add(f"{key.library} {alg}", key, alg, token, key.sign(proof_claims(token), alg, header), "valid")
            # The query and fragment are no part of htu; scheme and host compare without letter case.
            add(f"{key.library} {alg} normalized htu", key, alg, token,
                key.sign(proof_claims(token, htu="HTTPS://API.jose-interop.test:443/orders"), alg, header), "valid",
                uri=URI + "?page=2")

    for library in ("pyjwt", "jwcrypto"):
        key = keys[(library, "ES256")]
        other = keys[(library, "ES384")]
        token = access_token(key.thumbprint())
        header = {"typ": "dpop+jwt", "jwk": key.public_jwk}

        def hostile(name, expect, claims=None, head=None, alg="ES256", signer=key, tok=token, nonces=False):
            proof = signer.sign(claims or proof_claims(tok), alg, head or header)
            add(f"{library} {name}", key, alg, tok, proof, expect, nonces=nonces)

        hostile("wrong htu", "invalidDPoPProof(htu)", proof_claims(token, htu="https://api.jose-interop.test/admin"))
        hostile("wrong port", "invalidDPoPProof(htu)", proof_claims(token, htu="https://api.jose-interop.test:8443/orders"))
        hostile("wrong scheme", "invalidDPoPProof(htu)", proof_claims(token, htu="http://api.jose-interop.test/orders"))
        hostile("wrong htm", "invalidDPoPProof(htm)", proof_claims(token, htm="POST"))
        hostile("iat in the future", "invalidDPoPProof(iat)", proof_claims(token, iat=now + 60))
        hostile("iat too old", "invalidDPoPProof(iat)", proof_claims(token, iat=now - 300))
        hostile("typ JWT", "invalidDPoPProof(typ)", head={"typ": "JWT", "jwk": key.public_jwk})
        hostile("missing ath", "invalidDPoPProof(ath)", proof_claims(None))
        hostile("missing jti", "invalidDPoPProof(jti)", proof_claims(token, jti=None))
        hostile("private key in jwk", "invalidDPoPProof(jwk)", head={"typ": "dpop+jwt", "jwk": key.private_jwk})
        # Signed by the ES384 key while naming it: a proof that is fine, for a token bound to another key.
        hostile("proof key other than cnf.jkt", "dpopKeyMismatch", alg="ES384", signer=other,
                head={"typ": "dpop+jwt", "jwk": other.public_jwk})
        # The ES256 key's JWK in the header, another P-256 key's signature.
        stranger = (PyJWTKey if library == "pyjwt" else JWCryptoKey)(("EC", "P-256"))
        hostile("signed by another key", "invalidDPoPProof(signature)", signer=stranger)
        # The ES256 key's JWK in the header, an ES384 signature: the algorithm does not fit the key.
        hostile("alg other than the jwk's", "invalidDPoPProof(alg)", alg="ES384", signer=other)
        hostile("nonce from another server", "useDPoPNonce",
                proof_claims(token, nonce=b64url(secrets.token_bytes(24))), nonces=True)

    # alg none and HMAC, which PyJWT writes on request; the jwk is the ES256 key's.
    key = keys[("pyjwt", "ES256")]
    token = access_token(key.thumbprint())
    claims = proof_claims(token)
    add("pyjwt alg none", key, "none", token,
        pyjwt.encode(claims, None, algorithm="none", headers={"typ": "dpop+jwt", "jwk": key.public_jwk}),
        "invalidDPoPProof(alg)")
    add("pyjwt alg HS256", key, "HS256", token,
        pyjwt.encode(claims, secrets.token_bytes(32), algorithm="HS256",
                     headers={"typ": "dpop+jwt", "jwk": key.public_jwk}),
        "invalidDPoPProof(alg)")

    document = {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "generatedAt": now,
        "uri": URI,
        "libraries": {"PyJWT": pyjwt.__version__, "jwcrypto": version("jwcrypto")},
        "jwks": {"keys": [json.loads(issuer_key.export_public())]},
        "cases": cases,
    }
    with open(os.path.join(out, "dpop.json"), "w") as f:
        json.dump(document, f, indent=1)
    valid = sum(1 for case in cases if case["expect"] == "valid")
    print(f"jose: {valid} valid and {len(cases) - valid} hostile DPoP proofs in {out}", file=sys.stderr)
