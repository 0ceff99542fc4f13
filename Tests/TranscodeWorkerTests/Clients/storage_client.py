"""Supabase's own Storage client (storage3) loading room files the way the CrowdRoom app does.

Usage: storage_client.py BASE_URL SPEC_JSON
SPEC_JSON: {"owner": token, "stranger": token, "public_thumbnail": path, "public_manifest": path,
            "private_thumbnail": path, "source": path}
Prints one JSON object: call name -> what came back (status, first bytes, error code...).
"""
import json
import sys

import httpx
from storage3 import SyncStorageClient

base, spec = sys.argv[1], json.loads(sys.argv[2])


def bucket(user):
    # The app sends the anon key as `apikey` and the user's session as the bearer token.
    client = SyncStorageClient(base + "/storage/v1/", {"apikey": spec[user], "Authorization": "Bearer " + spec[user]})
    return client.from_("rooms")


def load(url, headers=None):
    """GET as an image loader would: following redirects, no SDK."""
    response = httpx.get(url, headers=headers or {}, follow_redirects=True, timeout=30)
    answer = {"status": response.status_code, "redirects": [r.status_code for r in response.history],
              "magic": response.content[:4].hex(), "format": response.content[8:12].hex(), "bytes": len(response.content)}
    if response.status_code >= 400:
        try:
            answer["code"] = response.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            answer["code"] = None
    elif response.headers.get("content-type", "").startswith("application/json"):
        answer["json"] = response.json()
    return answer


out = {}
owner, stranger = bucket("owner"), bucket("stranger")

# The feed card: getPublicURL(thumbnail_path), loaded by anyone.
out["public_thumbnail"] = load(stranger.get_public_url(spec["public_thumbnail"]))
out["public_manifest"] = load(stranger.get_public_url(spec["public_manifest"]))
# Not public objects: a private room's output, and a source.
out["private_via_public"] = load(stranger.get_public_url(spec["private_thumbnail"]))
out["owner_private_via_public"] = load(owner.get_public_url(spec["private_thumbnail"]))
out["source_via_public"] = load(stranger.get_public_url(spec["source"]))

# The owner's private room: createSignedURL, then the signed URL as any loader would.
signed = owner.create_signed_url(spec["private_thumbnail"], 60)["signedURL"]
out["signed_url"] = signed
out["signed_owner"] = load(signed)
# The same token on another object, and a tampered token.
out["signed_other_object"] = load(signed.replace(spec["private_thumbnail"], spec["public_manifest"]))
out["signed_tampered"] = load(signed[:-2] + ("AA" if not signed.endswith("AA") else "BB"))
# A stranger cannot sign the owner's private object, nor a source.
for name, user, path in [("sign_stranger", stranger, spec["private_thumbnail"]), ("sign_source", owner, spec["source"])]:
    try:
        out[name] = {"signedURL": user.create_signed_url(path, 60)["signedURL"]}
    except Exception as error:  # storage3 raises its own error types for non-2xx answers
        out[name] = {"error": type(error).__name__}
for name, token, path in [("sign_stranger_raw", spec["stranger"], spec["private_thumbnail"]),
                          ("sign_source_raw", spec["owner"], spec["source"])]:
    response = httpx.post(base + "/storage/v1/object/sign/rooms/" + path, json={"expiresIn": 60},
                          headers={"Authorization": "Bearer " + token}, timeout=30)
    out[name] = {"status": response.status_code, "code": response.json()["error"]["code"]}

print(json.dumps(out, sort_keys=True))
