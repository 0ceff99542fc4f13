"""CrowdRoom's Flow A through the one origin, with only the seed's calls and Supabase's clients.

usage: app_flow.py BASE_URL ANON_KEY SESSION USDZ_PATH JSON_PATH LARGE_BYTES
The clients are set up as the app's Supabase client sets them up: the anon key as `apikey`, the
user's session as the bearer token, the Realtime socket opened with the anon key and the session
handed over with `set_auth`. Twice — a scan PUT in one piece, then one of at least LARGE_BYTES
(over ingest's multipart threshold) PUT part by part — quota (functions) → upload-init → join
room:{room_id} at once (realtime) → the catch-up says `uploading` (postgrest) → PUT → upload-complete
→ `queued`, the stages and `ready` on the socket, each read the way the seed's handler code reads
msg.payload → the catch-up says `ready` → our own GET /rooms/versions/{id}, on the same origin.
Then the feed, with the seed's query. Prints one JSON object of what it saw.
"""
import asyncio
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import urllib.request
import zipfile
from functools import partial

from postgrest import SyncPostgrestClient
from supabase_functions import SyncFunctionsClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Support", "Witnesses"))
from app_session import invoke as invoke_with, put, read_scan, realtime_socket  # noqa: E402

base, anon_key, session, usdz_path, json_path = sys.argv[1:6]
large_bytes = int(sys.argv[6])
headers = {"Authorization": f"Bearer {session}", "apikey": anon_key}
functions = SyncFunctionsClient(f"{base}/functions/v1", dict(headers))
rest = SyncPostgrestClient(f"{base}/rest/v1", headers=dict(headers))
invoke = partial(invoke_with, functions)


def large_usdz(source, at_least, folder):
    """`source` with one more stored entry, `padding.wav`, making the package at least `at_least`
    bytes: a valid USDZ (the entry's data 64-byte aligned, as the format wants) that transcodes
    like `source`, without authoring a scene that big."""
    path = os.path.join(folder, "large.usdz")
    shutil.copyfile(source, path)
    name = "padding.wav"
    with zipfile.ZipFile(path, "a") as archive:
        info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        # The local header (30 bytes, the name, the extra field) starts where the directory was.
        unpadded = archive.start_dir + 30 + len(name) + 4
        padding = -unpadded % 64
        info.extra = struct.pack("<HH", 0x1986, padding) + bytes(padding)
        archive.writestr(info, bytes(max(at_least - os.path.getsize(source), 0)))
    with open(path, "rb") as f:
        return f.read()


async def catch_up(version, until):
    """The version's catch-up (§6.2), read again for up to 10 s until `until(rows)`: the catalog is
    a projection of its own of the uploads and statuses, and may trail upload-init's answer and
    the socket's `ready` by a moment (on a stack that just started, while its consumers join)."""
    started = time.monotonic()
    while True:
        rows = rest.from_("room_versions").select("id,status").eq("id", version).execute().data
        if until(rows) or time.monotonic() - started > 10:
            return rows
        await asyncio.sleep(0.05)


async def upload(client, seen, label, usdz, roomplan):
    """One scan through Flow A; what was seen goes to seen[label]."""
    flow = seen[label] = {"events": []}
    init = invoke("upload-init", {"title": "客厅", "tags": ["living room"], "visibility": "public",
                                  "bytes_source": len(usdz), "location_city": "杭州"})
    room, version = init["room_id"], init["version_id"]
    flow["room_id"], flow["version_id"] = room, version

    done = asyncio.Event()
    joined = asyncio.Event()

    def on_event(message):
        # This client hands over the broadcast's {type, event, payload} (its model keeps only
        # those keys; supabase-swift's msg.payload also has status / version_id / error beside
        # them, where the seed's handlers read them: ProtocolTests covers that frame).
        inner = message.get("payload") or {}
        flow["events"].append({"status": inner.get("status"), "version_id": inner.get("version_id"),
                               "event": message.get("event")})
        if message.get("event") in ("ready", "failed"):
            done.set()

    def on_state(state, error):
        # A refused join is retried by the client itself; the refusal is reported (and fails
        # the test: the owner's join right after upload-init is to be taken at once).
        if str(getattr(state, "value", state)) == "SUBSCRIBED":
            joined.set()
        elif error:
            flow["join_error"] = str(error)

    channel = client.channel(f"room:{room}")
    for event in ("transcode_progress", "ready", "failed"):
        channel.on_broadcast(event, on_event)
    await channel.subscribe(on_state)
    await asyncio.wait_for(joined.wait(), 10)
    flow["joined_before_complete"] = True

    flow["catch_up_before"] = await catch_up(version, lambda rows: bool(rows))
    if "presigned_usdz_parts" in init:
        parts = init["presigned_usdz_parts"]
        flow["parts"] = [part["bytes"] for part in parts]
        offset = 0
        for part in sorted(parts, key=lambda p: p["part_number"]):
            put(part["url"], usdz[offset:offset + part["bytes"]])
            offset += part["bytes"]
        flow["parts_cover_the_file"] = offset == len(usdz)
    else:
        put(init["presigned_usdz"], usdz)
    put(init["presigned_json"], roomplan)
    flow["complete"] = invoke("upload-complete", {"version_id": version, "redactions": []})
    await asyncio.wait_for(done.wait(), 120)
    await client.remove_channel(channel)
    flow["catch_up_after"] = await catch_up(version, lambda rows: rows[:1] == [{"id": version, "status": "ready"}])
    # One of our own routes, on the same origin.
    request = urllib.request.Request(f"{base}/rooms/versions/{version}", headers={"Authorization": f"Bearer {session}"})
    with urllib.request.urlopen(request) as answer:
        details = json.loads(answer.read())
    flow["details"] = {"status": details.get("status"), "manifest": bool((details.get("outputs") or {}).get("manifest"))}


async def main():
    seen = {}
    quota = invoke("quota", method="GET")
    seen["quota_limit"] = quota["storage"]["limit"]
    usdz, roomplan = read_scan(usdz_path, json_path)

    client = await realtime_socket(base, anon_key, session)
    await upload(client, seen, "single", usdz, roomplan)
    with tempfile.TemporaryDirectory() as folder:
        large = large_usdz(usdz_path, large_bytes, folder)
        seen["large_bytes"] = len(large)
        await upload(client, seen, "multipart", large, roomplan)
    await client.close()

    # The feed, as the seed's app asks for it (§2.2).
    feed = rest.from_("rooms").select("*").eq("visibility", "public").order("created_at", desc=True).limit(20).execute()
    seen["feed"] = [room["id"] for room in feed.data]
    print(json.dumps(seen))


asyncio.run(main())
