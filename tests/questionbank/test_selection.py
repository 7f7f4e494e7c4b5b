"""Choosing a question: eligibility (vetoes, cooldown), the prompt, reading the model's answer, the rule."""

import pytest

from questionbank.bank import BankEntry, load_bank
from questionbank.selection import (
    DECISION_POINTS,
    AskedQuestion,
    Selection,
    build_selection_prompt,
    eligible_entries,
    fallback_selection,
    parse_selection,
    select_question,
)

LAYER = BankEntry("layer-grid", "How is the work spread over the chip?", "layer", ("plateau", "start"))
LIMIT = BankEntry("limit-evidence", "What shows the limit you claimed?", "limit", ("claimed-limit", "plateau"))
PROCESS = BankEntry("process-common", "What did your last attempts share?", "process", ("failure-streak", "plateau"))
INFO = BankEntry("information-unroll", "Have you tried unrolling?", "information", ("plateau",))
RETIRED = BankEntry("layer-old", "An old question?", "layer", ("plateau",), active=False)
BANK = [LAYER, LIMIT, PROCESS, INFO, RETIRED]


def keys(entries):
    return [e.key for e in entries]


# ------------------------------------------------------------------------------------------------ eligibility


def test_only_active_entries_that_suit_the_decision_point_are_eligible():
    assert keys(eligible_entries(BANK, "plateau", [], now_step=0, cooldown_steps=10)) == [
        "layer-grid",
        "limit-evidence",
        "process-common",
        "information-unroll",
    ]
    assert keys(eligible_entries(BANK, "claimed-limit", [], now_step=0, cooldown_steps=10)) == ["limit-evidence"]


def test_a_question_vetoed_at_a_decision_point_is_never_proposed_there_again_in_the_run():
    history = [AskedQuestion("layer-grid", "plateau", step=3, vetoed=True)]
    # Long after the veto, with no cooldown at all, it stays out at the same decision point...
    assert "layer-grid" not in keys(eligible_entries(BANK, "plateau", history, now_step=500, cooldown_steps=0))
    # ...but a veto at one decision point says nothing about another, and starts no cooldown.
    assert "layer-grid" in keys(eligible_entries(BANK, "start", history, now_step=4, cooldown_steps=10))


def test_a_question_made_for_another_kind_of_target_is_never_eligible():
    warps = BankEntry("layer-warps", "What does each warp own?", "layer", ("plateau",), targets=("gpu",))
    bank = [*BANK, warps]
    assert "layer-warps" not in keys(eligible_entries(bank, "plateau", [], now_step=0, task_target="cpu"))
    assert "layer-warps" in keys(eligible_entries(bank, "plateau", [], now_step=0, task_target="cuda-sm90"))
    # The prompt and the rule only ever see the eligible ones: a CPU run's choice never reaches it, even when the
    # model names it.
    pick = select_question(
        "plateau", "s", bank, [], 0, ask_model=lambda p: "QUESTION: layer-warps\nREASON: r", task_target="cpu"
    )
    assert pick is not None and pick.key != "layer-warps" and pick.by == "rule"
    only_warps = [warps]
    assert select_question("plateau", "s", only_warps, [], 0, ask_model=str, task_target="cpu") is None


def test_on_a_cpu_task_no_gpu_only_question_of_the_shipped_bank_is_eligible_at_any_decision_point():
    shipped = load_bank()
    for point in DECISION_POINTS:
        on_cpu = eligible_entries(shipped, point, [], now_step=0, task_target="cpu")
        on_gpu = eligible_entries(shipped, point, [], now_step=0, task_target="cuda-sm90")
        assert on_cpu and all(e.targets != ("gpu",) for e in on_cpu), point
        assert [e for e in on_gpu if e not in on_cpu] == [e for e in shipped if e.suits(point) and e.targets], point


def test_an_asked_question_waits_out_the_cooldown_before_it_is_asked_again():
    history = [AskedQuestion("layer-grid", "start", step=10, vetoed=False)]
    assert "layer-grid" not in keys(eligible_entries(BANK, "plateau", history, now_step=10, cooldown_steps=5))
    assert "layer-grid" not in keys(eligible_entries(BANK, "plateau", history, now_step=14, cooldown_steps=5))
    assert "layer-grid" in keys(eligible_entries(BANK, "plateau", history, now_step=15, cooldown_steps=5))
    # The cooldown follows the question across decision points, and only that question.
    assert "limit-evidence" in keys(eligible_entries(BANK, "plateau", history, now_step=11, cooldown_steps=5))


def test_the_latest_ask_starts_the_cooldown():
    history = [
        AskedQuestion("limit-evidence", "plateau", 0, False),
        AskedQuestion("limit-evidence", "plateau", 40, False),
    ]
    assert "limit-evidence" not in keys(eligible_entries(BANK, "plateau", history, now_step=45, cooldown_steps=30))


def test_an_unknown_decision_point_or_negative_cooldown_is_refused():
    with pytest.raises(ValueError, match="unknown decision point 'lunch'"):
        eligible_entries(BANK, "lunch", [], 0, 5)
    with pytest.raises(ValueError, match="cooldown_steps"):
        eligible_entries(BANK, "plateau", [], 0, -1)


# ------------------------------------------------------------------------------------------------ the prompt


def test_the_prompt_shows_the_situation_every_eligible_question_and_its_figures():
    stats = {"limit-evidence": {"asked": 7, "mean_gain": 1.234, "large_gain_rate": 0.4286}}
    prompt = build_selection_prompt("plateau", "best x1.31; last 4 evaluations no better", [LAYER, LIMIT], stats)
    assert "plateau" in prompt and "best x1.31; last 4 evaluations no better" in prompt
    for e in (LAYER, LIMIT):
        assert e.key in prompt and e.text in prompt and f"[{e.category}]" in prompt
    assert "asked 7 times; mean gain x1.23; large gain after 43%" in prompt
    assert "layer-grid [layer] (not asked in earlier runs)" in prompt
    assert "QUESTION: <the key of the question>" in prompt
    assert INFO.key not in prompt  # only the entries passed in


