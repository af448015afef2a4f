"""The atomic output files shared by ``model.save`` and the batch commands (``_safe_output``)."""

import gc
import os
import re
import stat
import subprocess
import sys

import numpy as np
import pytest

from gbc_core import _safe_output, _model_io
from gbc_core._safe_output import AtomicFile, find_same_file, remove_stale_temporaries

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes and links")


def _finished_pid():
    """The id of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write(path, data):
    out = AtomicFile(path)
    try:
        os.write(out.fd, data)
        out.commit()
    except BaseException:
        out.discard()
        raise


@pytest.fixture
def model():
    from gbc_core import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    return GradientBoostingClassifier(n_estimators=3).fit(X, (X[:, 0] > 0).astype(int))


def test_temporary_name_says_whose_it_is(tmp_path):
    tmp = _safe_output.temporary_path(str(tmp_path / "scores.csv"))
    assert os.path.dirname(tmp) == str(tmp_path)
    assert re.fullmatch(rf"\.scores\.csv\.gbc-core-{os.getpid()}-[0-9a-f]+\.tmp",
                        os.path.basename(tmp))
    assert _safe_output.temporary_path("scores.csv") != _safe_output.temporary_path("scores.csv")
    long_name = "x" * 250 + ".csv"  # the temporary name stays a valid file name
    _write(str(tmp_path / long_name), b"data")
    assert (tmp_path / long_name).read_bytes() == b"data"


@pytest.mark.parametrize("size", [0, 1, 3 << 20])
def test_commit_replaces_and_discard_keeps(tmp_path, size):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    data = np.random.default_rng(size).bytes(size)
    out = AtomicFile(path)
    os.write(out.fd, data[: size // 2])
    out.discard()
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]
    _write(path, data)
    assert path.read_bytes() == data and os.listdir(tmp_path) == ["out.bin"]


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o755])
def test_replacing_keeps_the_permission_bits(tmp_path, mode, model):
    for path in (tmp_path / "out.bin", tmp_path / "m.gbc"):
        path.write_bytes(b"old")
        os.chmod(path, mode)
        if path.suffix == ".gbc":
            model.save(path)
        else:
            _write(path, b"new")
        assert stat.S_IMODE(path.stat().st_mode) == mode
        assert path.read_bytes() != b"old"


@posix_only
def test_a_new_file_gets_the_umask_mode(tmp_path, model):
    old = os.umask(0o027)
    try:
        _write(tmp_path / "new.bin", b"x")
        model.save(tmp_path / "new.gbc")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.bin").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.gbc").stat().st_mode) == 0o640


@posix_only
@pytest.mark.parametrize("mode", [0o444, 0o400, 0o044, 0o000, 0o077])
def test_a_file_without_owner_write_bit_is_not_replaced(tmp_path, mode, model):
    """The rule holds for root too (who could write it anyway)."""
    for path in (tmp_path / "out.bin", tmp_path / "m.gbc"):
        path.write_bytes(b"old")
        os.chmod(path, mode)
        with pytest.raises(PermissionError, match="read-only") as err:
            if path.suffix == ".gbc":
                model.save(path)
            else:
                AtomicFile(path)
        assert err.value.filename == str(path)
        os.chmod(path, 0o600)
        assert path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["m.gbc", "out.bin"]


@pytest.mark.parametrize("where", ["missing_dir/m.gbc", "a/b/c/m.gbc"])
def test_save_into_a_missing_directory_names_the_path_given(tmp_path, monkeypatch, model,
                                                            where):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        model.save(where)
    message = str(err.value)
    assert err.value.filename == where and where in message
    assert f"directory {os.path.dirname(where)} does not exist" in message
    assert ".tmp" not in message and _safe_output.TEMPORARY_TAG not in message
    assert os.listdir(tmp_path) == []


def test_outputs_that_are_not_files(tmp_path, model):
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        model.save(tmp_path / "dir")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        model.save(tmp_path / "file" / "m.gbc")
    assert sorted(os.listdir(tmp_path)) == ["dir", "file"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_is_not_replaced(tmp_path, model):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileExistsError, match="not a regular file"):
        model.save(tmp_path / "fifo")
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    assert os.listdir(tmp_path) == ["fifo"]


def test_stale_temporary_files_of_the_output_are_removed(tmp_path, model):
    path = str(tmp_path / "m.gbc")
    dead = _finished_pid()
    stale = [_safe_output.temporary_path(path, pid=dead) for _ in range(2)]
    live_child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        kept = [
            _safe_output.temporary_path(path, pid=live_child.pid),  # its writer still runs
            _safe_output.temporary_path(path),                       # this process's own
            _safe_output.temporary_path(str(tmp_path / "other.gbc"), pid=dead),  # another output
            str(tmp_path / ".m.gbc.tmp"),                       # not one of ours
            str(tmp_path / f".m.gbc{_safe_output.TEMPORARY_TAG}{dead}-xyz.tmp"),
        ]
        for name in stale + kept:
            with open(name, "wb") as fh:
                fh.write(b"partial")
        model.save(path)
        left = set(os.listdir(tmp_path))
    finally:
        live_child.kill()
        live_child.wait()
    assert left == {"m.gbc"} | {os.path.basename(k) for k in kept}
    # Once the child has ended, its file is stale too.
    for name in stale:
        with open(name, "wb") as fh:
            fh.write(b"partial")
    assert sorted(remove_stale_temporaries(path)) == sorted(stale + kept[:1])
    assert set(os.listdir(tmp_path)) == {"m.gbc"} | {os.path.basename(k) for k in kept[1:]}


def test_an_interrupt_just_after_creating_the_temporary_file_leaves_nothing(tmp_path,
                                                                            monkeypatch):
    """A signal handled as the file is created (before any caller's ``try``)."""
    real_open, fds = os.open, []

    def open_then_interrupt(*args, **kwargs):
        fds.append(real_open(*args, **kwargs))
        raise KeyboardInterrupt

    (tmp_path / "out.bin").write_bytes(b"old")
    monkeypatch.setattr(_safe_output.os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt) as info:
        AtomicFile(tmp_path / "out.bin")
    monkeypatch.undo()
    os.close(fds[0])
    assert len(os.listdir(tmp_path)) == 2  # while the interrupted frame is referenced
    del info
    gc.collect()
    assert os.listdir(tmp_path) == ["out.bin"]
    assert (tmp_path / "out.bin").read_bytes() == b"old"


def test_a_temporary_file_neither_committed_nor_discarded_is_removed(tmp_path):
    out = AtomicFile(tmp_path / "out.bin")
    os.write(out.fd, b"partial")
    os.close(out.fd)
    assert len(os.listdir(tmp_path)) == 1
    del out
    gc.collect()
    assert os.listdir(tmp_path) == []
    code = ("import os, sys; from gbc_core._safe_output import AtomicFile; "
            "f = AtomicFile(sys.argv[1]); os.write(f.fd, b'x'); sys.exit(3)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "exit.bin")])
    assert proc.returncode == 3 and os.listdir(tmp_path) == []  # removed at exit


@posix_only
def test_same_file_resolves_links(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    (tmp_path / "sym.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    (tmp_path / "copy.csv").write_text("a\n1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    for alias in ("sym.csv", "hard.csv", "sub/../data.csv", "data.csv"):
        assert find_same_file(tmp_path / alias, [None, tmp_path / "copy.csv", data]) == data
    assert find_same_file(tmp_path / "copy.csv", [data, None]) is None
    assert find_same_file(tmp_path / "absent.csv", [data]) is None


def test_failed_write_leaves_nothing(tmp_path, monkeypatch, model):
    """The ``_model_io._os_write`` seam fails the save half-way."""
    path = tmp_path / "m.gbc"
    model.save(path)
    old = path.read_bytes()

    def fail(fd, data):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_model_io, "_os_write", fail)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["m.gbc"]
