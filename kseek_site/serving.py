"""How the dashboard is served: daphne's command line, with the worker socket's size limits (the protocol's).

The limits must agree end to end (docs/protocol.md 2.1): daphne drops a connection whose frame or message is over
its own limit without a close frame or an answer, so the worker, which cannot tell that from a lost link, would
send the same event again forever. So daphne is always started with limits at least as high as the largest
message a worker may send (MESSAGE_MAX_BYTES, announced in `welcome`), and the server refuses an event over
EVENT_MAX_BYTES with a final `nack` that names its size. Everything that starts daphne (`manage.py serve`, the
test sites, the benchmarks) takes its command line from `daphne_argv`; docs/deployment.md gives the same flags.
"""

import sys
from pathlib import Path

# The limits are the protocol's (agentloop/protocol.py), named here too for everything that starts daphne.
from agentloop.protocol import EVENT_MAX_BYTES, MESSAGE_MAX_BYTES

__all__ = ["EVENT_MAX_BYTES", "MESSAGE_MAX_BYTES", "daphne_argv"]


def daphne_argv(host: str, port: int) -> list[str]:
    return [
        str(Path(sys.executable).with_name("daphne")),
        "-b",
        host,
        "-p",
        str(port),
        "--websocket-max-frame-size",
        str(MESSAGE_MAX_BYTES),
        "--websocket-max-message-size",
        str(MESSAGE_MAX_BYTES),
        "kseek_site.asgi:application",
    ]
