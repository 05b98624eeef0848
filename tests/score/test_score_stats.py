"""The bootstrap, McNemar and Holm of ``recallbench.score.stats``: the unit follows the data,
the draws are seeded, and the tests give the textbook answers."""

from __future__ import annotations

import math

import pytest

from recallbench.score.stats import (
    MIN_GROUPS,
    TEST_BOOTSTRAP,
    TEST_BOTH,
    TEST_MCNEMAR,
    UNIT_GROUPS,
    UNIT_SLICES,
    bootstrap_interval,
    holm,
    mcnemar,
    paired_difference,
    resampling_unit,
    seed_of,
)


def test_the_unit_is_groups_from_twenty_groups_on() -> None:
    assert resampling_unit([f"g{i}" for i in range(MIN_GROUPS - 1)]) == UNIT_SLICES
    assert resampling_unit([f"g{i}" for i in range(MIN_GROUPS)]) == UNIT_GROUPS
    assert resampling_unit(["all"] * 500) == UNIT_SLICES  # one global haystack


def test_an_interval_names_its_unit_draws_and_seed_and_repeats_bit_for_bit() -> None:
    values = [float(i % 3 == 0) for i in range(60)]
    groups, slices = ["all"] * 60, ["a" if i < 30 else "b" for i in range(60)]
    one = bootstrap_interval(values, groups, slices, iterations=500, seed=7)
    two = bootstrap_interval(values, groups, slices, iterations=500, seed=7)
    assert one == two and one is not None
    assert (one.unit, one.iterations, one.seed) == (UNIT_SLICES, 500, 7)
    assert one.low <= sum(values) / len(values) <= one.high
    other = bootstrap_interval(values, groups, slices, iterations=500, seed=8)
    assert other != one


def test_stratified_draws_keep_each_slice_at_its_size() -> None:
    # slice a all right, slice b all wrong: every stratified draw has the same mean
    values = [1.0] * 20 + [0.0] * 30
    ci = bootstrap_interval(values, ["all"] * 50, ["a"] * 20 + ["b"] * 30, seed=1)
    assert ci is not None and ci.low == ci.high == 0.4
    plain = bootstrap_interval(values, ["all"] * 50, ["x"] * 50, seed=1)
    assert plain is not None and plain.low < 0.4 < plain.high


def test_groups_of_correlated_questions_widen_the_interval() -> None:
    # 25 conversations of 20 questions each, every question of a conversation alike
    groups = [f"c{g}" for g in range(25) for _ in range(20)]
    values = [float(g % 2) for g in range(25) for _ in range(20)]
    slices = ["s"] * len(values)
    by_group = bootstrap_interval(values, groups, slices, seed=3)
    by_question = bootstrap_interval(values, groups, slices, seed=3, unit=UNIT_SLICES)
    assert by_group is not None and by_question is not None
    assert by_group.unit == UNIT_GROUPS
    assert (by_group.high - by_group.low) > 3 * (by_question.high - by_question.low)


def test_no_interval_without_spread_to_draw_from() -> None:
    assert bootstrap_interval([1.0], ["g"], ["s"], seed=0) is None
    assert bootstrap_interval([1.0, 0.0], ["g", "g"], ["s", "s"], seed=0, unit=UNIT_GROUPS) is None
    with pytest.raises(ValueError, match="one of each per question"):
        bootstrap_interval([1.0, 0.0], ["g"], ["s", "s"], seed=0)


def test_mcnemar_is_the_exact_binomial_test() -> None:
    assert mcnemar([1, 1, 1, 0], [0, 0, 0, 0]) == 0.25  # 3 to 0: 2 * 0.5**3
    assert mcnemar([1, 0, 1], [1, 0, 1]) == 1.0  # nothing differs
    a = [1] * 1 + [0] * 9
    b = [0] * 1 + [1] * 9
    assert mcnemar(a, b) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar([1] * 5 + [0] * 5, [0] * 5 + [1] * 5) == 1.0
    with pytest.raises(ValueError, match="0/1"):
        mcnemar([0.5], [1.0])


def test_holm_steps_down_and_stays_monotone() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []
    adjusted = holm([0.001, 0.2, 0.01, 0.04])
    order = sorted(range(4), key=[0.001, 0.2, 0.01, 0.04].__getitem__)
    assert all(adjusted[i] <= adjusted[j] for i, j in zip(order, order[1:], strict=False))


def _pair(discordant: int, n: int = 600) -> tuple[list[float], list[float]]:
    a = [1.0] * n
    b = [0.0 if i < discordant else 1.0 for i in range(n)]
    return a, b


@pytest.mark.parametrize(("discordant", "significant"), [(3, False), (150, True)])
def test_paired_gaps_of_3_and_150_in_600(discordant: int, significant: bool) -> None:
    a, b = _pair(discordant)
    groups, slices = ["all"] * 600, ["s"] * 600
    r = paired_difference(a, b, groups, slices, seed=seed_of("x"))
    assert r.test == TEST_MCNEMAR and r.discordant == (discordant, 0)
    assert r.difference == round(-discordant / 600, 6)
    assert (r.p_value < 0.05) is significant
    assert r.interval is not None and r.interval.high <= 0
    # the paired bootstrap, asked directly, agrees
    boot = paired_difference(a, b, [f"g{i}" for i in range(600)], slices, seed=1,
                             unit=UNIT_GROUPS)  # fmt: skip
    assert boot.test == TEST_MCNEMAR  # groups of one question are independent questions
    clustered = [f"g{i // 2}" for i in range(600)]
    both = paired_difference(a, b, clustered, slices, seed=1)
    assert both.test == TEST_BOTH and (both.p_value < 0.05) is significant
    assert both.p_value >= mcnemar(a, b)


def test_a_graded_difference_uses_the_paired_bootstrap() -> None:
    a = [0.5, 0.25, 0.75, 0.5] * 10
    b = [0.5, 0.25, 0.75, 1.0] * 10
    r = paired_difference(a, b, ["all"] * 40, ["s"] * 40, seed=2)
    assert r.test == TEST_BOOTSTRAP and r.discordant is None
    assert math.isclose(r.difference, 0.125)
    assert r.p_value < 0.001  # below what a share of 1,000 draws could say
    same = paired_difference(a, a, ["all"] * 40, ["s"] * 40, seed=2)
    assert same.difference == 0 and same.p_value == 1.0
    with pytest.raises(ValueError, match="nothing to compare"):
        paired_difference([], [], [], [], seed=0)
