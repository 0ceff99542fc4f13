"""Signing in at backbone dev's one origin with Supabase's own Python client (supabase-py).

usage: auth_flow.py BASE_URL ANON_KEY APPLE_JWKS_FILE APPLE_CLIENT_ID
Signs up, signs in, reads and changes the user, refreshes, signs out, signs in with Apple (an
identity token signed with a key this script makes and publishes in APPLE_JWKS_FILE, the key set
the stack was told to trust), uses the session on the services' routes, and provokes each error
the app must handle. Prints one JSON object of what it saw.
"""
import asyncio
import hashlib
import json
import os
import sys
import time
import uuid

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from postgrest import SyncPostgrestClient
from supabase import create_client
from supabase_auth.errors import AuthApiError, AuthWeakPasswordError
from supabase_functions import SyncFunctionsClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Support", "Witnesses"))
from app_session import realtime_socket  # noqa: E402

base, anon_key, jwks_path, client_id = sys.argv[1:5]
seen = {}


def client():
    return create_client(base, anon_key)


def error_of(call):
    """The error a client call raised: its status, code and message (None if it succeeded)."""
    try:
        call()
    except AuthWeakPasswordError as e:
        return {"status": e.status, "code": e.code, "message": e.message, "reasons": list(e.reasons), "kind": "weak_password"}
    except AuthApiError as e:
        return {"status": e.status, "code": e.code, "message": e.message, "kind": "api"}
    return None


def raw(path, body, headers=None):
    """A request as a client without supabase-py would send it: status, JSON body, headers."""
    response = httpx.post(f"{base}/auth/v1{path}", content=body,
                          headers={"apikey": anon_key, "Content-Type": "application/json", **(headers or {})})
    try:
        parsed = response.json()
    except ValueError:
        parsed = response.text
    return {"status": response.status_code, "body": parsed, "retry_after": response.headers.get("retry-after")}


def services(access_token):
    """The session on the services' routes, as the apps call them."""
    headers = {"Authorization": f"Bearer {access_token}", "apikey": anon_key}
    quota = SyncFunctionsClient(f"{base}/functions/v1", dict(headers)).invoke("quota", {"method": "GET", "responseType": "json"})
    rooms = SyncPostgrestClient(f"{base}/rest/v1", headers=dict(headers)).from_("rooms").select("*").limit(1).execute()
    continuing = httpx.get(f"{base}/learning/continue", headers=headers)
    return {"quota_limit": quota["storage"]["limit"], "rooms": len(rooms.data), "continue_status": continuing.status_code}


async def join_own_channel(access_token, user_id):
    """The Realtime join as the apps make it: the socket opened with the anon key, the session
    handed over with set_auth, the user's own channel. Returns the join's outcome."""
    socket = await realtime_socket(base, anon_key, access_token)
    joined = asyncio.Event()
    outcome = {}

    def on_state(state, error):
        if str(getattr(state, "value", state)) == "SUBSCRIBED":
            outcome["joined"] = True
            joined.set()
        elif error:
            outcome["error"] = str(error)

    channel = socket.channel(f"user:{user_id}")
    await channel.subscribe(on_state)
    try:
        await asyncio.wait_for(joined.wait(), 10)
    except asyncio.TimeoutError:
        outcome.setdefault("error", "no answer to the join within 10 s")
    await socket.close()
    return outcome


# E-mail and password: sign up (confirmed at once), sign in, the user, changes, refresh, sign-out.
app = client()
email = f"reader-{uuid.uuid4().hex[:10]}@example.com"
signed_up = app.auth.sign_up({"email": email, "password": "first-password", "options": {"data": {"display_name": "Reader"}}})
seen["sign_up"] = {"email": signed_up.user.email, "has_session": signed_up.session is not None,
                   "display_name": signed_up.user.user_metadata.get("display_name")}
