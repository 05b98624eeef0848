"""A TCP proxy on loopback that forwards each chunk after a fixed one-way delay.

This kernel has no netem, so a network's latency is made in user space: every chunk read from
one side is written to the other ``delay_ms`` after it was read (in order, per direction), so
one application-level round trip through the proxy (a request, then its reply) costs about
``2 * delay_ms`` more than without it, however the chunks are split. Both sockets are set to
``TCP_NODELAY``.

    with DelayProxy(("127.0.0.1", server_port), delay_ms=50) as proxy:
        ...  # connect to proxy.port instead of server_port

Each accepted connection gets its own upstream connection and two forwarding directions (a
reader thread and a writer thread each, all daemons). Closing one side shuts down writing to
the other once everything read before has been delivered. :meth:`close` stops accepting and
closes every connection.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from types import TracebackType

__all__ = ["DelayProxy"]

_EOF = b""


class _Direction:
    """Bytes from ``src`` to ``dst``, each chunk released ``delay_s`` after it was read."""

    def __init__(self, src: socket.socket, dst: socket.socket, delay_s: float) -> None:
        self.src = src
        self.dst = dst
        self.delay_s = delay_s
        self.chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def start(self) -> None:
        threading.Thread(target=self._read, daemon=True, name="delay-proxy-read").start()
        threading.Thread(target=self._write, daemon=True, name="delay-proxy-write").start()

    def _read(self) -> None:
        while True:
            try:
                data = self.src.recv(65536)
            except OSError:
                data = _EOF
            self.chunks.put((time.monotonic() + self.delay_s, data))
            if not data:
                return

    def _write(self) -> None:
        while True:
            due, data = self.chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                with contextlib.suppress(OSError):
                    self.dst.shutdown(socket.SHUT_WR)
                return
            try:
                self.dst.sendall(data)
            except OSError:
                return


class DelayProxy:
    """Listens on ``host`` (127.0.0.1) at a free port (``port``) and forwards every connection
    to ``upstream`` with ``delay_ms`` added to each direction."""

    def __init__(self, upstream: tuple[str, int], delay_ms: float, host: str = "127.0.0.1") -> None:
        if delay_ms < 0:
            raise ValueError(f"delay_ms must not be negative, got {delay_ms}")
        self.upstream = upstream
        self.delay_ms = float(delay_ms)
        self._listener = socket.create_server((host, 0))
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        self.connections = 0
        """Connections accepted so far (a client that keeps its connection alive makes one)."""
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="delay-proxy")
        self._thread.start()

    @property
    def address(self) -> str:
        """``host:port`` of the proxy."""
        return f"{self.host}:{self.port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._sockets.extend((client, server))
            delay_s = self.delay_ms / 1000.0
            _Direction(client, server, delay_s).start()
            _Direction(server, client, delay_s).start()

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
