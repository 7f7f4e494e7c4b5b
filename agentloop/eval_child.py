"""The harness process started by HarnessEvaluator: evaluate one file, write the verdict as JSON.

usage: python -m agentloop.eval_child TASK KERNEL SCENARIOS_JSON OUT_JSON TIMEOUT_S
A bad task or scenario list (a caller error) exits 2 with the message on stderr.
"""
import json
import sys


def main(argv: list[str]) -> int:
    task, kernel, scenarios, out, timeout_s = argv
    from gpu_harness import evaluate

    try:
        result = evaluate(task, kernel, scenarios=json.loads(scenarios), timeout_s=float(timeout_s),
                          progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result.to_dict(), f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
