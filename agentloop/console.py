"""One line per event on the terminal, for `python -m agentloop run`."""

from __future__ import annotations

import sys
from typing import TextIO


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def describe(event: dict) -> str:
    p, kind = event["payload"], event["kind"]
    if kind == "model_message":
        texts = [b.get("text", "") for b in p.get("content", []) if b.get("type") == "text"]
        return f"{p.get('purpose')}: {_short(' '.join(texts)) or '(no text)'}"
    if kind == "tool_call":
        return f"{p['name']} {_short(p.get('input'), 140)}"
    if kind == "tool_result":
        return f"{p['name']} -> {'ERROR ' if p.get('is_error') else ''}{_short(p.get('output', ''), 140)}"
    if kind == "evaluation":
        speed = p.get("speedup")
        return (
            f"{p['purpose']} ({p['scenario_set']}): {p['result'].get('status')}, "
            f"{'n/a' if speed is None else format(speed, '.3g') + 'x'} over {p['goal']['baseline']}"
            f"{' GOAL MET' if p.get('goal_met') else ''}"
        )
    if kind == "decision_point":
        return f"{p['name']}: {p.get('detail', '')}"
    if kind == "question_proposed":
        return f"[{p['bank_key']}] {p['text']} (by {p['by']}: {_short(p.get('reason', ''), 80)})"
    if kind == "question_decided":
        return f"{p['action']} by {p.get('by')}: {_short(p.get('text') or '', 120)}"
    if kind == "usage":
        cost = p.get("cost_usd")
        return f"{p['tokens_in']} in / {p['tokens_out']} out, {'cost unknown' if cost is None else f'${cost:.4f}'}"
    if kind == "status":
        return f"{p['status']} ({p.get('reason')}){': ' + p['detail'] if p.get('detail') else ''}"
    return _short(p.get("text", p), 200)


class ConsoleSink:
    def __init__(self, out: TextIO = sys.stderr, skip: tuple[str, ...] = ("usage",)):
        self.out = out
        self.skip = skip

    def write(self, event: dict) -> None:
        if event["kind"] in self.skip:
            return
        self.out.write(f"#{event['seq']:<4} {event['kind']:<18} {describe(event)}\n")
        self.out.flush()
