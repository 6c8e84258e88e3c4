"""`ewe bench judge`: what one check costs, in seconds and in the generator's decode steps.

In one process, interleaved: a decode step of the generator (greedy, no memory: the median
of per-token times over a short generation), and checking one sentence against 5 passages
with the trained judge (passages already cached, as the controller sees them again and
again, and cold, every passage encoded anew) and with the alignment checker.
"""
from __future__ import annotations

import statistics
import time

from ..argtypes import positive_int

SENTENCES = [
    "Albert Einstein was born in Ulm in 1879 and developed the theory of relativity.",
    "Marie Curie won the Nobel Prize in Chemistry in 1911.",
    "Isaac Newton published the Principia in 1687.",
    "Charles Darwin was a famous chef from Brazil.",
    "Niels Bohr received the Nobel Prize in Physics in 1922 for his work on atomic structure.",
    "Max Planck is known as the originator of quantum theory.",
    "She was the first woman to win a Nobel Prize.",
    "Darwin sailed on HMS Beagle and later wrote On the Origin of Species.",
]
TITLES = ["Albert Einstein", "Marie Curie", "Isaac Newton", "Charles Darwin", "Niels Bohr"]


def run_judge_bench(args, load_ewe) -> int:
    import torch

    from ..verify.alignment import AlignmentChecker
    from ..verify.embedding import Encoder
    from ..verify.factchecker import FactChecker
    from ..verify.types import Evidence
    from ..data.wiki import passage
    from ..judge.checker import Judge, JudgeChecker

    ewe = load_ewe(args)
    evidence = [Evidence(text=passage(t), title=t) for t in TITLES]
    judge = Judge(args.judge)
    trained = FactChecker(JudgeChecker(judge))
    alignment = FactChecker(AlignmentChecker(encoder=Encoder()))

    def decode_step() -> float:
        n = args.tokens
        t = time.perf_counter()
        r = ewe.generate("Tell me a bio of Albert Einstein.", passages=[], max_new_tokens=n)
        return (time.perf_counter() - t) / max(1, len(r.token_ids))

    def checks(fc, cold=False):
        def run():
            t = time.perf_counter()
            for s in SENTENCES:
                if cold:
                    judge.clear_cache()
                fc.check_sentence(s, prompt="Tell me a bio.", evidence=evidence)
            return (time.perf_counter() - t) / len(SENTENCES)
        return run

    runs = {"decode step": decode_step, "judge (cached passages)": checks(trained),
            "judge (cold)": checks(trained, cold=True), "alignment": checks(alignment)}
    for fn in runs.values():
        fn()  # warm up: load the models, fill the caches
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            times[name].append(fn())
    med = {name: statistics.median(v) for name, v in times.items()}
    step = med["decode step"]
    claims = sum(len(trained.check_sentence(s, evidence=evidence).claims) for s in SENTENCES) / len(SENTENCES)
    print(f"judge bench: {len(SENTENCES)} sentences ({claims:.1f} claims each) x {len(evidence)} passages, "
          f"{args.repeats} repeats interleaved, threads {torch.get_num_threads()}, judge {judge.folder}")
    print(f"{'run':<26}{'median ms':>10}{'per s':>8}{'decode steps':>14}")
    for name, v in med.items():
        per_s = f"{1 / v:8.1f}" if name != "decode step" else f"{'':>8}"
        print(f"{name:<26}{v * 1000:10.1f}{per_s}{v / step:14.2f}")
    return 0


def add_bench_arguments(p) -> None:
    p.add_argument("--repeats", type=positive_int, default=5)
    p.add_argument("--tokens", type=positive_int, default=32, help="tokens generated to time a decode step")
    p.add_argument("--judge", default="minilm-cross", help="a shipped judge (minilm-cross) or a trained folder")
