"""Websocket consumers.

RunFeedConsumer: a signed-in browser follows one run (`/ws/runs/<id>/`) or every run (`/ws/runs/`). It is told
what was stored (the run id, seq and kind) after the transaction commits, and pages in the steps it lacks over
HTTP by sequence number, so a reconnect resumes with nothing missed and nothing doubled.
"""

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from runs.events import ALL_RUNS_GROUP, run_group


class RunFeedConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        run_id = self.scope["url_route"]["kwargs"].get("run_id")
        self.group = run_group(run_id) if run_id is not None else ALL_RUNS_GROUP
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        # The feed is one-way; browsers act through forms, where permissions and CSRF are checked.
        await self.send_json({"type": "error", "error": "this socket only sends"})

    # Handlers for the messages runs.events publishes; each is forwarded as it is.
    async def step_stored(self, message):
        await self.send_json(message)

    async def run_changed(self, message):
        await self.send_json(message)

    async def question_changed(self, message):
        await self.send_json(message)
