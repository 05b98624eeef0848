"""Facts about the machine and software a run used, recorded in ``run.json``."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import recallbench

CORE_PACKAGES = ("typer", "rich", "bm25s", "PyStemmer", "numpy", "nltk")
OPTIONAL_PACKAGES = (
    "sentence-transformers",
    "torch",
    "mem0ai",
    "chromadb",
    "qdrant-client",
)


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in CORE_PACKAGES + OPTIONAL_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state() -> dict[str, Any]:
    """Commit and dirty flag of the recallbench checkout, when it runs from one."""
    root = Path(recallbench.__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "os": platform.platform(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
    }


def environment() -> dict[str, Any]:
    return {
        "recallbench_version": recallbench.__version__,
        "packages": package_versions(),
        "git": git_state(),
        "machine": machine(),
    }
