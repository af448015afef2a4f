"""The socket all-reduce of a data-parallel fit (``_socket_allreduce``), ranks as
threads of this process: the sums are ``allreduce_local``'s in rank order bit for
bit, a connection without the fit's token is closed, a header that does not match
the step is refused before anything is read, a rank that closes or stalls is a
clear error within the step timeout, and every socket is closed."""

import socket
import struct
import threading
import time

import numpy as np
import pytest

from gbc_core import _socket_allreduce as sa
from gbc_core._distributed import allreduce_local


def _ranks(n):
    """(rank 0's listener, its address, the fit's token)."""
    token = sa.new_token()
    listener = sa.Listener("127.0.0.1", n, token)
    return listener, listener.address, token


def _run_ranks(n, body, timeout=10.0, poll=0.05):
    """Run ``body(comm)`` on ``n`` ranks (threads, connected as a fit connects
    them); their results or errors in rank order, and the comms."""
    listener, address, token = _ranks(n)
    conns = [None] + [sa.connect(address, token, r, n, timeout) for r in range(1, n)]
    comms = [sa.SocketComm(0, listener.accept(timeout), timeout, poll=poll)]
    comms += [sa.SocketComm(r, [conns[r]], timeout, poll=poll) for r in range(1, n)]
    out = [None] * n

    def run(rank):
        try:
            out[rank] = ("ok", body(comms[rank]))
        except Exception as exc:  # noqa: BLE001
            out[rank] = ("error", exc)
        finally:
            comms[rank].close()

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a rank still waits"
    return out, comms


@pytest.mark.parametrize("shape, n_summed", [((5, 3), 3), ((1, 40), 30), ((4, 7, 3), 1),
                                             ((2, 6), 4), ((3, 5), 0)])
def test_allreduce_local_is_its_naive_twin(shape, n_summed):
    """``allreduce_local`` (``add_rank`` one process after another) against plain
    loops over the elements: the summed columns added in process order, then the
    minimum of one column and the maximum of the rest, with three processes."""
    rng = np.random.default_rng(1)
    parts = [rng.normal(size=shape) * 10.0 ** rng.integers(-8, 8, size=shape)
             for _ in range(3)]
    before = [p.copy() for p in parts]
    got = allreduce_local(parts, n_summed)
    expected = np.array(parts[0], copy=True)
    for part in parts[1:]:
        for index in np.ndindex(shape):
            column = index[-1]
            if column < n_summed:
                expected[index] = expected[index] + part[index]
            elif column == n_summed:
                expected[index] = min(expected[index], part[index])
            else:
                expected[index] = max(expected[index], part[index])
    assert got.tobytes() == expected.tobytes()
    assert all(p.tobytes() == b.tobytes() for p, b in zip(parts, before))  # inputs kept
    with pytest.raises(ValueError, match="shapes"):
        allreduce_local([parts[0], parts[1][..., :-1]], n_summed)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_sums_are_allreduce_local_in_rank_order(n):
    """Steps of several shapes (the summed columns, then a minimum and maxima), on
    values whose sum shows the order: every rank gets allreduce_local's bits."""
    rng = np.random.default_rng(0)
    steps = [((5, 3), 3), ((1, 40), 30), ((4, 7, 3), 3), ((0, 3), 3), ((6,), 6),
             ((2, 2, 2, 2), 1)]
    sent = [[rng.normal(size=shape) * 10.0 ** rng.integers(-8, 8, size=shape)
             for shape, _ in steps] for _ in range(n)]
    expected = [allreduce_local([sent[r][i] for r in range(n)], k)
                for i, (_, k) in enumerate(steps)]

    def body(comm):
        return [comm.allreduce(sent[comm.rank][i], k) for i, (_, k) in enumerate(steps)]

    out, comms = _run_ranks(n, body)
    for rank, (kind, got) in enumerate(out):
        assert kind == "ok", got
        for a, b in zip(got, expected):
            assert a.shape == b.shape and a.dtype == np.float64
            assert a.tobytes() == b.tobytes(), rank
    assert all(c.sockets is None for c in comms)
    if n == 3:  # the order shows in these sums: the reversed order gives other bits
        backwards = [allreduce_local([sent[r][i] for r in (2, 1, 0)], k)
                     for i, (_, k) in enumerate(steps)]
        assert any(a.tobytes() != b.tobytes() for a, b in zip(backwards, expected))


def _raw(address):
    return socket.create_connection(address, timeout=5.0)


