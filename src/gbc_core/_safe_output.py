"""Atomic replacement of output files, shared by ``model.save`` and the batch commands.

Standard library only. An output ``DIR/NAME`` is written to a temporary file
``DIR/.NAME.gbc-core-PID-RANDOM.tmp`` (``PID``: the writing process), flushed to disk
and renamed over ``DIR/NAME``, so that a reader sees the old file or the new one,
never a part of it. The rules (``docs/reliability.md``, "Input rules"):

* an existing output keeps its permission bits; a new one gets ``0o666`` less the
  umask;
* an existing output whose mode has no write bit for its owner is not replaced, even
  by root (who could write it anyway), nor one this user may not write;
* an existing output that is a directory or not a regular file (a device, a FIFO) is
  not replaced;
* temporary files of the same output whose writing process is no longer running (a
  killed run) are removed by the next writer of that output;
* an output that is the same file as an input (same device and inode, links
  resolved) is found by :func:`find_same_file` before anything is written.
"""

import errno
import os
import re
import secrets
import stat
import weakref

#: Between the output's name and the writer's process id in a temporary file's name.
TEMPORARY_TAG = ".gbc-core-"

#: Bytes of the output's name kept in a temporary file's name (names are <= 255 bytes).
_NAME_BYTES = 200


def _temporary_prefix(path):
    """``.NAME.gbc-core-`` for the output ``path`` (NAME cut to ``_NAME_BYTES`` bytes)."""
    name = os.fsdecode(os.fsencode(os.path.basename(path))[:_NAME_BYTES])
    return "." + name + TEMPORARY_TAG


def _directory_of(path):
    return os.path.dirname(path) or os.curdir


def temporary_path(path, pid=None):
    """A fresh temporary file name for writing ``path`` from process ``pid``."""
    pid = os.getpid() if pid is None else pid
    name = f"{_temporary_prefix(path)}{pid}-{secrets.token_hex(6)}.tmp"
    return os.path.join(_directory_of(path), name)


def _process_is_running(pid):
    """Whether process ``pid`` exists (on POSIX); elsewhere assume it does."""
    if os.name != "posix":
        return True  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, owned by another user
        return True
    return True


def remove_stale_temporaries(path):
    """Remove the temporary files of ``path`` left by processes that are gone.

    Only names of the form ``.NAME.gbc-core-PID-RANDOM.tmp`` for this very output
    are considered, and only when process ``PID`` is not running (this process's own
    files are left alone: another thread may be writing them). Returns the removed
    paths.
    """
    directory = _directory_of(path)
    pattern = re.compile(re.escape(_temporary_prefix(path)) + r"(\d+)-[0-9a-f]+\.tmp")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    removed = []
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _process_is_running(pid):
            continue
        stale = os.path.join(directory, name)
        try:
            os.unlink(stale)
        except OSError:
            continue
        removed.append(stale)
    return removed


def same_file(first, second):
    """Whether two paths name the same file (device and inode, links resolved).

    False when either does not exist or cannot be examined.
    """
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):
        return False


def find_same_file(path, candidates):
    """The first of ``candidates`` that is the same file as ``path``, else None."""
    for candidate in candidates:
        if candidate is not None and same_file(path, candidate):
            return candidate
    return None


def replaceable_mode(path):
    """Check that ``path`` may be written; return the mode to keep, or None if new.

    Raises an ``OSError`` (``FileNotFoundError``, ``NotADirectoryError``,
    ``IsADirectoryError``, ``FileExistsError`` or ``PermissionError``) whose
    ``filename`` is ``path`` as given and whose message says what is wrong.
    """
    directory = _directory_of(path)
    if not os.path.exists(directory):
        raise FileNotFoundError(errno.ENOENT, f"directory {directory} does not exist", path)
    if not os.path.isdir(directory):
        raise NotADirectoryError(errno.ENOTDIR, f"{directory} is not a directory", path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "it is a directory", path)
    if not stat.S_ISREG(st.st_mode):
        raise FileExistsError(errno.EEXIST, "it exists and is not a regular file", path)
    if not st.st_mode & stat.S_IWUSR:
        raise PermissionError(errno.EACCES, "it exists and is read-only (no write "
                              "permission for its owner), so it is not replaced", path)
    if not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "it exists and this user may not write it, "
                              "so it is not replaced", path)
    return stat.S_IMODE(st.st_mode)


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_directory(directory):
    """Make a rename in ``directory`` durable (POSIX; a no-op where unsupported)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicFile:
    """A temporary file that replaces ``path`` on :meth:`commit`.

    Creating it checks ``path`` (:func:`replaceable_mode`), removes stale temporary
    files of ``path`` (:func:`remove_stale_temporaries`) and creates the temporary
    file ``tmp`` with the mode ``path`` will have, open as the descriptor ``fd``.
    Write through ``fd`` or reopen ``tmp`` by name, then call :meth:`commit`, or
    :meth:`discard` to leave ``path`` as it was. A temporary file neither committed
    nor discarded (an interrupt between its creation and the caller's ``try``) is
    removed when this object is freed, or at the latest when the interpreter exits.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write; errors name it as given.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.fd = self.tmp = None
        mode = replaceable_mode(self.path)
        remove_stale_temporaries(self.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        for _ in range(100):
            tmp = temporary_path(self.path)
            # Armed before the file exists, so that no interrupt can leave it behind.
            self._remove_tmp = weakref.finalize(self, _remove_quietly, tmp)
            try:
                # A new file: 0o666 less the umask, as open() would create it.
                self.fd = os.open(tmp, flags, 0o666 if mode is None else 0o600)
                break
            except FileExistsError:  # another writer's file: not ours to remove
                self._remove_tmp.detach()
            except OSError as exc:
                self._remove_tmp.detach()
                raise type(exc)(exc.errno, f"cannot create a file in "
                                f"{_directory_of(self.path)}: {exc.strerror}",
                                self.path) from None
        else:
            raise FileExistsError(errno.EEXIST, "no free temporary file name", self.path)
        self.tmp = tmp
        try:
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(self.fd, mode)
        except BaseException:
            self.discard()
            raise

    def _close(self):
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def commit(self):
        """Flush the temporary file to disk and rename it to ``path``."""
        try:
            os.fsync(self.fd)
        finally:
            self._close()
        os.replace(self.tmp, self.path)
        self._remove_tmp.detach()
        self.tmp = None
        _fsync_directory(_directory_of(self.path))

    def discard(self):
        """Remove the temporary file; ``path`` stays as it was. Never raises OSError."""
        try:
            self._close()
        except OSError:
            pass
        self._remove_tmp()
        self.tmp = None
