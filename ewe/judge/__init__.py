"""ewe's own fact-checking judge, trained here from the embedded MiniLM and Wikipedia.

    data.py      `ewe judge data`: (passage, claim, label) triples and prefixes, split by article
    model.py     the network: MiniLM + a 3-way head (cross-encoder or late interaction)
    train.py     `ewe judge train`: seeded, resumable, safetensors + manifest
    checker.py   Judge (a trained folder) and JudgeChecker, the `checker.backend: judge`
    evaluate.py  `ewe judge eval`: judges on the hand-labelled generated sentences
    binding.py   `ewe judge eval-binding`: subject binding end to end on ewe.data.subject_set, and
                 the release check every retrain passes
    bench.py     `ewe bench judge`: a check's cost in the generator's decode steps

docs/JUDGE.md says why it is built this way and what it measures.
"""
