"""How the dashboard is served: daphne's command line and the size limits of the worker socket, in one place.

The limits must agree end to end (docs/protocol.md 2.1): daphne drops a connection whose frame or message is over
its own limit without a close frame or an answer, so the worker, which cannot tell that from a lost link, would
send the same event again forever. So daphne is always started with limits at least as high as the largest
message a worker may send (MESSAGE_MAX_BYTES, announced in `welcome`), and the server refuses an event over
EVENT_MAX_BYTES with a final `nack` that names its size. Everything that starts daphne (`manage.py serve`, the
test sites, the benchmarks) takes its command line from `daphne_argv`; docs/deployment.md gives the same flags.
"""

import sys
from pathlib import Path

# The largest websocket message (and frame: a worker sends each message as one frame) the server reads.
MESSAGE_MAX_BYTES = 8 * 2**20
# The largest event the server stores: its `event` message, as UTF-8. An event between the two limits is read and
# refused with a reason; a worker never sends a message over MESSAGE_MAX_BYTES.
EVENT_MAX_BYTES = 4 * 2**20


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
