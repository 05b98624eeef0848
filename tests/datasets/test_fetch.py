"""The download path of pinned dataset files, against a loopback HTTP server started here."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from recallbench.datasets.dataset import FileSpec
from recallbench.datasets.fetch import (
    LOCK_NAME,
    PINNED_ON_FIRST_USE,
    ChecksumMismatchError,
    DataFileError,
    ensure_file,
)

CONTENT = b'[{"hello": "world"}]\n'
SHA = hashlib.sha256(CONTENT).hexdigest()
WRONG = "0" * 64


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, served folder): a loopback HTTP server in a thread, stopped after the test."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(_QuietHandler, directory=str(root))
    )
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_download_and_verify(server: tuple[str, Path], tmp_path: Path) -> None:
    base, root = server
    (root / "data.json").write_bytes(CONTENT)
    data = tmp_path / "data"
    spec = FileSpec("data.json", SHA, f"{base}/data.json")
    path, record = ensure_file("demo", spec, data)
    assert path == data / "demo" / "data.json"
    assert path.read_bytes() == CONTENT
    assert record.pinned and record.sha256 == SHA and record.note is None
    assert not list((data / "demo").glob("*.part"))
    # second call: verified on disk, no download (the server no longer has the file)
    (root / "data.json").unlink()
    assert ensure_file("demo", spec, data)[0] == path


def test_download_into_a_nested_name(server: tuple[str, Path], tmp_path: Path) -> None:
    base, root = server
    (root / "chats" / "1").mkdir(parents=True)
    (root / "chats" / "1" / "chat.json").write_bytes(CONTENT)
    spec = FileSpec("chats/1/chat.json", SHA, f"{base}/chats/1/chat.json")
    path, _ = ensure_file("demo", spec, tmp_path)
    assert path == tmp_path / "demo" / "chats" / "1" / "chat.json"


def test_downloaded_mismatch_is_refused_with_both_hashes(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    base, root = server
    (root / "data.json").write_bytes(CONTENT)
    spec = FileSpec("data.json", WRONG, f"{base}/data.json")
    with pytest.raises(ChecksumMismatchError) as info:
        ensure_file("demo", spec, tmp_path)
    message = str(info.value)
    assert WRONG in message and SHA in message and "data.json" in message
    assert info.value.expected == WRONG and info.value.actual == SHA
    # the bad download is set aside, never left under the pinned name
    assert not (tmp_path / "demo" / "data.json").exists()
    assert (tmp_path / "demo" / "data.json.rejected").exists()


def test_tampered_local_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "data.json").write_bytes(CONTENT + b" ")
    actual = hashlib.sha256(CONTENT + b" ").hexdigest()
    with pytest.raises(ChecksumMismatchError) as info:
        ensure_file("demo", FileSpec("data.json", SHA, "http://127.0.0.1:9/never"), tmp_path)
    assert f"expected {SHA}, got {actual}" in str(info.value)
    assert str(folder / "data.json") in str(info.value)


def test_missing_file_without_url_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as info:
        ensure_file("demo", FileSpec("data.json", SHA), tmp_path)
    message = str(info.value)
    assert "data.json" in message and "is missing" in message
    assert "RECALLBENCH_DATA" in message and "--data-dir" in message


def test_http_error_is_a_clear_error(server: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = server
    with pytest.raises(DataFileError) as info:
        ensure_file("demo", FileSpec("gone.json", SHA, f"{base}/gone.json"), tmp_path)
    assert "could not download" in str(info.value) and "404" in str(info.value)
    assert not (tmp_path / "demo" / "gone.json").exists()
    assert not (tmp_path / "demo" / "gone.json.part").exists()


def test_pinned_on_first_use_lock_file(server: tuple[str, Path], tmp_path: Path) -> None:
    base, root = server
    (root / "data.json").write_bytes(CONTENT)
    spec = FileSpec("data.json", None, f"{base}/data.json")
    path, record = ensure_file("demo", spec, tmp_path)
    assert record.pinned is False and record.note == PINNED_ON_FIRST_USE
    assert record.sha256 == SHA
    lock = json.loads((tmp_path / "demo" / LOCK_NAME).read_text())
    assert lock == {"data.json": SHA}
    # the same bytes pass again; changed bytes are refused against the recorded hash
    assert ensure_file("demo", spec, tmp_path)[1] == record
    path.write_bytes(b"changed\n")
    with pytest.raises(ChecksumMismatchError) as info:
        ensure_file("demo", spec, tmp_path)
    assert SHA in str(info.value)
    assert hashlib.sha256(b"changed\n").hexdigest() in str(info.value)
