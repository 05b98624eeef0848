"""The conformance kit: built-ins pass, broken systems fail with clear details, never a crash."""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import recallbench.registry as generic_registry
from recallbench.contracts import Chunk, Memory, Session
from recallbench.systems import registry
from recallbench.systems.base import Capabilities, SystemContext
from recallbench.systems.conformance import (
    CHECKS,
    CREATE_CHECK,
    CheckResult,
    check_system,
    passed,
)
from recallbench.systems.naive import NaiveSystem
from recallbench.systems.registry import SystemEntry, UnknownSystemError
from recallbench.testing import HostileSystem

REPO = Path(__file__).resolve().parents[2]
PLUGIN_FIXTURE = REPO / "tests" / "fixtures" / "plugin_pkg"
EXAMPLE_PLUGIN = REPO / "examples" / "plugin-example"


def by_check(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.check: r for r in results}


def statuses(results: list[CheckResult]) -> dict[str, str]:
    return {r.check: r.status for r in results}


def use_entry_points(monkeypatch: pytest.MonkeyPatch, folder: Path, targets: dict[str, str]):
    """Make ``targets`` (name -> "module:attr" inside ``folder``) look like installed plugins."""
    monkeypatch.syspath_prepend(str(folder))
    eps = [EntryPoint(n, v, registry.ENTRY_POINT_GROUP) for n, v in targets.items()]

    def fake_entry_points(**params: Any) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == params.get("group", ep.group)]

    monkeypatch.setattr(generic_registry, "entry_points", fake_entry_points)


# ------------------------------------------------------------------------------------------
# Small systems used as test doubles, registered through the BUILTINS table


class GoodSystem:
    """Correct keyword-overlap system; broken variants below override one thing each."""

    name = "good"
    capabilities = Capabilities(returns_source_turns=True)
    seen_contexts: ClassVar[list[SystemContext]] = []

    def __init__(self, context: SystemContext | None = None) -> None:
        self.seen_contexts.append(context or SystemContext())
        self.chunks: list[Chunk] = []

    def add(self, session: Session) -> None:
        self.chunks.extend(session.chunks)

    def ranked(self, query: str) -> list[Chunk]:
        words = set(query.casefold().split())
        hits = [c for c in self.chunks if words & set(c.text.casefold().split())]
        return hits

    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=chunk.turn_ids)

    def search(self, query: str, k: int) -> list[Memory]:
        return [self.memory(c) for c in self.ranked(query)[:k]]

    def reset(self) -> None:
        self.chunks = []


class RaisesInSearch(GoodSystem):
    def search(self, query: str, k: int) -> list[Memory]:
        raise RuntimeError("backend went away")


class RaisesInReset(GoodSystem):
    def reset(self) -> None:
        raise OSError("cannot delete collection")


class RaisesOnBuild(GoodSystem):
    def __init__(self, context: SystemContext | None = None) -> None:
        raise ValueError("api_key missing from config")


class Unavailable:  # never resolved: its entry points at a module that does not exist
    pass


class NoCapabilities(GoodSystem):
    capabilities = None  # type: ignore[assignment]


class NoSearch:
    name = "no-search"
    capabilities = Capabilities()

    def __init__(self, context: SystemContext | None = None) -> None:
        pass

    def add(self, session: Session) -> None:
        pass

    def reset(self) -> None:
        pass


class ReturnsDicts(GoodSystem):
    def search(self, query: str, k: int) -> list[Memory]:
        return [{"id": c.chunk_id, "text": c.text} for c in self.ranked(query)[:k]]  # type: ignore[misc]


class ReturnsListSourceTurns(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=list(chunk.turn_ids))  # type: ignore[arg-type]


class LeaksAcrossReset(GoodSystem):
    def reset(self) -> None:
        pass


class InventsTurnIds(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=("made-up-turn",))


class NoSourceTurnsDespiteDeclaring(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=None)


class HonestNoSourceTurns(NoSourceTurnsDespiteDeclaring):
    capabilities = Capabilities(returns_source_turns=False)


class NonDeterministic(GoodSystem):
    calls = 0

    def search(self, query: str, k: int) -> list[Memory]:
        type(self).calls += 1
        hits = self.ranked(query)
        shift = type(self).calls % max(len(hits), 1)
        return [self.memory(c) for c in (hits[shift:] + hits[:shift])[:k]]


