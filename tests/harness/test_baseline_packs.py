"""lab/tools/unpack_baselines.sh, sourced on the GPU machine after the last of pack_baselines.sh's parts arrived:
it unpacks only a complete pack whose parts are the packed ones (without a pack, baseline-wheels.sh's wheel parts
are installed instead), and says which is wrong otherwise (a part lost
with a machine handed back between calls would otherwise unpack a truncated archive, and the evaluation would
run with a library missing and report it n/a)."""

import hashlib
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNPACK = REPO / "lab" / "tools" / "unpack_baselines.sh"


def _pack(tmp_path: Path, parts: int = 2) -> Path:
    """A tiny pack as pack_baselines.sh lays it out: part.NN files of one xz tar, and a MANIFEST."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        payload = b"VERSION = '0.6.5'\n" * 4000
        info = tarfile.TarInfo("./quack/__init__.py")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    archive = lzma.compress(raw.getvalue())
    size = len(archive) // parts + 1
    pack = tmp_path / "bl"
    pack.mkdir()
    lines = [f"parts {parts}"]
    for i in range(parts):
        chunk = archive[i * size : (i + 1) * size]
        (pack / f"part.{i:02d}").write_bytes(chunk)
        lines.append(f"{hashlib.sha256(chunk).hexdigest()}  part.{i:02d}")
    (pack / "MANIFEST").write_text("\n".join(lines) + "\n")
    return pack


def _source(pack: Path, site: Path, wheels: Path | None = None) -> subprocess.CompletedProcess:
    script = f'source "{UNPACK}" && echo "PYTHONPATH=$PYTHONPATH"'
    env = {
        # python3 -m pip as the GPU machine has it: this interpreter's (pip is in the test environment)
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "BL_DIR": str(pack),
        "BL_SITE": str(site),
        # without wheels: no wheel parts to fall back to, whatever this machine's /tmp/bw holds
        "BW_DIR": str(wheels or pack / "no-wheels"),
    }
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)


def test_a_complete_pack_unpacks_once_onto_the_path(tmp_path):
    pack, site = _pack(tmp_path), tmp_path / "site"
    done = _source(pack, site)
    assert done.returncode == 0, done.stderr
    assert (site / "quack" / "__init__.py").read_text().startswith("VERSION = '0.6.5'")
    assert f"PYTHONPATH={site}:{site}/nvidia_cutlass_dsl/dsl_packages" in done.stdout
    (site / "quack" / "__init__.py").write_text("kept")  # a second source does not unpack again
    assert _source(pack, site).returncode == 0 and (site / "quack" / "__init__.py").read_text() == "kept"


def test_a_missing_part_is_named_and_nothing_unpacks(tmp_path):
    pack, site = _pack(tmp_path, parts=3), tmp_path / "site"
    (pack / "part.01").unlink()
    done = _source(pack, site)
    assert done.returncode != 0 and "2 of 3 parts" in done.stderr
    assert not site.exists() and "PYTHONPATH=" not in done.stdout


def test_an_altered_part_is_refused(tmp_path):
    pack, site = _pack(tmp_path), tmp_path / "site"
    part = pack / "part.01"
    part.write_bytes(part.read_bytes()[:-1] + b"\0")
    done = _source(pack, site)
    assert done.returncode != 0 and "not the packed one" in done.stderr
    assert not site.exists()


def test_no_manifest_says_which_part_comes_first(tmp_path):
    pack = _pack(tmp_path)
    (pack / "MANIFEST").unlink()
    done = _source(pack, tmp_path / "site")
    assert done.returncode != 0 and "copy .bl1 first" in done.stderr


def _wheel_parts(tmp_path: Path) -> Path:
    """../shared/tools/baseline-wheels.sh's layout: one tar of the wheels, split into part.NN files."""
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.writestr("quack_stub/__init__.py", "VERSION = '0.6.5'\n")
        whl.writestr("quack_stub-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: quack-stub\nVersion: 0.1\n")
        whl.writestr(
            "quack_stub-0.1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        whl.writestr("quack_stub-0.1.dist-info/RECORD", "")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("quack_stub-0.1-py3-none-any.whl")
        info.size = len(wheel.getvalue())
        tar.addfile(info, io.BytesIO(wheel.getvalue()))
    wheels = tmp_path / "bw"
    wheels.mkdir()
    half = len(raw.getvalue()) // 2
    (wheels / "part.00").write_bytes(raw.getvalue()[:half])
    (wheels / "part.01").write_bytes(raw.getvalue()[half:])
    return wheels


def test_without_a_pack_the_wheel_parts_install_onto_the_path(tmp_path):
    wheels, site = _wheel_parts(tmp_path), tmp_path / "site"
    done = _source(tmp_path / "no-pack", site, wheels)
    assert done.returncode == 0, done.stderr
    assert (site / "quack_stub" / "__init__.py").read_text() == "VERSION = '0.6.5'\n"
    assert f"PYTHONPATH={site}:{site}/nvidia_cutlass_dsl/dsl_packages" in done.stdout
