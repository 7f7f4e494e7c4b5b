"""Scratch folders a killed judge left behind are swept by a later one (gpu_harness/scratch.py); a live judge's
never are."""

import os
import subprocess
import sys
import tempfile
import time

import pytest

from gpu_harness import scratch
from gpu_harness.runner import ChildSession

LATER = 10 * scratch.UNOWNED_AFTER_S  # a sweep's clock far past every grace period


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _made_by_a_killed_judge(temp_dir) -> str:
    """A scratch folder whose owning process was killed outright (no cleanup ran)."""
    code = (
        "import os, signal, tempfile, sys\n"
        f"tempfile.tempdir = {str(temp_dir)!r}\n"
        "from gpu_harness.scratch import ScratchFolder\n"
        "f = ScratchFolder.create()\n"
        "open(os.path.join(f.path, 'child.log'), 'w').write('left behind')\n"
        "print(f.path, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == -9, done.stderr
    return done.stdout.strip()


def test_a_killed_judges_folder_is_swept_with_its_lock(temp_dir):
    path = _made_by_a_killed_judge(temp_dir)
    assert os.path.isdir(path) and os.path.exists(path + scratch.LOCK_SUFFIX)
    assert scratch.sweep(str(temp_dir), now=time.time() + LATER) == 1
    assert not os.path.exists(path) and not os.path.exists(path + scratch.LOCK_SUFFIX)


def test_a_live_judges_folder_is_never_swept(temp_dir):
    mine = scratch.ScratchFolder.create()
    try:
        assert scratch.sweep(str(temp_dir), now=time.time() + LATER) == 0
        assert os.path.isdir(mine.path)
    finally:
        mine.remove()
    assert not os.path.exists(mine.path) and not os.path.exists(mine.path + scratch.LOCK_SUFFIX)


def test_a_folder_whose_lock_is_free_waits_out_the_moment_before_its_judge_takes_it(temp_dir):
    path = temp_dir / (scratch.PREFIX + "justmade")
    path.mkdir()
    (temp_dir / (path.name + scratch.LOCK_SUFFIX)).touch()
    now = time.time()
    assert scratch.sweep(str(temp_dir), now=now) == 0 and path.is_dir()
    assert scratch.sweep(str(temp_dir), now=now + scratch.UNLOCKED_AFTER_S + 5) == 1 and not path.exists()


def test_a_folder_without_a_lock_file_is_swept_only_when_old(temp_dir):
    path = temp_dir / (scratch.PREFIX + "beforelocks")
    path.mkdir()
    now = time.time()
    assert scratch.sweep(str(temp_dir), now=now + scratch.UNLOCKED_AFTER_S + 5) == 0 and path.is_dir()
    assert scratch.sweep(str(temp_dir), now=now + LATER) == 1 and not path.exists()


def test_a_link_named_like_a_scratch_folder_is_not_followed(temp_dir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "precious").write_text("keep")
    os.symlink(elsewhere, temp_dir / (scratch.PREFIX + "link"))
    assert scratch.sweep(str(temp_dir), now=time.time() + LATER) == 0
    assert (elsewhere / "precious").read_text() == "keep"


def test_a_child_sessions_folder_is_owned_while_open_and_gone_with_its_lock_once_closed(temp_dir):
    session = ChildSession("matmul_cpu")
    try:
        assert os.path.dirname(session.workdir) == str(temp_dir)
        assert scratch.sweep(str(temp_dir), now=time.time() + LATER) == 0 and os.path.isdir(session.workdir)
    finally:
        session.close()
    assert not os.path.exists(session.workdir) and not os.path.exists(session.workdir + scratch.LOCK_SUFFIX)
