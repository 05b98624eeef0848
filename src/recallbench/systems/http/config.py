"""The ``http`` system's configuration: parsed, checked and kept *unresolved*.

The configuration is the ``[http]`` section of ``--config`` (TOML or JSON), or a separate TOML
or YAML file named by its ``file`` key (keys given in the section beside ``file`` override the
file's). Its keys (see ``docs/hosted.md`` for a complete example):

``base_url``
    the API's root, e.g. ``https://api.example.com`` (operation paths are appended to it).
``namespace``
    template of the namespace (user id, collection) one haystack group is stored under;
    default ``{{group}}``.
``add_unit``
    ``unit`` (default: one ``add`` request per harness ingest unit, the chunks ``--chunking``
    makes) or ``session`` (one request per session).
``timeout_s``
    seconds one request may take (default 30; an operation's own ``timeout_s`` wins).
``headers``
    headers sent with every request (an operation's own ``headers`` are added over them).
``add``, ``search`` (required), ``reset``, ``finish_ingest`` (optional)
    one table per operation: ``method`` (default ``POST``), ``path`` (required; placeholders
    are URL-encoded into it), ``query`` (URL query parameters), ``headers``, ``body`` (a JSON
    body template) and ``timeout_s``. ``add`` also takes ``idempotency_key`` (a template sent
    in the ``idempotency_header`` header, default ``Idempotency-Key``); ``search`` takes
    ``response`` (where the memories are, below); ``finish_ingest`` takes ``done_path``,
    ``done_value`` (default ``true``), ``interval_s`` (default 0.5) and ``wait_timeout_s``
    (default 300) to poll a status endpoint until indexing is done.
``search.response``
    ``memories`` (a path to the list of memories, default ``$.results[*]``) and, relative to
    each memory, ``id`` (omitted: the SHA-256 of the text, first 16 hex digits), ``text``
    (required), ``source_turns`` (a list of turn ids, or one id; omitted: the system cannot
    say where a memory came from) and ``score``; paths as :mod:`recallbench.systems.http.paths`
    reads them.
``retry``
    ``tries`` (default 4), ``backoff_base_s`` (0.5), ``backoff_max_s`` (8),
    ``retry_after_max_s`` (30): :class:`recallbench.llm.retry.RetryPolicy`.
``limits``
    ``max_concurrency`` and ``requests_per_second``: :class:`recallbench.systems.base.Limits`.

Placeholders ``{{name}}`` in templates: ``group`` (the harness's name for the current haystack
group, unique per system instance and reset), ``namespace`` (the rendered ``namespace``) in
every operation; in ``add``: ``unit_id``, ``session_id``, ``date``, ``text``, ``turns`` (a list
of ``{turn_id, session_id, speaker, text, date}``), ``turn_ids``; in ``search``: ``query``, ``k``.
A body string that is exactly one placeholder becomes that value with its JSON type (a list,
a number, null); inside a longer string the value is written as text.

Secrets: any string may reference an environment variable as ``${NAME}``; references are
resolved when a request is sent and never stored resolved (the parsed configuration, the
``settings`` recorded in ``run.json`` and every error message hold the reference). A value that
looks like a secret written literally (``sk-...`` and other key prefixes, ``Bearer <literal>``,
a run of 32 or more hex digits, or of 32 or more base64 characters mixing upper case, lower
case and digits (a URL path or a UUID is not one), any literal value of a credential header such as
``Authorization`` or ``X-API-Key``) is refused with a :class:`SystemConfigError` naming the
field and saying to use ``${ENV_VAR}``; so is a reference to a variable that is not set.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallbench.errors import SystemConfigError
from recallbench.systems.base import Limits
from recallbench.systems.http.paths import JsonPath, PathSyntaxError, parse_path
from recallbench.systems.options import Option

__all__ = [
    "ADD_PLACEHOLDERS",
    "HTTP_OPTIONS",
    "HttpConfig",
    "Operation",
    "ResponseShape",
    "env_references",
    "load_config",
    "render",
    "resolve_env",
    "text_id",
]

COMMON_PLACEHOLDERS: frozenset[str] = frozenset({"group", "namespace"})
ADD_PLACEHOLDERS: frozenset[str] = COMMON_PLACEHOLDERS | {
    "unit_id",
    "session_id",
    "date",
    "text",
    "turns",
    "turn_ids",
}
SEARCH_PLACEHOLDERS: frozenset[str] = COMMON_PLACEHOLDERS | {"query", "k"}

HTTP_OPTIONS: tuple[Option, ...] = (
    Option("file", (str,), None, help="a TOML or YAML file holding these keys"),
    Option("base_url", (str,), None, help="the API's root URL"),
    Option("namespace", (str,), "{{group}}", help="namespace template for a haystack group"),
    Option("add_unit", (str,), "unit", choices=("unit", "session"), help="one add per ..."),
    Option("timeout_s", (float,), 30.0, min=0.001, help="seconds per request"),
    Option(
        "warmup_searches", (int,), 3, min=0, help="unrecorded neutral searches per worker"
    ),
    Option("headers", (dict,), None, help="headers for every request (${ENV} for secrets)"),
    Option("add", (dict,), None, help="the add request"),
    Option("search", (dict,), None, help="the search request and response paths"),
    Option("reset", (dict,), None, help="the reset request (optional)"),
    Option("finish_ingest", (dict,), None, help="request/poll after ingest (optional)"),
    Option("retry", (dict,), None, help="tries, backoff_base_s, backoff_max_s, ..."),
    Option("limits", (dict,), None, help="max_concurrency, requests_per_second"),
)
"""The top-level keys of the ``[http]`` section (each table is checked by :func:`load_config`)."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_LIKE = re.compile(r"\$\{([^}]*)\}")
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "apikey",
        "x-auth-token",
        "x-access-token",
        "cookie",
    }
)
_SECRET_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), "an API key (sk-...)"),
    (
        re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat|glpat|xox[abprs])[_\-][A-Za-z0-9_\-]{8,}"),
        "a token",
    ),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), "a Google API key"),
    (re.compile(r"\bBearer\s+\S+", re.IGNORECASE), "a credential"),
    (re.compile(r"\b[0-9a-fA-F]{32,}\b"), "a long hex string"),
)
_B64_RUN = re.compile(r"[A-Za-z0-9+_\-]{32,}={0,2}")

