"""The mixed load a small team puts on `backbone dev` while building the apps, for a given time,
with the memory of each process of the stack sampled every 15 s.

Load (all against the stack's own URLs, from its dev.env):
- reading batches of 50 events from 300 users (BATCHES_PER_SECOND, default 10),
- a room upload every 4 s (upload-init, both PUTs to the store, upload-complete),
- progress, continue and summary reads (READS_PER_SECOND, default 20),
- 50 WebSocket clients joined to their `user:{id}` channels (Phoenix protocol), reading what comes.

Every 15 s: the proportional set size (PSS, /proc/PID/smaps_rollup: shared pages divided among
their sharers) and the private size (USS: pages no other process maps) of the `backbone dev`
process, of each service run on its own (SOAK_SERVICE_PIDS), its PostgreSQL (all its processes
summed) and SeaweedFS. A process's PSS moves when other processes start or stop mapping the same
libraries (a test run of the same toolchain); its USS does not, and is what a leak grows. At the
end: the growth per minute of each over the second half (a least-squares slope), for both, the
figures to compare with the 0.1 MiB a minute goal, and the load's totals. Usage: soak.py DEV_ENV_FILE BACKBONE_PID MINUTES
"""
import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import websockets

from broker_log import settings

ENV_FILE, DEV_PID, MINUTES = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ROOT = os.path.dirname(os.path.abspath(__file__)) + "/../.."
BATCHES_PER_SECOND = float(os.environ.get("BATCHES_PER_SECOND", "10"))
READS_PER_SECOND = float(os.environ.get("READS_PER_SECOND", "20"))


ENV = settings(ENV_FILE)
SECRET = ENV["JWT_SECRET"].encode()


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(user, role=None):
    now = int(time.time())
    claims = {"sub": user, "iat": now, "exp": now + 86400}
    if role:
        claims["role"] = role
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(hmac.new(SECRET, head.encode(), hashlib.sha256).digest())


USERS = [f"soak-{i}" for i in range(300)]
TOKENS = {u: token(u) for u in USERS}
COUNTS = {"events": 0, "batches": 0, "rooms": 0, "reads": 0, "frames": 0, "errors": 0}
LOCK = threading.Lock()
STOP = time.time() + MINUTES * 60


def count(key, n=1):
    with LOCK:
        COUNTS[key] += n


def call(method, url, tok=None, body=None, raw=None, headers=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if tok:
        request.add_header("Authorization", "Bearer " + tok)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except Exception:
        return 0, b""


def paced(rate, step):
    """Calls step() `rate` times a second until the end."""
    interval = 1.0 / rate
    next_at = time.time()
    while time.time() < STOP:
        try:
            step()
        except Exception:
            count("errors")
        next_at += interval
        time.sleep(max(0.0, next_at - time.time()))


def reading_batches():
    sequence = [0]

    def step():
        user = random.choice(USERS)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        events = []
        for _ in range(50):
            sequence[0] += 1
            events.append({"eventId": str(uuid.uuid4()).upper(), "clientSessionId": "s-" + user, "readingTargetType": "knowledgeSource",
                           "materialId": f"soak-m{random.randrange(20)}", "eventType": "heartbeat",
                           "position": {"page": random.randrange(1, 100), "totalPages": 100, "chapterId": "c1"},
                           "activeSecondsDelta": 5, "clientTimestamp": now, "clientTimezoneOffsetMinutes": 480,
                           "sequence": sequence[0], "platform": "iOS", "appVersion": "2.3.0"})
        status, _ = call("POST", ENV["INGEST_URL"] + "/learning/reading-events/batch", TOKENS[user], {"events": events})
        if status == 200:
            count("events", 50)
            count("batches")
        else:
            count("errors")
    paced(BATCHES_PER_SECOND, step)


def reads():
    def step():
        user = random.choice(USERS)
        path = random.choice([f"/materials/soak-m{random.randrange(20)}/reading-progress", "/learning/continue"])
        base = ENV["PROGRESS_URL"]
        if random.random() < 0.3:
            base, path = ENV["ANALYTICS_URL"], "/learning/summary"
        status, _ = call("GET", base + path, TOKENS[user])
        count("reads") if status == 200 else count("errors")
    paced(READS_PER_SECOND, step)


def rooms():
    usdz = open(ROOT + "/Tests/USDTests/Fixtures/roomscan.usdz", "rb").read()
    plan = open(ROOT + "/Tests/USDTests/Fixtures/roomscan.roomplan.json", "rb").read()

    def step():
        user = random.choice(USERS[:30])
        status, body = call("POST", ENV["INGEST_URL"] + "/rooms/uploads", TOKENS[user],
                            {"title": "soak room", "tags": ["soak"], "visibility": "public", "usdzBytes": len(usdz),
                             "roomplanJsonBytes": len(plan)})
        if status != 201:
            count("errors")
            return
        answer = json.loads(body)
        for part, data in (("usdz", usdz), ("roomplanJson", plan)):
            put, _ = call("PUT", answer[part]["url"], raw=data, headers=answer[part].get("headers", {}))
            if put != 200:
                count("errors")
                return
        complete = {"roomId": answer["roomId"], "versionId": answer["versionId"], "title": "soak room", "tags": ["soak"],
                    "visibility": "public", "redactions": [],
                    "source": {"usdzKey": answer["usdz"]["key"], "usdzBytes": len(usdz),
                               "roomplanJsonKey": answer["roomplanJson"]["key"], "roomplanJsonBytes": len(plan)}}
        status, _ = call("POST", ENV["INGEST_URL"] + "/rooms/versions", TOKENS[user], complete)
        count("rooms") if status == 202 else count("errors")
    paced(0.25, step)


async def socket_client(user):
    url = ENV["REALTIME_URL"].replace("http", "ws") + f"/realtime/v1/websocket?apikey={TOKENS[user]}&vsn=1.0.0"
    while time.time() < STOP:
        try:
            async with websockets.connect(url, open_timeout=10) as ws:
                await ws.send(json.dumps({"topic": f"realtime:user:{user}", "event": "phx_join",
                                          "payload": {"config": {}, "access_token": TOKENS[user]}, "ref": "1", "join_ref": "1"}))
                last_beat = time.time()
                while time.time() < STOP:
                    if time.time() - last_beat > 25:
                        await ws.send(json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {}, "ref": "hb"}))
                        last_beat = time.time()
                    try:
                        await asyncio.wait_for(ws.recv(), timeout=5)
                        count("frames")
                    except asyncio.TimeoutError:
                        pass
        except Exception:
            count("errors")
            await asyncio.sleep(1)


