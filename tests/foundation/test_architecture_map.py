"""docs/architecture.md is the map of the code: every path it writes leads to a file or folder, and every module of
the product is named on it, so that a new module, a moved one or a renamed one shows here before it misleads a
reader. A path that starts with a folder of the repository's root is read from the root (`tasks/` is the built-in
tasks, not gpu_harness/tasks/); a shorter one (`client.py`, `kernel_pages/selectors.py`) is read inside the area the
sentence is about, and must be the end of some file's path."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"

# The product's code the map must name; each file by its path or the end of it (`worker/client.py`, `client.py`), or
# a pattern the map writes (`views*.py`, `*_probe.py`).
PRODUCT = ("agentloop/", "gpu_harness/", "questionbank/", "runs/", "kseek_site/", "bench/", "kernels/load.py")
SUFFIXES = (".py", ".toml")
# Named by what they are, not by file: a package's __init__, Django's app config, the migrations, and the
# management commands (named by command: `sync_tasks`).
UNNAMED = ("__init__.py", "apps.py")
_SUFFIX = r"(?:py|md|toml|html|js|jsonl|conf|cu|cpp)"  # not .json: suite.json is a file of a suite's folder
_TICKED = re.compile(r"`([^`\s]+)`")


def tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).exists()]


def path_tokens(text: str) -> set[str]:
    """The paths the text writes: each `ticked` word with a slash or a file's suffix (not a URL: those start with
    /), and each plain word that starts with a root folder of the repository (docs/fork.md)."""
    roots = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} | {".ci"}
    found = set()
    for token in _TICKED.findall(text):
        token = token.rstrip(".,;:)")
        if token.startswith(("/", "../")) or "://" in token or "." in token.split("/")[0] and "/" in token:
            continue
        if "/" in token or re.search(rf"\.{_SUFFIX}$", token):
            found.add(token)
    for token in re.findall(r"(?<![\w/.`<-])([\w.-]+/[\w./*<>-]*[\w*>/])", text):
        if token.split("/")[0] in roots:
            found.add(token)
    return found


def as_glob(token: str) -> str:
    return re.sub(r"<[^>]*>", "*", token).rstrip("/")


def matches(name: str, pattern: str) -> bool:
    """fnmatch's `*`, which here never crosses a `/`."""
    return re.fullmatch(re.escape(pattern).replace(r"\*", "[^/]*"), name) is not None


def missing_paths(text: str, files: list[str]) -> list[str]:
    roots = {p.name for p in ROOT.iterdir()}
    folders = {str(Path(name).parent) for name in files} | {
        "/".join(Path(name).parts[:i]) for name in files for i in range(1, len(Path(name).parts))
    }
    everything = set(files) | folders
    missing = []
    for token in sorted(path_tokens(text)):
        pattern = as_glob(token)
        if pattern.split("/")[0] in roots:  # from the root
            ok = any(matches(name, pattern) for name in everything)
        else:  # inside the area the sentence names
            ok = any(matches("/".join(Path(name).parts[-pattern.count("/") - 1 :]), pattern) for name in everything)
        if not ok:
            missing.append(token)
    return missing


def unnamed_modules(text: str, files: list[str]) -> list[str]:
    # a placeholder (`runs/<area>/`) names no module
    patterns = {as_glob(t) for t in path_tokens(text) | set(_TICKED.findall(text)) if "<" not in t}
    out = []
    for name in files:
        path = Path(name)
        if not name.startswith(PRODUCT) or path.suffix not in SUFFIXES:
            continue
        if path.name in UNNAMED or "migrations" in path.parts or "commands" in path.parts:
            continue
        tails = {"/".join(path.parts[-k:]) for k in range(1, len(path.parts) + 1)}
        if not any(matches(tail, pattern) for tail in tails for pattern in patterns):
            out.append(name)
    return sorted(out)


def commands() -> list[str]:
    return sorted(p.stem for p in ROOT.glob("*/management/commands/*.py") if p.stem != "__init__")


def test_every_path_the_map_writes_leads_to_a_file():
    assert missing_paths(MAP.read_text(), tracked()) == []


def test_every_module_of_the_product_is_on_the_map():
    assert unnamed_modules(MAP.read_text(), tracked()) == [], "name it in docs/architecture.md, with its job"


def test_every_management_command_is_on_the_map():
    text = MAP.read_text()
    assert [name for name in commands() if f"`{name}`" not in text] == []


def test_a_moved_module_and_an_unnamed_one_would_be_found():
    files = ["runs/selectors.py", "runs/review/views_bank.py", "tasks/matmul_cpu/task.toml", "runs/routing.py"]
    text = "`runs/selectors.py`, the bank's `views*.py`, `tasks/summary.py` (moved), `matmul_cpu/`, docs/gone.md"
    assert missing_paths(text, files) == ["docs/gone.md", "tasks/summary.py"]
    assert unnamed_modules(text, files) == ["runs/routing.py"]