signed_in = app.auth.sign_in_with_password({"email": email, "password": "first-password"})
session = signed_in.session
claims = jwt.decode(session.access_token, options={"verify_signature": False})
header = jwt.get_unverified_header(session.access_token)
seen["claims"] = {k: claims.get(k) for k in ["aud", "role", "email", "aal", "is_anonymous", "iss"]}
seen["claims"]["alg"] = header["alg"]
seen["claims"]["lifetime"] = claims["exp"] - claims["iat"]
seen["claims"]["has_session_id"] = bool(claims.get("session_id"))
seen["claims"]["sub_is_user"] = claims["sub"] == signed_in.user.id
seen["claims"]["amr"] = [m["method"] for m in claims.get("amr", [])]
seen["jwks_kid"] = [k["kid"] for k in httpx.get(f"{base}/auth/v1/.well-known/jwks.json").json()["keys"]] == [header["kid"]]
seen["settings_apple"] = httpx.get(f"{base}/auth/v1/settings", headers={"apikey": anon_key}).json()["external"]["apple"]
seen["get_user"] = app.auth.get_user(session.access_token).user.email
seen["services"] = services(session.access_token)
updated = app.auth.update_user({"data": {"display_name": "Reader Two", "level": 3}})
seen["update_metadata"] = updated.user.user_metadata
app.auth.update_user({"password": "second-password"})
seen["old_password_after_change"] = error_of(lambda: client().auth.sign_in_with_password({"email": email, "password": "first-password"}))
seen["new_password_works"] = client().auth.sign_in_with_password({"email": email, "password": "second-password"}).user.email

# Refresh: rotation, a lost answer (the parent used again), then a replay of an old token.
first_refresh = app.auth.get_session().refresh_token
refreshed = app.auth.refresh_session()
seen["refresh_rotates"] = refreshed.session.refresh_token != first_refresh and refreshed.session.access_token != session.access_token
seen["refreshed_works"] = services(refreshed.session.access_token)["quota_limit"] > 0
seen["realtime"] = asyncio.run(join_own_channel(refreshed.session.access_token, refreshed.user.id))
parent_again = raw("/token?grant_type=refresh_token", json.dumps({"refresh_token": first_refresh}))
seen["parent_reuse_status"] = parent_again["status"]
time.sleep(11)  # past the reuse interval
replay = raw("/token?grant_type=refresh_token", json.dumps({"refresh_token": first_refresh}),
             {"X-Supabase-Api-Version": "2024-01-01"})
seen["replay"] = replay
# The session ended with it: its newest token no longer works.
latest = parent_again["body"].get("refresh_token") if isinstance(parent_again["body"], dict) else None
seen["after_replay"] = raw("/token?grant_type=refresh_token", json.dumps({"refresh_token": latest}), {"X-Supabase-Api-Version": "2024-01-01"})

# Sign-out: the session's refresh token stops.
other = client()
other_session = other.auth.sign_in_with_password({"email": email, "password": "second-password"}).session
other.auth.sign_out()
seen["after_sign_out"] = raw("/token?grant_type=refresh_token", json.dumps({"refresh_token": other_session.refresh_token}),
                             {"X-Supabase-Api-Version": "2024-01-01"})
seen["get_user_after_sign_out"] = error_of(lambda: other.auth.get_user(other_session.access_token))

# Sign in with Apple: an identity token of a key set the stack trusts, for the app, with the nonce.
apple_key = ec.generate_private_key(ec.SECP256R1())
public = jwt.algorithms.ECAlgorithm.to_jwk(apple_key.public_key(), as_dict=True)
public.update({"kid": "apple-test", "alg": "ES256", "use": "sig"})
with open(jwks_path, "w") as f:
    json.dump({"keys": [public]}, f)


def apple_token(key=apple_key, audience=client_id, nonce="raw-nonce-1", subject="001234.apple-user", expires_in=600):
    now = int(time.time())
    claims = {"iss": "https://appleid.apple.com", "aud": audience, "sub": subject, "iat": now, "exp": now + expires_in,
              "email": "apple-user@privaterelay.appleid.com", "email_verified": "true",
              "nonce": hashlib.sha256(nonce.encode()).hexdigest()}
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": "apple-test"})


