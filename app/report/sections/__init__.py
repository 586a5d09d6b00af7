"""The report's sections, one module each, in page order (app.report.build.SECTIONS). Each has
`render(ctx: ReportContext) -> list[object]` (no parts: the section is left out) and reads only the tables
(app.report.tables.ReportData), the run's history (app.report.history.RunHistory) and the spec, through the context
(app.report.context); cells are written by app.report.fmt.

    `header`           campaign, runs, what the run ran on (its runs row), target and workload, table of contents
    `upgrade`          a campaign comparing RabbitMQ versions opens with the upgrade question (issue 33): the `upgrade`
                       table's six figures per version, the change, the measured and the published direction
    `comparison`       compared with a baseline run (issue 24): only when the run names one
    `verdict`          which config to buy (sizing.judgement.recommendation decides), or a compare/characterise answer's
    first lines (app.report.answer: the Findings section of a compare or characterise campaign)
    `intensity`        increasing intensity: achieved rate and latency per step, charts and table
    `leaderboards`     the four boards with intervals over repeats, the Pareto front
    `trends`           across runs (issue 24): each headline metric over the stored runs, with change points
    `volumes`          one cluster shape on each volume type at the target (seed 000 Figs 26-31)
    `search`           capacity searches: the capacity table, each search's probes and its knee
    `groups`           workload groups: what each group runs and its figures per phase
    `adverse`          adverse scenarios: criterion, the `adverse` table's judgement, phases, per-second charts
    `client_settings`  client-setting steps, their rates and latency basis, one line per queue type
    `broker`           broker-side metrics from phase_summary and the raw samples
    `resources`        node resources per intensity phase; where each config stopped matching and why
    `disks`            each config's volumes by role
    `quality`          Great Expectations results, invalid phases, missing phase summaries
"""
