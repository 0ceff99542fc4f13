"""A large scan through Storage's resumable endpoint with tuspy, the tus protocol's Python client.

Usage: tus_client.py BASE_URL USER_TOKEN OBJECT_NAME FILE STRANGER_TOKEN. Creates the upload with
Supabase's metadata (bucketName, objectName, contentType, cacheControl) and 6 MB chunks, sends two
chunks, then cuts a third off mid-body as a dropped connection would; a new uploader (as after a
relaunch) asks the offset (HEAD) and resumes from it to the end. Then the stranger tries to create
an upload for the same object. Prints one JSON object of what it saw.
"""
import json
import socket
import sys
from urllib.parse import urlsplit

from tusclient import client
from tusclient.exceptions import TusCommunicationError

base, token, name, path, stranger = sys.argv[1:6]
endpoint = f"{base}/storage/v1/upload/resumable"
chunk = 6 * 1024 * 1024
metadata = {"bucketName": "rooms", "objectName": name, "contentType": "model/vnd.usdz+zip", "cacheControl": "3600"}
headers = {"Authorization": f"Bearer {token}", "apikey": "anon-key", "x-upsert": "true"}
seen = {}

uploader = client.TusClient(endpoint, headers=headers).uploader(file_path=path, chunk_size=chunk, metadata=metadata)
uploader.upload_chunk()
uploader.upload_chunk()
seen["after_two_chunks"] = uploader.offset
url = uploader.url
seen["location_on_origin"] = url.startswith(endpoint + "/")

# The third chunk's connection drops after 1 MB.
parts = urlsplit(url)
with socket.create_connection((parts.hostname, parts.port)) as s:
    s.sendall((f"PATCH {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
               f"Tus-Resumable: 1.0.0\r\nContent-Type: application/offset+octet-stream\r\n"
               f"Upload-Offset: {uploader.offset}\r\nContent-Length: {chunk}\r\n\r\n").encode() + b"\0" * (1 << 20))

resumed = client.TusClient(endpoint, headers=headers).uploader(file_path=path, url=url, chunk_size=chunk)
seen["resumed_from"] = resumed.offset
resumed.upload()
seen["final_offset"] = resumed.offset

try:
    client.TusClient(endpoint, headers={"Authorization": f"Bearer {stranger}"}).uploader(
        file_path=path, chunk_size=chunk, metadata=metadata).upload_chunk()
    seen["stranger"] = "created"
except TusCommunicationError as error:
    seen["stranger_status"] = error.status_code
    seen["stranger_body"] = (error.response_content or b"").decode()
print(json.dumps(seen))