apple_app = client()
with_apple = apple_app.auth.sign_in_with_id_token({"provider": "apple", "token": apple_token(), "nonce": "raw-nonce-1"})
again = client().auth.sign_in_with_id_token({"provider": "apple", "token": apple_token(), "nonce": "raw-nonce-1"})
seen["apple"] = {"provider": with_apple.user.app_metadata.get("provider"), "same_user": with_apple.user.id == again.user.id,
                 "identity": [i.provider for i in (with_apple.user.identities or [])],
                 "services": services(with_apple.session.access_token)["quota_limit"] > 0}
seen["apple_user_id"] = with_apple.user.id
seen["apple_refresh_token"] = with_apple.session.refresh_token
seen["apple_other_key"] = error_of(lambda: client().auth.sign_in_with_id_token(
    {"provider": "apple", "token": apple_token(key=ec.generate_private_key(ec.SECP256R1())), "nonce": "raw-nonce-1"}))
seen["apple_other_audience"] = error_of(lambda: client().auth.sign_in_with_id_token(
    {"provider": "apple", "token": apple_token(audience="com.example.other"), "nonce": "raw-nonce-1"}))
seen["apple_other_nonce"] = error_of(lambda: client().auth.sign_in_with_id_token(
    {"provider": "apple", "token": apple_token(), "nonce": "another-nonce"}))
seen["apple_expired"] = error_of(lambda: client().auth.sign_in_with_id_token(
    {"provider": "apple", "token": apple_token(expires_in=-60), "nonce": "raw-nonce-1"}))

# The errors an app must tell apart.
seen["wrong_password"] = error_of(lambda: client().auth.sign_in_with_password({"email": email, "password": "not-the-password"}))
seen["unknown_account"] = error_of(lambda: client().auth.sign_in_with_password({"email": "nobody@example.com", "password": "whatever1"}))
seen["weak_password"] = error_of(lambda: client().auth.sign_up({"email": f"weak-{uuid.uuid4().hex[:8]}@example.com", "password": "12345"}))
seen["malformed_email"] = error_of(lambda: client().auth.sign_up({"email": "not-an-address", "password": "long-enough"}))
seen["already_registered"] = error_of(lambda: client().auth.sign_up({"email": email, "password": "long-enough"}))
seen["broken_body"] = raw("/token?grant_type=password", b'{"email": "x@example.com", "password":', {"X-Supabase-Api-Version": "2024-01-01"})
seen["broken_body_legacy"] = raw("/signup", b"[1, 2", {})

# Guessing a password: refused with 429 and Retry-After well before 40 tries.
victim = f"victim-{uuid.uuid4().hex[:8]}@example.com"
client().auth.sign_up({"email": victim, "password": "victim-password"})
guesses = []
for attempt in range(1, 41):
    answer = raw("/token?grant_type=password", json.dumps({"email": victim, "password": f"guess-{attempt}"}),
                 {"X-Supabase-Api-Version": "2024-01-01"})
    guesses.append(answer)
    if answer["status"] == 429:
        break
seen["guesses"] = {"tries": len(guesses), "last": guesses[-1]}
seen["guess_through_client"] = error_of(lambda: client().auth.sign_in_with_password({"email": victim, "password": "victim-password"}))
# Account deletion (the stack runs with no grace period): the Apple user's refresh token stops as
# soon as the auth tables' erasure has run, and the user is gone.
apple_headers = {"Authorization": f"Bearer {with_apple.session.access_token}", "apikey": anon_key}
scheduled = SyncFunctionsClient(f"{base}/functions/v1", apple_headers).invoke("account-delete", {"method": "POST", "responseType": "json"})
started = time.monotonic()
deletion = {"scheduled": scheduled.get("status") if isinstance(scheduled, dict) else str(scheduled)}
while time.monotonic() - started < 60:
    answer = raw("/token?grant_type=refresh_token", json.dumps({"refresh_token": with_apple.session.refresh_token}),
                 {"X-Supabase-Api-Version": "2024-01-01"})
    if answer["status"] != 200:
        deletion["refresh"] = answer
        break
    with_apple.session.refresh_token = answer["body"]["refresh_token"]
    time.sleep(0.3)
deletion["seconds"] = round(time.monotonic() - started, 1)
deletion["get_user"] = error_of(lambda: client().auth.get_user(with_apple.session.access_token))
seen["deletion"] = deletion
print(json.dumps(seen, default=str))
