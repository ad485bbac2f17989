"""Evals: measure whether the agent gets tasks done, K trials per case, as real tasks.

    suite.py       the suite file (TOML or JSON): cases, limits, the person's script, graders
    graders.py     code graders on the outcome, the workspace and the transcript
    judge.py       the rubric grader: a judge model through the project's providers
    transcript.py  what a task did, read from its workflow history
    people.py      the scripted person: approvals, replies, interjections
    run.py         the harness: each trial a workflow in a fresh workspace, in parallel
    metrics.py     pass@k, pass^k and the report
    record.py      a finished task as a case whose model answers are replayed

Between the CLI and the worker in the layers: it starts tasks and, like ``run``, a worker.
"""
