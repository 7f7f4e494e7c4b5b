"""ASGI entry point: HTTP through Django, websockets through channels.

runs.routing gives each socket route the checks its clients need: browsers' sockets are origin-checked and
session-authenticated; worker sockets authenticate with their host token inside their consumer.
"""

import os

from django.core.asgi import get_asgi_application

from kseek_site.daphne_uploads import install as daphne_keeps_uploads_on_disk

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kseek_site.settings")
daphne_keeps_uploads_on_disk()  # the server process loads this module: its requests leave form bodies unparsed
# Django must be set up before anything imports models (the routing below does).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from runs.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
