"""Benchmark: events stored per second and worker-to-browser fan-out latency, through real servers.

Starts the server (daphne; with --processes 2 two of them, as behind one address in production), N simulated
workers that stream events over the worker socket as fast as acknowledgements allow (each keeps at most
--backlog events unacknowledged) or at --rate events/s each, and M simulated browsers that follow the runs'
feeds. Reports events stored per second (acknowledged by the server, so committed) and the latency from the
moment a worker has an event to send to a browser's receipt of the stored-event message (median and p99).

The simulated workers send through the worker client's own sender window (agentloop/worker/window.py): an
event goes out at once while the link is idle, and what accumulates while frames await their answer goes out in
one `events` message. --no-batch sends every event alone in an `event` message (a worker of before batching).

    .venv/bin/python bench/event_fanout.py --workers 20 --browsers 50 --seconds 20
    .venv/bin/python bench/event_fanout.py --workers 20 --browsers 50 --seconds 20 --rate 100   # 2,000/s offered
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kseek_bench REDIS_URL=redis://127.0.0.1:6379/5 \
        .venv/bin/python bench/event_fanout.py --workers 20 --browsers 50 --seconds 20 --processes 2

The PostgreSQL database named in DATABASE_URL is dropped and created afresh. Workers connect to process
(i + 1) mod P and browsers to process j mod P, so with two processes every event crosses the Redis layer.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from agentloop.worker.window import MAX_FRAMES, SenderWindow  # noqa: E402
from kseek_site.serving import daphne_argv  # noqa: E402

SETUP = """
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from runs.services import run_claim, run_start, task_upsert, worker_hello, worker_host_create
n = int(sys.argv[1])
task = task_upsert(name="bench", target="cpu", starting_kernel="//", goal_baseline="naive", goal_speedup=2)
user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
client = Client()
client.force_login(user)
workers = []
for i in range(n):
    host, token = worker_host_create(name=f"bench-{i}")
    host = worker_hello(worker=host, gpus=[], targets=["cpu"])  # as its hello will say: it serves cpu
    run_start(task=task, model="bench")
    run = run_claim(worker=host)
    workers.append({"token": token, "run_id": run.pk})
