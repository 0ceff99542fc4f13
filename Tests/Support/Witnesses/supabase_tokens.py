"""Mints the tokens and key sets the token tests check, with PyJWT and `cryptography`
(an implementation independent of the one under test), shaped as Supabase Auth issues them.

    python3 supabase_tokens.py NOW SECRET ISSUER

prints one JSON object:
  keys:    kid -> public JWK (as PyJWT exports it, plus kid, alg, use)
  main:    the kids of the key set the services read (es-1, rs-1 and keys no token may use)
  pem:     kid -> the public key as PEM (the bytes of an algorithm-confusion attack)
  tokens:  name -> compact JWS

Tokens PyJWT refuses to make (a signature over the wrong curve for the header's alg, HS256
with a public key as the secret, a 1024-bit RSA key) are assembled here by hand with
`cryptography` and `hmac`, which is how an attacker would make them.
"""
import base64
import hashlib
import hmac
import json
import sys
import uuid

import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

now, secret, issuer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
audience = "authenticated"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact(header: dict, payload: dict, sign) -> str:
    signing_input = (b64(json.dumps(header, separators=(",", ":")).encode()) + "."
                     + b64(json.dumps(payload, separators=(",", ":")).encode()))
    return signing_input + "." + b64(sign(signing_input.encode()))


def ecdsa_raw(key, size: int):
    """JWS ECDSA signatures are r || s, each `size` bytes (RFC 7518 §3.4); SHA-256 whatever the curve."""
    def sign(data: bytes) -> bytes:
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")
    return sign


def hs256(secret_bytes: bytes):
    return lambda data: hmac.new(secret_bytes, data, hashlib.sha256).digest()


private = {
    "es-1": ec.generate_private_key(ec.SECP256R1()),
    "es-2": ec.generate_private_key(ec.SECP256R1()),
    "es-3": ec.generate_private_key(ec.SECP256R1()),
    "ec-384": ec.generate_private_key(ec.SECP384R1()),
    "rs-1": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "rs-384": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "rs-1024": rsa.generate_private_key(public_exponent=65537, key_size=1024),
}
declared = {"es-1": "ES256", "es-2": "ES256", "es-3": "ES256", "ec-384": "ES384", "rs-1": "RS256", "rs-384": "RS384"}
keys = {}
for kid, key in private.items():
    exporter = ECAlgorithm if isinstance(key, ec.EllipticCurvePrivateKey) else RSAAlgorithm
    jwk = exporter.to_jwk(key.public_key(), as_dict=True)
    jwk.update({"kid": kid, "use": "sig"})
    if kid in declared:
        jwk["alg"] = declared[kid]
    keys[kid] = jwk
oct_secret = b"a-symmetric-key-in-the-key-set-0123456789"
keys["oct-1"] = {"kty": "oct", "kid": "oct-1", "k": b64(oct_secret)}
pem = {kid: private[kid].public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo).decode()
       for kid in ("es-1", "rs-1")}


def session(**overrides) -> dict:
    """The claims of a Supabase Auth access token."""
    claims = {"iss": issuer, "sub": str(uuid.uuid4()), "aud": audience, "exp": now + 3600, "iat": now,
              "email": "reader@example.com", "role": "authenticated", "aal": "aal1", "session_id": str(uuid.uuid4()),
              "is_anonymous": False}
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def pyjwt(kid: str, algorithm: str, claims: dict) -> str:
    return jwt.encode(claims, private[kid], algorithm=algorithm, headers={"kid": kid})


# Supabase's project API keys (legacy, HS256 with the project's JWT secret): no sub, no aud.
api_key = {"iss": "supabase", "ref": "witness", "iat": now, "exp": now + 10 * 365 * 86400}

tokens = {
    # Accepted.
    "es256": pyjwt("es-1", "ES256", session()),
    "rs256": pyjwt("rs-1", "RS256", session()),
    "es256_audience_array": pyjwt("es-1", "ES256", session(aud=["authenticated", "other-app"])),
    "es256_es2": pyjwt("es-2", "ES256", session()),
    "es256_es3": pyjwt("es-3", "ES256", session()),
    "hs256_session": jwt.encode(session(), secret, algorithm="HS256"),
    "service_role": jwt.encode({**api_key, "role": "service_role"}, secret, algorithm="HS256"),
    # Refused.
    "anon": jwt.encode({**api_key, "role": "anon"}, secret, algorithm="HS256"),
    "unknown_kid": jwt.encode(session(), private["es-2"], algorithm="ES256", headers={"kid": "es-unknown"}),
    "es384_p384": pyjwt("ec-384", "ES384", session()),
    "es256_p384_key": compact({"alg": "ES256", "kid": "ec-384", "typ": "JWT"}, session(), ecdsa_raw(private["ec-384"], 48)),
    "es256_p384_signature": compact({"alg": "ES256", "kid": "es-1", "typ": "JWT"}, session(), ecdsa_raw(private["ec-384"], 48)),
    "none": jwt.encode(session(), None, algorithm="none", headers={"kid": "es-1"}),
    "hs256_public_pem": compact({"alg": "HS256", "kid": "es-1", "typ": "JWT"}, session(), hs256(pem["es-1"].encode())),
    "hs256_public_jwk": compact({"alg": "HS256", "kid": "es-1", "typ": "JWT"}, session(),
                                hs256(json.dumps(keys["es-1"], separators=(",", ":")).encode())),
    "hs256_rsa_pem": compact({"alg": "HS256", "kid": "rs-1", "typ": "JWT"}, session(), hs256(pem["rs-1"].encode())),
    "hs256_oct_key": compact({"alg": "HS256", "kid": "oct-1", "typ": "JWT"}, session(), hs256(oct_secret)),
    "rs256_with_ec_kid": jwt.encode(session(), private["rs-1"], algorithm="RS256", headers={"kid": "es-1"}),
    "es256_with_rsa_kid": jwt.encode(session(), private["es-1"], algorithm="ES256", headers={"kid": "rs-1"}),
    "rs256_key_declares_rs384": pyjwt("rs-384", "RS256", session()),
    "rs256_short_key": compact({"alg": "RS256", "kid": "rs-1024", "typ": "JWT"}, session(),
                               lambda data: private["rs-1024"].sign(data, padding.PKCS1v15(), hashes.SHA256())),
    "wrong_audience": pyjwt("es-1", "ES256", session(aud="other-app")),
    "no_audience": pyjwt("es-1", "ES256", session(aud=None)),
    "wrong_issuer": pyjwt("es-1", "ES256", session(iss="https://another-project.supabase.co/auth/v1")),
    "expired": pyjwt("es-1", "ES256", session(exp=now - 120, iat=now - 3720)),
}
# The same signature over a payload with another subject.
header, payload, signature = tokens["es256"].split(".")
tokens["es256_tampered"] = header + "." + b64(json.dumps(session(), separators=(",", ":")).encode()) + "." + signature

print(json.dumps({"keys": keys, "main": ["es-1", "rs-1", "ec-384", "rs-384", "rs-1024", "oct-1"], "pem": pem,
                  "tokens": tokens}))
