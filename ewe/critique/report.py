"""The critiques as one HTML page: each text with its rejected and unsubstantiated claims marked
where they stand, then each claim's verdict, reason, references and its verification tree as
nested, collapsible <details>. Autoescaped: a text can never become markup."""
from __future__ import annotations

from pathlib import Path

from ..files import atomic_write

# worst first: a character inside a rejected claim and an accepted one shows as rejected
_RANK = {"reject": 3, "unsubstantiated": 2, "accept": 1}

TEMPLATE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; line-height: 1.45; }
.reject { background: #fbd3d0; } .unsubstantiated { background: #fcefc2; } .accept { background: #dff2dd; }
.muted { color: #666; } .tree { margin-left: 1.2em; border-left: 2px solid #ddd; padding-left: .6em; }
.claim { margin: .5em 0; } code { font-size: 90%; }
</style></head><body>
<h1>{{ title }}</h1>
<p class="muted">{{ texts|length }} texts · {{ totals.claims }} claims: {{ totals.reject }} rejected,
{{ totals.unsubstantiated }} unsubstantiated, {{ totals.accept }} accepted · checker {{ checkers|join(", ") }}</p>
{% macro node(n) %}<details class="tree"><summary><span class="{{ n.state }}">[{{ n.state }}]</span> {{ n.claim }}</summary>
<div class="muted">{{ n.reason }}</div>
{% for r in n.references %}<div class="muted">&larr; {{ r.title }} [{{ r.start }}:{{ r.end }}] {{ r.text|truncate(200) }}</div>{% endfor %}
{% for c in n.children %}{{ node(c) }}{% endfor %}</details>{% endmacro %}
{% for t in texts %}<details><summary><b>{{ t.id }}</b> · {{ t.claims|length }} claims · {{ t.n_reject }} rejected ·
{{ t.n_unsubstantiated }} unsubstantiated · evidence {{ t.evidence }} · {{ t.seconds }} s</summary>
<p>{% for seg in t.segments %}{% if seg.verdict %}<span class="{{ seg.verdict }}">{{ seg.text }}</span>{% else %}{{ seg.text }}{% endif %}{% endfor %}</p>
{% for c in t.claims %}<div class="claim"><span class="{{ c.verdict }}">[{{ c.verdict }}]</span> {{ c.claim }}
<div class="muted">{{ c.reason }}</div>
{% for r in c.references %}<div class="muted">&larr; {{ r.title }} ({{ r.source_id }} [{{ r.start }}:{{ r.end }}]): {{ r.quote|truncate(240) }}</div>{% endfor %}
{% if c.tree %}{{ node(c.tree) }}{% endif %}</div>
{% endfor %}</details>
{% endfor %}
</body></html>
"""


def segments(text: str, claims: list[dict]) -> list[dict]:
    """The text cut where a claim's span starts or ends, each piece with the worst verdict over it
    (None: no claim covers it)."""
    worst = [0] * len(text)
    for c in claims:
        rank = _RANK.get(c["verdict"], 0)
        for i in range(max(0, c["start"]), min(len(text), c["end"])):
            worst[i] = max(worst[i], rank)
    names = {v: k for k, v in _RANK.items()}
    out: list[dict] = []
    for i, ch in enumerate(text):
        v = names.get(worst[i])
        if out and out[-1]["verdict"] == v:
            out[-1]["text"] += ch
        else:
            out.append({"text": ch, "verdict": v})
    return out


def write_report(texts: list[dict], critiques: list[dict], out_dir: Path, title: str = "ewe critique") -> Path:
    """`out_dir/index.html` for the texts that have a critique (by id), in the input's order."""
    from jinja2 import Environment

    by_id = {str(c["id"]): c for c in critiques}
    views, totals = [], {"claims": 0, "reject": 0, "unsubstantiated": 0, "accept": 0}
    for t in texts:
        c = by_id.get(str(t["id"]))
        if c is None:
            continue
        claims = c["claims"]
        for cl in claims:
            totals["claims"] += 1
            totals[cl["verdict"]] = totals.get(cl["verdict"], 0) + 1
        views.append({"id": t["id"], "claims": claims, "segments": segments(t["text"], claims),
                      "n_reject": sum(cl["verdict"] == "reject" for cl in claims),
                      "n_unsubstantiated": sum(cl["verdict"] == "unsubstantiated" for cl in claims),
                      "evidence": c.get("evidence", "?"), "seconds": c.get("cost", {}).get("seconds", "?")})
    checkers = sorted({str(c.get("checker", "?")) for c in critiques})
    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    html = env.from_string(TEMPLATE).render(title=title, texts=views, totals=totals, checkers=checkers)
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write(out_dir / "index.html", html)
