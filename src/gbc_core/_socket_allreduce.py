"""The all-reduce of a data-parallel fit over TCP sockets, rank to rank 0.

A transport may use it for ``comm.allreduce`` (``_data_parallel.Transport``): at the
start of a fit rank 0 opens a :class:`Listener` on its host (an ephemeral port), each
other rank :func:`connect`\\ s to it once with the fit's random token, and every step
is then one round trip on that connection, without the engine's scheduler, actors or
event loop: each rank sends its array, rank 0 adds each rank's array as it arrives,
in rank order (the bits of ``_distributed.allreduce_local``, as any other
transport), and sends the sum back.

On the wire (little-endian, never pickle): a rank opens with a hello
(``_HELLO``: magic, version, its rank, the number of ranks, the 32-byte token);
rank 0 closes a connection whose hello is not exact. A frame is a fixed header
(``_HEADER``: magic, kind, step, ``n_summed``, ndim, up to four dimensions) and
either the float64 values (kind values) or a UTF-8 message of at most
:data:`MAX_MESSAGE` bytes (kind error: rank 0 ends the fit for every rank with the
reason). The receiver checks a header against what it expects of the step (the
step number, ``n_summed``, its own array's shape) before it reads the values, so
nothing is allocated from a size a peer declares.

Every wait is bounded by the step timeout and looks at ``ended()`` (the engine's
news that the fit is over) every ``poll`` seconds; a peer that closes its
connection, resets it or does not answer in time is :class:`LostPeer`, naming the
rank and the step. The sockets are closed by :meth:`SocketComm.close` (and the
listener once its ranks are in). Plain TCP: not encrypted (an engine whose
connections must be encrypted keeps its own all-reduce).
"""

import hmac
import socket
import struct
import time

import numpy as np

#: Magic of a hello and of a frame.
_HELLO_MAGIC = b"GBCH"
_FRAME_MAGIC = b"GBCF"
_VERSION = 1
_TOKEN_BYTES = 32
#: magic, version, rank, number of ranks, token.
_HELLO = struct.Struct(f"<4sIII{_TOKEN_BYTES}s")
#: magic, kind, step, n_summed (error: the message's length), ndim, four dimensions.
_HEADER = struct.Struct("<4sIQQI4Q")
_MAX_DIMS = 4
#: Frame kinds: values; an error that ends the fit; a lost rank that ends it (the
#: receiver raises LostPeer, so that the engine looks for the lost worker).
_VALUES, _ERROR, _LOST = 1, 2, 3
#: Longest error message a frame carries (bytes).
MAX_MESSAGE = 4096
#: Seconds a rank tries to connect to rank 0 at most (a port a firewall drops).
CONNECT_TIMEOUT = 30.0
#: Seconds rank 0 waits for the hello of a connection it accepted.
_HELLO_TIMEOUT = 5.0
#: Seconds the other ranks wait for the sum beyond the step timeout (rank 0 may
#: itself wait that long for a rank).
_SLACK = 10.0


class LostPeer(RuntimeError):
    """A rank's connection closed, reset or silent past the step timeout: its worker
    was lost or its fit ended (the message names the rank and the step)."""


def _ended_error():
    return RuntimeError("distributed fit: ended by the client (the fit failed elsewhere "
                        "or was interrupted)")


def new_token():
    """A random token for one fit (the ranks' hellos must carry it)."""
    import secrets

    return secrets.token_bytes(_TOKEN_BYTES)


def _wait_io(sock, op, view, deadline, ended, poll, lost):
    """Move all of ``view`` (``op``: ``sock.recv_into`` or ``sock.send``) before
    ``deadline``, looking at ``ended()`` every ``poll`` s; ``lost(reason)`` is the
    error of a closed, reset or late connection."""
    done, total = 0, len(view)
    while done < total:
        left = deadline - time.monotonic()
        if left <= 0:
            raise lost("no answer within the step timeout")
        sock.settimeout(max(1e-3, min(poll, left)))
        try:
            n = op(view[done:])
        except socket.timeout:
            if ended is not None and ended():
                raise _ended_error() from None
            continue
        except OSError as exc:
            raise lost(f"{type(exc).__name__}: {exc}") from None
        if n == 0:
            raise lost("connection closed")
        done += n


def _recv(sock, view, deadline, ended, poll, lost):
    _wait_io(sock, sock.recv_into, view, deadline, ended, poll, lost)


def _send(sock, data, deadline, ended, poll, lost):
    _wait_io(sock, sock.send, memoryview(data).cast("B"), deadline, ended, poll, lost)


def _header(kind, step, n_summed, shape):
    dims = tuple(shape) + (0,) * (_MAX_DIMS - len(shape))
    return _HEADER.pack(_FRAME_MAGIC, kind, step, n_summed, len(shape), *dims)


