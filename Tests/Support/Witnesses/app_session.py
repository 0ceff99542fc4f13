"""What every app witness does the way CrowdRoom's Supabase client does it: an Edge Function
called through supabase-functions, bytes PUT to a presigned URL as URLSession sends them, and
the Realtime socket opened with the anon key with the user's session handed over by `set_auth`.
Imported by the witnesses under Tests/*/Clients (they put this folder on sys.path)."""
import urllib.request

from realtime import AsyncRealtimeClient


def invoke(functions, name, body=None, method="POST"):
    """`name` through the Edge Functions client `functions`, the answer read as JSON."""
    options = {"method": method, "responseType": "json"}
    if body is not None:
        options["body"] = body
    return functions.invoke(name, options)


def put(url, data):
    """`data` PUT to a presigned URL; anything but 200 fails the witness."""
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method="PUT")) as answer:
        assert answer.status == 200, answer.status


def read_scan(usdz_path, json_path):
    """A scan's two files, as bytes: the package and its RoomPlan JSON."""
    with open(usdz_path, "rb") as f:
        usdz = f.read()
    with open(json_path, "rb") as f:
        roomplan = f.read()
    return usdz, roomplan


async def realtime_socket(base, anon_key, session):
    """The socket as the apps open it: the anon key first, then the session handed over."""
    client = AsyncRealtimeClient(f"{base}/realtime/v1", anon_key, auto_reconnect=False)
    await client.connect()
    await client.set_auth(session)
    return client
