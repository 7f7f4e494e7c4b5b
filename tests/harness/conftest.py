import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

HAS_GXX = shutil.which("g++") is not None and shutil.which("nm") is not None
HAS_NVCC = shutil.which("nvcc") is not None

needs_gxx = pytest.mark.skipif(not HAS_GXX, reason="needs g++ and binutils")
needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc (the CUDA toolkit)")


@pytest.fixture(scope="session", autouse=True)
def build_cache():
    """Builds go to a test cache of their own, never the user's. It persists between runs because nvcc takes
    ~10 s a kernel here; a cached build still goes through every dependency check."""
    path = os.path.join(tempfile.gettempdir(), "kseek-test-cache")
    old = os.environ.get("KSEEK_CACHE_DIR")
    os.environ["KSEEK_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("KSEEK_CACHE_DIR", None)
    else:
        os.environ["KSEEK_CACHE_DIR"] = old


def edit_task_folder(folder, *edits, reference=None):
    """A task folder's task.toml with each (old, new) replaced once (each old must be there), and its
    reference.py replaced when `reference` is given; returns the folder."""
    path = folder / "task.toml"
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    if reference is not None:
        (folder / "reference.py").write_text(reference)
    return folder


KERNEL_TOOLS = Path(__file__).resolve().parents[2] / "lab" / "attention_fwd_sm90" / "tools"


def load_kernel_tool(name: str, lab: str = "attention_fwd_sm90"):
    """A script of lab/<lab>/tools/ as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, KERNEL_TOOLS.parents[1] / lab / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