def _read_header(sock, raw, step, n_summed, shape, deadline, ended, poll, lost):
    """Read a frame's header into ``raw`` (a buffer of ``_HEADER.size`` bytes) and
    check it against what is expected of ``step`` (values of ``shape``, float64);
    a frame of kind error raises its message (at most :data:`MAX_MESSAGE` bytes
    read)."""
    _recv(sock, memoryview(raw), deadline, ended, poll, lost)
    magic, kind, got_step, got_n, ndim, *dims = _HEADER.unpack(raw)
    if magic != _FRAME_MAGIC or kind not in (_VALUES, _ERROR, _LOST):
        raise lost(f"a garbled frame header at step {step} (magic {magic!r}, kind {kind})")
    if kind != _VALUES:
        if got_n > MAX_MESSAGE:
            raise lost(f"an error message of {got_n} bytes (at most {MAX_MESSAGE})")
        text = bytearray(got_n)
        _recv(sock, memoryview(text), deadline, ended, poll, lost)
        raise (LostPeer if kind == _LOST else RuntimeError)(text.decode("utf-8", "replace"))
    got_shape = tuple(dims[:ndim]) if ndim <= _MAX_DIMS else None
    if got_step != step or got_n != n_summed or got_shape != tuple(shape):
        raise lost(f"a frame of step {got_step} with n_summed {got_n} and shape "
                   f"{got_shape if got_shape is not None else f'of {ndim} dimensions'} "
                   f"where step {step} with n_summed {n_summed} and shape {tuple(shape)} "
                   "was expected")


def _read_frame(sock, raw, out, step, n_summed, deadline, ended, poll, lost):
    """The values of a frame of ``step`` read into ``out`` (float64, C order, the
    shape expected), its header (read into ``raw``) checked before them."""
    _read_header(sock, raw, step, n_summed, out.shape, deadline, ended, poll, lost)
    if out.size:
        _recv(sock, memoryview(out.reshape(-1)).cast("B"), deadline, ended, poll, lost)
    return out


def _tune(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Listener:
    """Rank 0's listening socket for one fit: on ``host``, an ephemeral port.

    Parameters
    ----------
    host : str
        The address of rank 0's worker (where the other ranks reach it).
    n_ranks : int
    token : bytes
        The fit's token (:func:`new_token`).
    """

    def __init__(self, host, n_ranks, token):
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, 0, type=socket.SOCK_STREAM)[0]
        self.sock = socket.socket(family, kind, proto)
        try:
            self.sock.bind(addr[:2] if family == socket.AF_INET else addr)
            self.sock.listen(n_ranks + 16)
        except BaseException:
            self.sock.close()
            raise
        self.n_ranks = n_ranks
        self.token = token
        self.address = (host, self.sock.getsockname()[1])

    def accept(self, timeout, ended=None, poll=0.2):
        """The connections of ranks 1..n-1 (a list indexed by rank, None at 0), each
        authenticated by its hello; a connection whose hello is not exact is
        closed. Within ``timeout`` s, else :class:`LostPeer` naming the ranks
        missing. The listener is closed on return."""
        peers = [None] * self.n_ranks
        deadline = time.monotonic() + timeout
        try:
            while any(p is None for p in peers[1:]):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [r for r in range(1, self.n_ranks) if peers[r] is None]
                    raise LostPeer(f"distributed fit: rank(s) {missing} did not connect "
                                   f"within {timeout:g} s (a worker lost or stalled)")
                self.sock.settimeout(max(1e-3, min(poll, left)))
                try:
                    conn, _ = self.sock.accept()
                except socket.timeout:
                    if ended is not None and ended():
                        raise _ended_error() from None
                    continue
                try:
                    # (A connection that does not say its hello soon holds no one up.)
                    rank = self._hello(conn, min(deadline, time.monotonic() + _HELLO_TIMEOUT),
                                       ended, poll)
                except BaseException:
                    conn.close()
                    raise
                if rank is None or peers[rank] is not None:
                    conn.close()
                else:
                    peers[rank] = conn
        except BaseException:
            for conn in peers:
                if conn is not None:
                    conn.close()
            raise
        finally:
            self.close()
        return peers

    def _hello(self, conn, deadline, ended, poll):
        """The rank of an exact hello, or None."""
        raw = bytearray(_HELLO.size)
        try:
            _recv(conn, memoryview(raw), deadline, ended, poll, LostPeer)
        except LostPeer:
            return None
        magic, version, rank, n_ranks, token = _HELLO.unpack(raw)
        if (magic != _HELLO_MAGIC or version != _VERSION or n_ranks != self.n_ranks
                or not 1 <= rank < self.n_ranks
                or not hmac.compare_digest(token, self.token)):
            return None
        _tune(conn)
        return rank

    def close(self):
        self.sock.close()


def connect(address, token, rank, n_ranks, timeout):
    """Rank ``rank``'s connection to rank 0's :class:`Listener` at ``address``
    (host, port), its hello sent. Raises OSError where it cannot connect (within
    ``timeout`` s, at most :data:`CONNECT_TIMEOUT`)."""
    sock = socket.create_connection(tuple(address), timeout=min(timeout, CONNECT_TIMEOUT))
    try:
        _tune(sock)
        sock.settimeout(timeout)
        sock.sendall(_HELLO.pack(_HELLO_MAGIC, _VERSION, rank, n_ranks, token))
    except BaseException:
        sock.close()
        raise
    return sock


