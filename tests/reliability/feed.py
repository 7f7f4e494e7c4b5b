"""A follower of a run's feed that behaves like the run page: it holds the steps it has fetched, fetches those
after the newest it holds when told of a new one, and after a lost socket reconnects (backoff) and resumes from
the last sequence number it holds."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request

from websockets.asyncio.client import connect


class FeedFollower:
    def __init__(self, port: int, session: str, run_id: int):
        self.port, self.session, self.run_id = port, session, run_id
        self.held: set[int] = set()
        self.repeats: list[int] = []  # seqs a page returned that were held already
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def start(self) -> FeedFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=20)

    def _fetch_after(self, after: int | None) -> dict:
        url = f"http://127.0.0.1:{self.port}/runs/{self.run_id}/steps/" + ("" if after is None else f"?after={after}")
        request = urllib.request.Request(url, headers={"Cookie": f"sessionid={self.session}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def _catch_up(self) -> None:
        while True:
            page = self._fetch_after(max(self.held) if self.held else None)
            for step in page["steps"]:
                if step["seq"] in self.held:
                    self.repeats.append(step["seq"])
                self.held.add(step["seq"])
            if not page["has_newer"]:
                return

    async def _main(self) -> None:
        headers = {"Cookie": f"sessionid={self.session}", "Origin": f"http://127.0.0.1:{self.port}"}
        backoff = 0.5
        while not self._stop.is_set():
            try:
                async with connect(
                    f"ws://127.0.0.1:{self.port}/ws/runs/{self.run_id}/", additional_headers=headers, open_timeout=5
                ) as ws:
                    self.connections += 1
                    backoff = 0.5
                    await asyncio.to_thread(self._catch_up)
                    while not self._stop.is_set():
                        try:
                            message = json.loads(await asyncio.wait_for(ws.recv(), timeout=0.5))
                        except TimeoutError:
                            continue
                        if message.get("type") == "step.stored" and message["seq"] not in self.held:
                            await asyncio.to_thread(self._catch_up)
            except Exception:
                await asyncio.sleep(backoff)
                backoff = min(5.0, backoff * 2)
