"""A service of the host, for the tests that agent code cannot reach it (docs/protocol.md, section 3): it answers
every connection with BANNER, as a database that trusts local connections would answer a query, on 127.0.0.1 (a
free port) and on a unix socket in a folder of the test's (outside /tmp: the sandbox's /tmp is private whatever
else it does)."""

from __future__ import annotations

import shlex
import socket
import threading
from pathlib import Path

BANNER = "HOST-SERVICE-ANSWERED"


class HostService:
    """Listens on 127.0.0.1 (a free port) and on `folder`/service.sock until closed."""

    def __init__(self, folder: Path):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.path = folder / "service.sock"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(str(self.path))
        self.unix.listen()
        self.threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in (self.tcp, self.unix)]
        for thread in self.threads:
            thread.start()

    def _serve(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # closed
                return
            with connection:
                connection.sendall(BANNER.encode())

    def close(self) -> None:
        for listener in (self.tcp, self.unix):
            listener.close()

    def probe(self) -> str:
        """A command that connects to both and prints what each said, or why it could not connect."""
        script = (
            "import socket\n"
            f"for name, family, address in (('tcp', socket.AF_INET, ('127.0.0.1', {self.port})), "
            f"('unix', socket.AF_UNIX, {str(self.path)!r})):\n"
            "    s = socket.socket(family)\n"
            "    s.settimeout(5)\n"
            "    try:\n"
            "        s.connect(address); print(name, s.recv(100).decode())\n"
            "    except OSError as e:\n"
            "        print(name, 'not reached:', e)\n"
        )
        return f"python3 -c {shlex.quote(script)}"
