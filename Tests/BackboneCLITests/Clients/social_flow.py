"""CrowdRoom's Flow C through the one origin, with Supabase's own clients (postgrest, realtime, functions).

usage: social_flow.py BASE_URL ANON_KEY OWNER FAN STRANGER USDZ_PATH JSON_PATH
OWNER, FAN and STRANGER are three users' sessions, each set up as the app sets up its Supabase
client (the anon key as `apikey`, the session as bearer). The owner publishes a public room
(Flow A) and listens on user:{owner}; the fan names herself in her profile, comments and likes
(twice: the second is PostgREST's 23505); the stranger likes and takes it back, tries to remove
the comment and to read the owner's notifications; the owner reads her notifications, marks one
read, and removes the comment. A signed-out reader (the anon key alone) reads the room's comments
with their author's name. Then the bad inputs. Prints one JSON object of what it saw.
"""
import asyncio
import json
import os
import sys
import time
import urllib.error
import urllib.request

from postgrest import APIError, SyncPostgrestClient
from supabase_functions import SyncFunctionsClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Support", "Witnesses"))
from app_session import put, read_scan, realtime_socket  # noqa: E402

base, anon_key, owner_session, fan_session, stranger_session, usdz_path, json_path = sys.argv[1:8]


def claims_sub(token):
    import base64
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]


def rest(session):
    headers = {"apikey": anon_key}
    if session:
        headers["Authorization"] = f"Bearer {session}"
    return SyncPostgrestClient(f"{base}/rest/v1", headers=headers)


owner, fan, stranger, anonymous = rest(owner_session), rest(fan_session), rest(stranger_session), rest(None)
owner_id, fan_id, stranger_id = claims_sub(owner_session), claims_sub(fan_session), claims_sub(stranger_session)
def functions_of(session):
    return SyncFunctionsClient(f"{base}/functions/v1", {"Authorization": f"Bearer {session}", "apikey": anon_key})


functions = functions_of(owner_session)


def invoke(name, body, client=None):
    return (client or functions).invoke(name, {"method": "POST", "responseType": "json", "body": body})


def function_refusal(name, body, session):
    """A function's refusal: status and the house error body."""
    status, _, answer = raw("POST", f"/functions/v1/{name}", session, body)
    return {"status": status, **(json.loads(answer).get("error") or {})}


def eventually(read, until, timeout=15):
    """read() again until until(value) or the timeout: the catalog is a projection and trails the write edge."""
    started = time.monotonic()
    while True:
        value = read()
        if until(value) or time.monotonic() - started > timeout:
            return value
        time.sleep(0.05)


def refusal(call):
    """What a refused call answered: PostgREST's code and message as the client reads them."""
    try:
        call()
    except APIError as error:
        return {"code": error.code, "message": error.message}
    return None