def _closed_by_peer(sock):
    """Whether the other end closed ``sock`` (EOF or reset within 5 s)."""
    sock.settimeout(5.0)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_connection_without_the_token_is_closed():
    """Wrong token, wrong rank, garbage, an early close: each closed by rank 0, which
    goes on waiting for the real ranks and takes them."""
    listener, address, token = _ranks(3)
    accepted = {}
    taking = threading.Thread(target=lambda: accepted.update(peers=listener.accept(10.0)),
                              daemon=True)
    taking.start()
    bad = []
    for hello in (sa._HELLO.pack(sa._HELLO_MAGIC, sa._VERSION, 1, 3, b"x" * 32),
                  sa._HELLO.pack(sa._HELLO_MAGIC, sa._VERSION, 3, 3, token),
                  sa._HELLO.pack(sa._HELLO_MAGIC, sa._VERSION, 1, 4, token),
                  b"GET / HTTP/1.1\r\n\r\n" + b"\0" * 40):
        sock = _raw(address)
        sock.sendall(hello)
        bad.append(sock)
    early = _raw(address)
    early.close()
    good = [sa.connect(address, token, r, 3, 5.0) for r in (2, 1)]
    taking.join(20)
    peers = accepted["peers"]
    try:
        assert peers[0] is None and all(p is not None for p in peers[1:])
        for sock in bad:
            assert _closed_by_peer(sock)
        # The listener is closed once the ranks are in.
        with pytest.raises(OSError):
            socket.create_connection(address, timeout=1.0)
    finally:
        for s in bad + good + peers[1:]:
            s.close()


def test_no_rank_with_the_token_is_a_timeout_naming_the_ranks():
    listener, address, _ = _ranks(3)
    intruder = sa.connect(address, sa.new_token(), 1, 3, 5.0)
    t0 = time.monotonic()
    with pytest.raises(sa.LostPeer, match=r"rank\(s\) \[1, 2\] did not connect within 0.5 s"):
        listener.accept(0.5, poll=0.05)
    assert time.monotonic() - t0 < 5.0
    assert _closed_by_peer(intruder)
    intruder.close()
    assert listener.sock.fileno() == -1


def _pair(timeout=10.0, poll=0.05):
    """Rank 0's comm of a fit of two ranks, and rank 1's raw connection."""
    listener, address, token = _ranks(2)
    peer = sa.connect(address, token, 1, 2, timeout)
    return sa.SocketComm(0, listener.accept(timeout), timeout, poll=poll), peer


@pytest.mark.parametrize("case", ["magic", "kind", "step", "n_summed", "shape", "huge",
                                  "ndim"])
def test_a_header_that_does_not_match_the_step_is_refused(case):
    """Rank 0 checks a header against its own step before reading any value (a huge
    shape is refused, not allocated)."""
    comm, peer = _pair()
    fields = dict(magic=sa._FRAME_MAGIC, kind=sa._VALUES, step=1, n_summed=3, ndim=2,
                  dims=(4, 3, 0, 0))
    fields.update({"magic": dict(magic=b"HTTP"), "kind": dict(kind=7),
                   "step": dict(step=2), "n_summed": dict(n_summed=2),
                   "shape": dict(dims=(5, 3, 0, 0)),
                   "huge": dict(dims=(2 ** 40, 2 ** 20, 0, 0)),
                   "ndim": dict(ndim=1000)}[case])
    peer.sendall(struct.pack("<4sIQQI4Q", fields["magic"], fields["kind"], fields["step"],
                             fields["n_summed"], fields["ndim"], *fields["dims"]))
    match = {"magic": "garbled frame header", "kind": "garbled frame header"}.get(
        case, "where step 1 with n_summed 3 and shape \\(4, 3\\) was expected")
    try:
        with pytest.raises(sa.LostPeer, match=r"rank\(s\) \[1\] did not reach step 1.*"
                           + match):
            comm.allreduce(np.zeros((4, 3)), 3)
    finally:
        comm.close()
        peer.close()


def test_a_frame_the_size_of_an_earlier_step_is_refused():
    """Rank 0 reads a rank's values into a buffer kept from its largest step: a
    later, smaller step still takes only a header of its own shape (not one of the
    buffer's size), and the sums of the steps before are exact."""
    comm, peer = _pair()
    try:
        values = np.arange(24.0).reshape(8, 3)
        peer.sendall(sa._header(sa._VALUES, 1, 3, (8, 3)) + (values * 2).tobytes())
        total = comm.allreduce(values, 3)
        assert total.tobytes() == (values * 3).tobytes()
        raw = b""
        while len(raw) < sa._HEADER.size + values.nbytes:
            raw += peer.recv(4096)
        assert raw[sa._HEADER.size:] == total.tobytes()
        peer.sendall(sa._header(sa._VALUES, 2, 3, (8, 3)) + values.tobytes())
        with pytest.raises(sa.LostPeer, match=r"did not reach step 2 .*a frame of step 2 "
                           r"with n_summed 3 and shape \(8, 3\) where step 2 with "
                           r"n_summed 3 and shape \(4, 3\) was expected"):
            comm.allreduce(np.zeros((4, 3)), 3)
    finally:
        comm.close()
        peer.close()


