"""Socket routes, each with the checks its clients need.

Browsers: the Origin must be one of ALLOWED_HOSTS (no other site's page may open a socket with the user's
cookie) and the session signs the user in. Workers send no Origin and no cookie: they authenticate with their
host token inside WorkerConsumer.
"""

from channels.auth import AuthMiddlewareStack
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from runs.consumers import RunFeedConsumer, WorkerConsumer


def browser(consumer):
    return AllowedHostsOriginValidator(AuthMiddlewareStack(consumer))


websocket_urlpatterns = [
    path("ws/runs/", browser(RunFeedConsumer.as_asgi())),
    path("ws/runs/<int:run_id>/", browser(RunFeedConsumer.as_asgi())),
    path("ws/worker/", WorkerConsumer.as_asgi()),  # type: ignore[arg-type]  # django-stubs: views only; URLRouter takes ASGI apps
]
