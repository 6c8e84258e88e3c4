"""The main job on the embedded default: SmolLM2-135M-Instruct writes a biography three ways:
bare; with EWE's full loop (passages retrieved from the embedded Wikipedia in its working
memory, pauses to refresh it and to fact-check each new sentence, rewrites of sentences
that fail, trace printed); and with the passages prepended to the prompt (the "+RA"
baseline).

    python examples/quickstart.py ["Tell me a bio of Marie Curie."]

First run: the bundled GGUF model is dequantized once (about a minute) and the Wikipedia
datastore (10,033 summaries) is embedded and indexed once (several minutes on 2 CPU
cores, with progress bars); both are cached under ~/.cache/ewe. Nothing is downloaded.
"""
import sys
import textwrap

from ewe import EWE, EWEConfig
from ewe.controller import render

prompt = sys.argv[1] if len(sys.argv) > 1 else "Tell me a bio of Marie Curie."
ewe = EWE.from_config("configs/ewe.yaml", **{"decoding.max_new_tokens": 120})
print(f"model loaded in {ewe.load_report.seconds:.1f} s ({'cache' if ewe.load_report.from_cache else 'first load'})")
print(f"datastore: {len(ewe.datastore)} passages (Wikipedia summaries, CC BY-SA 4.0)")
print(f"\nPrompt: {prompt}")


def show(label: str, r) -> None:
    s = r.stats
    print(f"\n--- {label}: {s['new_tokens']} tokens, {s.get('total_s', 0):.1f} s ---")
    print(textwrap.fill(r.text, 100))


def variant(**overrides) -> EWE:
    """The same model and datastore under another configuration."""
    cfg = EWEConfig.build(ewe.config.model_dump(), **overrides)
    return EWE(ewe.model, ewe.tokenizer, cfg, datastore=ewe.datastore)


off = {"controller.retrieval_trigger": "never", "controller.verify_trigger": "never"}
show("bare model (no memory)", variant(**off).generate(prompt, passages=[]))

r = ewe.generate(prompt)
print("\n--- EWE: the controller's trace ---")
print(render(r.trace))
show(f"EWE ({r.stats['pauses_retrieval']} retrieval pauses, {r.stats['checks']} checks, "
     f"{r.stats['backtracks']} backtracks)", r)

show("+RA baseline: the prompt's passages prepended as text", variant(**off, **{"retrieval.placement": "prompt"}).generate(prompt))
