"""Supabase's own PostgREST client (postgrest-py) reading redactions as the PrivacyDetail page does.

Usage: redactions_client.py BASE_URL SPEC_JSON
SPEC_JSON: {"owner": token, "stranger": token, "version": id}
Prints one JSON object: call name -> the rows, or {"code": ...} for an error.
"""
import json
import sys

from postgrest import SyncPostgrestClient
from postgrest.exceptions import APIError

base, spec = sys.argv[1], json.loads(sys.argv[2])


def client(user):
    return SyncPostgrestClient(base + "/rest/v1",
                               headers={"apikey": spec[user], "Authorization": "Bearer " + spec[user]})


out = {}
for name, user in [("owner", "owner"), ("stranger", "stranger")]:
    try:
        out[name] = client(user).from_("redactions").select("*").eq("version_id", spec["version"]).execute().data
    except APIError as error:
        out[name] = {"code": error.code}
out["owner_columns"] = client("owner").from_("redactions").select("id,kind,region").eq("version_id", spec["version"]) \
    .eq("kind", "face").execute().data
print(json.dumps(out, sort_keys=True))