print(json.dumps({"session": client.cookies["sessionid"].value, "workers": workers}))
"""


def server_command(server: str, port: int) -> list[str]:
    if server == "daphne":  # as `make run` serves (runs/management/commands/serve.py)
        return daphne_argv("127.0.0.1", port)
    # For comparison only (docs/benchmarks.md): uvicorn is not a dependency; put it on PYTHONPATH to try it.
    loop, http, ws = server.split(":")[1:] if ":" in server else ("uvloop", "httptools", "websockets-sansio")
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "kseek_site.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--loop",
        loop,
        "--http",
        http,
        "--ws",
        ws,
        "--ws-per-message-deflate",
        "false",
        "--log-level",
        "warning",
        "--no-access-log",
        "--lifespan",
        "off",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env, *args, stdin=None) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def reset_postgres(database_url: str) -> None:
    from urllib.parse import urlparse

    import psycopg

    parsed = urlparse(database_url)
    name = parsed.path.lstrip("/")
    admin_url = database_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


async def wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.2)
    raise TimeoutError(f"server on port {port} did not start")


class Measure:
    def __init__(self):
        self.sent_at: dict[tuple[int, int], float] = {}
        self.acked = 0
        self.nacked = 0
        self.frames = 0  # event frames the workers sent while measuring
        self.latencies: list[float] = []
        self.measuring = False


async def browser(port, session, run_id, measure: Measure, stop: asyncio.Event, ready: asyncio.Event, counter):
    headers = {"Cookie": f"sessionid={session}", "Origin": f"http://127.0.0.1:{port}"}
    async with connect(f"ws://127.0.0.1:{port}/ws/runs/{run_id}/", additional_headers=headers, max_queue=None) as ws:
        counter[0] += 1
        if counter[0] == counter[1]:
            ready.set()
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            now = time.perf_counter()
            message = json.loads(raw)
            if message.get("type") != "step.stored":
                continue
            # A block of consecutive steps is announced once (seq .. last_seq): the page learns of each of them
            # at this moment, so each gets a latency.
            for seq in range(message["seq"], message.get("last_seq", message["seq"]) + 1):
                sent = measure.sent_at.get((message["run_id"], seq))
                if sent is not None and measure.measuring:
                    measure.latencies.append(now - sent)


async def worker(port, token, run_id, measure: Measure, stop: asyncio.Event, args):
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(f"ws://127.0.0.1:{port}/ws/worker/", additional_headers=headers, max_queue=None) as ws:
        await ws.send(
            json.dumps(
                {
                    "type": "hello",
                    "v": 1,
                    "host": "bench",
                    "gpus": [],
                    "targets": ["cpu"],
                    # The run is ours: a hello that did not list it would hand it back to the queue.
                    "active_runs": [{"run_id": run_id, "last_seq": None}],
                    "agentloop_version": "bench",
                }
            )
        )
        welcome = json.loads(await ws.recv())
        # As the worker client decides (agentloop/worker/client.py): batches only to a server that offers them.
        window = SenderWindow(
            batching=args.batch and "events" in (welcome.get("accepts") or []), max_frames=args.frames
        )
        room = asyncio.Event()
        seq = 0

        async def send(frames):
            for frame in frames:
                measure.frames += measure.measuring
                await ws.send(frame.text())

        async def read_acks():
            async for raw in ws:
                message = json.loads(raw)
                kind = message.get("type")
                if kind in ("ack", "nack"):
                    answered = [(message["run_id"], message["seq"])]
                elif kind == "acks":
                    answered = message["acks"]
                else:
                    continue
                frames = []
                for run, number in answered:
                    frames += window.settle(run, number)
                await send(frames)
                room.set()
                if measure.measuring:
                    measure.acked += len(answered) if kind != "nack" else 0
                    measure.nacked += kind == "nack"

        reader = asyncio.create_task(read_acks())
        next_at = time.perf_counter()
        try:
            while not stop.is_set():
                if args.rate > 0:  # a paced worker: the offered load is fixed, so latency is measured at that load
                    next_at += 1 / args.rate
                    await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                while window.unsettled >= args.backlog:
                    room.clear()
                    await room.wait()
                event = {
                    "run_id": run_id,
                    "seq": seq,
                    "kind": "note",
                    "ts": datetime.now(UTC).isoformat(),
                    "payload": {"text": f"event {seq}"},
                    "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
                }
                measure.sent_at[(run_id, seq)] = time.perf_counter()
                await send(window.offer(event))
                seq += 1
        finally:
            reader.cancel()


async def drive(args, ports, fixtures) -> Measure:
    measure = Measure()
    stop = asyncio.Event()
    ready = asyncio.Event()
    workers = fixtures["workers"]
    counter = [0, args.browsers]
    browsers = [
        asyncio.create_task(
            browser(
                ports[j % len(ports)],
                fixtures["session"],
                workers[j % len(workers)]["run_id"],
                measure,
                stop,
                ready,
                counter,
            )
        )
        for j in range(args.browsers)
    ]
    await asyncio.wait_for(ready.wait(), timeout=60)
    senders = [
        asyncio.create_task(worker(ports[(i + 1) % len(ports)], w["token"], w["run_id"], measure, stop, args))
        for i, w in enumerate(workers)
    ]
    await asyncio.sleep(args.warmup)
    measure.measuring = True
    started = time.perf_counter()
    await asyncio.sleep(args.seconds)
    measure.measuring = False
    measure.elapsed = time.perf_counter() - started
    stop.set()
    outcomes = await asyncio.gather(*senders, *browsers, return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    if failures:
        print(f"{len(failures)} client(s) failed, e.g. {failures[0]!r}", file=sys.stderr)
    return measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--browsers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument(
        "--backlog",
        type=int,
        default=8,
        help="most events a worker holds unacknowledged (waiting or in flight); it waits beyond",
    )
    parser.add_argument("--frames", type=int, default=MAX_FRAMES, help="frames a worker keeps in flight (the window)")
    parser.add_argument(
        "--no-batch",
        dest="batch",
        action="store_false",
        help="every event alone in an `event` message, sent at once (a worker of before batching)",
    )
    parser.add_argument(
        "--rate", type=float, default=0, help="events/s each worker offers (0: as fast as acknowledgements allow)"
    )
    parser.add_argument(
        "--server",
        default="daphne",
        help="daphne, or uvicorn[:LOOP:HTTP:WS] (default uvicorn:uvloop:httptools:websockets-sansio)",
    )
    parser.add_argument("--processes", type=int, default=1, help="daphne processes (more than 1 needs REDIS_URL)")
    args = parser.parse_args()
    if args.processes > 1 and not os.environ.get("REDIS_URL"):
        sys.exit("--processes > 1 needs REDIS_URL: the in-memory channel layer does not cross processes")

    data_dir = tempfile.mkdtemp(prefix="kseek-bench-")
    env = {
        **os.environ,
        "KSEEK_DATA_DIR": data_dir,
        "DJANGO_SETTINGS_MODULE": "kseek_site.settings",
        "LOG_LEVEL": "WARNING",
    }
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        reset_postgres(os.environ["DATABASE_URL"])
    manage(env, "manage.py", "migrate", "--noinput")
    fixtures = json.loads(manage(env, "-c", SETUP, str(args.workers)).strip().splitlines()[-1])

    ports = [free_port() for _ in range(args.processes)]
    servers = [
        subprocess.Popen(
            server_command(args.server, port),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for port in ports
    ]
    try:

        async def run():
            for port in ports:
                await wait_for_port(port, time.monotonic() + 60)
            return await drive(args, ports, fixtures)

        measure = asyncio.run(run())
    finally:
        for server in servers:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:  # daphne can wait long on closing sockets; the numbers are in
                os.killpg(server.pid, signal.SIGKILL)

    database = "PostgreSQL" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "SQLite"
    layer = "Redis" if os.environ.get("REDIS_URL") else "in-memory"
    rate = measure.acked / measure.elapsed
    lat = sorted(measure.latencies)
    median = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000 if lat else float("nan")
    offered = f"{args.rate * args.workers:.0f}" if args.rate else "max"
    sending = f"batched, {args.frames} frame(s)" if args.batch else "one event a frame"
    per_frame = measure.acked / measure.frames if measure.frames else float("nan")
    print(
        "| server | database | layer | processes | workers | browsers | sending | offered/s | events stored/s | events/frame "
        "| nacks | deliveries | median ms | p99 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.server} | {database} | {layer} | {args.processes} | {args.workers} | {args.browsers} | {sending} | {offered} | "
        f"{rate:.0f} | {per_frame:.1f} | {measure.nacked} | {len(lat)} | {median:.1f} | {p99:.1f} |"
    )
    print(f"stored/s vs target 2000: {rate / 2000:.2f}x; p99 vs target 100 ms: {p99 / 100:.2f}x")


if __name__ == "__main__":
    main()