class SocketComm:
    """One rank's ``comm`` of a fit: ``allreduce(values, n_summed)``, one step a call,
    every rank making the same calls in the same order.

    Parameters
    ----------
    rank : int
    sockets : list
        Rank 0: the connections of every rank (:meth:`Listener.accept`; None at 0).
        Any other rank: ``[its connection to rank 0]`` (:func:`connect`).
    timeout : float
        The step timeout: rank 0 waits that long for the ranks at a step, the
        others for the sum a little longer.
    ended : callable or None
        Whether the engine has ended the fit; looked at every ``poll`` s of a wait
        and at each step.
    poll : float
    """

    def __init__(self, rank, sockets, timeout, ended=None, poll=0.2):
        self.rank = rank
        self.sockets = sockets
        self.timeout = timeout
        self.ended = ended
        self.poll = poll
        self.step = 0
        # A frame's header is read into this buffer, and rank 0 reads the other
        # ranks' values into ``_values`` (grown to the largest step's, per fit).
        self._raw = bytearray(_HEADER.size)
        self._values = np.empty(0, dtype=np.float64)
        # Imported here, once per fit, not per step (and not at the module's
        # import, which ``gbc_core.dask`` keeps light).
        from ._distributed import add_rank

        self._add_rank = add_rank

    def allreduce(self, values, n_summed):
        """The sum over the ranks of ``values`` (``_distributed.allreduce_local``,
        rank order)."""
        if self.ended is not None and self.ended():
            raise _ended_error()
        if self.sockets is None:
            raise RuntimeError("distributed fit: the all-reduce is closed")
        self.step += 1
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.ndim > _MAX_DIMS:
            raise ValueError(f"the all-reduce takes arrays of at most {_MAX_DIMS} "
                             f"dimensions, got {values.ndim}")
        n_summed = int(n_summed)
        if self.rank != 0:
            return self._peer_step(values, n_summed)
        try:
            return self._root_step(values, n_summed)
        except BaseException as exc:
            # Every other rank ends with rank 0's reason (a lost rank as LostPeer),
            # not with a closed connection blamed on rank 0.
            self._tell_others(exc)
            raise

    def _root_step(self, values, n_summed):
        # Each rank's values added as they arrive, in rank order
        # (``_distributed.add_rank``): the bits of ``allreduce_local``.
        total = np.array(values, dtype=np.float64, copy=True)
        step, deadline = self.step, time.monotonic() + self.timeout
        if len(self.sockets) > 1 and self._values.size < total.size:
            self._values = np.empty(total.size, dtype=np.float64)
        for rank in range(1, len(self.sockets)):
            def lost(reason, rank=rank):
                return LostPeer(f"distributed fit: rank(s) [{rank}] did not reach step "
                                f"{step} within {self.timeout:g} s (a worker lost or "
                                f"stalled): {reason}")

            part = _read_frame(self.sockets[rank], self._raw,
                               self._values[:total.size].reshape(total.shape), step,
                               n_summed, deadline, self.ended, self.poll, lost)
            self._add_rank(total, part, n_summed)
        head = _header(_VALUES, step, n_summed, total.shape)
        for rank in range(1, len(self.sockets)):
            def lost(reason, rank=rank):
                return LostPeer(f"distributed fit: rank {rank} did not take the sum of "
                                f"step {step}: {reason}")

            _send(self.sockets[rank], head, deadline + _SLACK, self.ended, self.poll, lost)
            if total.size:
                _send(self.sockets[rank], total.reshape(-1), deadline + _SLACK,
                      self.ended, self.poll, lost)
        return total

    def _peer_step(self, values, n_summed):
        step, deadline = self.step, time.monotonic() + self.timeout + _SLACK
        sock = self.sockets[0]

        def lost(reason):
            return LostPeer(f"distributed fit: rank 0 (the all-reduce), or a rank it "
                            f"waits on, was lost at step {step} (a worker lost or "
                            f"stalled): {reason}")

        _send(sock, _header(_VALUES, step, n_summed, values.shape), deadline, self.ended,
              self.poll, lost)
        if values.size:
            _send(sock, values.reshape(-1), deadline, self.ended, self.poll, lost)
        return _read_frame(sock, self._raw, np.empty(values.shape, dtype=np.float64), step,
                           n_summed, deadline, self.ended, self.poll, lost)

    def _tell_others(self, exc):
        """Rank 0: send ``exc``'s message as an error frame (``_LOST`` for a lost
        rank) to every other rank (best effort, a short bound each), so that they
        end with it."""
        data = (str(exc) or type(exc).__name__).encode("utf-8")[:MAX_MESSAGE]
        head = _header(_LOST if isinstance(exc, LostPeer) else _ERROR, self.step,
                       len(data), ())
        for rank in range(1, len(self.sockets or ())):
            try:
                _send(self.sockets[rank], head + data, time.monotonic() + 1.0, None,
                      self.poll, LostPeer)
            except Exception:  # noqa: BLE001 - that rank is gone too
                pass

    def close(self):
        """Close every connection (idempotent)."""
        sockets, self.sockets = self.sockets, None
        for sock in sockets or ():
            if sock is not None:
                sock.close()