def sockets():
    async def main():
        await asyncio.gather(*(socket_client(u) for u in USERS[:50]))
    asyncio.run(main())


def memory_kib(pid):
    """The process's proportional set size (its resident pages, shared ones divided among their
    sharers, so that PostgreSQL's processes sum to what the cluster holds) and its unique set
    size (its private pages only: what it alone holds, which another process mapping the same
    libraries does not change)."""
    pss, uss = 0, 0
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith(("Private_Clean:", "Private_Dirty:")):
                uss += int(line.split()[1])
    except OSError:
        pass
    return pss, uss


def processes():
    """The stack's processes: backbone dev, each service run on its own (SOAK_SERVICE_PIDS,
    name:pid,…), its PostgreSQL (every process of the cluster), SeaweedFS."""
    groups = {"backbone": [DEV_PID]}
    for entry in filter(None, os.environ.get("SOAK_SERVICE_PIDS", "").split(",")):
        name, pid = entry.split(":")
        groups[name] = [int(pid)]
    groups.update({"postgres": [], "seaweedfs": []})
    postmaster = None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            ppid = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if "weed mini" in cmd and os.environ.get("SOAK_HOME", "") in cmd:
            groups["seaweedfs"].append(int(entry))
        if cmd.startswith("/usr/lib/postgresql") and os.environ.get("SOAK_PG_DIR", "") in cmd:
            postmaster = int(entry)
            groups["postgres"].append(postmaster)
        elif postmaster and ppid == postmaster:
            groups["postgres"].append(int(entry))
    return groups


def main():
    material_token = token("soak-catalog", role="service")
    for i in range(20):
        call("PUT", ENV["INGEST_URL"] + f"/materials/soak-m{i}", material_token, {"readingTargetType": "knowledgeSource"})
    workers = [threading.Thread(target=f, daemon=True) for f in (reading_batches, reading_batches, reads, rooms, sockets)]
    for worker in workers:
        worker.start()
    samples, privates = [], []
    started = time.time()
    while time.time() < STOP:
        groups = processes()
        sample, private = {}, {}
        for name, pids in groups.items():
            sizes = [memory_kib(p) for p in pids]
            sample[name] = sum(pss for pss, _ in sizes) / 1024
            private[name] = sum(uss for _, uss in sizes) / 1024
        samples.append((time.time() - started, sample))
        privates.append((time.time() - started, private))
        with LOCK:
            totals = dict(COUNTS)
        print(f"{(time.time() - started) / 60:6.1f} min  " + "  ".join(f"{k} {v:7.1f} MiB" for k, v in sample.items())
              + f"  | events {totals['events']} rooms {totals['rooms']} reads {totals['reads']} frames {totals['frames']} errors {totals['errors']}",
              flush=True)
        time.sleep(15)
    for title, series in (("PSS", samples), ("private (USS)", privates)):
        half = [s for s in series if s[0] >= series[-1][0] / 2]
        print(f"\nsoak of {MINUTES:g} min, {title}: growth over the second half ({len(half)} samples), MiB a minute:")
        for name in series[-1][1]:
            xs = [t / 60 for t, _ in half]
            ys = [s[name] for _, s in half]
            mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
            var = sum((x - mean_x) ** 2 for x in xs) or 1
            slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var
            print(f"  {name:20s} {slope:+.3f}  (from {ys[0]:.1f} to {ys[-1]:.1f} MiB; first sample {series[0][1][name]:.1f})")
    with LOCK:
        print("load: " + ", ".join(f"{k} {v}" for k, v in COUNTS.items()))


main()
