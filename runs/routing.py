from django.urls import path

from runs.consumers import RunFeedConsumer

websocket_urlpatterns = [
    path("ws/runs/", RunFeedConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunFeedConsumer.as_asgi()),
]
