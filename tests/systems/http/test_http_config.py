"""The ``http`` config: every field checked with its name, secrets only as ``${NAME}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from http_support import http_section

from recallbench.errors import SystemConfigError, UserError
from recallbench.systems.base import Limits, SystemContext
from recallbench.systems.http.config import load_config, render
from recallbench.systems.http.reference import ReferenceServer
from recallbench.systems.http.system import HttpSystem

SERVER = ReferenceServer(port=9)  # never started: only its config text is used


def section(**overrides: Any) -> dict[str, Any]:
    return http_section(SERVER, **overrides)


@pytest.mark.parametrize(
    ("headers", "shape"),
    [
        ({"Authorization": "Bearer abc123"}, "a credential"),
        ({"X-Key": "sk-proj-0123456789abcdef"}, "an API key (sk-...)"),
        ({"X-Key": "0123456789abcdef0123456789abcdef"}, "a long hex string"),
        ({"X-Key": "QWxhZGRpbjpvcGVuIHNlc2FtZQ9876543210abcd"}, "a long base64 string"),
        ({"X-API-Key": "hunter2"}, "a credential"),
    ],
)
def test_a_literal_secret_is_refused_naming_the_field_and_the_fix(
    headers: dict[str, str], shape: str
) -> None:
    with pytest.raises(SystemConfigError) as info:
        load_config(section(headers=headers))
    message = str(info.value)
    name = next(iter(headers))
    assert message.startswith(f"http config headers.{name}: looks like {shape} written literally")
    assert "${ENV_VAR}" in message and "\n" not in message
    assert next(iter(headers.values())) not in message  # the value itself is not echoed
    assert isinstance(info.value, UserError)


def test_secret_looking_values_are_refused_in_urls_and_bodies_too() -> None:
    with pytest.raises(SystemConfigError, match=r"^http config base_url: looks like an API key"):
        load_config(section(base_url="http://127.0.0.1:9/?key=sk-abcdefghijklmnop"))
    add = dict(section()["add"], body={"token": "Bearer sk-zzzzzzzzzzzzzzzz"})
    with pytest.raises(SystemConfigError, match=r"^http config add\.body\.token: looks like"):
        load_config(section(add=add))


def test_a_reference_is_accepted_and_kept_unresolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM_API_KEY", "sk-secret-value-0123456789")
    config = section(headers={"Authorization": "Bearer ${MEM_API_KEY}"})
    system = HttpSystem(SystemContext(config=config))
    assert system.settings["headers"] == {"Authorization": "Bearer ${MEM_API_KEY}"}
    assert "sk-secret-value" not in repr(vars(system)) + repr(system.settings)


def test_an_unset_reference_is_a_user_error_before_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEM_API_KEY", raising=False)
    with pytest.raises(SystemConfigError, match=r"\$\{MEM_API_KEY\}, which is not set"):
        HttpSystem.declare_capabilities(section(headers={"Authorization": "Bearer ${MEM_API_KEY}"}))
    with pytest.raises(SystemConfigError, match=r"\$\{mem key\} is not an environment variable"):
        load_config(section(headers={"X-Key": "${mem key}"}))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"base_url": "localhost:80"}, "http config base_url: required: an http:// or https://"),
        ({"add_unit": "turn"}, "http config add_unit: must be 'unit' or 'session'"),
        ({"colour": 1}, "http config colour: unknown key; takes: add, add_unit"),
        (
            {"limits": {"max_concurrency": 0}},
            "http config limits.max_concurrency: must be a finite",
        ),
        ({"limits": {"burst": 3}}, "http config limits: unknown key 'burst'"),
        ({"retry": {"tries": 1.5}}, "http config retry.tries: must be an integer"),
        ({"search": {"path": "/s"}}, "http config search.response.text: required"),
        ({"search": {"path": "s", "response": {"text": "$"}}}, "http config search.path: required"),
        (
            {"search": {"path": "/s", "response": {"text": "memory"}}},
            "http config search.response.text: path 'memory' must start with '$'",
        ),
        (
            {"search": {"path": "/s/{{turns}}", "response": {"text": "$.m"}}},
            "http config search.path: unknown placeholder {{turns}}; here: {{group}}, {{k}}",
        ),
    ],
)
def test_bad_fields_are_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(SystemConfigError) as info:
        load_config(section(**overrides))
    assert str(info.value).startswith(message), str(info.value)


def test_limits_are_declared_for_the_runner() -> None:
    config = section(limits={"max_concurrency": 4, "requests_per_second": 20})
    system = HttpSystem(SystemContext(config=config))
    assert system.limits == Limits(max_concurrency=4, requests_per_second=20.0)
    assert HttpSystem(SystemContext(config=section())).limits == Limits(None, None)


def test_placeholders_keep_their_json_type_alone_and_become_text_inside_a_string() -> None:
    values = {"turns": [{"a": 1}], "k": 5, "date": None, "query": "a b/c"}
    assert render({"t": "{{turns}}", "k": "{{k}}", "d": "{{date}}"}, values) == {
        "t": [{"a": 1}],
        "k": 5,
        "d": None,
    }
    assert render("k={{k}} q={{query}} d={{date}}", values) == "k=5 q=a b/c d="
    assert render("/search/{{query}}", values, url=True) == "/search/a%20b%2Fc"
    assert render("Bearer ${KEY} {{k}}", values) == "Bearer ${KEY} 5"


def test_a_yaml_file_named_by_the_section(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    data = section()
    path = tmp_path / "mymem.yaml"
    path.write_text(yaml.safe_dump({"http": data}), encoding="utf-8")
    config = load_config({"file": str(path), "timeout_s": 3})
    assert config.base_url == SERVER.base_url and config.search.timeout_s == 3.0
    assert config.raw["timeout_s"] == 3 and "file" not in config.raw
    with pytest.raises(SystemConfigError, match=r"^http config file: .*missing\.yaml not found"):
        load_config({"file": str(tmp_path / "missing.yaml")})


def _doc_blocks(kind: str) -> list[str]:
    text = (Path(__file__).resolve().parents[3] / "docs" / "hosted.md").read_text()
    return [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith(kind)]


def test_the_documented_config_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    monkeypatch.setenv("MEM_API_KEY", "from-the-environment")
    full = next(b for b in _doc_blocks("toml") if "[http.search.response]" in b)
    config = load_config(tomllib.loads(full)["http"])
    assert config.limits == Limits(max_concurrency=4, requests_per_second=10.0)
    assert config.response.source_turns is not None and config.reset is not None
    assert config.idempotency_key == "{{namespace}}:{{unit_id}}"


def test_the_documented_refusal_is_the_message_given() -> None:
    documented = next(b for b in _doc_blocks("") if b.startswith("error: http config")).strip()
    with pytest.raises(SystemConfigError) as info:
        load_config(section(headers={"Authorization": "Bearer sk-live-0123456789abcdef"}))
    assert documented == f"error: {info.value}"


def test_ordinary_paths_and_ids_are_not_taken_for_secrets() -> None:
    search = dict(
        section()["search"],
        path="/api/v2/organisations/projects/123e4567-e89b-12d3-a456-426614174000/search",
    )
    config = load_config(section(search=search, namespace="longmemeval-s-haystack-{{group}}"))
    assert config.search.path.endswith("/search")


def test_ordinary_words_in_a_body_are_not_taken_for_secrets() -> None:
    search = dict(section()["search"], body={"mode": "basic token budget", "q": "{{query}}"})
    assert load_config(section(search=search)).search.body["mode"] == "basic token budget"
    with pytest.raises(SystemConfigError, match=r"X-Auth-Token: looks like a credential"):
        load_config(section(headers={"X-Auth-Token": "Basic dXNlcjpwYXNz"}))
