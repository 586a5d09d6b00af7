"""What the measurements say of the campaign's question: the criteria applied to the tables' rows, campaign by
campaign (pure: rows in, rows out; each table's schema is sizing.contract.records').

- `adverse`: adverse scenarios judged by their own criterion (seed 002).
- `recommendation`: the cheapest config that meets the target and holds every required scenario.
- `repeats`: medians over repeats with their intervals, per phase and per leaderboard board, and the boards' ranking.
- `findings`: a compare or characterise campaign's question and its answer, as findings.
- `upgrade`: the upgrade question: six figures per RabbitMQ version against the baseline's.
- `history`: a campaign's run history (`runs` rows) and what two runs' specs differ in.
- `comparison`: two runs compared metric by metric (`sizing compare`, the report's comparison section).
- `trends`: a metric across every stored run, with change points (`sizing trend`).
- `seeds`: the seed conclusions judged from our own measured runs' fixtures.
- `fidelity`: the model's figures against the studies' published cloud figures: prediction, error, rank correlation.
"""
