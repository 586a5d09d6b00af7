"""Mutation check of the seed conclusion tests (issue 32, item 4): each test must fail when the rule it checks is
broken. For every (test, mutation) below, the script copies the work tree to a temporary directory, breaks the rule
once there (one textual edit of the code that states it), runs that one test and expects it to FAIL; a test that
still passes names a rule it does not check. The unmutated tests are run first and must pass.

    .venv/bin/python scripts/mutation_check_seeds.py --jobs 3         (Spark: ~2 minutes, one JVM per mutation)
    .venv/bin/python scripts/mutation_check_seeds.py -k findings      (the pure ones only, ~20 s)

`make test` runs the whole check (tests/test_seed_fixtures.py) with --skip-baseline: the suite runs the unmutated
tests itself.

Exit 0: every mutation was caught; 1: some survived (listed) or a baseline test failed.
"""

from __future__ import annotations

import argparse
import queue
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = "tests/test_seed_conclusions.py::"
SHAPE = "tests/test_findings.py::"
MEASURED = "tests/test_seed_fixtures.py::"  # the verdicts from our own runs' fixtures


@dataclass(frozen=True)
class Mutation:
    test: str  # pytest node id
    path: str  # the file that states the rule
    old: str  # exactly once in it
    new: str
    why: str  # the rule, broken


MUTATIONS = (
    Mutation(SEEDS + "test_seed_000_top_throughput_per_volume_at_any_latency", "sizing/criteria/rules.py",
             "return conclusive(valid) & (e2e_p99_ms <= slo_p99_ms)", "return conclusive(valid)",
             "the top within the SLO counts phases whatever their p99"),
    Mutation(SEEDS + "test_seed_000_cost_at_top_throughput_per_volume_and_its_slips", "spark_jobs/lib/leaderboards.py",
             "cost_per_1000_msgs(plan.monthly_cost, any_latency) if any_latency",
             "cost_per_1000_msgs(plan.monthly_cost, top or any_latency) if any_latency",
             "the any-latency cost divides by the top within the SLO"),
    Mutation(SEEDS + "test_seed_000_cost_at_the_30k_target_per_volume_names_the_45k_slip",
             "spark_jobs/lib/leaderboards.py",
             "cost_per_1000_msgs(plan.monthly_cost, target_rate) if met",
             "cost_per_1000_msgs(plan.monthly_cost, max_matched) if met",
             "the cost at the target divides by the highest rate matched (the seed's own / 45k slip)"),
    Mutation(SEEDS + "test_seed_000_top_5_at_30k_and_its_conclusions", "spark_jobs/lib/leaderboards.py",
             'at_target = _ranks({k: r["cost_per_1k_at_target"] for k, r in rows.items()})',
             'at_target = _ranks({k: r["cost_per_1k_at_target"] for k, r in rows.items()}, descending=True)',
             "the board at the target ranks the dearest first"),
    Mutation(SEEDS + "test_seed_002_two_survivors_are_7x16_and_9x8", "sizing/criteria/rules.py",
             "(reduced_publish_s <= tolerance_s)", "(reduced_publish_s <= tolerance_s + 600)",
             "a backlog scenario holds with ten minutes of reduced publishing beyond its tolerance"),
    Mutation(SEEDS + "test_seed_002_the_platform_recommends_9x8_where_the_study_calls_7x16_the_best_all_rounder",
             "sizing/judgement/recommendation.py",
             "v.monthly_cost)) if v.passes_all), None)",
             "v.monthly_cost), reverse=True) if v.passes_all), None)",
             "the recommendation is the dearest survivor"),
    Mutation(SEEDS + "test_seed_002_each_adverse_scenario_keeps_the_clusters_its_text_names",
             "sizing/criteria/rules.py",
             "return (reduced_publish_s <= tolerance_s) & (lost == 0) & drained",
             "return (reduced_publish_s <= tolerance_s + 600) & (lost == 0) & drained",
             "a backlog scenario holds with ten minutes of reduced publishing beyond its tolerance"),
    Mutation(SEEDS + "test_seed_001_ssd_over_hdd", "sizing/criteria/stats.py",
             "COMPARE_CONFIDENCE = 0.90", "COMPARE_CONFIDENCE = 0.95",
             "a comparison asks more than 3 repeats against 3 can give"),
    Mutation(SEEDS + "test_seed_001_a_separate_wal_rescues_hdd_under_light_mixed_load_not_under_medium",
             "sizing/criteria/stats.py",
             "(math.expm1(x) if math.isfinite(x) else x for x in (estimate, low, high))",
             "(x for x in (estimate, low, high))",
             "a relative effect is reported as its log ratio"),
    Mutation(SEEDS + "test_seed_001_the_report_answers_the_comparison_it_asks", "app/report/answer.py",
             "verdict, count = counts.index[0], int(counts.iloc[0])",
             "verdict, count = counts.index[-1], int(counts.iloc[-1])",
             "the headline speaks of the rarest verdict"),
    Mutation(SHAPE + "test_each_step_against_the_previous_one_names_the_largest_jump_and_the_knee",
             "sizing/judgement/findings.py", "for i, row in enumerate(rows)]", "for i, row in enumerate(rows[::-1])]",
             "the shape marks land on the pairs in reverse order"),
    Mutation(SHAPE + "test_a_curve_states_no_knee_it_cannot_tell", "sizing/judgement/findings.py",
             ' and rows[flat_from - 1]["no_better"] is False else None', " else None",
             "a knee is named after a gain the repeats cannot tell"),
    Mutation(SHAPE + "test_a_curve_states_no_knee_it_cannot_tell", "sizing/judgement/findings.py",
             "abs(math.log1p(effect.interval.estimate))", "effect.interval.estimate",
             "the largest change is the largest rise, a fall never"),
    Mutation(SHAPE + "test_the_report_words_the_largest_jump_and_the_knee_from_the_table", "app/report/answer.py",
             'knee = next((i for i, r in enumerate(as_series) if _flag(r["knee"])), None)',
             'knee = next((i for i, r in enumerate(as_series) if _flag(r["no_better"])), None)',
             "the report names the first no-better step as the knee"),
    Mutation(MEASURED + "test_each_seed_verdict_is_re_derived_from_its_runs", "sizing/judgement/seeds.py",
             "    if any(v not in (want, stats.INCONCLUSIVE) for v in verdicts):\n        return CONTRADICTED",
             "    if any(v not in (want, stats.INCONCLUSIVE) for v in verdicts):\n        return INCONCLUSIVE",
             "a measured effect against the study's never contradicts it"),
    Mutation(MEASURED + "test_each_seed_verdict_is_re_derived_from_its_runs", "sizing/judgement/findings.py",
             "if one_base is not None and one_other is not None:", "if False:",
             "one run's effects are judged between repeats (no interval) instead of within the run"),
)


