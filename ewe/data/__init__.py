"""The embedded Wikipedia and the datasets built from it.

    wiki.py          the embedded Wikipedia summaries: `passage(title)`, `summaries()`
    prompt_sets.py   bio / objects prompt sets for `ewe eval`, each from one split (+ the paper's appendix A suffix)
    labelled_set.py  true sentences and their minimally altered false twins, for measuring a checker
    subject_set.py   claims given to another person than their passage's, for subject binding
    splits.py        the frozen train / dev / test split of the articles (by a hash of the title)

The judge's training triples are the judge's own (ewe.judge.data).
"""
