"""A worker replays only a recording of its own folder (agentloop/replays/), whatever name the server sends: a path,
`..`, or a symlink that leads out of the folder is refused before anything is opened (issue 34 item 11)."""

import pytest

from agentloop.errors import ConfigError
from agentloop.models.replay import RECORDINGS, recording_path, served_model_spec
from agentloop.worker.client import Worker
from tests.agentloop.test_worker import demo_assignment

DEMO = RECORDINGS / "matmul_cpu_demo.jsonl"


@pytest.mark.parametrize(
    "name",
    [
        "/etc/passwd",
        "../../../../etc/passwd",
        "agentloop/replays/../../../../etc/passwd",
        "agentloop/replays/../replays/matmul_cpu_demo.jsonl",
        str(DEMO),  # the right file, but named by a host path: the server names recordings, not paths
        ".hidden.jsonl",
        "missing.jsonl",
    ],
)
def test_a_name_that_is_no_recording_of_the_folder_is_refused(name):
    with pytest.raises(ConfigError):
        recording_path(name)
    with pytest.raises(ConfigError):
        served_model_spec(f"replay:{name}")


def test_a_shipped_recording_is_found_by_its_name_or_as_the_start_form_writes_it():
    assert recording_path("matmul_cpu_demo.jsonl") == DEMO
    assert served_model_spec("replay:agentloop/replays/matmul_cpu_demo.jsonl") == f"replay:{DEMO}"
    assert served_model_spec("claude-sonnet-4-6") == "claude-sonnet-4-6"  # other models as they are


def test_a_symlink_in_the_folder_is_refused_wherever_it_leads(tmp_path):
    folder = tmp_path / "replays"
    folder.mkdir()
    (folder / "real.jsonl").write_text(DEMO.read_text())
    outside = tmp_path / "secret.jsonl"
    outside.write_text("{}\n")
    (folder / "out.jsonl").symlink_to(outside)
    (folder / "in.jsonl").symlink_to(folder / "real.jsonl")
    assert recording_path("real.jsonl", folder) == folder / "real.jsonl"
    for name in ("out.jsonl", "in.jsonl"):
        with pytest.raises(ConfigError):
            recording_path(name, folder)


def test_the_worker_refuses_an_assignment_whose_replay_names_a_host_path(tmp_path):
    worker = Worker(server="ws://127.0.0.1:1", token="kst_test", gpus=[0], state_dir=tmp_path)
    for model in ("replay:/etc/passwd", f"replay:{DEMO}", "replay:../../../../etc/passwd"):
        with pytest.raises(ConfigError, match="names no recording"):
            worker._assignment({**demo_assignment(), "model": model})
    assert worker._assignment(demo_assignment()).model == "replay:agentloop/replays/matmul_cpu_demo.jsonl"
