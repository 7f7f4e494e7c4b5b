"""The models a run can use from this site, for the start form: which can run here, and what each needs.

A model is named as the worker's `make_model` reads it (agentloop/models): `replay:agentloop/replays/NAME.jsonl`
plays back a recording shipped in that folder (the worker opens no other: agentloop.models.replay) and needs
nothing; an Anthropic id needs ANTHROPIC_API_KEY; `openai:MODEL` needs OPENAI_BASE_URL (an
OpenAI-compatible server). The keys are read where the agent runs, in the worker's environment. `make run`'s local
worker inherits the server's, so what is set here is what the local worker has; a remote worker host may have
its own, which this page cannot see: a start is judged by what is set here (`model_refusal`), so a site whose
remote workers hold the key sets the variable on the server too.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from agentloop.protocol import DEFAULT_MODEL, VERIFY_MODEL

REPLAY_FOLDER = Path("agentloop") / "replays"
# The demo's recording (runs/demo.py), named here, below the services, so that a selector can tell a demo run
# by its model without importing the module that starts one.
DEMO_TRACE = REPLAY_FOLDER / "matmul_cpu_demo.jsonl"


@dataclass(frozen=True)
class ModelOption:
    spec: str  # what goes into the form's model field
    label: str
    needs: str  # what it needs to run, in words
    ready: bool  # whether it can run on this site's local worker as things are set now
    recording: dict | None = None  # a replay's recorded run config (task, goal, starting kernel)


def recorded_config(path: Path) -> dict | None:
    """The run config in a trace's first event (docs/protocol.md, `status` with `config`); None if it has none."""
    try:
        with path.open() as trace:
            first = json.loads(trace.readline())
    except (OSError, ValueError):
        return None
    config = (first.get("payload") or {}).get("config") if isinstance(first, dict) else None
    return config if isinstance(config, dict) else None


def replay_options() -> list[ModelOption]:
    base = Path(settings.BASE_DIR)
    options = []
    # Only plain files: a worker replays no symlink (agentloop.models.replay.recording_path), so none is offered.
    for path in sorted(p for p in (base / REPLAY_FOLDER).glob("*.jsonl") if p.is_file() and not p.is_symlink()):
        config = recorded_config(path) or {}
        task = config.get("task")
        options.append(
            ModelOption(
                spec=f"replay:{path.relative_to(base)}",
                label=f"{path.stem} (recorded run{f' of {task}' if task else ''})",
                needs="nothing: it plays the recorded model's replies back, with no API key; its commands and "
                "evaluations run for real" + (f". Start it on task {task}" if task else ""),
                ready=True,
                recording=config or None,
            )
        )
    return options


def _anthropic_option(spec: str, environ) -> ModelOption:
    ready = bool(environ.get("ANTHROPIC_API_KEY"))
    return ModelOption(
        spec=spec,
        label=f"{spec} (Anthropic API)",
        needs="ANTHROPIC_API_KEY in the worker's environment"
        + (": set here" if ready else ": not set here, so the local worker cannot run it"),
        ready=ready,
    )


def _openai_option(spec: str, environ) -> ModelOption:
    ready = bool(environ.get("OPENAI_BASE_URL"))
    return ModelOption(
        spec=spec,
        label=f"{spec} (an OpenAI-compatible server: vLLM, llama.cpp, ...)",
        needs="OPENAI_BASE_URL in the worker's environment (and OPENAI_API_KEY if the server wants one)"
        + (
            f": set here ({environ['OPENAI_BASE_URL']})"
            if ready
            else ": not set here, so the local worker cannot run it"
        )
        + ("" if spec != "openai:MODEL" else "; write the model's name as that server knows it"),
        ready=ready,
    )


def api_options(environ=None) -> list[ModelOption]:
    environ = os.environ if environ is None else environ
    chosen = environ.get("KSEEK_MODEL", "")
    options = [
        _anthropic_option(spec, environ)
        for spec in dict.fromkeys(m for m in (chosen, DEFAULT_MODEL) if m and not m.startswith(("openai:", "replay:")))
    ]
    options.append(_openai_option(chosen if chosen.startswith("openai:") else "openai:MODEL", environ))
    return options


def model_options(environ=None) -> list[ModelOption]:
    """Every model the form offers: the replays found here first, then the API models; `ready` says which run."""
    return replay_options() + api_options(environ)


def model_refusal(spec: str, options: list[ModelOption], environ=None) -> str | None:
    """Why a run of `spec` cannot run here, in the words of the "Models that can run here" list (`options`,
    `model_options`'s); None when it can. Every way a run starts asks this first (the start and study forms,
    `study_start`, `run_fork`), so that such a run is refused with its reason rather than queued to fail; the
    worker refuses a replay that names no recording of its own folder anyway (agentloop.models.replay)."""
    environ = os.environ if environ is None else environ
    if spec == VERIFY_MODEL:
        return (
            f"{VERIFY_MODEL} is the model of a kernel page's Verify here (one full evaluation of a stored kernel, "
            "no agent): start it from that page"
        )
    if spec.startswith("replay:"):
        if any(option.spec == spec for option in options):
            return None
        held = ", ".join(option.spec for option in options if option.spec.startswith("replay:")) or "none"
        return f"{spec:.160} names no recording this site holds: a replay model is one of those listed ({held})"
    if spec.startswith("openai:") and spec != "openai:MODEL" and len(spec) > len("openai:"):
        option = _openai_option(spec, environ)
    elif spec.startswith("openai:"):
        return "openai:MODEL needs the model's name as the OpenAI-compatible server knows it, e.g. openai:qwen3-coder"
    else:
        option = _anthropic_option(spec, environ)
    return None if option.ready else f"{spec:.160} cannot run here: it needs {option.needs}"


def default_model(options: list[ModelOption]) -> str:
    """The first configured API model, else the first replay: a first run that works."""
    ready = [option for option in options if option.ready]
    api = [option for option in ready if option.recording is None and option.spec != "openai:MODEL"]
    return (api or ready or options)[0].spec if options else DEFAULT_MODEL


def recording_of(spec: str, options: list[ModelOption]) -> dict | None:
    return next((option.recording for option in options if option.spec == spec), None)


def recorded_start(recording: dict | None) -> dict:
    """What a run of a recording starts from: the starting kernel and goal it was recorded with, as `run_start`
    takes them (None and blanks for a model that is no recording: the run takes its task's). One place for a
    single run, a study's runs and the demo alike, so that a replay is judged against the goal it was recorded
    with wherever it is started."""
    recording = recording or {}
    goal = recording.get("goal") if isinstance(recording.get("goal"), dict) else {}
    return {
        "starting_kernel": recording.get("starting_kernel"),
        "goal_baseline": goal.get("baseline") or "",
        "goal_speedup": goal.get("speedup") or None,
    }
