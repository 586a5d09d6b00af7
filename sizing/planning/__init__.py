"""What a campaign, and one DAG run of it, will do: the top floor of the core, over the judgement (admission notes
what a run's steps are too short to conclude) and the campaign model.

- `timeline`: scenario timelines: phases, rate and processing-time profiles, fault events, open-loop send times.
- `plan`: the concrete configs, their trials and runs, a campaign's cost and budget.
- `trialcluster`: what a trial's cluster tasks need of the campaign, resolved once when the run is planned.
- `runparams`: a DAG run's params, declared once for the DAG, its checks and the CLI.
- `runplan`: a DAG run's plan: its params checked against the spec, trials, run keys, completeness, backfill.
- `admission`: a campaign's admission on a machine: every problem, warning and note the CLI, the DAG and the demo
  print alike.
"""
