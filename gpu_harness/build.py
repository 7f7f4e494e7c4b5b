"""Compile a candidate into a shared library, cached by source hash + compiler version + flags.

The compiler runs in its own process group with a hard timeout. Every build, cached or not, passes the
dependency checks (depcheck) before anyone loads it.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from . import childbox, depcheck
from .procs import run_bounded

BUILD_RECIPE_VERSION = "3"  # bump when flags or checks change meaning, to invalidate the cache
DEFAULT_ARCH = "sm_90a"


def cache_dir() -> Path:
    return Path(os.environ.get("KSEEK_CACHE_DIR") or Path.home() / ".cache" / "kernelseek")


@dataclass
class BuildResult:
    ok: bool
    language: str
    lib_path: str | None = None
    reason: str | None = None  # why it failed (compile error, refused headers/symbols, timeout)
    log: str = ""  # compiler output (trimmed)
    cache_hit: bool = False
    compile_s: float = 0.0
    arch: str | None = None
    kernels: dict[str, Any] = field(default_factory=dict)  # per kernel: registers, spill bytes, smem, stack
    undefined_symbols: list[str] = field(default_factory=list)
    source_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def resource_lines(self) -> list[str]:
        lines = []
        for name, k in sorted(self.kernels.items()):
            lines.append(
                f"{_short(name)}: {k.get('registers', '?')} registers, "
                f"{k.get('spill_stores', 0)}/{k.get('spill_loads', 0)} bytes spill stores/loads, "
                f"{k.get('smem', 0)} bytes static smem, {k.get('stack', 0)} bytes stack"
            )
        return lines


def _short(name: str, n: int = 70) -> str:
    """Readable kernel name: demangled, without the anonymous-namespace prefix and the argument list."""
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=10).stdout.strip()
        name = out or name
    except (OSError, subprocess.TimeoutExpired):
        pass
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = name.split("(", 1)[0]
    return name if len(name) <= n else name[: n - 3] + "..."


@cache
def _tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "missing"


@cache
def _cpu_model() -> str:
    # -march=native makes the binary depend on the CPU: the cache key must too.
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return platform.machine()


def cuda_home() -> str | None:
    nvcc = shutil.which("nvcc")
    if nvcc:
        return str(Path(nvcc).resolve().parent.parent)
    for p in ("/usr/local/cuda",):
        if Path(p, "bin", "nvcc").exists():
            return p
    return None


def _libcuda_dir() -> str | None:
    """Where a libcuda.so lies for linking tensor-map calls (absent on machines without a driver)."""
    home = cuda_home() or "/usr/local/cuda"
    for pattern in (
        f"{home}/lib64/stubs/libcuda.so",
        "/usr/lib/x86_64-linux-gnu/libcuda.so*",
        "/usr/lib64/libcuda.so*",
        "/usr/local/nvidia/lib64/libcuda.so*",
    ):
        hits = glob.glob(pattern)
        if hits:
            return str(Path(hits[0]).parent)
    return None


def arch_flags(arch: str) -> list[str]:
    m = re.fullmatch(r"sm_(\d+)([a-z]?)", arch)
    if not m:
        raise ValueError(f"bad --arch {arch!r}: expected e.g. sm_90a")
    num, suffix = m.groups()
    return [f"-gencode=arch=compute_{num}{suffix},code=sm_{num}{suffix}"]


def compile_command(language: str, src: Path, out: Path, arch: str | None) -> list[str]:
    if language == "cuda":
        cmd = [
            "nvcc",
            "-O3",
            "-std=c++17",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-cudart",
            "shared",
            *arch_flags(arch or DEFAULT_ARCH),
            "-Xptxas",
            "-v",
            "-lineinfo",
            "-Xlinker",
            "-z,now",
            "-Xlinker",
            "-z,relro",
            "-o",
            str(out),
            str(src),
        ]
        libdir = _libcuda_dir()
        if libdir:
            cmd += ["-Xlinker", "--as-needed", f"-L{libdir}", "-lcuda"]
        return cmd
    if language == "cpp":
        return [
            "g++",
            "-O3",
            "-march=native",
            "-std=c++17",
            "-shared",
            "-fPIC",
            "-Wl,-z,now",
            "-Wl,-z,relro",
            "-o",
            str(out),
            str(src),
        ]
    raise ValueError(f"unknown language {language!r}")


def cache_key(source: str, language: str, arch: str | None) -> str:
    tool = "nvcc" if language == "cuda" else "g++"
    if language == "cuda":
        arch = arch or DEFAULT_ARCH  # the default named or not is one build (compile_command compiles it so)
    parts = [
        BUILD_RECIPE_VERSION,
        language,
        arch or "",
        _tool_version(tool),
        source,
        " ".join(compile_command(language, Path("src"), Path("out"), arch)),
    ]
    if language == "cpp":
        parts.append(_cpu_model())
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


_PTXAS_FUNC = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(log: str) -> dict[str, Any]:
    kernels: dict[str, dict[str, Any]] = {}
    current = None
    for line in log.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            current = m.group(1)
            kernels.setdefault(current, {})
            continue
        if current is None:
            continue
        m = _PTXAS_USED.search(line)
        if m:
            kernels[current]["registers"] = int(m.group(1))
            smem = re.search(r"(\d+) bytes smem", line)
            kernels[current]["smem"] = int(smem.group(1)) if smem else 0
        m = _PTXAS_SPILL.search(line)
        if m:
            kernels[current]["stack"] = int(m.group(1))
            kernels[current]["spill_stores"] = int(m.group(2))
            kernels[current]["spill_loads"] = int(m.group(3))
    # keep entries that are kernels (they get a register count); device functions only get frames
    return {k: v for k, v in kernels.items() if "registers" in v}


# The largest kernel source the harness reads: the wire's limit on one (agentloop.protocol.KERNEL_SOURCE_MAX_BYTES,
# which tests/harness/test_kernel_source_file.py holds equal), so a file the agent could not send is not judged here.
KERNEL_SOURCE_MAX_BYTES = 2**20


def read_kernel_source(path: str | os.PathLike[str]) -> str:
    """The text of the kernel file at `path`: a regular file of at most KERNEL_SOURCE_MAX_BYTES, in UTF-8. A FIFO
    is not waited on and a device (/dev/zero) not read without end; OSError or UnicodeDecodeError, in words, else."""
    with childbox.open_regular_file(path, str(path)) as f:
        data = f.read(KERNEL_SOURCE_MAX_BYTES + 1)
    if len(data) > KERNEL_SOURCE_MAX_BYTES:
        raise OSError(f"{path} is over the harness's limit of {KERNEL_SOURCE_MAX_BYTES:,} bytes for a kernel source")
    return data.decode()


def build(
    source_path: str | os.PathLike[str], language: str, arch: str | None = None, timeout_s: float = 300.0
) -> BuildResult:
    try:
        source = read_kernel_source(source_path)
    except (OSError, UnicodeDecodeError) as e:
        return BuildResult(False, language, reason=f"cannot read kernel source: {e}")
    sha = hashlib.sha256(source.encode()).hexdigest()
    headers = depcheck.check_headers(source, language)
    if not headers.ok:
        return BuildResult(False, language, reason=headers.reason, source_sha256=sha, arch=arch)
    tool = "nvcc" if language == "cuda" else "g++"
    if shutil.which(tool) is None:
        return BuildResult(False, language, reason=f"compiler '{tool}' not found on this machine", source_sha256=sha)

    entry = cache_dir() / "builds" / cache_key(source, language, arch)
    result = _cached(entry)
    if result is None:
        # The same source built by two processes at once (two evaluations of one candidate, two test workers)
        # compiles once: the second waits for the first's build, then finds it in the cache.
        with _build_lock(entry, timeout_s):
            result = _cached(entry) or _compile(source, language, arch, timeout_s, entry, name=Path(source_path).name)
    result.source_sha256 = sha  # what this call read (a cached build.json's entry is empty)
    if not result.ok:
        return result
    # The arch it was compiled for, also when the default was used (a cached build from before kept None): the
    # verdict carries it (`build.arch`), and the dashboard shows it on the kernel.
    result.arch = (arch or DEFAULT_ARCH) if language == "cuda" else arch
    assert result.lib_path is not None  # (a build that is ok has its library)
    symbols = depcheck.check_library(result.lib_path)
    result.undefined_symbols = symbols.undefined
    if not symbols.ok:
        result.ok = False
        result.reason = symbols.reason
    return result


def _cached(entry: Path) -> BuildResult | None:
    """The build published in `entry` (a cache hit), or None."""
    meta_path = entry / "build.json"
    if not (meta_path.exists() and (entry / "lib.so").exists()):
        return None
    result = BuildResult(**json.loads(meta_path.read_text()))
    result.cache_hit = True
    result.lib_path = str(entry / "lib.so")
    return result


@contextmanager
def _build_lock(entry: Path, timeout_s: float) -> Iterator[None]:
    """Holds `entry`'s lock file (flock) while one process compiles it. A wait longer than the build's own
    timeout, or a cache folder where no lock can be made, goes on without it: the build's rename still publishes
    one entry (`_compile`), so the cost is a second compile, never a wrong library."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(entry.parent / f"{entry.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock


def named_as_given(log: str, compiled: str, name: str) -> str:
    """The compiler's log with the scratch copy it compiled (`kernel.cu`) named as the file the caller gave, so
    that an error points at the file the user wrote (`bad.cpp:2:78: error: ...`, nvcc's `relu.cu(12): error`)."""
    return re.sub(rf"(?<![\w./-]){re.escape(compiled)}(?=[:(])", lambda _: name, log)


def _compile(
    source: str, language: str, arch: str | None, timeout_s: float, entry: Path, name: str = ""
) -> BuildResult:
    entry.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=entry.parent))
    ext = ".cu" if language == "cuda" else ".cpp"
    src = work / ("kernel" + ext)
    src.write_text(source)
    out = work / "lib.so"
    cmd = compile_command(language, src, out, arch)
    t0 = time.monotonic()
    done = run_bounded(cmd, timeout_s, cwd=str(work))
    elapsed = time.monotonic() - t0
    log = (done.stdout + done.stderr).replace(str(work) + "/", "")
    if done.returncode != 0 or done.timed_out:
        # A failure is not cached, so naming the caller's file is safe; a cached success's log keeps kernel.cu,
        # since one build serves every file of the same source.
        log = named_as_given(log, src.name, name or src.name)
    if done.timed_out:
        shutil.rmtree(work, ignore_errors=True)
        return BuildResult(
            False,
            language,
            reason=f"compile timed out after {timeout_s:.0f}s",
            log=log[-4000:],
            compile_s=elapsed,
            arch=arch,
        )
    if done.returncode != 0 or not out.exists():
        shutil.rmtree(work, ignore_errors=True)
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[-300:])
        return BuildResult(
            False, language, reason=f"compile failed: {first.strip()}", log=log[-8000:], compile_s=elapsed, arch=arch
        )
    result = BuildResult(
        True,
        language,
        lib_path=str(entry / "lib.so"),
        log=log[-8000:],
        compile_s=elapsed,
        arch=arch,
        kernels=parse_ptxas(log) if language == "cuda" else {},
    )
    meta = result.to_dict()
    (work / "build.json").write_text(json.dumps(meta))
    src.unlink()
    try:
        os.replace(work, entry)  # atomic publish; a concurrent identical build may have won
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return result
