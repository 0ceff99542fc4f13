"""The CrowdRoom app's Flow A through Supabase's own Edge Functions client (seed 002 §2.1, §5).

Usage: functions_client.py BASE_URL USER_TOKEN. Calls quota, upload-init (a small scan, then an
11 MiB one without bytes_json: multipart), PUTs the bytes to the presigned URLs as the app's
URLSession would, upload-complete with only version_id and redactions, and account-delete
(schedule, see, cancel). Prints one JSON object of what it saw.
"""
import json
import os
import sys
from functools import partial

from supabase_functions import SyncFunctionsClient
from supabase_functions.errors import FunctionsHttpError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Support", "Witnesses"))
from app_session import invoke as invoke_with, put  # noqa: E402

base, token = sys.argv[1], sys.argv[2]
client = SyncFunctionsClient(f"{base}/functions/v1",
                             {"Authorization": f"Bearer {token}", "apikey": "anon-key", "x-client-info": "supabase-py/2"})
invoke = partial(invoke_with, client)


seen = {}
quota = invoke("quota", method="GET")
seen["quota_tier"] = quota["tier"]
assert quota["storage"]["limit"] > quota["storage"]["used"]

redactions = [{"texture_ref": "Textures/wall_0.png", "kind": "face",
               "region": {"x": 0.1, "y": 0.2, "width": 0.05, "height": 0.07}, "method": "gaussian_blur_r18"}]

small = invoke("upload-init", {"title": "客厅", "tags": ["living room"], "visibility": "public",
                               "bytes_source": 2000, "bytes_json": 300, "location_city": "上海"})
put(small["presigned_usdz"], b"A" * 2000)
put(small["presigned_json"], b"{" * 300)
seen["single"] = invoke("upload-complete", {"version_id": small["version_id"], "redactions": redactions})["status"]

size = 11 << 20
large = invoke("upload-init", {"title": "书房", "tags": [], "visibility": "private", "bytes_source": size})
parts = large["presigned_usdz_parts"]
seen["multipart_parts"] = len(parts)
for part in parts:
    put(part["url"], bytes([part["part_number"]]) * part["bytes"])
put(large["presigned_json"], b"{}" * 1000)
seen["multipart"] = invoke("upload-complete", {"version_id": large["version_id"], "redactions": []})["status"]

try:
    invoke("upload-init", {"title": "x", "tags": [f"t{i}" for i in range(9)], "visibility": "public", "bytes_source": 10})
except FunctionsHttpError as error:
    # The client hands over the body's "error": the services' {"code","message"}.
    seen["error_code"] = error.message.get("code") if isinstance(error.message, dict) else error.message

seen["delete_scheduled"] = invoke("account-delete")["status"]
seen["delete_seen"] = invoke("account-delete", method="GET")["status"]
seen["delete_cancelled"] = invoke("account-delete", method="DELETE")["status"]
print(json.dumps(seen))
