"""The main job on the embedded default: SmolLM2-135M-Instruct answers a prompt three ways:
bare, with passages retrieved from the embedded Wikipedia in its working memory (EWE's
memory), and with the same passages prepended to the prompt (the "+RA" baseline).

    python examples/quickstart.py ["Tell me a bio of Marie Curie."]

First run: the bundled GGUF model is dequantized once (about a minute) and the Wikipedia
datastore (10,033 summaries) is embedded and indexed once (several minutes on 2 CPU
cores, with progress bars); both are cached under ~/.cache/ewe. Nothing is downloaded.
"""
import sys
import textwrap

from ewe import EWE, EWEConfig

prompt = sys.argv[1] if len(sys.argv) > 1 else "Tell me a bio of Marie Curie."
ewe = EWE.from_config("configs/ewe-memory.yaml")
print(f"model loaded in {ewe.load_report.seconds:.1f} s ({'cache' if ewe.load_report.from_cache else 'first load'})")
print(f"datastore: {len(ewe.datastore)} passages (Wikipedia summaries, CC BY-SA 4.0)")

print(f"\nPrompt: {prompt}")
runs = (
    ("bare model (no memory)", dict(passages=[])),
    ("EWE working memory: retrieved passages, one unit each", dict()),
)
for label, kwargs in runs:
    r = ewe.generate(prompt, max_new_tokens=120, **kwargs)
    rate = r.stats["new_tokens"] / max(r.stats["decode_s"], 1e-9)
    print(f"\n--- {label} ({r.stats['new_tokens']} tokens, {rate:.1f} tok/s) ---")
    for hit in r.retrieved:
        print(f"  memory unit <- [{hit['score']:.3f}] {hit['title']}")
    print(textwrap.fill(r.text, 100))

ra_config = EWEConfig.build(ewe.config.model_dump(), **{"retrieval.placement": "prompt"})
ra = EWE(ewe.model, ewe.tokenizer, ra_config, datastore=ewe.datastore)
r = ra.generate(prompt, max_new_tokens=120)
print(f"\n--- +RA baseline: the same passages prepended to the prompt ({r.stats['prompt_tokens']} prompt tokens) ---")
print(textwrap.fill(r.text, 100))
