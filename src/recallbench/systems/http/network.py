"""``recallbench network``: the round trip to a host, measured and written to ``network.json``.

Two methods:

* ``http`` (the default): one kept-alive HTTP/1.1 connection, ``warmup`` unrecorded requests,
  then ``samples`` timed ``GET`` requests of ``path`` (default ``/v1/ping``, which the reference
  server answers at once, with no processing delay and no scheduled failure). Each sample is
  the time from sending the request to reading the whole reply, whatever its status: one
  application-level round trip on a warm connection, through the same path a search takes.
* ``connect``: the time of a TCP connect (``samples`` fresh connections). It completes in the
  kernel, so it misses whatever the server's HTTP stack adds; kept for hosts with no cheap
  request (ICMP ping is not available here).

The file (:func:`measure` returns it as a dict, :func:`write_network` writes it with sorted
keys) holds ``format`` (``recallbench-network/1``), ``host``, ``port``, ``ip`` (resolved),
``method``, ``path`` (``http`` only, else null), ``location`` (the user's label, or null),
``samples_ms`` (in the order taken), ``median_ms``, ``min_ms``, ``max_ms``, ``n``, ``warmup``
and ``measured_at`` (RFC 3339, UTC). ``recallbench run --network FILE`` subtracts
``median_ms`` from each search's latency for the systems that call that host and port
(:func:`endpoint_matches`).
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from recallbench.errors import UserError

__all__ = [
    "FORMAT",
    "NetworkError",
    "endpoint_matches",
    "measure",
    "parse_host",
    "read_network",
    "write_network",
]

FORMAT = "recallbench-network/1"
DEFAULT_PATH = "/v1/ping"

Method = Literal["connect", "http"]


class NetworkError(UserError):
    """A bad ``HOST[:PORT]``, an unreachable host or an unreadable network file."""


def parse_host(text: str, default_port: int = 80) -> tuple[str, int]:
    """``HOST[:PORT]`` (``[v6]:PORT`` for an IPv6 address) as ``(host, port)``; a leading
    ``http://`` and a trailing path are ignored."""
    value = text.strip()
    for scheme in ("http://", "https://"):
        if value.startswith(scheme):
            value = value[len(scheme) :]
    value = value.split("/", 1)[0]
    if not value:
        raise NetworkError(f"network: no host in {text!r} (give HOST or HOST:PORT)")
    host, port_text = value, ""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, port_text = value.split(":")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise NetworkError(f"network: bad port {port_text!r} in {text!r}")
    return host, int(port_text)


def _connect_ms(ip: str, port: int, timeout_s: float) -> float:
    started = time.perf_counter()
    with socket.create_connection((ip, port), timeout=timeout_s):
        return (time.perf_counter() - started) * 1000.0


def _http_samples(
    ip: str, host: str, port: int, path: str, samples: int, warmup: int, timeout_s: float
) -> list[float]:
    conn = http.client.HTTPConnection(ip, port, timeout=timeout_s)
    headers = {"Host": f"{host}:{port}", "Accept": "application/json"}
    out: list[float] = []
    try:
        for i in range(warmup + samples):
            started = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            elapsed = (time.perf_counter() - started) * 1000.0
            if i >= warmup:
                out.append(elapsed)
            if response.will_close:  # the server would not keep the connection: a new one
                conn.close()
                conn = http.client.HTTPConnection(ip, port, timeout=timeout_s)
    finally:
        conn.close()
    return out


def measure(
    target: str,
    *,
    location: str | None = None,
    method: Method = "http",
    samples: int = 20,
    warmup: int = 3,
    path: str = DEFAULT_PATH,
    timeout_s: float = 10.0,
) -> dict[str, Any]:
    """Resolve ``target`` (``HOST[:PORT]``), take ``samples`` round trips by ``method`` after
    ``warmup`` unrecorded ones (``http`` only) and return the network record (module doc)."""
    if method not in ("connect", "http"):
        raise NetworkError(f"network: --method must be connect or http, got {method!r}")
    if samples < 1:
        raise NetworkError(f"network: --samples must be at least 1, got {samples}")
    host, port = parse_host(target)
    try:
        ip = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
    except OSError as exc:
        raise NetworkError(f"network: cannot resolve {host!r}: {exc}") from None
    try:
        if method == "connect":
            taken = [_connect_ms(str(ip), port, timeout_s) for _ in range(samples)]
        else:
            taken = _http_samples(str(ip), host, port, path, samples, max(0, warmup), timeout_s)
    except (OSError, http.client.HTTPException) as exc:
        raise NetworkError(
            f"network: {host}:{port} ({method}): {type(exc).__name__}: {exc}"
        ) from None
    rounded = [round(v, 4) for v in taken]
    return {
        "format": FORMAT,
        "host": host,
        "port": port,
        "ip": str(ip),
        "method": method,
        "path": path if method == "http" else None,
        "location": location,
        "samples_ms": rounded,
        "median_ms": round(statistics.median(taken), 4),
        "min_ms": min(rounded),
        "max_ms": max(rounded),
        "n": len(rounded),
        "warmup": max(0, warmup) if method == "http" else 0,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


def write_network(record: Mapping[str, Any], path: Path) -> None:
    """Write ``record`` as indented JSON with sorted keys and a final newline."""
    path.write_text(json.dumps(dict(record), indent=2, sort_keys=True) + "\n", encoding="utf-8")


_REQUIRED = ("host", "port", "method", "median_ms", "n")


def read_network(path: Path) -> dict[str, Any]:
    """A network file as written by :func:`write_network`; anything else is refused naming
    what is wrong."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NetworkError(f"--network {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise NetworkError(f"--network {path}: not a network file ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise NetworkError(f"--network {path}: not a network file (format is not {FORMAT!r})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise NetworkError(f"--network {path}: missing {', '.join(missing)}")
    median = raw["median_ms"]
    if isinstance(median, bool) or not isinstance(median, int | float) or median < 0:
        raise NetworkError(f"--network {path}: median_ms must be a number of at least 0")
    return raw


def endpoint_matches(record: Mapping[str, Any], endpoint: tuple[str, int] | None) -> bool:
    """Whether a network record was taken for ``endpoint`` (``(host, port)`` as a system
    declares it): same port, and the same host name or the same resolved address."""
    if endpoint is None:
        return False
    host, port = endpoint
    if int(record.get("port", -1)) != int(port):
        return False
    return host.lower() in {str(record.get("host", "")).lower(), str(record.get("ip", ""))}
