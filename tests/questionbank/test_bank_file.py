"""The bank file: the shipped bank's content, and how a bad file is refused."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness.taskspec import TARGETS
from questionbank.bank import (
    CATEGORIES,
    DECISION_POINTS,
    TARGET_KINDS,
    BankError,
    keys_named_in,
    load_bank,
    parse_bank,
    target_kind,
)
from questionbank.models import DecisionPoint, QuestionCategory

REPO = Path(__file__).resolve().parents[2]

GOOD_ENTRY = """
[[question]]
key = "{key}"
category = "{category}"
triggers = {triggers}
text = "{text}"
"""


def entry(key="layer-one", category="layer", triggers='["plateau"]', text="Where does the time go?"):
    return GOOD_ENTRY.format(key=key, category=category, triggers=triggers, text=text)


def test_vocabulary_is_the_same_as_the_models():
    assert DECISION_POINTS == tuple(DecisionPoint.values)
    assert CATEGORIES == tuple(QuestionCategory.values)


def test_selection_exports_the_same_decision_points():
    from questionbank import selection

    assert selection.DECISION_POINTS == DECISION_POINTS


def test_the_shipped_bank_has_at_least_forty_questions_in_every_category():
    entries = load_bank()
    assert len(entries) >= 40
    assert {e.category for e in entries} == set(CATEGORIES)
    # Information questions are kept only for comparison: a small minority.
    assert sum(e.category == "information" for e in entries) <= len(entries) // 5


def test_every_decision_point_has_several_directing_questions():
    entries = load_bank()
    for point in DECISION_POINTS:
        directing = [e for e in entries if e.suits(point) and e.category != "information"]
        assert len(directing) >= 4, point


def test_shipped_questions_are_short_open_questions():
    for e in load_bank():
        assert e.text.endswith("?"), e.key
        assert len(e.text) <= 160, e.key
        assert e.key.startswith(e.category), f"{e.key}: keys start with their category to keep the file readable"


def test_shipped_questions_name_no_particular_operator():
    operator_words = re.compile(
        r"\b(matmul|gemm|attention|softmax|convolution|conv|reduction|scan|transpose|fft)\b", re.I
    )
    for e in load_bank():
        assert not operator_words.search(e.text), e.key


def test_entries_keep_file_order_and_fold_whitespace():
    entries = parse_bank(entry("layer-b") + entry("layer-a", text="Where   does\\n the time go?"))
    assert [e.key for e in entries] == ["layer-b", "layer-a"]
    assert entries[1].text == "Where does the time go?"
    assert entries[0].triggers == ("plateau",) and entries[0].active is True


def test_an_entry_can_be_retired_in_the_file():
    text = entry() + "active = false\n"
    assert parse_bank(text)[0].active is False


@pytest.mark.parametrize(
    "bad, message",
    [
        (entry() + entry(text="Another?"), "entry 2 (layer-one): duplicate key 'layer-one' (first used by entry 1)"),
        (entry(category="trivia"), "entry 1 (layer-one): unknown category 'trivia'"),
        (entry(triggers='["plateau", "lunch"]'), "entry 1 (layer-one): unknown trigger(s) 'lunch'"),
        (entry(triggers="[]"), "entry 1 (layer-one): triggers must be a non-empty list"),
        (entry(text="   "), "entry 1 (layer-one): text is empty"),
        (entry(text="x" * 241), "entry 1 (layer-one): text is 241 characters"),
        (entry(key="Layer One"), "entry 1 (Layer One): key 'Layer One' must be lower-case words"),
        (entry(key="reviewer-mine"), "keys starting with 'reviewer-' are kept for questions added from the dashboard"),
        (entry() + 'trigger = ["start"]\n', "entry 1 (layer-one): unknown field(s) trigger"),
        (entry() + "active = 1\n", "entry 1 (layer-one): active must be true or false"),
        (entry() + 'targets = ["tpu"]\n', "entry 1 (layer-one): unknown target(s) 'tpu' (known: cpu, gpu)"),
        (entry() + 'targets = ["cuda-sm90"]\n', "entry 1 (layer-one): unknown target(s) 'cuda-sm90'"),
        (entry() + 'targets = "gpu"\n', "entry 1 (layer-one): targets must be a non-empty list of 'cpu', 'gpu'"),
        (entry() + "targets = []\n", "entry 1 (layer-one): targets must be a non-empty list"),
        (entry() + 'targets = ["gpu", "gpu"]\n', "entry 1 (layer-one): a target is listed twice"),
        ("[[question]]\ncategory = 'layer'\ntriggers = ['start']\ntext = 'Why?'\n", "entry 1: needs a key"),
        ("[[question]\nkey=", "not valid TOML"),
        ('[questions]\nkey = "x"\n', "unknown top-level table(s): questions"),
    ],
)
def test_a_bad_entry_is_refused_with_a_message_naming_it(bad, message):
    with pytest.raises(BankError) as caught:
        parse_bank(bad, source="bank.toml")
    assert message in str(caught.value)
    assert "bank.toml" in str(caught.value)


def test_an_entry_names_the_targets_it_is_for_and_is_for_every_target_without_them():
    entries = parse_bank(
        entry("layer-a")
        + entry("layer-b")
        + 'targets = ["gpu"]\n'
        + entry("layer-c")
        + 'targets = ["gpu", "cpu"]\n'  # both: the same as leaving it out
    )
    assert [e.targets for e in entries] == [(), ("gpu",), ()]
    gpu_only = entries[1]
    assert gpu_only.applies_to("cuda-sm90") and not gpu_only.applies_to("cpu")
    assert gpu_only.applies_to(None) and gpu_only.applies_to("")  # a target not known keeps every question
    assert entries[0].applies_to("cpu") and entries[0].applies_to("cuda-sm90")


def test_every_harness_target_has_a_kind_of_the_bank():
    # A new target of the harness (another CUDA architecture) must fall under "gpu" or "cpu", or the bank would
    # offer it every question, GPU-only ones on a CPU or none's filter on a GPU.
    for name, target in TARGETS.items():
        assert target_kind(name) == ("gpu" if target.needs_gpu else "cpu"), name
    assert set(TARGET_KINDS) == {"cpu", "gpu"}


def test_the_shipped_bank_keeps_its_gpu_questions_from_cpu_tasks():
    entries = load_bank()
    gpu_only = {e.key for e in entries if e.targets == ("gpu",)}
    assert {
        "layer-tiling-ownership",
        "layer-tiling-working-set",
        "layer-grid-idle-multiprocessors",
        "layer-grid-last-wave",
        "layer-grid-top-down",
        "information-shared-memory",
        "information-block-size",
    } <= gpu_only
    assert all(e.targets in ((), ("gpu",)) for e in entries)
    # Every decision point still has directing questions on a CPU task.
    for point in DECISION_POINTS:
        directing = [e for e in entries if e.suits(point) and e.applies_to("cpu") and e.category != "information"]
        assert len(directing) >= 3, point
    # The words of a GPU's blocks, warps and shared memory appear in no question a CPU task is offered ("global
    # memory" does, in layer-memory-byte-journey: on a CPU it reads as main memory, and the question stands).
    gpu_words = re.compile(r"\b(blocks?|warps?|grid|multiprocessors?|shared memory|threads?)\b", re.I)
    for e in entries:
        if e.applies_to("cpu"):
            assert not gpu_words.search(e.text), e.key


def test_every_problem_of_a_file_is_reported_at_once():
    with pytest.raises(BankError) as caught:
        parse_bank(entry(key="layer-a", category="trivia") + entry(key="layer-b", text=""))
    assert len(caught.value.problems) == 2
    assert "layer-a" in caught.value.problems[0] and "layer-b" in caught.value.problems[1]


def test_a_missing_bank_file_is_a_clear_error(tmp_path):
    with pytest.raises(BankError, match="cannot read the bank file"):
        load_bank(tmp_path / "nope.toml")


def test_the_pure_modules_import_no_django():
    code = (
        "import sys; import questionbank.bank, questionbank.selection, questionbank.effectiveness; "
        "loaded = [m for m in sys.modules if m == 'django' or m.startswith('django.')]; "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_keys_named_in_free_text_are_hyphenated_words_standing_alone():
    note = (
        "v19 released. Question that moved it: why is the baseline as fast? (limit-baseline-reasons); "
        "then layer-grid-idle-multiprocessors and limit-baseline-reasons again, flash-attn-4 beside "
        "KSEEK_LAZY-RESCALE, x_layer-memory-reuse, layer-memory-reuse- and Layer-Memory-Reuse; memory alone"
    )
    # Each once, in order; not inside a longer word, not upper case, not a one-word key (the word "memory").
    assert keys_named_in(note) == ["limit-baseline-reasons", "layer-grid-idle-multiprocessors", "flash-attn-4"]
    assert keys_named_in("a-" + "b" * 80) == [] and keys_named_in("") == []
    every_key = [entry.key for entry in load_bank()]
    assert keys_named_in(" / ".join(every_key)) == every_key  # the bank's own keys are all found