class IgnoresK(GoodSystem):
    def search(self, query: str, k: int) -> list[Memory]:
        return [self.memory(c) for c in self.chunks]


class DeclaredIgnoresK(IgnoresK):
    capabilities = Capabilities(returns_source_turns=True, ignores_k=True)


class Duplicates(GoodSystem):
    def search(self, query: str, k: int) -> list[Memory]:
        hits = [self.memory(c) for c in self.ranked(query)[:k]]
        return (hits + hits)[: max(k, 2)] if hits else []


class NormalizesText(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        text = unicodedata.normalize("NFKD", chunk.text)
        return Memory(id=chunk.chunk_id, text=text, source_turns=chunk.turn_ids)


class AsciiOnly(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        text = chunk.text.encode("ascii", errors="replace").decode("ascii")
        return Memory(id=chunk.chunk_id, text=text, source_turns=None)

    capabilities = Capabilities(returns_source_turns=False)


class Summarizer(NormalizesText):
    capabilities = Capabilities(returns_source_turns=True, summarizes=True)


class ChokesOnLongTurn(GoodSystem):
    def add(self, session: Session) -> None:
        if any(len(t.text) > 10_000 for t in session.turns):
            raise ValueError("turn too long for the embedding model")
        super().add(session)


class MisspeltHook(GoodSystem):
    hooks = frozenset({"finish_ingets"})

    def finish_ingets(self) -> None:
        pass


class DeclaredHookMissing(GoodSystem):
    hooks = frozenset({"finish_ingest"})


class FinishesIngest(GoodSystem):
    hooks = frozenset({"finish_ingest"})
    finished: ClassVar[list[int]] = []

    def finish_ingest(self) -> None:
        type(self).finished.append(len(self.chunks))


HANG = threading.Event()
"""Released at the end of each test (``release_hangs``) so abandoned threads can finish."""


@pytest.fixture(autouse=True)
def release_hangs() -> Iterator[None]:
    HANG.clear()
    yield
    HANG.set()


class HangsInSearch(GoodSystem):
    searches: ClassVar[int] = 0

    def search(self, query: str, k: int) -> list[Memory]:
        type(self).searches += 1
        HANG.wait()
        return super().search(query, k)


class HangsInReset(GoodSystem):
    def reset(self) -> None:
        HANG.wait()


class HangsOnBuild(GoodSystem):
    def __init__(self, context: SystemContext | None = None) -> None:
        HANG.wait()
        super().__init__(context)


class NotThreadSafe(GoodSystem):
    """Keeps the query on the instance between two steps, as a careless adapter might."""

    def search(self, query: str, k: int) -> list[Memory]:
        self.query = query
        time.sleep(0.001)  # any pause between the two steps lets another thread in
        return [self.memory(c) for c in self.ranked(self.query)[:k]]


class RaisesWhenConcurrent(GoodSystem):
    active: ClassVar[int] = 0

    def search(self, query: str, k: int) -> list[Memory]:
        type(self).active += 1
        try:
            time.sleep(0.001)
            if type(self).active > 1:
                raise RuntimeError("index is being rebuilt")
            return super().search(query, k)
        finally:
            type(self).active -= 1


class HangsWhenConcurrent(GoodSystem):
    """Deadlocks as soon as two searches overlap; sequentially it is a correct system."""

    active: ClassVar[int] = 0

    def search(self, query: str, k: int) -> list[Memory]:
        type(self).active += 1
        try:
            time.sleep(0.001)
            if type(self).active > 1:
                HANG.wait()
            return super().search(query, k)
        finally:
            type(self).active -= 1


class ReusesResultList(GoodSystem):
    """Returns the same list object from every search, refilled each time."""

    def __init__(self, context: SystemContext | None = None) -> None:
        super().__init__(context)
        self.out: list[Memory] = []

    def search(self, query: str, k: int) -> list[Memory]:
        self.out.clear()
        self.out.extend(super().search(query, k))
        return self.out


class MutatesReturnedMemories(GoodSystem):
    """Returns fresh lists but rewrites the Memory objects it handed out earlier."""

    def __init__(self, context: SystemContext | None = None) -> None:
        super().__init__(context)
        self.handed_out: list[Memory] = []

    def search(self, query: str, k: int) -> list[Memory]:
        for m in self.handed_out:
            object.__setattr__(m, "text", "overwritten")
        found = super().search(query, k)
        self.handed_out = list(found)
        return found


class TextNone(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=None, source_turns=chunk.turn_ids)  # type: ignore[arg-type]


class TextInt(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=7, source_turns=chunk.turn_ids)  # type: ignore[arg-type]


class IdInt(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=3, text=chunk.text, source_turns=chunk.turn_ids)  # type: ignore[arg-type]


class LoneSurrogate(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text + "\ud800", source_turns=chunk.turn_ids)


class NumpyScore(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        score = np.float32(0.5)
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=chunk.turn_ids, score=score)  # type: ignore[arg-type]


class NanScore(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        nan = float("nan")
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=chunk.turn_ids, score=nan)


class BoolScore(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=chunk.turn_ids, score=True)


class RealScores(GoodSystem):
    """Python ints and floats (and numpy.float64, a float subclass) are real numbers."""

    def search(self, query: str, k: int) -> list[Memory]:
        scores = (1, 0.5, np.float64(0.25))
        return [
            Memory(id=m.id, text=m.text, source_turns=m.source_turns, score=scores[i % 3])  # type: ignore[arg-type]
            for i, m in enumerate(super().search(query, k))
        ]


class SourceTurnInt(GoodSystem):
    def memory(self, chunk: Chunk) -> Memory:
        return Memory(id=chunk.chunk_id, text=chunk.text, source_turns=(1,))  # type: ignore[arg-type]


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch) -> Callable[[type, str | None], str]:
    def _register(cls: type, extra: str | None = None) -> str:
        name = f"test-{cls.__name__.lower()}"
        entry = SystemEntry(name, f"{__name__}:{cls.__name__}", "builtin", extra)
        monkeypatch.setitem(registry.BUILTINS, name, entry)
        return name

    return _register


# ------------------------------------------------------------------------------------------
# Built-ins and plugins


@pytest.mark.parametrize("name", registry.BASELINES)
def test_every_builtin_baseline_passes_every_check(name: str) -> None:
    results = check_system(name)
    assert [r.check for r in results] == list(CHECKS)
    failing = [r for r in results if r.status != "pass"]
    assert not failing, failing
    assert all(r.system == name for r in results)


def test_naive_is_exempt_from_k_bound_only_by_declaring_it(monkeypatch: pytest.MonkeyPatch):
    assert NaiveSystem.capabilities.ignores_k is True
    monkeypatch.setattr(NaiveSystem, "capabilities", Capabilities(returns_source_turns=True))
    edge = by_check(check_system("naive"))["edge_cases"]
    assert edge.status == "fail"
    assert "naive" in edge.detail and "edge_cases" in edge.detail and "ignores_k" in edge.detail


def test_fixture_plugins_echo_passes_and_leaky_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    use_entry_points(
        monkeypatch,
        PLUGIN_FIXTURE,
        {
            "echo-plugin": "recallbench_test_plugins:EchoPluginSystem",
            "leaky-plugin": "recallbench_test_plugins:LeakyPluginSystem",
        },
    )
    echo = check_system("echo-plugin")
    assert passed(echo) and all(r.status == "pass" for r in echo), echo
    leaky = by_check(check_system("leaky-plugin"))
    forgets = leaky["forgets_after_reset"]
    assert forgets.status == "fail"
    assert "leaky-plugin" in forgets.detail and "forgets_after_reset" in forgets.detail
    assert "zorblatt" in forgets.detail
    assert leaky["no_leak_between_groups"].status == "fail"
    assert "leaky-plugin" in leaky["no_leak_between_groups"].detail
    assert leaky["protocol"].status == "pass"


def test_example_plugin_passes_every_check(monkeypatch: pytest.MonkeyPatch) -> None:
    use_entry_points(
        monkeypatch,
        EXAMPLE_PLUGIN,
        {"keyword-example": "recallbench_keyword_example:KeywordExampleSystem"},
    )
    results = check_system("keyword-example")
    assert [r.check for r in results] == list(CHECKS)
    assert all(r.status == "pass" for r in results), results


def test_example_plugin_declares_the_documented_entry_point() -> None:
    text = (EXAMPLE_PLUGIN / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points."recallbench.systems"]' in text
    assert 'keyword-example = "recallbench_keyword_example:KeywordExampleSystem"' in text
    readme = (EXAMPLE_PLUGIN / "README.md").read_text(encoding="utf-8")
    for command in (
        "pip install -e examples/plugin-example",
        "recallbench verify --system keyword-example",
        "recallbench run --systems keyword-example",
    ):
        assert command in readme


# ------------------------------------------------------------------------------------------
# Building the system


def test_good_double_passes_and_receives_config_and_dirs(register, tmp_path: Path) -> None:
    GoodSystem.seen_contexts.clear()
    name = register(GoodSystem)
    results = check_system(name, config={"answer": 42}, work_dir=tmp_path)
    assert all(r.status == "pass" for r in results), results
    (context,) = GoodSystem.seen_contexts
    assert context.seed == 0
    assert dict(context.config) == {"answer": 42}
    assert context.work_dir is not None and context.work_dir.is_dir()
    assert context.cache_dir is not None and context.cache_dir.is_dir()
    assert tmp_path in context.work_dir.parents and tmp_path in context.cache_dir.parents


def test_temporary_work_dir_is_removed(register) -> None:
    GoodSystem.seen_contexts.clear()
    check_system(register(GoodSystem))
    (context,) = GoodSystem.seen_contexts
    assert context.work_dir is not None and not context.work_dir.exists()


def test_unavailable_system_is_one_skip_naming_the_extra(monkeypatch: pytest.MonkeyPatch):
    entry = SystemEntry("fancy", "recallbench_no_such_module_xyz:Thing", "builtin", "fancy")
    monkeypatch.setitem(registry.BUILTINS, "fancy", entry)
    (result,) = check_system("fancy")
    assert result.status == "skip" and result.check == CREATE_CHECK
    assert "fancy" in result.detail and 'pip install "recallbench[fancy]"' in result.detail


def test_system_failing_to_build_is_one_failure(register) -> None:
    (result,) = check_system(register(RaisesOnBuild))
    assert result.status == "fail" and result.check == CREATE_CHECK
    assert "test-raisesonbuild" in result.detail and "api_key missing" in result.detail


def test_unknown_system_raises_listing_names() -> None:
    with pytest.raises(UnknownSystemError, match="bm25"):
        check_system("no-such-system")


# ------------------------------------------------------------------------------------------
# Broken systems fail cleanly, naming system and check


def test_system_raising_in_search_fails_cleanly(register) -> None:
    name = register(RaisesInSearch)
    results = check_system(name)
    assert statuses(results)["protocol"] == "pass"
    for r in results[1:]:
        assert r.status == "fail"
        assert name in r.detail and r.check in r.detail
        assert "raised RuntimeError: backend went away" in r.detail


def test_system_raising_in_reset_fails_cleanly(register) -> None:
    results = check_system(register(RaisesInReset))
    assert statuses(results)["protocol"] == "pass"
    assert all(r.status == "fail" for r in results if r.check != "protocol")
    assert all("reset() raised OSError" in r.detail for r in results if r.check != "protocol")


def test_protocol_failures(register) -> None:
    caps = by_check(check_system(register(NoCapabilities)))["protocol"]
    assert caps.status == "fail" and "capabilities" in caps.detail
    results = check_system(register(NoSearch))
    assert statuses(results)["protocol"] == "fail"
    assert "search is missing" in by_check(results)["protocol"].detail
    assert all(r.status == "skip" for r in results if r.check != "protocol")


def test_malformed_results_fail(register) -> None:
    dicts = by_check(check_system(register(ReturnsDicts)))["deterministic"]
    assert dicts.status == "fail" and "expected Memory" in dicts.detail
    lists = by_check(check_system(register(ReturnsListSourceTurns)))["source_turns_exist"]
    assert lists.status == "fail" and "tuple[str, ...]" in lists.detail


def test_leak_across_reset_is_caught(register) -> None:
    name = register(LeaksAcrossReset)
    checks = by_check(check_system(name))
    for check in ("forgets_after_reset", "no_leak_between_groups", "source_turns_exist"):
        assert checks[check].status == "fail", checks[check]
        assert name in checks[check].detail and check in checks[check].detail


def test_source_turn_checks(register) -> None:
    invented = by_check(check_system(register(InventsTurnIds)))["source_turns_exist"]
    assert invented.status == "fail" and "made-up-turn" in invented.detail
    missing = by_check(check_system(register(NoSourceTurnsDespiteDeclaring)))
    assert missing["source_turns_exist"].status == "fail"
    assert "returns_source_turns=True" in missing["source_turns_exist"].detail
    honest = check_system(register(HonestNoSourceTurns))
    assert all(r.status == "pass" for r in honest), honest


def test_nondeterminism_is_caught(register) -> None:
    result = by_check(check_system(register(NonDeterministic)))["deterministic"]
    assert result.status == "fail" and "test-nondeterministic" in result.detail


def test_k_bounds_and_duplicates(register) -> None:
    undeclared = by_check(check_system(register(IgnoresK)))["edge_cases"]
    assert undeclared.status == "fail" and "k=1" in undeclared.detail
    declared = by_check(check_system(register(DeclaredIgnoresK)))["edge_cases"]
    assert declared.status == "pass"
    dups = check_system(register(Duplicates))
    assert any(r.status == "fail" and "duplicate memory ids" in r.detail for r in dups)


def test_long_turn_failure_is_reported(register) -> None:
    result = by_check(check_system(register(ChokesOnLongTurn)))["edge_cases"]
    assert result.status == "fail" and "turn too long" in result.detail


def test_unicode_mangling_is_caught_and_summarizers_skip(register) -> None:
    nfkd = by_check(check_system(register(NormalizesText)))["unicode_roundtrip"]
    assert nfkd.status == "fail" and "unicode_roundtrip" in nfkd.detail
    ascii_only = by_check(check_system(register(AsciiOnly)))["unicode_roundtrip"]
    assert ascii_only.status == "fail"
    summary = by_check(check_system(register(Summarizer)))["unicode_roundtrip"]
    assert summary.status == "skip" and "summarizes" in summary.detail


def test_a_misspelt_or_missing_hook_fails_the_protocol_check(register) -> None:
    misspelt = by_check(check_system(register(MisspeltHook)))["protocol"]
    assert misspelt.status == "fail" and "unknown hook(s) finish_ingets" in misspelt.detail
    missing = by_check(check_system(register(DeclaredHookMissing)))["protocol"]
    assert missing.status == "fail" and "declares hook 'finish_ingest' but has no" in missing.detail


def test_the_kit_calls_a_declared_finish_ingest_after_each_group(register) -> None:
    FinishesIngest.finished.clear()
    results = check_system(register(FinishesIngest))
    assert passed(results), results
    assert FinishesIngest.finished and all(n > 0 for n in FinishesIngest.finished)


# ------------------------------------------------------------------------------------------
# Untrusted plugins: hangs, races, aliasing, values of the wrong type

ORIGINAL_CHECKS = (
    "protocol",
    "forgets_after_reset",
    "no_leak_between_groups",
    "deterministic",
    "source_turns_exist",
    "unicode_roundtrip",
    "edge_cases",
)


def test_new_checks_are_appended_after_the_original_ones() -> None:
    assert CHECKS[: len(ORIGINAL_CHECKS)] == ORIGINAL_CHECKS
    assert CHECKS[len(ORIGINAL_CHECKS) :] == ("thread_safe", "results_not_aliased")


def test_a_hanging_search_fails_naming_the_call_and_skips_the_rest(register) -> None:
    HangsInSearch.searches = 0
    name = register(HangsInSearch)
    results = check_system(name, timeout_s=0.2)
    assert [r.check for r in results] == list(CHECKS)
    checks = by_check(results)
    assert checks["protocol"].status == "pass"
    hung = checks["forgets_after_reset"]
    assert hung.status == "fail", hung
    assert name in hung.detail and "forgets_after_reset" in hung.detail
    assert "search('What is the name of the parrot? Zorblatt', k=5)" in hung.detail
    assert "did not return within 0.2 s" in hung.detail
    for r in results[2:]:
        assert r.status == "skip", r
        assert name in r.detail and r.check in r.detail
        assert "forgets_after_reset timed out" in r.detail and "cannot be trusted" in r.detail
    assert HangsInSearch.searches == 1  # nothing else was sent to the hung instance
    assert not passed(results)


def test_a_hanging_reset_fails_the_first_check_that_resets(register) -> None:
    results = check_system(register(HangsInReset), timeout_s=0.2)
    checks = by_check(results)
    assert checks["forgets_after_reset"].status == "fail"
    assert "reset() did not return within 0.2 s" in checks["forgets_after_reset"].detail
    assert all(r.status == "skip" for r in results[2:])


def test_a_hanging_constructor_fails_the_create_check(register) -> None:
    name = register(HangsOnBuild)
    (result,) = check_system(name, timeout_s=0.2, create_timeout_s=0.2)
    assert result.check == CREATE_CHECK and result.status == "fail"
    assert name in result.detail and "did not return within 0.2 s" in result.detail


def test_a_system_that_is_not_thread_safe_fails_thread_safe(register) -> None:
    name = register(NotThreadSafe)
    results = by_check(check_system(name))
    for check in ORIGINAL_CHECKS:  # sequentially it is a correct system
        assert results[check].status == "pass", results[check]
    race = results["thread_safe"]
    assert race.status == "fail", race
    assert name in race.detail and "thread_safe" in race.detail
    assert "concurrently" in race.detail and "sequentially" in race.detail


def test_a_system_raising_under_concurrency_fails_thread_safe(register) -> None:
    race = by_check(check_system(register(RaisesWhenConcurrent)))["thread_safe"]
    assert race.status == "fail" and "raised RuntimeError: index is being rebuilt" in race.detail


def test_a_concurrent_hang_fails_thread_safe_and_skips_the_rest(register) -> None:
    name = register(HangsWhenConcurrent)
    results = by_check(check_system(name, timeout_s=0.2))
    assert all(results[c].status == "pass" for c in ORIGINAL_CHECKS), results
    race = results["thread_safe"]
    assert race.status == "fail", race
    assert "concurrent search(" in race.detail and "did not return within 0.2 s" in race.detail
    skipped = results["results_not_aliased"]
    assert skipped.status == "skip" and "thread_safe timed out" in skipped.detail


def test_a_reused_result_list_fails_results_not_aliased(register) -> None:
    name = register(ReusesResultList)
    alias = by_check(check_system(name))["results_not_aliased"]
    assert alias.status == "fail", alias
    assert name in alias.detail and "results_not_aliased" in alias.detail
    assert "changed after later calls" in alias.detail


def test_rewritten_memories_fail_results_not_aliased(register) -> None:
    alias = by_check(check_system(register(MutatesReturnedMemories)))["results_not_aliased"]
    assert alias.status == "fail" and "changed after later calls" in alias.detail


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (TextNone, "whose text is NoneType, expected str"),
        (TextInt, "whose text is int, expected str"),
        (IdInt, "whose id is int, expected str"),
        (LoneSurrogate, "whose text contains a lone surrogate"),
        (NumpyScore, "whose score is numpy.float32, expected a float or None"),
        (NanScore, "whose score is nan, expected a finite number or None"),
        (BoolScore, "whose score is bool, expected a float or None"),
        (SourceTurnInt, "whose source_turns holds int, expected tuple[str, ...] or None"),
    ],
)
def test_bad_return_values_fail_naming_the_field(register, cls: type, expected: str) -> None:
    name = register(cls)
    results = check_system(name)
    failures = [r for r in results if r.status == "fail"]
    assert failures, results
    for r in failures:
        assert expected in r.detail, r
        assert name in r.detail


def test_real_number_scores_pass(register) -> None:
    results = check_system(register(RealScores))
    assert all(r.status == "pass" for r in results), results


def test_the_good_double_passes_the_new_checks_and_the_kit_leaves_no_threads(register) -> None:
    before = threading.active_count()
    results = check_system(register(GoodSystem))
    assert all(r.status == "pass" for r in results), results
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True])
def test_a_timeout_must_be_a_positive_number(register, bad: float) -> None:
    name = register(GoodSystem)
    with pytest.raises(ValueError, match="positive number of seconds"):
        check_system(name, timeout_s=bad)
    with pytest.raises(ValueError, match="positive number of seconds"):
        check_system(name, create_timeout_s=bad)


@pytest.mark.parametrize("mode", sorted(HostileSystem.MODES))
def test_verify_fails_the_hostile_plugin_in_every_mode(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallbench import testing

    monkeypatch.setattr(registry, "BUILTINS", dict(registry.BUILTINS))
    testing.register()
    results = check_system("hostile", {"mode": mode, "sleep_s": 0.5}, timeout_s=0.3)
    assert not passed(results), (mode, results)
