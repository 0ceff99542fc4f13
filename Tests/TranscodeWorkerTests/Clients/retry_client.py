"""The CrowdRoom app's retry button (seed 002 §6.4) through Supabase's own Edge Functions client.

Usage: retry_client.py BASE_URL SPEC_JSON
SPEC_JSON: {"owner": token, "stranger": token, "failed": version id, "ready": version id}
Invokes transcode-retry as the owner on the failed version, as a stranger on it, and as the
owner on a version that has not failed. Prints one JSON object: call name -> the answer's body,
or {"status": HTTP status, "error": the body's "error"} when the function refused.
"""
import json
import sys

from supabase_functions import SyncFunctionsClient
from supabase_functions.errors import FunctionsHttpError

base, spec = sys.argv[1], json.loads(sys.argv[2])


def retry(user, version):
    client = SyncFunctionsClient(f"{base}/functions/v1", {"Authorization": f"Bearer {spec[user]}", "apikey": "anon-key",
                                                          "x-client-info": "supabase-swift/2.0.0"})
    try:
        return client.invoke("transcode-retry", {"method": "POST", "body": {"version_id": version},
                                                 "responseType": "json"})
    except FunctionsHttpError as error:
        # The client hands over the body's "error" (the services' {"code","message"}) and the status.
        return {"status": error.status, "error": error.message}


out = {
    "owner": retry("owner", spec["failed"]),
    "stranger": retry("stranger", spec["failed"]),
    "not_failed": retry("owner", spec["ready"]),
}
print(json.dumps(out, sort_keys=True))
