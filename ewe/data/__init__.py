"""The embedded Wikipedia and the datasets built from it.

    wiki.py          the embedded Wikipedia summaries: `passage(title)`, `summaries()`
    prompt_sets.py   bio / objects prompt sets for `ewe eval` (+ the EWE paper's appendix A suffix)
    labelled_set.py  true sentences and their minimally altered false twins, for measuring a checker

The judge's training triples are the judge's own (ewe.judge.data).
"""
