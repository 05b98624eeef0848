"""Read prompts, rules and settings out of a benchmark's own Python file, mechanically.

Nothing here retypes an author's text: constants are read with :func:`ast.literal_eval`, and a
prompt-building function is compiled from the file's own source, alone with the definitions it
needs (:func:`namespace`), so calling it renders the prompt exactly as the official code does.
No import statement and no top-level call of the file ever runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from types import CodeType
from typing import Any

from recallbench.errors import DataFileError


class InstrumentFormatError(DataFileError):
    """An instrument file lacks what recallbench reads from it (a changed upstream file)."""


def parse(text: str, where: str) -> ast.Module:
    try:
        return ast.parse(text, filename=where)
    except SyntaxError as exc:
        raise InstrumentFormatError(
            f"{where}: not valid Python ({exc.msg}, line {exc.lineno})"
        ) from None


def _targets(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def top_level(module: ast.Module, name: str, where: str) -> ast.stmt:
    """The top-level assignment or definition of ``name`` (the last one, as Python keeps)."""
    found: ast.stmt | None = None
    for node in module.body:
        if name in _targets(node) or (
            isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name
        ):
            found = node
    if found is None:
        raise InstrumentFormatError(f"{where}: no top-level {name!r}")
    return found


def literal(module: ast.Module, name: str, where: str) -> Any:
    """The value of a top-level ``name = <literal>`` (strings, numbers, dicts, lists, tuples)."""
    node = top_level(module, name, where)
    value = getattr(node, "value", None)
    if value is None:
        raise InstrumentFormatError(f"{where}: {name!r} is not an assignment")
    try:
        return ast.literal_eval(value)
    except ValueError:
        raise InstrumentFormatError(f"{where}: {name!r} is not a literal") from None


def namespace(
    module: ast.Module,
    names: Iterable[str],
    where: str,
    provided: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Compile the top-level definitions ``names`` (functions, and assignments of any
    expression over what is already defined) from the file's own source and run them, in file
    order, in a fresh namespace holding ``provided``; return that namespace.

    Only the named statements run: imports and top-level calls of the file never do, so a
    function that uses a module (``json``, ``random``) gets it through ``provided``.
    """
    wanted = set(names)
    body = [
        node
        for node in module.body
        if (isinstance(node, ast.FunctionDef) and node.name in wanted)
        or (set(_targets(node)) & wanted)
    ]
    missing = wanted - {
        n for node in body for n in (_targets(node) or [getattr(node, "name", "")])
    }
    if missing:
        raise InstrumentFormatError(f"{where}: no top-level {', '.join(sorted(missing))}")
    code = compile(ast.Module(body=body, type_ignores=[]), where, "exec")
    ns: dict[str, Any] = {"__builtins__": __builtins__, "__name__": "instrument"}
    ns.update(provided or {})
    exec(code, ns)  # noqa: S102 - the authors' pinned, hash-checked definitions, nothing else
    return ns


def function(module: ast.Module, name: str, where: str) -> ast.FunctionDef:
    node = top_level(module, name, where)
    if not isinstance(node, ast.FunctionDef):
        raise InstrumentFormatError(f"{where}: {name!r} is not a function")
    return node


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node``, in source order."""
    yield from sorted(
        (n for n in ast.walk(node) if hasattr(n, "lineno")),
        key=lambda n: (n.lineno, n.col_offset),  # type: ignore[attr-defined]
    )


def dict_with_key(node: ast.AST, key: str) -> ast.Dict:
    """The first dict display under ``node`` that has the string key ``key``."""
    for n in walk(node):
        if isinstance(n, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == key for k in n.keys
        ):
            return n
    raise InstrumentFormatError(f"no dict with key {key!r}")


def literal_items(d: ast.Dict) -> dict[str, Any]:
    """The items of a dict display whose keys are strings and whose values are literals (the
    others, such as ``'model': metric_model``, are left out)."""
    out: dict[str, Any] = {}
    for k, v in zip(d.keys, d.values, strict=True):
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            try:
                out[k.value] = ast.literal_eval(v)
            except ValueError:
                continue
    return out


def main_block(module: ast.Module) -> ast.If | None:
    """The file's ``if __name__ == '__main__':`` block, if any."""
    for node in module.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__"
        ):
            return node
    return None


