"""A method of your own, chosen by configuration: best-of-N answers, judged by ewe's checker.

    python examples/custom_method.py ["Tell me a bio of Marie Curie."]

`BestOfN` samples N answers with the prompt's passages in the prompt (as RA does), checks
every sentence of each with the configured fact-checker, and returns the answer with the
most supported sentences (ties: the fewest unsupported ones). Registering it makes
`method: best-of-n` valid in any configuration; its settings go in an `options` section,
which its Options model checks when the configuration is read. A package offers such a
method to the CLI (`ewe run --config`, `ewe eval run --methods`) through the `ewe.methods`
entry point group instead (README, "A method of your own").
"""
import dataclasses
import sys
import textwrap

from pydantic import BaseModel, ConfigDict, Field

from ewe import EWE
from ewe.methods.registry import Method, register
from ewe.verify.text import split_sentences


class BestOfNOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(4, ge=1, le=32, description="answers sampled")
    temperature: float = Field(0.8, gt=0.0, le=5.0, description="their sampling temperature")


@register
class BestOfN(Method):
    name = "best-of-n"
    Options = BestOfNOptions

    def run(self, prompt, dec, passages=None):
        rt, opts = self.runtime, self.options
        if passages is None:  # retrieved once, shared by the N answers
            passages = [hit.text for hit in rt.retrieve([prompt])[0]]
        sampling = rt.decoding(max_new_tokens=dec.max_new_tokens, temperature=opts.temperature, top_p=dec.top_p,
                               seed=dec.seed, system_prompt=dec.system_prompt)
        answers = rt.generate_plain([prompt] * opts.n, [passages] * opts.n, sampling)
        checker = rt.fact_checker()
        scores = []
        for answer in answers:
            supported = unsupported = 0
            context = ""
            for sentence in split_sentences(answer.text):
                check = checker.check_sentence(sentence, context=context, prompt=prompt)
                context += " " + sentence
                supported += check.verdict == "supported"
                unsupported += check.needs_rewrite
            scores.append((supported, -unsupported))
        best = max(range(opts.n), key=lambda i: scores[i])
        trace = [{"type": "best-of-n", "chosen": best,
                  "answers": [{"text": a.text, "supported": s, "unsupported": -u}
                              for a, (s, u) in zip(answers, scores)]}]
        return dataclasses.replace(answers[best], trace=trace)


if __name__ == "__main__":
    prompt = sys.argv[1] if len(sys.argv) > 1 else "Tell me a bio of Marie Curie."
    ewe = EWE.from_config({
        "method": "best-of-n",
        "options": {"n": 3, "temperature": 0.8},
        "retrieval": {"source": "embedded", "top_k": 1, "placement": "prompt"},
        "decoding": {"max_new_tokens": 96, "seed": 0},
    })
    result = ewe.generate(prompt)
    [event] = result.trace
    for i, a in enumerate(event["answers"]):
        mark = "KEPT" if i == event["chosen"] else "    "
        print(f"{mark} answer {i + 1}: {a['supported']} sentences supported, {a['unsupported']} not")
        print(textwrap.indent(textwrap.fill(a["text"], 96), "      "))
    print(f"\n{result.text}")
