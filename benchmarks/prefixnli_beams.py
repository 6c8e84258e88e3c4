"""PrefixNLI with beam search, the paper's decoding (K = 3 beams, section 6.1), against plain beam
search: HF `generate` with ewe's PrefixNLI LogitsProcessor (ewe/methods/prefix_guide.py), each beam
judged on its own KV cache. ewe's own token loop decodes one path per prompt (greedy or sampled),
so `method: prefixnli` has no beams; this script measured what beams change
(docs/RESULTS.md, "PrefixNLI on summaries"). It writes one results file per decoding, resumable,
for `ewe eval score`:

    python benchmarks/prefixnli_beams.py PROMPTS.jsonl OUT/ [--beams 3] [--judge prefix-smollm2]
    ewe eval score OUT/beam3.jsonl OUT/beam3-prefixnli.jsonl --out OUT/scored --dataset summaries

PROMPTS: rows with "id", "prompt" and the source in "passages" (`ewe eval prompts summaries`).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import LogitsProcessorList

from ewe.api import EWE
from ewe.judge.prefix_model import PrefixJudge
from ewe.methods.prefix_guide import GuideSettings, logits_processor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prompts")
    ap.add_argument("out")
    ap.add_argument("--beams", type=int, default=3)
    ap.add_argument("--judge", default="prefix-smollm2")
    ap.add_argument("--config", default="configs/prefixnli.yaml", help="the generator and the guide's tau, top-p")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ewe = EWE.from_config(args.config)
    rt, guide = ewe.runtime, ewe.runtime.config.method_section
    judge = PrefixJudge.load(args.judge)
    rows = [json.loads(line) for line in open(args.prompts, encoding="utf-8") if line.strip()][:args.limit]
    settings = GuideSettings(tau=guide.tau, lam=guide.lambda_, top_p=guide.top_p, max_candidates=guide.max_candidates,
                             scope="answer")
    for name, guided in ((f"beam{args.beams}", False), (f"beam{args.beams}-prefixnli", True)):
        path = out / f"{name}.jsonl"
        done = {json.loads(line)["id"] for line in open(path, encoding="utf-8")} if path.exists() else set()
        with open(path, "a", encoding="utf-8") as f:
            for r in rows:
                if r["id"] in done:
                    continue
                ids = rt.prepare([r["prompt"]], None, args.max_new_tokens, [r["passages"]], 0)[0]
                x = torch.tensor([ids])
                proc = logits_processor(judge, ["\n".join(r["passages"])] * args.beams, len(ids), settings,
                                        set(rt.stop_ids)) if guided else None
                t0 = time.perf_counter()
                with torch.no_grad():
                    y = rt.model.generate(x, attention_mask=torch.ones_like(x), num_beams=args.beams, do_sample=False,
                                          max_new_tokens=args.max_new_tokens,
                                          logits_processor=LogitsProcessorList([proc] if proc else []),
                                          eos_token_id=list(rt.stop_ids), pad_token_id=rt.tokenizer.pad_token_id or 0)
                text = rt.tokenizer.decode(y[0, len(ids):], skip_special_tokens=True).strip()
                line = {k: r[k] for k in ("id", "prompt", "topic", "dataset", "score_against", "passages") if k in r}
                line.update({"text": text, "seconds": round(time.perf_counter() - t0, 2),
                             "interventions": sum(len(e) for e in proc.events) if proc else 0})
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
                f.flush()
                print(name, r["id"], line["seconds"], line["interventions"], flush=True)


if __name__ == "__main__":
    main()
