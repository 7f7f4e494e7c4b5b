"""Small helpers that read settings from the environment.

Kept apart from settings.py so that they can be tested without configuring Django.
"""

import os
import secrets
import stat
from pathlib import Path
from typing import Any, cast

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean: use one of {sorted(_TRUE | _FALSE)}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_float(name: str, default: float, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={raw!r} must be at least {minimum}")
    return value


def env_int(name: str, default: int, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={raw!r} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}={raw!r} must be at most {maximum}")
    return value


def env_http_url(name: str) -> str:
    """An http:// or https:// address from the environment ('' when unset or blank), as given. Checked at start:
    a webhook address without its scheme would fail at every notice, in a background thread, and a site address
    without one would make links that are not links."""
    from urllib.parse import urlsplit

    raw = os.environ.get(name, "")
    value = raw.strip()
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name}={raw!r} is not an http:// or https:// address (e.g. https://kernelseek.example)")
    return value


# The data folder holds the SQLite database (sessions, token hashes), the secret key and the generated admin
# password (trace uploads are spooled to $TMPDIR, not here): only the user who runs the site may enter it or read
# its files.
PRIVATE_FOLDER_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
SQLITE_FILE_NAME = "kernelseek.sqlite3"
# SQLite's companions of the database file: it makes new ones with the database file's mode, but ones an older
# version left behind keep theirs.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def narrow_mode(path: Path, mode: int) -> None:
    """Take from `path` every permission bit `mode` lacks (never add one). Only the owner may change a mode, so
    a path of another user (a folder an operator made for the site as root) is left as it is."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return
    current = stat.S_IMODE(status.st_mode)
    if current & ~mode and status.st_uid == os.getuid():
        path.chmod(current & mode)


def private_data_folder(data_dir: Path) -> Path:
    """The data folder, made with mode 0700, or narrowed to it where it exists (an older version made it 0755)."""
    data_dir.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    narrow_mode(data_dir, PRIVATE_FOLDER_MODE)
    return data_dir


def private_sqlite_file(path: Path) -> Path:
    """The SQLite database file, created empty with mode 0600 before SQLite opens it (SQLite would create it
    with the umask's 0644, and its -wal and -shm files follow the database file's mode), or narrowed to 0600
    with its companions where they exist."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass
    for suffix in ("", *SQLITE_COMPANIONS):
        narrow_mode(path.with_name(path.name + suffix), PRIVATE_FILE_MODE)
    return path


def secret_key_from(data_dir: Path) -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data folder.

    The file is created with mode 0600 and never committed (the data folder is git-ignored). Creating it with
    O_EXCL means two processes starting at once agree on one key: the loser reads the winner's file.
    """
    from_env = os.environ.get("SECRET_KEY")
    if from_env:
        return from_env
    key_file = data_dir / "secret_key"
    private_data_folder(data_dir)
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = key_file.read_text().strip()
        if not key:
            raise RuntimeError(f"{key_file} is empty: delete it to have a new key generated") from None
        return key
    key = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    return key


def database_config(database_url: str | None, data_dir: Path, sqlite_busy_timeout_s: int = 20) -> dict[str, Any]:
    """The default database: PostgreSQL (psycopg 3) when DATABASE_URL says so, else a SQLite file.

    SQLite runs in WAL mode with BEGIN IMMEDIATE transactions and a busy timeout (`sqlite_busy_timeout_s`), so that
    concurrent writers (daphne workers, management commands, the local agent worker) wait for the lock instead of
    failing with "database is locked" halfway through a transaction.
    """
    import dj_database_url

    if database_url:
        # (a DBConfig, dj_database_url's TypedDict of the same keys)
        config = cast("dict[str, Any]", dj_database_url.parse(database_url, conn_max_age=60, conn_health_checks=True))
    else:
        database_file = private_sqlite_file(private_data_folder(data_dir) / SQLITE_FILE_NAME)
        config = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(database_file)}
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config.setdefault("OPTIONS", {}).update(
            {
                "transaction_mode": "IMMEDIATE",
                "timeout": sqlite_busy_timeout_s,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            }
        )
    return config


# A channel prefix an operator sets: a group's Redis channel is `<prefix>__group__<group>`, and channels limits a
# name to 100 characters, so the prefix stays short and in the characters channel names take.
CHANNEL_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
CHANNEL_PREFIX_MAX_CHARS = 40


def channel_prefix(explicit: str | None, secret_key: str) -> str:
    """The prefix of this site's channels and groups on a Redis channel layer: KSEEK_CHANNEL_PREFIX when set, else
    one derived from the site's SECRET_KEY.

    Redis publish/subscribe is not scoped to a database number, so two sites on one Redis server hear each
    other's group messages ("revoke worker 2") unless their names differ. The processes of one site must share
    its SECRET_KEY (docs/deployment.md), and two sites do not share one, so a hash of it is the same within a site
    and differs between sites without anyone choosing names; it says nothing usable about the key (a 64-bit slice
    of a SHA-256 of it, under a label of its own)."""
    if explicit:
        if len(explicit) > CHANNEL_PREFIX_MAX_CHARS or not set(explicit) <= CHANNEL_PREFIX_CHARS:
            raise ValueError(
                f"KSEEK_CHANNEL_PREFIX={explicit!r} must be 1 to {CHANNEL_PREFIX_MAX_CHARS} letters, digits, "
                f"'.', '_' or '-'"
            )
        return explicit
    import hashlib  # here, not at the top: only a site on Redis needs it

    digest = hashlib.sha256(b"kernelseek channel prefix\0" + secret_key.encode("utf-8")).hexdigest()
    return f"kseek.{digest[:16]}."


def channel_layers_config(redis_url: str | None, prefix: str | None = None, secret_key: str = "") -> dict:
    """Redis channel layer when REDIS_URL is set (several server processes share events), else in-memory. Its
    channels and groups are named under this site's prefix (`channel_prefix`: `prefix`, KSEEK_CHANNEL_PREFIX,
    else one derived from `secret_key`).

    The Redis layer is channels-redis's publish/subscribe one: every message KernelSeek sends through the layer
    is a notice to whoever listens now ("run 7 stored seqs 40-42", "directives are waiting for worker 3"),
    which the listener can always recover from the database (feeds resync by seq, directives are re-sent
    after each hello). Nothing needs the list-based layer's buffering for absent listeners, and publishing
    costs Redis one PUBLISH instead of a script over every member's queue: at 2,000 events/s with 50 pages
    open and two server processes, p99 fan-out latency fell from 136-150 ms to 72-75 ms on the 2-core host
    (docs/benchmarks.md, "Events")."""
    if redis_url:
        # Checked here, at start: redis-py refuses another scheme only at the first use, in every socket's handshake.
        if not redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"REDIS_URL={redis_url!r} must start with redis://, rediss:// or unix://")
        return {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [redis_url], "prefix": channel_prefix(prefix, secret_key)},
            }
        }
    # One process: an in-memory layer like channels' own, with a cheaper expiry walk and group_send
    # (kseek_site/layers.py).
    return {"default": {"BACKEND": "kseek_site.layers.LocalChannelLayer", "CONFIG": {"capacity": 5000}}}