def assigned_expr(node: ast.AST, name: str) -> ast.expr:
    """The right-hand side of the first assignment to ``name`` under ``node``."""
    for n in walk(node):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in n.targets
        ):
            return n.value
    raise InstrumentFormatError(f"no assignment to {name!r}")


def evaluate(expr: ast.expr, where: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate one expression of the file (e.g. LongMemEval's ``'yes' in x.lower()``) with
    ``variables`` bound and no builtins beyond the basic types."""
    code = compile(ast.Expression(body=expr), where, "eval")
    return eval(code, {"__builtins__": {}}, dict(variables))  # noqa: S307 - pinned source


def branch(node: ast.AST, test: str, where: str) -> ast.If:
    """The first ``if`` or ``elif`` under ``node`` whose condition reads ``test`` (compared as
    :func:`ast.unparse` text, so spacing and quote style do not matter: ``"args.batch_size ==
    1"``). A locator only: the branch's statements are then read or run as the file has them."""
    try:
        wanted = ast.unparse(ast.parse(test, mode="eval").body)
    except SyntaxError:
        raise InstrumentFormatError(f"{where}: {test!r} is not a condition") from None
    for n in walk(node):
        if isinstance(n, ast.If) and ast.unparse(n.test) == wanted:
            return n
    raise InstrumentFormatError(f"{where}: no branch 'if {test}:'")


def calls(node: ast.AST, func: str) -> list[ast.Call]:
    """The calls under ``node`` whose callee reads ``func`` (``run_chatgpt``,
    ``client.chat.completions.create``, ``dialogs.append``), in source order."""
    return [
        n for n in walk(node) if isinstance(n, ast.Call) and ast.unparse(n.func) == func
    ]


def keywords(call: ast.Call) -> dict[str, Any]:
    """The keyword arguments of a call whose values are literals (``temperature=0``,
    ``model_url=None``), in source order; the others (``model=args.model``) and ``**kwargs``
    are left out."""
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            continue
    return out


def compile_statements(statements: Iterable[ast.stmt], where: str) -> CodeType:
    """Compile statements of the file (a branch's body, one ``if`` chain) as they stand, to be
    run with :func:`run`; nothing else of the file comes with them."""
    return compile(ast.Module(body=list(statements), type_ignores=[]), where, "exec")


def run(code: CodeType, variables: Mapping[str, Any]) -> dict[str, Any]:
    """Run compiled statements in a fresh namespace holding ``variables`` (and the builtins)
    and return that namespace, so each call is independent of every other (thread-safe as long
    as ``variables`` are)."""
    ns: dict[str, Any] = {"__builtins__": __builtins__, "__name__": "instrument"}
    ns.update(variables)
    exec(code, ns)  # noqa: S102 - statements of the authors' pinned, hash-checked file
    return ns


def assigned_exprs(node: ast.AST, name: str) -> list[ast.expr]:
    """The right-hand sides of every assignment to ``name`` under ``node``, in source order
    (LongMemEval's ``main`` assigns ``gen_length`` twice: the option, then its default)."""
    return [
        n.value
        for n in walk(node)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]


def call_with_first_arg(node: ast.AST, value: str) -> ast.Call:
    """The first call under ``node`` whose first positional argument is the string ``value``
    (``parser.add_argument('--cot', ...)``), to read its keyword arguments."""
    for n in walk(node):
        if (
            isinstance(n, ast.Call)
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == value
        ):
            return n
    raise InstrumentFormatError(f"no call with first argument {value!r}")


def keyword_literal(call: ast.Call, name: str) -> Any:
    """The literal value of keyword argument ``name`` of ``call`` (refused when it is absent
    or not a literal)."""
    found = keywords(call)
    if name not in found:
        raise InstrumentFormatError(f"no literal keyword {name!r}")
    return found[name]