def pytest(tree: Path, tests: list[str]) -> int:
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=tree,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def copy_tree(tree: Path) -> None:
    """The work tree's files (tracked and untracked, not ignored) copied to `tree`."""
    files = subprocess.check_output(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, text=True)
    for name in files.splitlines():
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)


def check(m: Mutation, tree: Path) -> bool | None:
    """Break `m`'s rule in `tree`, run its test, put the rule back: caught (the test failed), or None when the
    mutation is stale (the code no longer states it once)."""
    target = tree / m.path
    original = target.read_text()
    if original.count(m.old) != 1:
        return None
    target.write_text(original.replace(m.old, m.new))
    try:
        return pytest(tree, [m.test]) != 0
    finally:
        target.write_text(original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only the mutations whose test id contains this")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="do not run the unmutated tests first (a caller that runs them itself)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="mutations checked at once, each in a tree of its own (a Spark test mostly waits on its "
                             "JVM's start: 3 at once take about half the time on 2 cores)")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.k in m.test]
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        trees: queue.Queue[Path] = queue.Queue()
        for i in range(max(1, args.jobs)):
            copy_tree(Path(tmp) / f"tree{i}")
            trees.put(Path(tmp) / f"tree{i}")
        if not args.skip_baseline and pytest(Path(tmp) / "tree0", sorted({m.test for m in chosen})) != 0:
            print("baseline: the unmutated tests fail; nothing to check")
            return 1

        def in_a_free_tree(m: Mutation) -> bool | None:
            tree = trees.get()
            try:
                return check(m, tree)
            finally:
                trees.put(tree)

        survived = []
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for m, caught in zip(chosen, pool.map(in_a_free_tree, chosen), strict=True):
                if caught is None:
                    print(f"stale mutation ({m.path} no longer states {m.old!r} once): {m.test}")
                else:
                    print(f"{'caught  ' if caught else 'SURVIVED'} {m.test.split('::')[1]}: {m.why}")
                if not caught:
                    survived.append(m)
    print(f"{len(chosen) - len(survived)} of {len(chosen)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
