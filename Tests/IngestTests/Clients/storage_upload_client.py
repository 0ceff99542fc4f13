"""Supabase's storage client (storage3) uploading to upload-init's signed URLs on the origin.

Usage: storage_upload_client.py SIGNED_URL FILE [FORGED_URL]. Takes the bucket, the object path and
the token from SIGNED_URL ({base}/storage/v1/object/upload/sign/{bucket}/{path}?token=…) as an app
that re-signs from upload-init's answer would, posts FILE with `upload_to_signed_url` (the
multipart form the client sends) and, given FORGED_URL, tries that one too. Prints one JSON object
of what it saw.
"""
import json
import sys
from urllib.parse import parse_qs, unquote, urlsplit

from storage3 import SyncStorageClient
from storage3.exceptions import StorageApiError


def split(url):
    parts = urlsplit(url)
    base, rest = parts.path.split("/storage/v1/object/upload/sign/", 1)
    bucket, path = rest.split("/", 1)
    return f"{parts.scheme}://{parts.netloc}{base}/storage/v1", bucket, unquote(path), parse_qs(parts.query)["token"][0]


seen = {}
base, bucket, path, token = split(sys.argv[1])
client = SyncStorageClient(base, {"apikey": "anon-key", "Authorization": "Bearer anon-key"})
with open(sys.argv[2], "rb") as file:
    answer = client.from_(bucket).upload_to_signed_url(path, token, file.read())
seen["full_path"] = answer.full_path
if len(sys.argv) > 3:
    base, bucket, path, token = split(sys.argv[3])
    try:
        client.from_(bucket).upload_to_signed_url(path, token, b"{}")
        seen["forged"] = "accepted"
    except StorageApiError as error:
        seen["forged_status"] = str(error.status)
        seen["forged_message"] = error.message
        seen["forged_code"] = error.code.get("code") if isinstance(error.code, dict) else error.code
print(json.dumps(seen))
