"""``fold_host.ops.filecopy``: the bytes a backup or a restore writes, and the digests it answers, on real files.

Large files go through their own copying and hashing threads in steps (with
the disk asked to write each step as it is copied); small ones are done on
the calling thread; a file SQLite writes is hashed once whole. Whatever the
path, each copy must hold exactly the first ``length`` bytes of its source,
and the digest must be theirs. A source shorter than it was said to be is an
error, raised only once every thread has stopped.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

import pytest

from fold_core.errors import StoreCorrupt
from fold_host.ops.filecopy import SMALL, WRITE_BACK, Produced, Range, copy_files


def source(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def test_every_copy_holds_its_range_and_the_digest_is_of_those_bytes(tmp_path):
    large = source(tmp_path / "large", SMALL + 2 * WRITE_BACK + 12_345)  # threads, several steps, a ragged end
    small = source(tmp_path / "small", 70_001)
    empty = source(tmp_path / "empty", 0)
    out = tmp_path / "out"
    out.mkdir()
    files = [open(path, "rb") for path in (large, small, empty)]
    try:
        jobs = [Range("large", files[0].fileno(), large.stat().st_size - 100, str(large)),  # all but the last bytes
                Range("small", files[1].fileno(), 70_001, str(small)),
                Range("empty", files[2].fileno(), 0, str(empty)),
                Produced("made", lambda path: Path(path).write_bytes(b"written whole by someone else"))]
        digests = copy_files(jobs, str(out))
    finally:
        for file in files:
            file.close()
    expected = {"large": large.read_bytes()[:-100], "small": small.read_bytes(), "empty": b"",
                "made": b"written whole by someone else"}
    assert {path.name: path.read_bytes() for path in out.iterdir()} == expected
    assert digests == {name: hashlib.sha256(data).hexdigest() for name, data in expected.items()}


def test_a_copy_across_file_systems_holds_the_same_bytes(tmp_path):
    """A source on tmpfs (Linux's /dev/shm): the kernel may refuse to copy between them; the bytes still arrive."""
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        large = source(Path(other) / "large", SMALL + WRITE_BACK + 1)
        with open(large, "rb") as file:
            digests = copy_files([Range("large", file.fileno(), large.stat().st_size, str(large))], str(tmp_path))
        data = large.read_bytes()
    assert (tmp_path / "large").read_bytes() == data
    assert digests == {"large": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize("size", [SMALL + WRITE_BACK, 1000], ids=["large", "small"])
def test_a_source_shorter_than_its_range_fails_after_every_thread_stopped(tmp_path, size):
    shrunk = source(tmp_path / "shrunk", size)
    other = source(tmp_path / "other", SMALL + 1)
    out = tmp_path / "out"
    out.mkdir()
    before = threading.active_count()
    with open(shrunk, "rb") as bad, open(other, "rb") as good:
        with pytest.raises(StoreCorrupt, match="shorter than it was"):
            copy_files([Range("shrunk", bad.fileno(), size + 10, str(shrunk)),
                        Range("other", good.fileno(), SMALL + 1, str(other))], str(out))
    assert threading.active_count() == before
    assert (out / "other").read_bytes() == other.read_bytes()  # the other file was not left half-written