def raw(method, path, session, body=None, headers=None):
    """One request as bytes on the wire: status, headers, body (for what the clients hide)."""
    request = urllib.request.Request(f"{base}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"apikey": anon_key, "Authorization": f"Bearer {session}",
                                              "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def room_counts(room):
    return owner.from_("rooms").select("like_count,comment_count").eq("id", room).execute().data


async def main():
    seen = {"pushes": []}
    usdz, roomplan = read_scan(usdz_path, json_path)

    # The owner listens on her own channel, as the app does from launch (§2.3).
    client = await realtime_socket(base, anon_key, owner_session)
    joined = asyncio.Event()
    arrived = {}

    def on_push(message):
        payload = message.get("payload") or {}
        event = message.get("event")
        seen["pushes"].append({"event": event, **{k: payload.get(k) for k in
                                                   ("room_id", "comment_id", "actor_id", "excerpt", "notification_id",
                                                    "version_id", "remixed_from")}})
        arrived.setdefault(event, time.monotonic())

    channel = client.channel(f"user:{owner_id}")
    for event in ("comment_new", "like_new", "remix_created"):
        channel.on_broadcast(event, on_push)
    await channel.subscribe(lambda state, error: joined.set() if str(getattr(state, "value", state)) == "SUBSCRIBED" else None)
    await asyncio.wait_for(joined.wait(), 10)

    # Flow A: the owner publishes a public room.
    init = invoke("upload-init", {"title": "客厅", "tags": ["living room"], "visibility": "public", "bytes_source": len(usdz)})
    room = init["room_id"]
    seen["room_id"] = room
    put(init["presigned_usdz"], usdz)
    put(init["presigned_json"], roomplan)
    invoke("upload-complete", {"version_id": init["version_id"], "redactions": []})
    published = eventually(lambda: owner.from_("rooms").select("id,current_version_id").eq("id", room).execute().data,
                           lambda rows: bool(rows) and rows[0]["current_version_id"] is not None, timeout=120)
    seen["published"] = bool(published) and published[0]["current_version_id"] is not None
    # A private room of the owner's (upload-init is enough for it to exist).
    private = invoke("upload-init", {"title": "卧室", "tags": [], "visibility": "private", "bytes_source": len(usdz)})["room_id"]

    # The fan names herself, then comments: the write edge knows the room is published once the
    # transcode status reached it, which may trail the catalog's answer by a moment.
    profile = fan.from_("profiles").upsert({"id": fan_id, "display_name": "Bo", "avatar_path": "avatars/bo.png"}).execute()
    seen["profile"] = profile.data
    comment = None
    started = time.monotonic()
    while comment is None:
        try:
            posted = time.monotonic()
            comment = fan.from_("comments").insert({"room_id": room, "body": "  好漂亮的客厅！  "}).execute().data[0]
        except APIError as error:
            if error.code != "NOT_FOUND" or time.monotonic() - started > 10:
                raise
            await asyncio.sleep(0.25)
    seen["comment"] = comment
    liked_at = time.monotonic()
    seen["like"] = fan.from_("likes").insert({"room_id": room}).execute().data
    seen["double_like"] = refusal(lambda: fan.from_("likes").insert({"room_id": room}).execute())
    seen["ignored_like"] = fan.from_("likes").upsert({"room_id": room}, ignore_duplicates=True).execute().data
    stranger.from_("likes").insert({"room_id": room}).execute()
    seen["unlike"] = stranger.from_("likes").delete().eq("room_id", room).execute().data
    # The stranger remixes it in the web editor: a fork of hers, ready at once.
    remixed_at = time.monotonic()
    seen["remix"] = invoke("remix", {"source_room_id": room, "title": "我的客厅"}, functions_of(stranger_session))
    seen["remix_private"] = function_refusal("remix", {"source_room_id": private}, stranger_session)
    started = time.monotonic()
    while not {"comment_new", "like_new", "remix_created"} <= arrived.keys() and time.monotonic() - started < 10:
        await asyncio.sleep(0.01)
    seen["comment_push_seconds"] = arrived["comment_new"] - posted if "comment_new" in arrived else None
    seen["like_push_seconds"] = arrived["like_new"] - liked_at if "like_new" in arrived else None
    seen["remix_push_seconds"] = arrived["remix_created"] - remixed_at if "remix_created" in arrived else None
    fork = seen["remix"]["room_id"]
    seen["fork"] = eventually(
        lambda: stranger.from_("rooms").select("id,owner_id,title,current_version_id,remixed_from,state,manifest_url,"
                                               "current_version:room_versions(id,status,glb_urls)").eq("id", fork).execute().data,
        lambda rows: bool(rows) and rows[0]["current_version_id"] is not None)
    seen["source_remix_count"] = eventually(
        lambda: anonymous.from_("rooms").select("remix_count").eq("id", room).execute().data,
        lambda rows: rows == [{"remix_count": 1}])

    seen["counts"] = eventually(lambda: room_counts(room), lambda rows: rows == [{"like_count": 1, "comment_count": 1}])

    # The owner's notifications (Tab 2); one marked read.
    notes = eventually(lambda: owner.from_("notifications").select("*").order("created_at", desc=True).execute().data,
                       lambda rows: {"comment", "like", "remix", "transcode_ready"} <= {r["kind"] for r in rows})
    seen["notifications"] = notes
    first = next(n for n in notes if n["kind"] == "comment")
    seen["marked"] = owner.from_("notifications").update({"read_at": "2026-12-06T00:00:00Z"}).eq("id", first["id"]).execute().data
    seen["unread"] = owner.from_("notifications").select("id").is_("read_at", "null").execute().data
    # A stranger's PATCH of the owner's notifications (one read, one not) changes nothing.
    other = next(n for n in notes if n["id"] != first["id"])
    seen["stranger_patch"] = stranger.from_("notifications").update({"read_at": "2030-01-01T00:00:00Z"}) \
        .in_("id", [first["id"], other["id"]]).execute().data
    seen["stranger_unmark"] = stranger.from_("notifications").update({"read_at": None}).eq("id", first["id"]).execute().data
    seen["owner_after_stranger"] = owner.from_("notifications").select("id,read_at") \
        .in_("id", [first["id"], other["id"]]).order("id").execute().data
    seen["owner_before_stranger"] = sorted(({"id": first["id"], "read_at": seen["marked"][0]["read_at"]},
                                            {"id": other["id"], "read_at": other["read_at"]}), key=lambda n: n["id"])

    # The fan changes her avatar (PATCH of her own row); another user's row changes nothing.
    seen["patched"] = fan.from_("profiles").update({"avatar_path": "avatars/bo-2.png"}).eq("id", fan_id).execute().data
    seen["patched_other"] = fan.from_("profiles").update({"display_name": "Mallory"}).eq("id", owner_id).execute().data
    eventually(lambda: anonymous.from_("comments").select("author:profiles(avatar_path)").eq("room_id", room).execute().data,
               lambda rows: bool(rows) and (rows[0].get("author") or {}).get("avatar_path") == "avatars/bo-2.png")

    # The detail page's comments with their author, as a signed-out reader of the shared page sees them.
    seen["anonymous_comments"] = anonymous.from_("comments").select("*,author:profiles(display_name,avatar_path)") \
        .eq("room_id", room).order("created_at").execute().data
    seen["anonymous_notifications"] = anonymous.from_("notifications").select("*").execute().data
    seen["anonymous_private"] = anonymous.from_("rooms").select("id").eq("id", private).execute().data

    # The stranger: removes nothing, reads none of the owner's notifications.
    seen["stranger_delete"] = stranger.from_("comments").delete().eq("id", comment["id"]).execute().data
    seen["stranger_notifications"] = stranger.from_("notifications").select("*").eq("user_id", owner_id).execute().data
    seen["comment_after_stranger"] = owner.from_("comments").select("id").eq("id", comment["id"]).execute().data

    # Bad input: each refused with its code and message, nothing stored.
    seen["bad"] = {
        "empty": refusal(lambda: fan.from_("comments").insert({"room_id": room, "body": "   "}).execute()),
        "long": refusal(lambda: fan.from_("comments").insert({"room_id": room, "body": "长" * 20_000}).execute()),
        "control": refusal(lambda: fan.from_("comments").insert({"room_id": room, "body": "a\u0007b"}).execute()),
        "unknown_room": refusal(lambda: fan.from_("comments").insert({"room_id": "no-such-room", "body": "hi"}).execute()),
        "private_room": refusal(lambda: fan.from_("comments").insert({"room_id": private, "body": "hi"}).execute()),
        "other_author": refusal(lambda: fan.from_("comments").insert({"room_id": room, "body": "hi", "author_id": owner_id}).execute()),
        "other_profile": refusal(lambda: fan.from_("profiles").upsert({"id": owner_id, "display_name": "Mallory"}).execute()),
        "like_private": refusal(lambda: fan.from_("likes").insert({"room_id": private}).execute()),
    }
    seen["counts_after_bad"] = room_counts(room)
    seen["comments_after_bad"] = len(owner.from_("comments").select("id").eq("room_id", room).execute().data)

    # The owner removes the comment; the count follows.
    seen["owner_delete"] = owner.from_("comments").delete().eq("id", comment["id"]).execute().data
    seen["counts_after_delete"] = eventually(lambda: room_counts(room), lambda rows: rows and rows[0]["comment_count"] == 0)

    # Too many writes: a 429 with Retry-After, as bytes on the wire.
    limited = None
    for i in range(60):
        status, headers, body = raw("POST", "/rest/v1/likes", stranger_session, {"room_id": room},
                                    {"Prefer": "resolution=ignore-duplicates"})
        if status == 429:
            limited = {"status": status, "retry_after": headers.get("Retry-After"), "body": json.loads(body)}
            break
    seen["rate_limited"] = limited
    await client.close()
    print(json.dumps(seen))


asyncio.run(main())
