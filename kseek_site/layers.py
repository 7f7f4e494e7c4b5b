"""The channel layer of a single server process (no REDIS_URL): channels' in-memory layer, cheaper per message.

channels' InMemoryChannelLayer walks every channel and every group membership for expired messages before each
receive and each group_send, and starts a task per member for each group_send. With one feed socket per open
page, that walk ran once per message each page received: 10% of the event loop's time in a profile at 2,000
events/s with 50 pages open (docs/benchmarks.md, "Events"). Here the walk runs at most once a second (expiry is
counted in tens of seconds, so nothing stays much longer than it would have), and a group_send puts the message
on each member's queue directly. Messages are still copied for each receiver, and a full queue still drops the
message for that member only, as in channels.
"""

import asyncio
import time
from copy import deepcopy

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

CLEAN_EVERY_S = 1.0


class LocalChannelLayer(InMemoryChannelLayer):
    _cleaned_at = 0.0

    def _clean_expired(self):
        now = time.monotonic()
        if now - self._cleaned_at >= CLEAN_EVERY_S:
            self._cleaned_at = now
            super()._clean_expired()

    async def group_send(self, group, message):
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, {})):
            try:
                self._put(channel, message)
            except ChannelFull:
                pass

    async def send(self, channel, message):
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        self._put(channel, message)

    def _put(self, channel, message):
        queue = self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))
        try:
            queue.put_nowait((time.time() + self.expiry, deepcopy(message)))
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None