_OPERATION_KEYS = frozenset({"method", "path", "query", "headers", "body", "timeout_s"})
_EXTRA_KEYS: dict[str, frozenset[str]] = {
    "add": frozenset({"idempotency_key", "idempotency_header"}),
    "search": frozenset({"response"}),
    "reset": frozenset(),
    "finish_ingest": frozenset({"done_path", "done_value", "interval_s", "wait_timeout_s"}),
}
_RESPONSE_KEYS = frozenset({"memories", "id", "text", "source_turns", "score"})
_RETRY_KEYS = frozenset({"tries", "backoff_base_s", "backoff_max_s", "retry_after_max_s"})
_LIMIT_KEYS = frozenset({"max_concurrency", "requests_per_second"})
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


def _fail(where: str, message: str) -> SystemConfigError:
    return SystemConfigError(f"http config {where}: {message}")


def env_references(value: Any) -> set[str]:
    """The names of every ``${NAME}`` reference in a (nested) configuration value."""
    if isinstance(value, str):
        return set(_ENV.findall(value))
    if isinstance(value, Mapping):
        return {n for k, v in value.items() for n in env_references(k) | env_references(v)}
    if isinstance(value, list | tuple):
        return {n for v in value for n in env_references(v)}
    return set()


def resolve_env(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every ``${NAME}`` replaced by the variable's value (at send time only).
    A variable that is not set raises :class:`SystemConfigError` naming it."""
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in env:
            raise SystemConfigError(
                f"http config references ${{{m.group(1)}}}, which is not set in the environment"
            )
        return env[m.group(1)]

    return _ENV.sub(one, text)


def _secret_shape(literal: str) -> str | None:
    """What a literal string looks like if it looks like a secret (None when it does not)."""
    for pattern, what in _SECRET_SHAPES:
        if pattern.search(literal):
            return what
    for m in _B64_RUN.finditer(literal):
        token = m.group(0)
        if (
            any(c.isdigit() for c in token)
            and any(c.isupper() for c in token)
            and any(c.islower() for c in token)
        ):
            return "a long base64 string"
    return None


def _literal_part(text: str) -> str:
    """The text without its ``${NAME}`` references and ``{{placeholders}}``."""
    return _PLACEHOLDER.sub(" ", _ENV.sub(" ", text))


def _check_string(where: str, text: str, credential: bool = False) -> None:
    bad = _ENV_LIKE.findall(text)
    for name in bad:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _fail(
                where,
                f"${{{name}}} is not an environment variable reference "
                "(write ${NAME}: letters, digits and _)",
            )
    literal = _literal_part(text)
    shape = _secret_shape(literal)
    if shape is None and credential and literal.strip() and not _ENV.search(text):
        shape = "a credential"
    if shape is not None:
        shown = literal.strip()[:4] + "..." if literal.strip() else ""
        raise _fail(
            where,
            f"looks like {shape} written literally ({shown!r}); secrets are never written to "
            "the config: put the value in an environment variable and write ${ENV_VAR} "
            '(e.g. "Bearer ${MEM_API_KEY}")',
        )


def _check_strings(where: str, value: Any, placeholders: frozenset[str]) -> None:
    """Every string in a template: no literal secret, only known placeholders."""
    if isinstance(value, str):
        _check_string(where, value)
        for name in _PLACEHOLDER.findall(value):
            if name not in placeholders:
                raise _fail(
                    where,
                    f"unknown placeholder {{{{{name}}}}}; here: "
                    + ", ".join("{{" + p + "}}" for p in sorted(placeholders)),
                )
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_strings(f"{where}.{k}", v, placeholders)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_strings(f"{where}[{i}]", v, placeholders)


def render(template: Any, values: Mapping[str, Any], url: bool = False) -> Any:
    """A template with ``{{name}}`` placeholders filled (``${NAME}`` references are left as they
    are: :func:`resolve_env` resolves them when the request is sent). A string that is exactly
    one placeholder becomes the value itself; within text a value is written as text (a list or
    mapping as JSON, null as an empty string), URL-encoded when ``url``."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole is not None and not url:
            return values[whole.group(1)]

        def one(m: re.Match[str]) -> str:
            value = values[m.group(1)]
            if value is None:
                text = ""
            elif isinstance(value, str):
                text = value
            elif isinstance(value, int | float) and not isinstance(value, bool):
                text = str(value)
            else:
                text = json.dumps(value, ensure_ascii=False)
            return urllib.parse.quote(text, safe="") if url else text

        return _PLACEHOLDER.sub(one, template)
    if isinstance(template, Mapping):
        return {k: render(v, values, url) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values, url) for v in template]
    return template


