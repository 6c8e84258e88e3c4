"""Evaluation: prompt sets, a local VeriScore-style factuality score, comparisons and reports.

    metric.py    precision, recall@K, F1@K; claims and verdicts per sentence of a response
    scorer.py    results file -> details (resumable) -> scores with the dataset's K -> summary
    harness.py   `ewe eval run`: methods x datasets (+ sweeps), generation, scoring, report
    report.py    Markdown / CSV table, PNG plots, one HTML page, an audit sample
    cli.py       `ewe eval prompts | score | run`
    checker_accuracy.py  a checker's balanced accuracy on the labelled set (ewe.data.labelled_set)
    critics.py   `ewe eval critics`: the Critics benchmark (Med-Critics-style texts with known falsified
                 sentences, falsify.py makes them) and a critic's precision / recall / F1 at finding them

The prompt sets come from ewe.data.prompt_sets.
"""
