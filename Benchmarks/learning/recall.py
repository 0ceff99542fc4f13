"""Recall answers analysed while the reading pipeline runs: `POST /learning/sessions` at paced
rates through the one origin (APP_BASE_URL), each answered by the built-in analyser in the
aggregator and pushed as `analysis_ready` on the user's `user:{id}` channel, with reading-event
batches at a fixed rate alongside.

For each rate: the sessions are spread over the users round robin (a session id each, one of the
sample path's five lessons, an answer covering some of its points); the time from the POST's
send to the `analysis_ready` frame for that session on the user's socket (p50, p99, max); every
session checked: 202, exactly one `analysis_ready`, `GET /learning/sessions/{id}` 200 with an
analysis; every reading event accepted. Where the time went, measured over the same step: the
CPU of the `backbone dev` process, of its PostgreSQL and nginx processes and of this load
generator, and the aggregator's batches (`projection_stage_seconds`, `projection_records_total`
from /metrics: batch count, records a batch, apply and commit time).

Usage: recall.py DEV_ENV_FILE TOKENS_FILE BACKBONE_PID
Settings (environment): RATES (default "100,300,500" answers a second), SECONDS (default 20 a rate),
CONNECTIONS (default 64 keep-alive HTTP connections), READING_BATCHES_PER_SECOND (default 5,
50 events each), SETTLE_SECONDS (default 60: the wait for the last pushes), PROBE (default 500: the analyser
measured alone at the end, 0 to skip).
"""
import asyncio
import json
import os
import random
import sys
import time
import uuid
from urllib.parse import urlsplit

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stack_cpu  # noqa: E402  (Benchmarks/lib)

ENV_FILE, TOKENS_FILE, DEV_PID = sys.argv[1], sys.argv[2], int(sys.argv[3])
RATES = [float(r) for r in os.environ.get("RATES", "100,300,500").split(",")]
SECONDS = float(os.environ.get("SECONDS", "20"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "64"))
READING_RATE = float(os.environ.get("READING_BATCHES_PER_SECOND", "5"))
SETTLE = float(os.environ.get("SETTLE_SECONDS", "60"))


def settings(path):
    values = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key] = value.strip("'")
    return values


ENV = settings(ENV_FILE)
BASE = urlsplit(ENV["APP_BASE_URL"])
HOST, PORT = BASE.hostname, BASE.port
TOKENS = [line.split() for line in open(TOKENS_FILE) if line.strip()]  # [user, token]

LESSONS = {
    "lesson-active-recall": "合上书回忆比重读更有效，因为提取记忆会加强记忆。重读只带来熟悉感。",
    "lesson-spaced-repetition": "间隔重复是在快要忘记时复习，所以成功回忆后间隔变长。",
    "lesson-feynman": "费曼技巧：首先用简单的话讲给别人听，然后找出讲不清楚的地方。",
    "lesson-interleaving": "Interleaving mixes different problem types, so you must first choose the method. 交错练习更难但效果更好。",
    "lesson-sleep": "睡眠中记忆被巩固，因为熬夜牺牲睡眠，所以记住的东西更少。",
}


