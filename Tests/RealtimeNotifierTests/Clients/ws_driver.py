"""A raw WebSocket client driven over stdin/stdout with JSON lines (one command, one answer).

usage: ws_driver.py URL [--max-queue N [--rcvbuf BYTES]]
commands: {"send": "<text>"}  {"recv": seconds}  {"close": true}
answers:  {"open": true} | {"rejected": status, "body": "..."} | {"ok": true} | {"frame": "<text>"}
          | {"timeout": true} | {"closed": code, "reason": "..."}
A client that is never told to recv stops reading once its small queue is full (a slow reader).
"""
import asyncio
import json
import socket
import sys
from urllib.parse import urlparse

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    url = sys.argv[1]
    max_queue = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--max-queue" else 1024
    extra = {}
    if len(sys.argv) > 5 and sys.argv[4] == "--rcvbuf":
        # A small, fixed receive buffer (no autotuning): a reader that stops reading is felt at once.
        parsed = urlparse(url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[5]))
        sock.connect((parsed.hostname, parsed.port))
        extra["sock"] = sock
    try:
        ws = await websockets.connect(url, max_queue=max_queue, max_size=None, ping_interval=None, open_timeout=10, **extra)
    except InvalidStatus as error:
        say({"rejected": error.response.status_code, "body": error.response.body.decode("utf-8", "replace")})
        return
    say({"open": True})
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        if "send" in command:
            try:
                await ws.send(command["send"])
                say({"ok": True})
            except ConnectionClosed as error:
                say(closed(error))
        elif "recv" in command:
            try:
                frame = await asyncio.wait_for(ws.recv(), command["recv"])
                say({"frame": frame})
            except (asyncio.TimeoutError, TimeoutError):
                say({"timeout": True})
            except ConnectionClosed as error:
                say(closed(error))
        elif "close" in command:
            await ws.close()
            say({"ok": True})
            break


def closed(error):
    return {"closed": error.rcvd.code if error.rcvd else None, "reason": error.rcvd.reason if error.rcvd else ""}


asyncio.run(main())
