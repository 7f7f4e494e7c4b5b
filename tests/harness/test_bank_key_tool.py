"""lab/tools/bank_key.py: the device scripts refuse a question key the bank does not have before a call writes it
into every evaluation's note (the dashboard shows the bank question of each key a note names, and nothing for a
key it lacks: session 50's v13 round went out as "layer-compute-instruction-mix", a key no bank has). And the
commands the lab's READMEs and scripts give name only the bank's keys."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from questionbank.bank import load_bank

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "lab" / "tools" / "bank_key.py"


def _tool():
    spec = importlib.util.spec_from_file_location("bank_key", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bank_keys():
    return [entry.key for entry in load_bank()]


def test_a_key_of_the_bank_passes_and_a_typo_is_named_with_the_closest_keys():
    tool = _tool()
    keys = _bank_keys()
    assert tool.unknown_keys(["layer-instruction-stream", "hypothesis-cheapest-test"], keys) == []
    [line] = tool.unknown_keys(["layer-memory-byte-jorney"], keys)
    assert "'layer-memory-byte-jorney' is not a key" in line and "layer-memory-byte-journey" in line


def test_a_note_names_its_questions_after_the_word_question():
    tool = _tool()
    assert tool.keys_in_note("v34; question layer-memory-byte-journey") == ["layer-memory-byte-journey"]
    assert tool.keys_in_note("round: full set; question a-b; question a-b; question c") == ["a-b", "c"]
    assert tool.keys_in_note("question / prediction") == []  # the usage's placeholder names none


def test_the_script_exits_2_on_a_key_the_bank_lacks_and_0_on_its_own():
    def run(*args):
        return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, cwd=REPO)

    good = run("layer-kernel-boundary", "--note", "v16; question hypothesis-cheapest-test")
    assert good.returncode == 0, good.stderr
    bad = run("--note", "v13; question layer-compute-instruction-mix")
    assert bad.returncode == 2 and "layer-compute-instruction-mix" in bad.stderr


def test_the_device_scripts_check_their_question_before_any_work():
    for script in ("gemm_bias_gelu/device_run.sh", "rmsnorm/device_run.sh", "softmax_rows/device_run.sh"):
        assert 'bank_key.py" "$QUESTION" || exit 2' in (REPO / "lab" / script).read_text(), script
    for script in ("attention_fwd_sm90/device_compare.sh", "attention_fwd_sm90/device_eval.sh"):
        assert 'bank_key.py" --note "$NOTE" || exit 2' in (REPO / "lab" / script).read_text(), script


def test_every_question_the_lab_docs_pass_to_a_device_call_is_a_bank_key():
    keys = set(_bank_keys())
    tool = _tool()
    named = []
    for path in sorted((REPO / "lab").rglob("*")):
        if path.suffix not in (".md", ".sh"):
            continue
        text = path.read_text(encoding="utf-8")
        named += [(path, key) for key in re.findall(r"QUESTION=([A-Za-z0-9_-]+)", text) if key != "KEY"]
        for note in re.findall(r'NOTE="([^"]*)"', text):
            named += [(path, key) for key in tool.keys_in_note(note)]
    assert named, "the lab's commands name questions"
    assert [(str(path.relative_to(REPO)), key) for path, key in named if key not in keys] == []
