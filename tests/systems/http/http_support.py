"""Helpers for the ``http`` system tests (imported by the test modules of this folder)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from recallbench.systems.http.reference import ReferenceServer


def http_section(server: ReferenceServer, **overrides: Any) -> dict[str, Any]:
    """The ``[http]`` section of the server's config, with top-level keys replaced."""
    section = tomllib.loads(server.config_text())["http"]
    section.update(overrides)
    return section


def write_config(server: ReferenceServer, folder: Path, name: str = "http.toml") -> Path:
    """The server's config written to ``folder/name``."""
    path = folder / name
    path.write_text(server.config_text(), encoding="utf-8")
    return path