def text_id(text: str) -> str:
    """The id of a memory whose response gives none: its text's SHA-256, 16 hex digits."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Operation:
    """One configured request (unresolved: templates and ``${NAME}`` references as written)."""

    name: str
    method: str
    path: str
    query: Mapping[str, Any]
    headers: Mapping[str, str]
    body: Any
    timeout_s: float
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResponseShape:
    """Where a search response keeps its memories and, per memory, their fields."""

    memories: JsonPath
    id: JsonPath | None
    text: JsonPath
    source_turns: JsonPath | None
    score: JsonPath | None


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """A checked ``http`` configuration. ``raw`` is the merged section as written (with
    ``${NAME}`` references, never their values): what the system reports as ``settings``."""

    base_url: str
    namespace: str
    add_unit: str
    headers: Mapping[str, str]
    add: Operation
    search: Operation
    response: ResponseShape
    reset: Operation | None
    finish_ingest: Operation | None
    done_path: JsonPath | None
    done_value: Any
    interval_s: float
    wait_timeout_s: float
    idempotency_key: str | None
    idempotency_header: str
    retry: Mapping[str, float]
    limits: Limits
    raw: Mapping[str, Any]
    warmup_searches: int = 3
    """Unrecorded searches of neutral text per worker thread before the timed ones."""


def _number(where: str, value: Any, minimum: float, integer: bool = False) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        raise _fail(where, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if not value >= minimum or value != value or value in (float("inf"), float("-inf")):
        raise _fail(where, f"must be a finite number of at least {minimum:g}, got {value!r}")
    return value


def _table(where: str, value: Any, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(where, f"must be a table, got {value!r}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _fail(where, f"unknown key {unknown[0]!r}; takes: {', '.join(sorted(allowed))}")
    return value


def _headers(where: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, f"must be a table of header names to values, got {value!r}")
    out: dict[str, str] = {}
    for name, v in value.items():
        if not isinstance(v, str):
            raise _fail(f"{where}.{name}", f"must be a string, got {v!r}")
        _check_string(f"{where}.{name}", v, credential=name.lower() in _CREDENTIAL_HEADERS)
        for p in _PLACEHOLDER.findall(v):
            if p not in COMMON_PLACEHOLDERS:
                raise _fail(f"{where}.{name}", "headers take only {{group}} and {{namespace}}")
        out[str(name)] = v
    return out


def _path(where: str, value: Any) -> JsonPath:
    try:
        return parse_path(value)
    except PathSyntaxError as exc:
        raise _fail(where, str(exc)) from None


def _operation(name: str, value: Any, timeout_s: float, placeholders: frozenset[str]) -> Operation:
    table = _table(name, value, _OPERATION_KEYS | _EXTRA_KEYS[name])
    method = table.get("method", "POST")
    if not isinstance(method, str) or method.upper() not in _METHODS:
        raise _fail(f"{name}.method", f"must be one of {', '.join(sorted(_METHODS))}")
    path = table.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise _fail(f"{name}.path", f"required: a path starting with '/', got {path!r}")
    _check_strings(f"{name}.path", path, placeholders)
    query = table.get("query", {})
    if not isinstance(query, Mapping):
        raise _fail(f"{name}.query", "must be a table of parameter names to values")
    _check_strings(f"{name}.query", dict(query), placeholders)
    body = table.get("body")
    _check_strings(f"{name}.body", body, placeholders)
    own_timeout = table.get("timeout_s", timeout_s)
    return Operation(
        name=name,
        method=method.upper(),
        path=path,
        query=dict(query),
        headers=_headers(f"{name}.headers", table.get("headers")),
        body=body,
        timeout_s=float(_number(f"{name}.timeout_s", own_timeout, 0.001)),
        extra={k: v for k, v in table.items() if k in _EXTRA_KEYS[name]},
    )


def _read_file(path_text: str) -> dict[str, Any]:
    path = Path(path_text)
    if not path.is_file():
        raise _fail("file", f"{path} not found (a path relative to the current folder)")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse error is the user's file
        raise _fail("file", f"{path}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    if isinstance(data, Mapping) and set(data) == {"http"}:
        data = data["http"]
    if not isinstance(data, Mapping):
        raise _fail("file", f"{path}: expected a table of http options")
    return dict(data)


def load_config(section: Mapping[str, Any], check_env: bool = True) -> HttpConfig:
    """Parse and check the ``[http]`` section (with its ``file``), raising
    :class:`SystemConfigError` naming the field; ``check_env``: every ``${NAME}`` must be set."""
    raw = dict(section)
    if "file" in raw:
        file_name = raw.pop("file")
        if not isinstance(file_name, str):
            raise _fail("file", f"must be a path, got {file_name!r}")
        raw = {**_read_file(file_name), **raw}
    known = {o.name for o in HTTP_OPTIONS} - {"file"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(unknown[0], f"unknown key; takes: {', '.join(sorted(known))}")
    base_url = raw.get("base_url")
    if not isinstance(base_url, str) or not re.match(r"https?://[^/]", base_url):
        raise _fail("base_url", f"required: an http:// or https:// URL, got {base_url!r}")
    _check_strings("base_url", base_url, frozenset())
    namespace = raw.get("namespace", "{{group}}")
    if not isinstance(namespace, str):
        raise _fail("namespace", f"must be a template string, got {namespace!r}")
    _check_strings("namespace", namespace, frozenset({"group"}))
    add_unit = raw.get("add_unit", "unit")
    if add_unit not in ("unit", "session"):
        raise _fail("add_unit", f"must be 'unit' or 'session', got {add_unit!r}")
    timeout_s = float(_number("timeout_s", raw.get("timeout_s", 30.0), 0.001))
    for required in ("add", "search"):
        if required not in raw:
            raise _fail(required, "required: a table with at least a path")
    add = _operation("add", raw["add"], timeout_s, ADD_PLACEHOLDERS)
    search = _operation("search", raw["search"], timeout_s, SEARCH_PLACEHOLDERS)
    reset = (
        _operation("reset", raw["reset"], timeout_s, COMMON_PLACEHOLDERS)
        if "reset" in raw
        else None
    )
    finish = (
        _operation("finish_ingest", raw["finish_ingest"], timeout_s, COMMON_PLACEHOLDERS)
        if "finish_ingest" in raw
        else None
    )
    response_table = _table("search.response", search.extra.get("response", {}), _RESPONSE_KEYS)
    if "text" not in response_table:
        raise _fail(
            "search.response.text", "required: the path of a memory's text, e.g. '$.memory'"
        )
    shape_paths = {k: _path(f"search.response.{k}", v) for k, v in response_table.items()}
    response = ResponseShape(
        memories=shape_paths.get("memories", parse_path("$.results[*]")),
        id=shape_paths.get("id"),
        text=shape_paths["text"],
        source_turns=shape_paths.get("source_turns"),
        score=shape_paths.get("score"),
    )
    extra = dict(finish.extra) if finish is not None else {}
    done_path = (
        _path("finish_ingest.done_path", extra["done_path"]) if "done_path" in extra else None
    )
    interval_s = float(_number("finish_ingest.interval_s", extra.get("interval_s", 0.5), 0.0))
    wait_timeout_s = float(
        _number("finish_ingest.wait_timeout_s", extra.get("wait_timeout_s", 300.0), 0.001)
    )
    key = add.extra.get("idempotency_key")
    if key is not None and not isinstance(key, str):
        raise _fail("add.idempotency_key", f"must be a template string, got {key!r}")
    if key is not None:
        _check_strings("add.idempotency_key", key, ADD_PLACEHOLDERS)
    key_header = add.extra.get("idempotency_header", "Idempotency-Key")
    if not isinstance(key_header, str) or not key_header:
        raise _fail("add.idempotency_header", f"must be a header name, got {key_header!r}")
    retry_table = _table("retry", raw.get("retry", {}), _RETRY_KEYS)
    retry = {
        "tries": int(_number("retry.tries", retry_table.get("tries", 4), 1, integer=True)),
        "backoff_base_s": float(
            _number("retry.backoff_base_s", retry_table.get("backoff_base_s", 0.5), 0)
        ),
        "backoff_max_s": float(
            _number("retry.backoff_max_s", retry_table.get("backoff_max_s", 8.0), 0)
        ),
        "retry_after_max_s": float(
            _number("retry.retry_after_max_s", retry_table.get("retry_after_max_s", 30.0), 0)
        ),
    }
    limits_table = _table("limits", raw.get("limits", {}), _LIMIT_KEYS)
    max_conc = limits_table.get("max_concurrency")
    rps = limits_table.get("requests_per_second")
    limits = Limits(
        max_concurrency=None
        if max_conc is None
        else int(_number("limits.max_concurrency", max_conc, 1, integer=True)),
        requests_per_second=None
        if rps is None
        else float(_number("limits.requests_per_second", rps, 0.001)),
    )
    if rps is not None and rps <= 0:
        raise _fail("limits.requests_per_second", "must be above 0")
    headers = _headers("headers", raw.get("headers"))
    if check_env:
        missing = sorted(n for n in env_references(raw) if n not in os.environ)
        if missing:
            raise SystemConfigError(
                f"http config references ${{{missing[0]}}}, which is not set in the environment; "
                f"set it (export {missing[0]}=...) before the run"
            )
    return HttpConfig(
        base_url=base_url.rstrip("/"),
        namespace=namespace,
        add_unit=str(add_unit),
        headers=headers,
        add=add,
        search=search,
        response=response,
        reset=reset,
        finish_ingest=finish,
        done_path=done_path,
        done_value=extra.get("done_value", True),
        interval_s=interval_s,
        wait_timeout_s=wait_timeout_s,
        idempotency_key=key,
        idempotency_header=key_header,
        retry=retry,
        limits=limits,
        raw=raw,
        warmup_searches=int(
            _number("warmup_searches", raw.get("warmup_searches", 3), 0, integer=True)
        ),
    )
