"""The channel layer of a single server process (no REDIS_URL): an in-memory layer, cheaper per message than
channels' own.

channels' InMemoryChannelLayer walks every channel and every group membership for expired messages before each
receive and each group_send, and starts a task per member for each group_send. With one feed socket per open
page, that walk ran once per message each page received: 10% of the event loop's time in a profile at 2,000
events/s with 50 pages open (docs/benchmarks.md, "Events"). Here the walk runs at most once a second (expiry is
counted in tens of seconds, so nothing stays much longer than it would have), and a group_send puts the message
on each member's queue directly. Messages are still copied for each receiver, and a full queue still drops the
message for that member only, as in channels.

The layer is written whole on channels' documented base class (`BaseChannelLayer`: name checks, capacities,
`expiry`) and implements the layer API itself (send, receive, new_channel, flush, the groups extension), so
that it relies on no private name of channels' in-memory layer; tests/foundation/test_channel_layer.py holds
it to that API's behaviour.
"""

import asyncio
import random
import string
import time
from collections import deque
from copy import deepcopy

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

CLEAN_EVERY_S = 1.0


class _Inbox:
    """A channel's messages, oldest first, with when each expires (a deque beside the queue, so that expired
    messages are found at its front without reaching into asyncio.Queue)."""

    def __init__(self, capacity: int):
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=capacity)
        self.expires: deque[float] = deque()

    def put(self, message: dict, expires_at: float) -> None:
        self.queue.put_nowait(message)  # asyncio.QueueFull when full: nothing is recorded
        self.expires.append(expires_at)

    async def get(self) -> dict:
        message = await self.queue.get()
        self.expires.popleft()
        return message

    def drop_expired(self, now: float) -> bool:
        """Drop the messages expired by `now`; whether there were any."""
        dropped = False
        while self.expires and self.expires[0] < now:
            self.queue.get_nowait()
            self.expires.popleft()
            dropped = True
        return dropped


class LocalChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(self, expiry=60, group_expiry=86400, capacity=100, channel_capacity=None, **kwargs):
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity, **kwargs)
        self.group_expiry = group_expiry
        self._inboxes: dict[str, _Inbox] = {}
        self._groups: dict[str, dict[str, float]] = {}  # group -> channel -> when it joined
        self._cleaned_at = 0.0

    # ------------------------------------------------------------------------------------ channels
    async def send(self, channel, message):
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        self._put(channel, message)

    async def receive(self, channel):
        """The next message on the channel, waiting for one."""
        self.require_valid_channel_name(channel)
        self._clean_expired()
        inbox = self._inbox(channel)
        try:
            return await inbox.get()
        finally:
            if inbox.queue.empty():
                self._inboxes.pop(channel, None)

    async def new_channel(self, prefix="specific."):
        return f"{prefix}.inmemory!{''.join(random.choice(string.ascii_letters) for _ in range(12))}"

    async def flush(self):
        self._inboxes, self._groups = {}, {}

    async def close(self):
        pass

    # -------------------------------------------------------------------------------------- groups
    async def group_add(self, group, channel):
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self._groups.setdefault(group, {})[channel] = time.time()

    async def group_discard(self, group, channel):
        self.require_valid_channel_name(channel)
        self.require_valid_group_name(group)
        members = self._groups.get(group)
        if members:
            members.pop(channel, None)
            if not members:
                self._groups.pop(group, None)

    async def group_send(self, group, message):
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self._groups.get(group, {})):
            try:
                self._put(channel, message)
            except ChannelFull:
                pass

    # ------------------------------------------------------------------------------------- inside
    def _inbox(self, channel) -> _Inbox:
        inbox = self._inboxes.get(channel)
        if inbox is None:
            inbox = self._inboxes[channel] = _Inbox(self.get_capacity(channel))
        return inbox

    def _put(self, channel, message):
        try:
            self._inbox(channel).put(deepcopy(message), time.time() + self.expiry)
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None

    def _clean_expired(self):
        """At most once a second: drop expired messages (a channel with one leaves every group, as in channels:
        nobody has read it for `expiry` seconds) and group memberships older than `group_expiry`."""
        ticks = time.monotonic()
        if ticks - self._cleaned_at < CLEAN_EVERY_S:
            return
        self._cleaned_at = ticks
        now = time.time()
        for channel, inbox in list(self._inboxes.items()):
            if inbox.drop_expired(now):
                for members in self._groups.values():
                    members.pop(channel, None)
                if inbox.queue.empty():
                    self._inboxes.pop(channel, None)
        joined_before = now - self.group_expiry
        for members in self._groups.values():
            for channel, joined in list(members.items()):
                if joined and joined < joined_before:
                    members.pop(channel, None)
