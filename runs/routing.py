"""Websocket routes, each with the checks its kind of client needs.

Browser sockets carry the session cookie, so they are origin-checked (a page on another site must not ride a
signed-in user's cookie) and session-authenticated. Worker sockets carry a bearer token and no cookie; workers
are not browsers and send no Origin header, so the origin check does not apply to them.
"""

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from runs.consumers import RunFeedConsumer, WorkerConsumer


def for_browsers(consumer):
    return AllowedHostsOriginValidator(AuthMiddlewareStack(consumer.as_asgi()))


websocket_urlpatterns = [
    path("ws/runs/", for_browsers(RunFeedConsumer)),
    path("ws/runs/<int:run_id>/", for_browsers(RunFeedConsumer)),
    path("ws/worker/", WorkerConsumer.as_asgi()),
]
