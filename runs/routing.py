from django.urls import path

from runs.consumers import RunFeedConsumer, WorkerConsumer

websocket_urlpatterns = [
    path("ws/runs/", RunFeedConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunFeedConsumer.as_asgi()),
    path("ws/worker/", WorkerConsumer.as_asgi()),
]
