"""CrowdRoom's Flow A through the one origin, with only the seed's calls and Supabase's clients.

usage: app_flow.py BASE_URL TOKEN USDZ_PATH JSON_PATH
quota (functions) → upload-init → join room:{room_id} at once (realtime) → the catch-up says
`uploading` (postgrest) → PUT both files → upload-complete → `queued`, the stages and `ready`
on the socket, each read the way the seed's handler code reads msg.payload → the room in the
feed. Prints one JSON object of what it saw.
"""
import asyncio
import json
import sys
import urllib.request

from postgrest import SyncPostgrestClient
from realtime import AsyncRealtimeClient
from supabase_functions import SyncFunctionsClient

base, token, usdz_path, json_path = sys.argv[1:5]
headers = {"Authorization": f"Bearer {token}", "apikey": "anon-key"}
functions = SyncFunctionsClient(f"{base}/functions/v1", dict(headers))
rest = SyncPostgrestClient(f"{base}/rest/v1", headers=dict(headers))


def invoke(name, body=None, method="POST"):
    options = {"method": method, "responseType": "json"}
    if body is not None:
        options["body"] = body
    return functions.invoke(name, options)


def put(url, path):
    with open(path, "rb") as f:
        data = f.read()
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method="PUT")) as answer:
        assert answer.status == 200, answer.status
    return len(data)


async def main():
    seen = {"events": []}
    quota = invoke("quota", method="GET")
    seen["quota_limit"] = quota["storage"]["limit"]
    with open(usdz_path, "rb") as f:
        usdz_bytes = len(f.read())
    init = invoke("upload-init", {"title": "客厅", "tags": ["living room"], "visibility": "public",
                                  "bytes_source": usdz_bytes, "location_city": "杭州"})
    room, version = init["room_id"], init["version_id"]
    seen["room_id"], seen["version_id"] = room, version

    client = AsyncRealtimeClient(f"{base}/realtime/v1", token, auto_reconnect=False)
    await client.connect()
    done = asyncio.Event()
    joined = asyncio.Event()

    def on_event(message):
        # This client hands over the broadcast's {type, event, payload} (its model keeps only
        # those keys; supabase-swift's msg.payload also has status / version_id / error beside
        # them, where the seed's handlers read them: ProtocolTests covers that frame).
        inner = message.get("payload") or {}
        seen["events"].append({"status": inner.get("status"), "version_id": inner.get("version_id"),
                               "event": message.get("event")})
        if message.get("event") in ("ready", "failed"):
            done.set()

    def on_state(state, error):
        if str(getattr(state, "value", state)) == "SUBSCRIBED":
            joined.set()
        elif error:
            seen["join_error"] = str(error)

    channel = client.channel(f"room:{room}")
    for event in ("transcode_progress", "ready", "failed"):
        channel.on_broadcast(event, on_event)
    await channel.subscribe(on_state)
    await asyncio.wait_for(joined.wait(), 10)
    seen["joined_before_complete"] = True

    seen["catch_up_before"] = rest.from_("room_versions").select("id,status").eq("id", version).execute().data
    put(init["presigned_usdz"], usdz_path)
    put(init["presigned_json"], json_path)
    seen["complete"] = invoke("upload-complete", {"version_id": version, "redactions": []})
    await asyncio.wait_for(done.wait(), 120)
    await client.close()
    seen["catch_up_after"] = rest.from_("room_versions").select("id,status").eq("id", version).execute().data
    seen["feed"] = rest.from_("rooms").select("id,title").execute().data
    print(json.dumps(seen))


asyncio.run(main())
