"""What the demo prints when a run is done: the leaderboard, the client-setting steps, read from the analysis'
tables in the demo's object store, and the follow-up commands that work in a new shell."""

from __future__ import annotations

from collections.abc import Callable

from app.demo.settings import DemoSettings, use_stack
from sizing.contract.layout import table_prefix

# ------------------------------------------------------------------------------------------ results


def read_table(s: DemoSettings, prefix: str, run_id: str | None = None):
    """The parquet parts of a table under an object-store prefix (of run `run_id` only, if given) as a pandas
    DataFrame (None if absent), read as the report reads its tables (one Parquet reader in app/)."""
    from app.report.tables import TableReader

    use_stack(s)
    return TableReader(s.s3).parquet(prefix, run_id=run_id)


LEADERBOARD_COLUMNS = {  # column -> heading, in the order a sizing decision reads them
    "rank_at_target": "rank", "config_id": "config", "monthly_cost": "$/month",
    "top_matched_throughput": "top msg/s (SLO met)", "cost_per_1k_at_top": "$/1k msg/s at top",
    "cost_per_1k_at_target": "$/1k msg/s at target", "met_target": "met target", "pareto": "pareto",
}


def print_leaderboard(s: DemoSettings, campaign: str, say: Callable[[str], None] = print,
                      run_id: str | None = None) -> bool:
    """The run's leaderboard, cheapest config at the target first (full table: `sizing query`)."""
    df = read_table(s, table_prefix("leaderboards", campaign), run_id)
    if df is None or df.empty:
        return False
    board = df.sort_values(["rank_at_target", "rank_at_top"], na_position="last")
    board = board[[c for c in LEADERBOARD_COLUMNS if c in board.columns]].rename(columns=LEADERBOARD_COLUMNS)
    runs = read_table(s, table_prefix("runs", campaign), run_id)
    measured = (str(runs["measured_on"].iloc[-1]) if runs is not None and not runs.empty and "measured_on" in runs
                else "not recorded")
    say(f"\n== leaderboard: {campaign} (cost per 1000 msg/s per month, cheapest at the target first)\n"
        f"   measured on: {measured}\n"
        + board.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    answer = read_table(s, table_prefix("recommendation", campaign), run_id)
    if answer is not None and not answer.empty:
        from sizing.judgement.recommendation import recommended_config

        say("   recommended (the recommendation table: meets the target and holds every required adverse scenario, "
            f"cheapest per 1000 msg/s): {recommended_config(answer.to_dict('records')) or 'none'}")
    return True


CLIENT_SETTINGS_COLUMNS = {  # phase_summary column -> heading: what a client-setting step measured
    "scenario": "scenario", "phase_name": "step", "publish_rate": "published/s", "confirm_rate": "confirmed/s",
    "consume_rate": "consumed/s", "e2e_p99_ms": "e2e p99 ms", "latency_basis": "latency from", "valid": "kept up",
}


def client_settings_table(summary, scenarios: list[str]) -> str:
    """Per step of the client-setting scenarios (seed 003): rates and p99 with the basis it is measured from, as
    phase_summary holds them; per scenario, its steps in run order."""
    rows = summary[summary["scenario"].isin(scenarios)].sort_values(["config_id", "scenario", "start_s"])
    table = rows[[c for c in CLIENT_SETTINGS_COLUMNS if c in rows.columns]].rename(columns=CLIENT_SETTINGS_COLUMNS)
    return table.to_string(index=False, float_format=lambda v: f"{v:,.1f}")


def print_client_settings(s: DemoSettings, campaign: str, scenarios: list[str],
                          say: Callable[[str], None] = print, run_id: str | None = None) -> bool:
    df = read_table(s, table_prefix("phase_summary", campaign), run_id)
    if df is None or df.empty or not df["scenario"].isin(scenarios).any():
        return False
    say(f"\n== client settings: {campaign} (per step, from phase_summary; max mode measures latency from the "
        f"actual send)\n" + client_settings_table(df, scenarios))
    return True


def next_steps(s: DemoSettings, campaign: str, run_label: str) -> list[str]:
    """Follow-up commands that work verbatim in a new shell (the CLI reads <state>/demo.json by itself)."""
    cli = s.cli()
    return [
        f'{cli} query --campaign {campaign} --run-id {run_label} "SELECT config_id, top_matched_throughput, '
        f'cost_per_1k_at_target FROM leaderboards ORDER BY rank_at_target"',
        f"{cli} report --campaign {campaign} --run-id {run_label} -o report.html",
        f"{cli} runs",
    ]
