"""`ewe bench judge`: what one check costs, in seconds and in the generator's decode steps.

In one process, interleaved: a decode step of the generator (greedy, no memory: the median
over a short generation of the time from one sampled token to the next, i.e. one forward of
one token plus its sampling, prefill excluded, end-of-sequence ignored so every repeat times
the same number of steps), and checking one sentence against 5 passages with the trained
judge (passages already cached, as the controller sees them again and again, and cold, every
passage encoded anew) and with the alignment checker.

Equal work: the three checkers check the same sentences against the same passages. "decode
steps" is a unit, not a speed-up: a check's median time over the decode step's median time,
both measured in this run (what a pause to check costs, in tokens the generator could have
written instead).
"""
from __future__ import annotations

import statistics
import time

import torch

from ..argtypes import positive_int
from ..engine import DecodingSession, Hook, Sampler, TokenLoop

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
PROMPT = "Tell me a bio of Albert Einstein."


class _StepClock(Hook):
    """The time at each sampled token: consecutive differences are whole decode steps."""

    def __init__(self):
        self.stamps: list[float] = []

    def on_step(self, loop) -> None:
        self.stamps.append(time.perf_counter())


def decode_step_seconds(ewe, steps: int) -> float:
    """Median seconds of one greedy decode step of `ewe`'s generator with no memory (one token's
    forward + sampling), over `steps` steps after the prefill; end-of-sequence does not stop it."""
    session = DecodingSession(ewe.model, None, 0, ewe.config.model.attention_impl)
    clock = _StepClock()
    TokenLoop(session, Sampler(), set(), steps + 1, hooks=[clock]).run(torch.tensor([ewe.prompt_ids(PROMPT)]))
    return statistics.median(b - a for a, b in zip(clock.stamps, clock.stamps[1:]))


def run_judge_bench(args, load_ewe) -> int:
    from ..verify.alignment import AlignmentChecker
    from ..verify.embedding import Encoder
    from ..verify.factchecker import FactChecker
    from ..verify.types import Evidence
    from ..data.wiki import passage
    from ..judge.checker import Judge, JudgeChecker

    ewe = load_ewe(args)
    sentences = SENTENCES[: args.sentences]
    evidence = [Evidence(text=passage(t), title=t) for t in TITLES]
    judge = Judge(args.judge)
    trained = FactChecker(JudgeChecker(judge))
    alignment = FactChecker(AlignmentChecker(encoder=Encoder()))

    def checks(fc, cold=False):
        def run():
            t = time.perf_counter()
            for s in sentences:
                if cold:
                    judge.clear_cache()
                fc.check_sentence(s, prompt="Tell me a bio.", evidence=evidence)
            return (time.perf_counter() - t) / len(sentences)
        return run

    runs = {"decode step": lambda: decode_step_seconds(ewe, args.tokens), "judge (cached passages)": checks(trained),
            "judge (cold)": checks(trained, cold=True), "alignment": checks(alignment)}
    for fn in runs.values():
        fn()  # warm up: load the models, fill the caches
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            times[name].append(fn())
    med = {name: statistics.median(v) for name, v in times.items()}
    step = med["decode step"]
    claims = sum(len(trained.check_sentence(s, evidence=evidence).claims) for s in sentences) / len(sentences)
    print(f"judge bench: {len(sentences)} sentences ({claims:.1f} claims each) x {len(evidence)} passages, "
          f"{args.repeats} repeats interleaved, threads {torch.get_num_threads()}, judge {judge.folder}")
    print("the checkers check the same sentences against the same passages; a decode step is one greedy token "
          f"of the generator (forward + sampling, no memory, median over {args.tokens} steps after the prefill)")
    print(f"{'run':<26}{'median ms':>10}{'per s':>8}{'decode steps':>14}")
    for name, v in med.items():
        per_s = f"{1 / v:8.1f}" if name != "decode step" else f"{'':>8}"
        print(f"{name:<26}{v * 1000:10.1f}{per_s}{v / step:14.2f}")
    print("decode steps: the row's median time over the decode step's, both from this run (a unit, not a speed-up)")
    return 0


def add_bench_arguments(p) -> None:
    p.add_argument("--repeats", type=positive_int, default=5)
    p.add_argument("--tokens", type=positive_int, default=32, help="decode steps timed for the decode step's median")
    p.add_argument("--sentences", type=positive_int, default=len(SENTENCES),
                   help=f"check only the first N of the {len(SENTENCES)} sentences (default: all)")
    p.add_argument("--judge", default="minilm-cross", help="a shipped judge (minilm-cross) or a trained folder")