def test_an_error_message_longer_than_the_bound_is_refused():
    listener, address, token = _ranks(2)
    conn = None
    peer_comm = None
    try:
        peer = sa.connect(address, token, 1, 2, 5.0)
        [_, conn] = listener.accept(5.0)
        peer_comm = sa.SocketComm(1, [peer], 5.0, poll=0.05)
        conn.sendall(sa._header(sa._ERROR, 1, sa.MAX_MESSAGE + 1, ()))
        with pytest.raises(sa.LostPeer, match="an error message of 4097 bytes"):
            peer_comm.allreduce(np.zeros(2), 2)
    finally:
        if peer_comm is not None:
            peer_comm.close()
        if conn is not None:
            conn.close()


def test_a_rank_that_closes_mid_step_is_a_lost_rank():
    """Rank 1 sends half a frame and closes: rank 0's error names it and the step,
    at once."""
    comm, peer = _pair(timeout=30.0)
    peer.sendall(sa._header(sa._VALUES, 1, 3, (4, 3)) + b"\0" * 20)
    peer.close()
    t0 = time.monotonic()
    try:
        with pytest.raises(sa.LostPeer, match=r"rank\(s\) \[1\] did not reach step 1 .*"
                           "connection closed"):
            comm.allreduce(np.zeros((4, 3)), 3)
    finally:
        comm.close()
    assert time.monotonic() - t0 < 10.0


def test_a_silent_rank_is_an_error_within_the_step_timeout():
    comm, peer = _pair(timeout=0.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(sa.LostPeer, match=r"rank\(s\) \[1\] did not reach step 1 "
                           r"within 0.5 s .*no answer"):
            comm.allreduce(np.zeros(3), 3)
    finally:
        comm.close()
        peer.close()
    assert time.monotonic() - t0 < 5.0


def test_rank_zero_lost_and_a_third_rank_told_why():
    """Three ranks; rank 2 closes at step 2: rank 0 names it, rank 1 gets rank 0's
    message (not a hang); a rank whose rank 0 closes gets a lost rank 0."""
    def body(comm):
        comm.allreduce(np.ones(3), 3)
        if comm.rank == 2:
            return None  # closes its connection (the thread's finally)
        return comm.allreduce(np.ones(3), 3)

    out, _ = _run_ranks(3, body)
    assert out[2] == ("ok", None)
    assert out[0][0] == "error" and isinstance(out[0][1], sa.LostPeer)
    assert "rank(s) [2] did not reach step 2" in str(out[0][1])
    assert out[1][0] == "error" and "rank(s) [2] did not reach step 2" in str(out[1][1])
    # (Told as a lost rank: the engine then looks for the lost worker.)
    assert isinstance(out[1][1], sa.LostPeer)

    def body0(comm):
        if comm.rank == 0:
            return None
        return comm.allreduce(np.ones(3), 3)

    out, _ = _run_ranks(2, body0)
    assert isinstance(out[1][1], sa.LostPeer)
    assert "rank 0 (the all-reduce), or a rank it waits on, was lost at step 1" in str(out[1][1])


def test_a_wait_ends_soon_after_the_fit_is_ended():
    """``ended()`` is looked at every ``poll`` s of a wait (the step timeout is long)."""
    listener, address, token = _ranks(2)
    peer = sa.connect(address, token, 1, 2, 5.0)
    conns = listener.accept(5.0)
    ended = threading.Event()
    comm = sa.SocketComm(1, [peer], 300.0, ended=ended.is_set, poll=0.05)
    threading.Timer(0.3, ended.set).start()
    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="ended by the client"):
            comm.allreduce(np.zeros(3), 3)
        assert time.monotonic() - t0 < 5.0
        with pytest.raises(RuntimeError, match="ended by the client"):
            comm.allreduce(np.zeros(3), 3)
    finally:
        comm.close()
        conns[1].close()
    comm.close()  # idempotent
    with pytest.raises(RuntimeError, match="the all-reduce is closed"):
        sa.SocketComm(1, None, 1.0).allreduce(np.zeros(1), 1)


def test_too_many_dimensions_are_refused():
    comm = sa.SocketComm(0, [None], 1.0)
    with pytest.raises(ValueError, match="at most 4 dimensions, got 5"):
        comm.allreduce(np.zeros((1,) * 5), 1)


def test_a_connection_that_says_nothing_holds_no_rank_up(monkeypatch):
    """A connection that never sends its hello is closed after the hello's bound,
    and the ranks behind it are taken within the fit's wait."""
    monkeypatch.setattr(sa, "_HELLO_TIMEOUT", 0.3)
    listener, address, token = _ranks(2)
    silent = _raw(address)
    accepted = {}
    taking = threading.Thread(target=lambda: accepted.update(peers=listener.accept(30.0)),
                              daemon=True)
    taking.start()
    time.sleep(0.1)
    good = sa.connect(address, token, 1, 2, 5.0)
    t0 = time.monotonic()
    taking.join(20)
    try:
        assert accepted["peers"][1] is not None
        assert time.monotonic() - t0 < 10.0
        assert _closed_by_peer(silent)
    finally:
        silent.close()
        good.close()
        if accepted.get("peers"):
            accepted["peers"][1].close()
