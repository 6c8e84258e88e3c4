"""The main job on the embedded default: SmolLM2-135M-Instruct answers with and without
a Wikipedia passage in its working memory.

    python examples/quickstart.py ["Marie Curie"]

The first run dequantizes the bundled GGUF model once (about a minute on 2 CPU cores)
and caches it; later runs start in seconds. Nothing is downloaded.
"""
import sys
import textwrap

from ewe import EWE
from ewe.wiki import passage

title = sys.argv[1] if len(sys.argv) > 1 else "Marie Curie"
prompt = f"Tell me a bio of {title}."
ewe = EWE.from_config()  # embedded SmolLM2-135M-Instruct, memory units of 128 tokens
print(f"model loaded in {ewe.load_report.seconds:.1f} s ({'cache' if ewe.load_report.from_cache else 'first load'})")

wiki = passage(title)
print(f"\nPrompt: {prompt}\n\nWorking memory (1 unit, embedded Wikipedia, CC BY-SA 4.0):")
print(textwrap.fill(wiki[:400] + ("..." if len(wiki) > 400 else ""), 100, initial_indent="  ", subsequent_indent="  "))

for label, passages in (("without memory", None), ("with the passage in working memory", [wiki])):
    result = ewe.generate(prompt, passages=passages, max_new_tokens=120)
    rate = result.stats["new_tokens"] / max(result.stats["decode_s"], 1e-9)
    print(f"\n--- {label} ({result.stats['new_tokens']} tokens, {rate:.1f} tok/s) ---")
    print(textwrap.fill(result.text, 100))