def test_the_prompt_copes_with_partial_figures():
    prompt = build_selection_prompt("plateau", "", [LIMIT], {"limit-evidence": {"asked": 1, "mean_gain": None}})
    assert "asked 1 time; mean gain unknown; large-gain rate unknown" in prompt
    assert "(no summary)" in prompt


def test_a_prompt_without_questions_is_refused():
    with pytest.raises(ValueError, match="at least one eligible entry"):
        build_selection_prompt("plateau", "summary", [])


# ------------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    "answer",
    [
        "QUESTION: limit-evidence\nREASON: the limit was never measured",
        "question: LIMIT-EVIDENCE\nreason: the limit was never measured",
        "**QUESTION:** `limit-evidence`\n**REASON:** the limit was never measured",
        "I considered layer-grid.\nQUESTION: limit-evidence\nREASON: the limit was never measured",
    ],
)
def test_the_question_line_names_the_pick(answer):
    assert parse_selection(answer, [LAYER, LIMIT]) == Selection(
        "limit-evidence", "the limit was never measured", "model"
    )


def test_an_answer_that_names_one_key_anywhere_counts():
    assert parse_selection("I'd go with limit-evidence here.", [LAYER, LIMIT]) == Selection(
        "limit-evidence", "", "model"
    )


@pytest.mark.parametrize(
    "answer",
    [
        "QUESTION: layer-nonexistent\nREASON: x",  # not in the bank
        "QUESTION: information-unroll\nREASON: x",  # in the bank, but not among the eligible entries
        "Either layer-grid or limit-evidence would do.",  # two keys, no decision
        "QUESTION: limit-evidence-2",  # a longer key is not the key
        "",
    ],
)
def test_an_answer_naming_no_single_eligible_key_gives_none(answer):
    assert parse_selection(answer, [LAYER, LIMIT]) is None


# ------------------------------------------------------------------------------------------------ the rule


def test_the_rule_picks_the_category_that_suits_the_decision_point():
    eligible = [INFO, PROCESS, LIMIT, LAYER]
    assert fallback_selection("plateau", eligible).key == "layer-grid"
    assert fallback_selection("failure-streak", [INFO, PROCESS, LAYER]).key == "process-common"
    assert fallback_selection("claimed-limit", [LIMIT]).by == "rule"


def test_the_rule_picks_information_only_when_nothing_else_is_left():
    assert fallback_selection("plateau", [INFO, LIMIT]).key == "limit-evidence"
    assert fallback_selection("plateau", [INFO]).key == "information-unroll"


def test_the_rule_tries_untested_questions_first_then_the_best_mean_gain():
    a = BankEntry("layer-a", "A?", "layer", ("plateau",))
    b = BankEntry("layer-b", "B?", "layer", ("plateau",))
    c = BankEntry("layer-c", "C?", "layer", ("plateau",))
    well_tested = {
        "layer-a": {"asked": 5, "mean_gain": 1.05},
        "layer-b": {"asked": 9, "mean_gain": 1.30},
        "layer-c": {"asked": 4, "mean_gain": 1.10},
    }
    assert fallback_selection("plateau", [a, b, c], well_tested).key == "layer-b"
    thin = dict(well_tested, **{"layer-c": {"asked": 1, "mean_gain": 1.0}})
    pick = fallback_selection("plateau", [a, b, c], thin)
    assert pick.key == "layer-c" and "tried 1 time(s)" in pick.reason


def test_the_rule_is_deterministic_and_breaks_ties_by_bank_order():
    entries = [e for e in load_bank() if e.suits("regression")]
    picks = {fallback_selection("regression", entries) for _ in range(5)}
    assert len(picks) == 1
    first_process = next(e for e in entries if e.category == "process")
    assert picks.pop().key == first_process.key


def test_the_rule_with_nothing_eligible_is_a_clear_error():
    with pytest.raises(ValueError, match="no eligible question at plateau"):
        fallback_selection("plateau", [])


# ------------------------------------------------------------------------------------------------ together


def test_a_model_that_names_a_vetoed_question_gets_the_rule_instead():
    history = [AskedQuestion("layer-grid", "plateau", step=2, vetoed=True)]
    seen = []

    def model(prompt):
        seen.append(prompt)
        return "QUESTION: layer-grid\nREASON: I like it"

    pick = select_question("plateau", "summary", BANK, history, now_step=3, ask_model=model, cooldown_steps=10)
    assert "layer-grid" not in seen[0]
    assert pick.by == "rule" and pick.key == "limit-evidence"


def test_a_failing_model_call_falls_back_to_the_rule_and_says_so():
    def model(prompt):
        raise TimeoutError("no answer in 60 s")

    pick = select_question("plateau", "summary", BANK, [], now_step=0, ask_model=model)
    assert pick.by == "rule" and pick.key == "layer-grid"
    assert "TimeoutError: no answer in 60 s" in pick.reason


def test_nothing_eligible_gives_no_selection_and_does_not_call_the_model():
    history = [AskedQuestion("limit-evidence", "claimed-limit", 1, True)]
    pick = select_question("claimed-limit", "s", BANK, history, now_step=2, ask_model=lambda p: pytest.fail("called"))
    assert pick is None


def test_the_models_valid_pick_is_kept():
    pick = select_question("plateau", "s", BANK, [], 0, ask_model=lambda p: "QUESTION: process-common\nREASON: r")
    assert pick == Selection("process-common", "r", "model")
