"""A PATH on which bubblewrap is not installed, as on a fresh machine, for tests of what happens there."""

import os
from pathlib import Path


def path_without_bwrap(folder: Path) -> str:
    """This PATH with bubblewrap gone, as on a fresh machine: each folder that holds a `bwrap` is replaced by one
    of links to everything else in it."""
    folders = []
    for entry in os.environ["PATH"].split(os.pathsep):
        if not (Path(entry) / "bwrap").exists():
            folders.append(entry)
            continue
        mirror = folder / f"path-{len(folders)}"
        mirror.mkdir(parents=True)
        for program in Path(entry).iterdir():
            if program.name != "bwrap":
                (mirror / program.name).symlink_to(program)
        folders.append(str(mirror))
    return os.pathsep.join(folders)