class Connection:
    """One keep-alive HTTP/1.1 connection to the gateway (a raw asyncio stream: the load
    generator's own CPU per request stays far below an HTTP library's)."""

    def __init__(self):
        self.reader = self.writer = None

    async def request(self, method, path, token, body=None, on_send=None):
        for attempt in range(2):
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection(HOST, PORT)
                data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
                head = (f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nAuthorization: Bearer {token}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
                if on_send:
                    on_send(time.perf_counter())
                self.writer.write(head + data)
                return await self.response()
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                self.close()
                if attempt:
                    return 0, b""
        return 0, b""

    async def response(self):
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Pool:
    def __init__(self, size):
        self.free = asyncio.Queue()
        for _ in range(size):
            self.free.put_nowait(Connection())

    async def request(self, *args, **kwargs):
        connection = await self.free.get()
        try:
            return await connection.request(*args, **kwargs)
        finally:
            self.free.put_nowait(connection)


# Session id → record: user, sent, acked, status, pushes (times).
SESSIONS = {}
FRAMES = {"analysis_ready": 0, "other": 0, "unknown_session": 0}
SOCKET_ERRORS = []


async def socket(user, token, joined):
    url = ENV["APP_BASE_URL"].replace("http", "ws", 1) + f"/realtime/v1/websocket?apikey={token}&vsn=1.0.0"
    # The Phoenix heartbeat below keeps the channel as the apps keep theirs; the library's own
    # ping (20 s to answer) is off, so that a stall of this load generator's loop is not taken
    # for a lost socket. A socket the server closes is still counted (and fails the run).
    async with websockets.connect(url, open_timeout=30, max_size=None, ping_interval=None) as ws:
        await ws.send(json.dumps({"topic": f"realtime:user:{user}", "event": "phx_join",
                                  "payload": {"config": {}, "access_token": token}, "ref": "1", "join_ref": "1"}))
        last_beat = time.monotonic()
        while True:
            if time.monotonic() - last_beat > 20:
                await ws.send(json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {}, "ref": "hb"}))
                last_beat = time.monotonic()
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=5)
            except asyncio.TimeoutError:
                continue
            now = time.perf_counter()
            frame = json.loads(raw)
            if frame.get("event") == "phx_reply" and frame.get("ref") == "1":
                if frame.get("payload", {}).get("status") != "ok":
                    raise RuntimeError(f"join refused for {user}: {raw[:200]}")
                joined.set()
                continue
            payload = frame.get("payload") or {}
            if frame.get("event") == "broadcast" and payload.get("event") == "analysis_ready":
                FRAMES["analysis_ready"] += 1
                session = SESSIONS.get((payload.get("payload") or {}).get("sessionId"))
                if session is None:
                    FRAMES["unknown_session"] += 1
                else:
                    session["pushes"].append(now)
            else:
                FRAMES["other"] += 1


async def socket_forever(user, token, joined):
    try:
        await socket(user, token, joined)
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a dropped socket loses pushes: counted as missing, and said
        SOCKET_ERRORS.append(f"{user}: {error!r}")


def cpu_snapshot():
    """CPU seconds so far: the stack's process, its PostgreSQL and nginx (the processes whose
    command line names the stack's folder, and their children), this process (the driver), and
    the whole machine's busy time."""
    home = os.path.dirname(ENV_FILE)
    snap = stack_cpu.snapshot(DEV_PID, home, home)
    snap["driver"] = snap.pop("self")
    return snap


async def metrics():
    """The projections' batch figures (the aggregator's, the notifier's sequencer's), from the
    stack's /metrics (one registry for the whole `backbone dev` process)."""
    _, body = await raw_get(ENV["ANALYTICS_URL"] + "/metrics")
    values = {}
    for line in body.decode().splitlines():
        if line.startswith(("projection_stage_seconds_sum", "http_request_duration_seconds_sum",
                            "http_request_duration_seconds_count", "projection_stage_seconds_count", "projection_records_total",
                            "projection_batch_seconds_sum", "projection_batch_seconds_count")):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


