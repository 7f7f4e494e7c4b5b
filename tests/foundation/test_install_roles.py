"""Installs by role (README, "Installing by role"): a dashboard host installs the base (no torch), a GPU host the
gpu extra, development the dev extra. Read from pyproject.toml; no environment is built here (too slow), but the
wheel and the sdist are, to list what `pip install .` ships."""

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
GPU_STACK = ("torch", "cupy", "nvidia-", "triton", "jax")


def names(requirements: list[str]) -> list[str]:
    return [re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in requirements]


def test_the_dashboard_hosts_base_install_lists_no_gpu_package():
    base = names(PROJECT["dependencies"])
    assert "django" in base and "daphne" in base
    assert not [name for name in base if name.startswith(GPU_STACK)], base


def test_the_gpu_extra_lists_torch_and_only_what_the_code_imports():
    gpu = names(PROJECT["optional-dependencies"]["gpu"])
    assert gpu == ["torch"]
    sources = [
        p.read_text(errors="replace") for folder in ("gpu_harness", "kernels") for p in (ROOT / folder).rglob("*.py")
    ]
    for module in gpu:
        assert any(re.search(rf"^\s*(import|from) {module}\b", text, re.M) for text in sources), module


def test_the_dev_extra_pins_the_cpu_torch_and_the_test_tools():
    dev = PROJECT["optional-dependencies"]["dev"]
    assert "torch==2.13.0" in dev
    assert {"pytest", "pytest-django", "playwright", "ruff"} <= set(names(dev))


def test_the_dashboard_starts_and_serves_its_modules_without_torch(tmp_path):
    # A dashboard host has no torch: settings, URLs, views, consumers and the system checks load without it.
    probe = (
        "import sys\n"
        "for name in ('torch', 'cupy'): sys.modules[name] = None  # `import torch` now raises ImportError\n"
        "import django\ndjango.setup()\n"
        "from django.core.management import call_command\ncall_command('check')\n"
        "import kseek_site.asgi, kseek_site.urls, runs.run_pages.views, runs.consumers, runs.routing\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "kseek_site.settings",
            "KSEEK_DATA_DIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def _checkout_copy(dest: Path) -> Path:
    # The files a fresh clone would have (tracked, and new ones not ignored), without the venv or build outputs.
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _built_files(tmp_path: Path) -> dict[str, set[str]]:
    """The file names inside the wheel and the sdist that setuptools (the build backend) makes of this checkout."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to copy")
    pytest.importorskip("setuptools", reason="the build backend (pyproject.toml [build-system])")
    tree, out = _checkout_copy(tmp_path / "tree"), tmp_path / "dist"
    # (setuptools rewrites sys.argv while it builds: the folder is read from it once)
    build = "from setuptools import build_meta as b; import sys; d = sys.argv[1]; b.build_sdist(d); b.build_wheel(d)"
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)], cwd=tree, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel], [sdist] = out.glob("*.whl"), out.glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        wheel_files = {name for name in archive.namelist() if ".dist-info/" not in name}
    with tarfile.open(sdist) as archive:  # drop the sdist's top folder, kernelseek-<version>/
        sdist_files = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile() and "/" in m.name}
    return {"wheel": wheel_files, "sdist": sdist_files}


def test_pip_ships_the_released_kernels_folder_and_nothing_of_the_lab(tmp_path):
    # The product is the released kernel (its source, release.toml, README and the results it cites): kernels.load
    # builds the source and `load_released_kernels` reads the rest from the installed package. The lab (versions,
    # bench and device scripts, their results and trace) stays in the repository.
    releases = sorted((ROOT / "kernels").glob("*/release.toml"))
    assert releases
    for kind, files in _built_files(tmp_path).items():
        assert not [name for name in files if name.startswith("lab/") or "/versions/" in name], kind
        for release in releases:
            manifest = tomllib.loads(release.read_text())
            folder = release.parent.relative_to(ROOT).as_posix()
            wanted = {f"{folder}/release.toml", f"{folder}/{manifest['source']}", f"{folder}/{manifest['results']}"}
            assert wanted <= files, (kind, sorted(wanted - files))
