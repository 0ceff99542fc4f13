"""Supabase's own PostgREST client (postgrest-py) making the CrowdRoom app's catalog calls.

Usage: catalog_client.py BASE_URL SPEC_JSON
SPEC_JSON: {"alice": token, "bob": token, "public_room": id, "private_room": id,
            "ready_version": id, "failed_version": id, "versions": [ids]}
Prints one JSON object: call name -> {"data": ...} or {"status": n, "code": "..."}.
"""
import json
import sys

from postgrest import SyncPostgrestClient
from postgrest.exceptions import APIError

base, spec = sys.argv[1], json.loads(sys.argv[2])


def client(user):
    # The app sends the anon key as `apikey` and the user's session as the bearer token.
    return SyncPostgrestClient(base + "/rest/v1",
                               headers={"apikey": spec[user], "Authorization": "Bearer " + spec[user]})


alice, bob = client("alice"), client("bob")
out = {}


def run(name, query):
    try:
        out[name] = {"data": query.execute().data}
    except APIError as error:
        out[name] = {"code": error.code, "message": error.message}


# Tab 1 feed, exactly as §2.2 Flow B: visibility=eq.public&order=created_at.desc&limit=20
run("feed", bob.from_("rooms").select("*").eq("visibility", "public").order("created_at", desc=True).limit(20))
# The same call, paged on the last row's created_at: the weighted order goes on from that row.
run("feed_page1", bob.from_("rooms").select("id,created_at,quality_grade").eq("visibility", "public")
    .order("created_at", desc=True).limit(2))
last_at = out["feed_page1"]["data"][-1]["created_at"] if out["feed_page1"].get("data") else ""
run("feed_page2", bob.from_("rooms").select("id,created_at,quality_grade").eq("visibility", "public")
    .lt("created_at", last_at).order("created_at", desc=True).limit(2))
# Pure recency: any other order, such as an explicit tie-break.
run("chronological", bob.from_("rooms").select("id,created_at").eq("visibility", "public")
    .order("created_at", desc=True).order("id", desc=True))
# The grade-weighted feed, two pages on the stable cursor.
run("ranked_page1", bob.from_("rooms").select("id,feed_rank,quality_grade").eq("visibility", "public")
    .order("feed_rank", desc=True).limit(2))
last = out["ranked_page1"]["data"][-1]["feed_rank"] if out["ranked_page1"].get("data") else ""
run("ranked_page2", bob.from_("rooms").select("id,feed_rank,quality_grade").eq("visibility", "public")
    .lt("feed_rank", last).order("feed_rank", desc=True).limit(2))
run("by_tag", bob.from_("rooms").select("id,tags").contains("tags", ["nook"]).order("created_at", desc=True))
run("search", bob.from_("rooms").select("id,title").ilike("title", "*KITCHEN*"))
# Room detail with its current version embedded.
run("detail", bob.from_("rooms").select("*,current_version:room_versions(*)").eq("id", spec["public_room"]))
run("detail_single", bob.from_("rooms").select("id,title,current_version(id,status,glb_urls)")
    .eq("id", spec["public_room"]).single())
run("private_detail_other", bob.from_("rooms").select("*").eq("id", spec["private_room"]))
run("private_detail_owner", alice.from_("rooms").select("id,visibility").eq("id", spec["private_room"]))
# The catch-up queries of §6.2 and R-iOS-5.
run("version", alice.from_("room_versions").select("*").eq("id", spec["ready_version"]))
run("versions_in_owner", alice.from_("room_versions").select("id,status,error").in_("id", spec["versions"]))
run("versions_in_other", bob.from_("room_versions").select("id,status").in_("id", spec["versions"]))
# Tab 4 "my rooms": one call, grouped by state.
run("my_rooms", alice.from_("rooms").select("id,state,latest_status,room_versions(id,status,error,attempts)")
    .eq("owner_id", "alice").order("created_at", desc=True))
run("other_rooms_of_alice", bob.from_("rooms").select("id,state").eq("owner_id", "alice"))
# Outside the subset.
run("neq", bob.from_("rooms").select("*").neq("title", "x"))
run("gt_on_title", bob.from_("rooms").select("*").gt("title", "x"))
run("or", bob.from_("rooms").select("*").or_("title.eq.a,title.eq.b"))
run("order_owner", bob.from_("rooms").select("*").order("owner_id"))
run("embed_comments", bob.from_("rooms").select("*,comments(*)"))
run("unknown_column", bob.from_("rooms").select("*").eq("colour", "red"))


def shape(value):
    """The JSON shape of an answer: keys and value types, list elements merged."""
    if isinstance(value, dict):
        return {key: shape(v) for key, v in value.items()}
    if isinstance(value, list):
        merged = {}
        for item in value:
            for kind in (shape(item) if isinstance(item, list) else [shape(item)]):
                merged[json.dumps(kind, sort_keys=True)] = kind
        return [merged[k] for k in sorted(merged)]
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string"}[type(value)]


shapes = {name: shape(answer.get("data")) if "data" in answer else {"code": answer["code"]} for name, answer in out.items()}
print(json.dumps({"answers": out, "shapes": shapes}, sort_keys=True))