async def raw_get(url):
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(f"GET {parts.path} HTTP/1.1\r\nHost: {parts.hostname}\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def quantile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


READING = {"batches": 0, "events": 0, "accepted": 0, "refused": 0}


async def reading_load(pool, stop):
    """Reading batches of 50 events (the lessons, as the app sends them) at a fixed rate."""
    interval = 1.0 / READING_RATE
    next_at = time.monotonic()
    sequence = 0
    tasks = []

    async def one(user, token, events):
        status, body = await pool.request("POST", "/learning/reading-events/batch", token, {"events": events})
        READING["batches"] += 1
        READING["events"] += len(events)
        results = json.loads(body).get("results", []) if status == 200 else []
        accepted = sum(1 for r in results if r.get("status") == "accepted")
        READING["accepted"] += accepted
        READING["refused"] += len(events) - accepted

    while not stop.is_set():
        user, token = random.choice(TOKENS)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        lesson = random.choice(list(LESSONS))
        events = []
        for _ in range(50):
            sequence += 1
            events.append({"eventId": str(uuid.uuid4()), "clientSessionId": "read-" + user, "readingTargetType": "knowledgeSource",
                           "materialId": lesson, "knowledgeBaseId": "kb-learning-how-to-learn", "eventType": "heartbeat",
                           "position": {"page": random.randrange(1, 20), "totalPages": 20}, "activeSecondsDelta": 5,
                           "clientTimestamp": now, "clientTimezoneOffsetMinutes": 480, "sequence": sequence,
                           "platform": "iOS", "appVersion": "1.0"})
        tasks.append(asyncio.create_task(one(user, token, events)))
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    await asyncio.gather(*tasks)


async def step(pool, rate):
    """One rate: RATE × SECONDS sessions at a steady pace, then the wait for their pushes."""
    total = int(rate * SECONDS)
    ids = []
    for key in READING:
        READING[key] = 0
    stop_reading = asyncio.Event()
    reading = asyncio.create_task(reading_load(pool, stop_reading))
    before_cpu, before_metrics = cpu_snapshot(), await metrics()
    lessons = list(LESSONS)

    async def post(i):
        user, token = TOKENS[i % len(TOKENS)]
        session_id = str(uuid.uuid4())
        lesson = lessons[i % len(lessons)]
        record = {"user": user, "sent": None, "acked": None, "status": None, "pushes": []}
        SESSIONS[session_id] = record
        ids.append(session_id)
        ended = time.time()
        body = {"sessionId": session_id, "lessonId": lesson, "questionId": "q1", "userInput": LESSONS[lesson],
                "startedAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ended - 300)),
                "endedAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ended)),
                "clientTimezoneOffsetMinutes": 480}
        status, _ = await pool.request("POST", "/learning/sessions", token, body, on_send=lambda t: record.__setitem__("sent", t))
        record["acked"], record["status"] = time.perf_counter(), status

    start = time.monotonic()
    issued = 0
    posts = []
    while issued < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        while issued < due:
            posts.append(asyncio.create_task(post(issued)))
            issued += 1
        await asyncio.sleep(0.002)
    await asyncio.gather(*posts)
    send_seconds = max(SESSIONS[s]["sent"] for s in ids) - min(SESSIONS[s]["sent"] for s in ids)
    stop_reading.set()
    await reading
    deadline = time.monotonic() + SETTLE
    while time.monotonic() < deadline and any(not SESSIONS[s]["pushes"] for s in ids if SESSIONS[s]["status"] == 202):
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # a late second push of a session would show now
    after_cpu, after_metrics = cpu_snapshot(), await metrics()

    # Every session read back: 200 with the seed's analysis.
    analysed = 0

    async def check(session_id):
        nonlocal analysed
        user, token = next(t for t in TOKENS if t[0] == SESSIONS[session_id]["user"])
        status, body = await pool.request("GET", f"/learning/sessions/{session_id}", token)
        if status == 200 and isinstance(json.loads(body).get("aiAnalysis"), dict):
            analysed += 1
    for chunk in range(0, len(ids), 500):
        await asyncio.gather(*(check(s) for s in ids[chunk:chunk + 500]))

    accepted = [s for s in ids if SESSIONS[s]["status"] == 202]
    latencies = [(SESSIONS[s]["pushes"][0] - SESSIONS[s]["sent"]) * 1000 for s in accepted if SESSIONS[s]["pushes"]]
    acks = [(SESSIONS[s]["acked"] - SESSIONS[s]["sent"]) * 1000 for s in accepted]
    missing = sum(1 for s in accepted if not SESSIONS[s]["pushes"])
    twice = sum(1 for s in accepted if len(SESSIONS[s]["pushes"]) > 1)
    statuses = {}
    for s in ids:
        statuses[SESSIONS[s]["status"]] = statuses.get(SESSIONS[s]["status"], 0) + 1
    reached = len(ids) / send_seconds if send_seconds > 0 else float("nan")
    ok = (len(accepted) == total and missing == 0 and twice == 0 and analysed == total
          and READING["accepted"] == READING["events"] and not SOCKET_ERRORS)
    print(f"rate {rate:.0f}/s: {total} answers sent in {send_seconds:.1f} s ({reached:.0f}/s), "
          f"{len(accepted)} accepted (202; {json.dumps({str(k): v for k, v in statuses.items()})}), "
          f"analysis_ready {len(latencies)} ({missing} missing, {twice} twice), GET analysed {analysed}/{total}; "
          f"POST→analysis_ready p50 {quantile(latencies, 0.5):.0f} ms p99 {quantile(latencies, 0.99):.0f} ms "
          f"max {max(latencies, default=float('nan')):.0f} ms; POST→202 p50 {quantile(acks, 0.5):.0f} ms "
          f"p99 {quantile(acks, 0.99):.0f} ms; reading {READING['batches']} batches, "
          f"{READING['accepted']}/{READING['events']} events accepted — {'OK' if ok else 'FAILED'}", flush=True)

    wall = after_cpu["wall"] - before_cpu["wall"]
    share = {k: (after_cpu[k] - before_cpu[k]) / wall for k in ("backbone", "postgres", "nginx", "driver", "machine")}
    print(f"  CPU over the step ({wall:.1f} s, cores busy): backbone {share['backbone']:.2f}, postgres {share['postgres']:.2f}, "
          f"nginx {share['nginx']:.2f}, load generator {share['driver']:.2f}, whole machine {share['machine']:.2f} of "
          f"{os.cpu_count()}", flush=True)

    def delta(name):
        return after_metrics.get(name, 0.0) - before_metrics.get(name, 0.0)
    for group in ("analytics-learning", "progress-projector", "analytics-aggregator", "realtime-sequencer"):
        batches = delta(f'projection_batch_seconds_count{{group="{group}"}}')
        records = delta(f'projection_records_total{{group="{group}"}}')
        if batches <= 0:
            continue
        stages = []
        for stage in ("decode", "apply", "commit", "after_commit"):
            count = delta(f'projection_stage_seconds_count{{group="{group}",stage="{stage}"}}')
            total_s = delta(f'projection_stage_seconds_sum{{group="{group}",stage="{stage}"}}')
            if count > 0:
                stages.append(f"{stage} {total_s / count * 1000:.1f} ms")
        busy = delta(f'projection_batch_seconds_sum{{group="{group}"}}')
        print(f"  {group}: {batches:.0f} batches, {records / batches:.1f} records a batch, "
              f"{busy / batches * 1000:.1f} ms a batch "
              f"({', '.join(stages)}), busy {busy / wall * 100:.0f}% of the step", flush=True)
    return ok


async def analyser_probe():
    """What the built-in analyser costs on its own, in the same stack: PROBE answers through
    `POST /ai/analyze-learning-input` (the same analyser, the lesson read, nothing stored) and as
    many `GET /lessons/{id}` (the lesson read alone), one at a time, straight to the aggregator;
    the server's own time for each route (http_request_duration_seconds), the difference being
    the analysis."""
    probe = int(os.environ.get("PROBE", "500"))
    if probe <= 0:
        return
    global HOST, PORT
    gateway = (HOST, PORT)
    parts = urlsplit(ENV["ANALYTICS_URL"])
    HOST, PORT = parts.hostname, parts.port
    connection = Connection()
    before = await metrics()
    lessons = list(LESSONS)
    token = TOKENS[0][1]
    for i in range(probe):
        lesson = lessons[i % len(lessons)]
        await connection.request("POST", "/ai/analyze-learning-input", token,
                                 {"lessonId": lesson, "questionId": "q1", "userInput": LESSONS[lesson]})
        await connection.request("GET", f"/lessons/{lesson}", token)
    after = await metrics()
    connection.close()
    HOST, PORT = gateway

    def mean(route):
        sums = [k for k in after if k.startswith("http_request_duration_seconds_sum") and f'route="{route}"' in k]
        total = sum(after[k] - before.get(k, 0.0) for k in sums)
        count = sum(after[k.replace("_sum", "_count")] - before.get(k.replace("_sum", "_count"), 0.0) for k in sums)
        return total / count * 1000 if count else float("nan")
    analyse, lesson_read = mean("/ai/analyze-learning-input"), mean("/lessons/:id")
    print(f"analyser alone ({probe} answers, one at a time): POST /ai/analyze-learning-input {analyse:.2f} ms in the server, "
          f"GET /lessons/{{id}} {lesson_read:.2f} ms: the analysis ≈ {analyse - lesson_read:.2f} ms an answer", flush=True)


async def main():
    joined = []
    sockets = []
    for user, token in TOKENS:
        event = asyncio.Event()
        joined.append(event)
        sockets.append(asyncio.create_task(socket_forever(user, token, event)))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in joined)), timeout=120)
    print(f"{len(TOKENS)} users joined user:{{id}}; {CONNECTIONS} HTTP connections to {ENV['APP_BASE_URL']}; "
          f"reading {READING_RATE:g} batches/s of 50 events; {SECONDS:g} s a rate", flush=True)
    pool = Pool(CONNECTIONS)
    ok = True
    for rate in RATES:
        ok = await step(pool, rate) and ok
    await analyser_probe()
    if SOCKET_ERRORS:
        print("sockets lost: " + "; ".join(SOCKET_ERRORS[:5]), flush=True)
    if FRAMES["unknown_session"]:
        print(f"analysis_ready for sessions not sent by this run: {FRAMES['unknown_session']}", flush=True)
    for task in sockets:
        task.cancel()
    return ok


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main()) else 1)
