"""gbc-core's own exp and log (``_exp.h``): fdlibm's methods, the same bits on every
CPU, exp on vector lanes the same bits as one value at a time; and the kernels of
the fit and of prediction that take them."""

import math
import struct
from decimal import Decimal, localcontext

import numpy as np
import pytest

from gbc_core import _leaves
from gbc_core._common import NODE_DTYPE, ROW_STAT_DTYPE


def _hex(bits):
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def _bits(x):
    return struct.unpack(">Q", struct.pack(">d", x))[0]


def _of_bits(u):
    return struct.unpack(">d", struct.pack(">Q", u & 0xFFFFFFFFFFFFFFFF))[0]


# fdlibm's e_exp.c constants, by their bits.
_HALF = (0.5, -0.5)
_LN2HI = (_hex("3fe62e42fee00000"), _hex("bfe62e42fee00000"))
_LN2LO = (_hex("3dea39ef35793c76"), _hex("bdea39ef35793c76"))
_INVLN2 = _hex("3ff71547652b82fe")
_O_THRESHOLD = _hex("40862e42fefa39ef")
_U_THRESHOLD = _hex("c0874910d52d3051")
_P = [_hex(h) for h in ("3fc555555555553e", "bf66c16c16bebd93", "3f11566aaf25de2c",
                        "bebbbd41c5d26bf1", "3e66376972bea4d0")]
_TWOM1000 = 2.0 ** -1000


def _naive_exp(x):
    """fdlibm's __ieee754_exp of one x, branch by branch in Python floats (float64,
    no fused multiply-add), its k = +-1 case and its k = 0 formula included: the
    numbers the kernels' exp must give, bit for bit, on every CPU."""
    hx = (_bits(x) >> 32) & 0x7FFFFFFF
    xsb = _bits(x) >> 63
    if hx >= 0x40862E42:
        if hx >= 0x7FF00000:
            if x != x:
                return x + x
            return 0.0 if xsb else x
        if x > _O_THRESHOLD:
            return math.inf
        if x < _U_THRESHOLD:
            return 0.0
    k = 0
    if hx > 0x3FD62E42:
        if hx < 0x3FF0A2B2:
            hi = x - _LN2HI[xsb]
            lo = _LN2LO[xsb]
            k = 1 - xsb - xsb
        else:
            k = int(_INVLN2 * x + _HALF[xsb])  # int() truncates, as C's (int)
            t = float(k)
            hi = x - t * _LN2HI[0]
            lo = t * _LN2LO[0]
        x = hi - lo
    elif hx < 0x3E300000:
        return 1.0 + x
    t = x * x
    c = x - t * (_P[0] + t * (_P[1] + t * (_P[2] + t * (_P[3] + t * _P[4]))))
    if k == 0:
        return 1.0 - ((x * c) / (c - 2.0) - x)
    y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi)
    if k >= -1021:
        return _of_bits(_bits(y) + (k << 52))
    return _of_bits(_bits(y) + ((k + 1000) << 52)) * _TWOM1000


_LG = [_hex(h) for h in ("3fe5555555555593", "3fd999999997fa04", "3fd2492494229359",
                         "3fcc71c51d8e78af", "3fc7466496cb03de", "3fc39a09d078c69f",
                         "3fc2f112df3e5244")]


def _naive_log(x):
    """fdlibm's __ieee754_log of one x, branch by branch (its k = 0 and f = 0 cases
    included)."""
    u = _bits(x)
    hx = u >> 32
    if hx & 0x80000000:
        hx -= 1 << 32  # the signed high word
    lx = u & 0xFFFFFFFF
    k = 0
    if hx < 0x00100000:
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf
        if hx < 0:
            return math.nan
        k -= 54
        x *= 2.0 ** 54
        hx = _bits(x) >> 32
    if hx >= 0x7FF00000:
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    x = _of_bits((_bits(x) & 0x000FFFFFFFFFFFFF) | ((i ^ 0x3FF00000) << 32))
    k += i >> 20
    f = x - 1.0
    ln2_hi, ln2_lo = _LN2HI[0], _LN2LO[0]
    if (0x000FFFFF & (2 + hx)) < 3:
        if f == 0.0:
            if k == 0:
                return 0.0
            dk = float(k)
            return dk * ln2_hi + dk * ln2_lo
        r = f * f * (0.5 - 0.33333333333333333 * f)
        if k == 0:
            return f - r
        dk = float(k)
        return dk * ln2_hi - ((r - dk * ln2_lo) - f)
    s = f / (2.0 + f)
    dk = float(k)
    z = s * s
    i = hx - 0x6147A
    w = z * z
    j = 0x6B851 - hx
    t1 = w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    t2 = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6])))
    i |= j
    r = t2 + t1
    if i > 0:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * ln2_hi - ((s * (f - r) - dk * ln2_lo) - f)


def _neighbours(values):
    out = []
    with np.errstate(over="ignore"):
        for v in values:
            out += [v, np.nextafter(v, -np.inf), np.nextafter(v, np.inf)]
    return out


def _exp_arguments(n, seed=3):
    """A dense sweep of -745..710 (the subnormal results and the overflow edge
    included), the arguments of the fit (-|F|, differences of scores), every binade
    of small |x|, and each bound of the method's cases with its neighbours."""
    rng = np.random.default_rng(seed)
    edges = [0.0, -0.0, 5e-324, 2.0 ** -28, _hex("3fd62e4300000000"),
             _hex("3fd62e42ffffffff"), _hex("3ff0a2b200000000"), math.log(2) / 2,
             1.5 * math.log(2), 1.0, 10.0, 100.0, 700.0, -708.3964185322641,
             -708.4, -709.0, -709.1, -744.44, _O_THRESHOLD, _U_THRESHOLD, 709.7,
             -745.0, -745.2, 710.0, 1000.0, -1000.0, 1e300, -1e300]
    edges = _neighbours(edges + [-e for e in edges])
    parts = [np.linspace(-745.2, 710.0, 200_001), -np.abs(rng.normal(scale=4.0, size=n)),
             rng.uniform(-40, 40, size=n),
             np.sign(rng.uniform(-1, 1, size=n)) * 2.0 ** rng.uniform(-60, 3, size=n),
             np.array(edges)]
    # x whose x/ln2 + 1/2 is (nearly) an integer: the truncation of k at its edges.
    k = rng.integers(-1074, 1024, size=n).astype(float)
    half = np.where(k >= 0, k + 0.5, k - 0.5) * math.log(2)
    parts += [half, np.nextafter(half, np.inf), np.nextafter(half, -np.inf)]
    return np.concatenate(parts)


_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 709.79, -745.2, 1e-300,
                      -1e-10, 0.5, -0.5, 3.0, -700.0, -709.5, _O_THRESHOLD, _U_THRESHOLD,
                      _hex("3fd62e4300000000"), -_hex("3fd62e4300000000")])


def _ulps(got, exact):
    """|got - exact| in units of the last place of the float64 nearest ``exact`` (a
    Decimal), at least the subnormal unit."""
    near = float(exact)
    unit = max(math.ulp(near), 5e-324)
    if math.isinf(near):
        unit = math.ulp(1.7976931348623157e308)
    return float(abs(Decimal(got) - exact) / Decimal(unit))


def _bits_equal(got, expected, what):
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    same = (got.view(np.int64) == expected.view(np.int64)) | (np.isnan(got) & np.isnan(expected))
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise AssertionError(f"{what}: {int((~same).sum())} of {same.size} differ; first at "
                             f"{i}: {got[i]!r} against {expected[i]!r}")


def test_exp_is_fdlibms_method_bit_for_bit():
    """The scalar definition equals fdlibm's exp evaluated branch by branch, bit for
    bit, on a dense sweep of -745..710, the edges of its cases and of the
    truncation of k, NaN, +-inf and +-0."""
    x = np.concatenate([_exp_arguments(20000), _SPECIALS])
    out = np.empty_like(x)
    _leaves.exp_each(x, out)
    _bits_equal(out, [_naive_exp(v) for v in x.tolist()], "gbc_exp against fdlibm")
    assert np.isnan(out[np.isnan(x)]).all()
    assert out[x == np.inf].tolist() == [np.inf]
    assert out[x == -np.inf].tolist() == [0.0]
    assert (out[x == 0.0] == 1.0).all()
    assert out[x > _O_THRESHOLD].tolist() == [np.inf] * int((x > _O_THRESHOLD).sum())
    assert (out[x < _U_THRESHOLD] == 0.0).all()
    assert 0.0 < out[x == _U_THRESHOLD][0] < 1e-323 and np.isfinite(out[x == _O_THRESHOLD]).all()


def test_exp_is_within_one_unit_in_the_last_place():
    """Against exp to 40 digits (Python's decimal): below one unit in the last place
    on the fit's arguments, the whole range and the subnormal results; and within
    one unit of the C library's exp."""
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-745.1, 709.7, size=3000), -np.abs(rng.normal(
        scale=4.0, size=3000)), rng.uniform(-745.1, -708.4, size=1000),
        np.sign(rng.uniform(-1, 1, size=1000)) * 2.0 ** rng.uniform(-40, 3, size=1000)])
    out = np.empty_like(x)
    _leaves.exp_each(x, out)
    with localcontext() as ctx:
        ctx.prec = 40
        worst = max(_ulps(g, Decimal(v).exp()) for g, v in zip(out.tolist(), x.tolist()))
    assert worst < 1.0
    libm = np.array([math.exp(v) for v in x.tolist()])
    assert np.all(np.abs(out - libm) <= np.maximum(np.spacing(libm), 5e-324))


@pytest.mark.parametrize("wide", [False, True])
def test_exp_on_vector_lanes_is_the_scalar_definition(wide):
    """``exp_block`` (two lanes, or four where the CPU has AVX2) gives the scalar
    definition's bits for every value, at every lane position (each special value
    in turn at each position), and every length 0..17 (the tails past the last full
    vector)."""
    if wide and not _leaves.exp_wide():
        pytest.skip("this CPU has no AVX2: the four-lane kernel is not taken")
    x = _exp_arguments(20000)
    out, expected = np.empty_like(x), np.empty_like(x)
    _leaves.exp_block(x, out, wide)
    _leaves.exp_each(x, expected)
    _bits_equal(out, expected, "exp_block against gbc_exp")
    rng = np.random.default_rng(6)
    for n in range(18):
        for shift in range(len(_SPECIALS)):
            v = np.roll(_SPECIALS, shift)[:n].copy()
            v[n // 2:] = np.where(rng.uniform(size=n - n // 2) < 0.5, v[n // 2:],
                                  rng.uniform(-50, 50, size=n - n // 2))
            got, want = np.empty(n), np.empty(n)
            _leaves.exp_block(v, got, wide)
            _leaves.exp_each(v, want)
            _bits_equal(got, want, f"exp_block of {n} values")
        inplace = x[:n].copy()
        _leaves.exp_block(inplace, inplace, wide)
        _bits_equal(inplace, expected[:n], "exp_block in place")
    with pytest.raises(ValueError, match="out holds 3 values; expected 4"):
        _leaves.exp_block(x[:4].copy(), np.empty(3))


def test_log_is_fdlibms_method_within_one_unit():
    """The kernels' log equals fdlibm's log branch by branch, bit for bit (subnormal
    x, x near 1, the edges of its cases), is below one unit in the last place
    against log to 40 digits, and log(0) = -inf, log(x < 0) = NaN, log(inf) = inf."""
    rng = np.random.default_rng(7)
    near_one = 1.0 + rng.uniform(-2.0 ** -19, 2.0 ** -19, size=2000)
    edges = [1.0, 2.0, 0.5, math.sqrt(2), math.sqrt(0.5), 5e-324, 2.2250738585072014e-308,
             1.7976931348623157e308, 1.0 + 2.0 ** -20, 1.0 - 2.0 ** -20,
             _hex("3ff6147a00000000"), _hex("3ff6b85100000000"), _hex("3ff6b851ffffffff"),
             _hex("3ff6b85200000000"), _hex("3ff6a09c00000000")]
    x = np.concatenate([2.0 ** rng.uniform(-1074, 1024, size=5000),
                        rng.uniform(1, 10, size=5000), near_one, _neighbours(edges)])
    x = x[np.isfinite(x) & (x > 0)]
    out = np.empty_like(x)
    _leaves.log_each(x, out)
    _bits_equal(out, [_naive_log(v) for v in x.tolist()], "gbc_log against fdlibm")
    with localcontext() as ctx:
        ctx.prec = 40
        worst = max(_ulps(g, Decimal(v).ln()) for g, v in zip(out.tolist(), x.tolist())
                    if v != 1.0)
    assert worst < 1.0
    libm = np.array([math.log(v) for v in x.tolist()])
    assert np.all(np.abs(out - libm) <= np.spacing(np.abs(libm)))
    special = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, 1.0])
    got = np.empty_like(special)
    _leaves.log_each(special, got)
    assert got[:2].tolist() == [-np.inf, -np.inf] and np.isnan(got[2:4]).all()
    assert got[4] == np.inf and np.isnan(got[5]) and got[6] == 0.0 and not np.signbit(got[6])


def _log_arguments(n, seed=8):
    """Every binade of float64 (subnormals included), the softmax totals of the fit
    (1 .. K), values near 1 (the |f| < 2^-20 case), the bounds of the method's
    cases with their neighbours, and the special values: +-0, negative numbers,
    +-inf and NaNs of either sign and other payloads."""
    rng = np.random.default_rng(seed)
    edges = [1.0, 2.0, 0.5, 3.0, 5.0, math.sqrt(2), math.sqrt(0.5), 5e-324, 1e-320,
             2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
             1.0 + 2.0 ** -20, 1.0 - 2.0 ** -20, 1.0 + 2.0 ** -21, 1.0 - 2.0 ** -21,
             _hex("3ff6147a00000000"), _hex("3ff6147900000000"), _hex("3ff6b85100000000"),
             _hex("3ff6b851ffffffff"), _hex("3ff6b85200000000"), _hex("3ff6a09c00000000"),
             _hex("3fe6a09c00000000"), _hex("3ff6a09e667f3bcd"), _hex("000fffffffffffff"),
             _hex("0000000000000001"), _hex("0010000000000000")]
    nan_payloads = [_hex("7ff8000000000000"), _hex("fff8000000000000"),
                    _hex("7ff0000000000001"), _hex("fff4000000000123"),
                    _hex("7ffc0000deadbeef")]
    specials = [0.0, -0.0, -1.0, -5e-324, -1e300, -np.inf, np.inf] + nan_payloads
    x = np.concatenate([2.0 ** rng.uniform(-1074, 1024, size=n),
                        rng.uniform(1.0, 5.0, size=n),
                        1.0 + rng.uniform(-2.0 ** -19, 2.0 ** -19, size=n // 4),
                        _of_bits_array(rng.integers(1, 1 << 52, size=n // 4)),
                        _neighbours(edges), specials])
    return x


def _of_bits_array(u):
    return np.asarray(u, dtype=np.uint64).view(np.float64)


@pytest.mark.parametrize("wide", [False, True])
def test_log_on_vector_lanes_is_the_scalar_definition(wide):
    """``log_block`` (two lanes, or four where the CPU has AVX2) gives ``gbc_log``'s
    bits for every value (NaNs' bits included: payload and sign), every special value
    at every lane position, every length 0..17 (the tails past the last full
    vector), in place too."""
    if wide and not _leaves.exp_wide():
        pytest.skip("this CPU has no AVX2: the four-lane kernel is not taken")
    x = _log_arguments(20000)
    out, expected = np.empty_like(x), np.empty_like(x)
    with np.errstate(all="ignore"):
        _leaves.log_block(x, out, wide)
    _leaves.log_each(x, expected)
    assert np.array_equal(out.view(np.uint64), expected.view(np.uint64)), (
        int((out.view(np.uint64) != expected.view(np.uint64)).sum()))
    positive = x[np.isfinite(x) & (x > 0)]
    _bits_equal(expected[np.isfinite(x) & (x > 0)], [_naive_log(v) for v in positive.tolist()],
                "gbc_log against fdlibm")
    specials = x[-12:]
    rng = np.random.default_rng(9)
    for n in range(18):
        for shift in range(len(specials)):
            v = np.roll(np.tile(specials, 2), shift)[:n].copy()
            v[n // 2:] = np.where(rng.uniform(size=n - n // 2) < 0.5, v[n // 2:],
                                  rng.uniform(1.0, 5.0, size=n - n // 2))
            got, want = np.empty(n), np.empty(n)
            _leaves.log_block(v, got, wide)
            _leaves.log_each(v, want)
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (n, shift)
        inplace = x[:n].copy()
        _leaves.log_block(inplace, inplace, wide)
        assert np.array_equal(inplace.view(np.uint64), expected[:n].view(np.uint64))
    with pytest.raises(ValueError, match="out holds 3 values; expected 4"):
        _leaves.log_block(x[:4].copy(), np.empty(3))


def _exp(x):
    out = np.empty_like(np.asarray(x, dtype=np.float64))
    _leaves.exp_each(np.ascontiguousarray(x, dtype=np.float64), out)
    return out


def _expit(raw):
    """sigma(F) one row at a time from the scalar exp (``expit``'s formula)."""
    e = _exp(-np.abs(raw))
    return np.where(raw >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softmax_rows(raw):
    """softmax of each row of (n, K) scores, one exp at a time, sums in class order."""
    top = raw.max(axis=1, keepdims=True)
    e = _exp((raw - top).ravel()).reshape(raw.shape)
    total = np.zeros(raw.shape[0])
    for k in range(raw.shape[1]):
        total = total + e[:, k]
    return e / total[:, None], top[:, 0], total


def _scores(rng, n):
    return rng.normal(size=n) * rng.choice([1e-9, 1.0, 40.0, 800.0], size=n)


@pytest.mark.parametrize("n", [0, 1, 3, 255, 256, 257, 1000])
def test_binary_probabilities_are_the_scalar_exps_bits(n):
    """The binary kernels' probabilities (prediction's ``proba_from_raw``, the fit's
    ``boosting_update``) take the exponentials of a block of rows at once on vector
    lanes: the same bits as sigma(F) from the scalar exp one row at a time, for
    every length (blocks with tails), scores of every size and both signs."""
    rng = np.random.default_rng(n)
    raw = _scores(rng, n)
    out = np.empty((n, 2))
    _leaves.proba_from_raw(raw, out, 1)
    p = _expit(raw)
    _bits_equal(out[:, 1], p, "proba_from_raw")
    _bits_equal(out[:, 0], 1.0 - p, "proba_from_raw, class 0")
    if n == 0:
        return
    y = rng.integers(0, 2, size=n).astype(np.int32)
    prob, residual = np.empty(n), np.empty(n)
    rs = np.empty(n, dtype=ROW_STAT_DTYPE)
    f0 = raw.copy()
    _leaves.init_state(y, None, raw, prob, residual, rs)
    _bits_equal(prob, p, "init_state")
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["feature"] = [0, -1, -1]
    leaf = rng.integers(1, 3, size=n).astype(np.int32)
    loss, _ = _leaves.boosting_update(nodes, leaf, None, y, None, 0.1, raw, prob,
                                      residual, rs, 1)
    f = f0 + 0.1 * nodes["value"][leaf]
    _bits_equal(raw, f, "boosting_update's F")
    _bits_equal(prob, _expit(f), "boosting_update's p")
    _bits_equal(residual, y - _expit(f), "boosting_update's r")
    # The loss: log(1 + e^-|F|) one row at a time (the scalar lanes), then the
    # definition with its branch, (F + l) - y F for F > 0, else l - y F, summed in
    # row order.
    l = np.empty(n)
    _leaves.log1p_units(_exp(-np.abs(f)), l, False)
    twin = 0.0
    for term in (np.where(f > 0, f + l, l) - y * f).tolist():
        twin = twin + term
    assert loss == twin / n, (loss, twin / n)


def test_sigma_and_the_log_loss_at_the_edges_are_the_branchy_definitions():
    """sigma(F) and a row's log-loss are taken without a branch on F's sign (the
    numerator 1 or e^-|F| picked by a mask; max(F, 0) + log(1 + e^-|F|) - y F):
    the same bits as the definitions with their branches at +-0, +-inf, NaN,
    subnormal and huge scores, for both labels."""
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-300,
                     -1e-300, 36.7, -36.7, 745.2, -745.2, 1e308, -1e308, 1.5, -1.5])
    raw = np.concatenate([edge, edge])
    y = np.repeat([0, 1], edge.size).astype(np.int32)
    out = np.empty((raw.size, 2))
    _leaves.proba_from_raw(raw, out, 1)
    _bits_equal(out[:, 1], _expit(raw), "proba_from_raw at the edges")
    l = np.empty(raw.size)
    _leaves.log1p_units(_exp(-np.abs(raw)), l, False)
    with np.errstate(invalid="ignore"):
        twin = np.where(raw > 0, raw + l, l) - y * raw
    got = [_leaves.weighted_log_loss(y[i:i + 1], raw[i:i + 1], None)
           for i in range(raw.size)]  # each row's loss alone (its weight 1)
    _bits_equal(got, twin, "weighted_log_loss at the edges")


def test_large_predictions_are_the_same_on_any_number_of_threads():
    """Prediction's probabilities of many rows in chunks on several threads: the
    same bits as on one (and as the scalar exp)."""
    rng = np.random.default_rng(8)
    raw = _scores(rng, 200_000 + 333)
    one, two = np.empty((raw.shape[0], 2)), np.empty((raw.shape[0], 2))
    _leaves.proba_from_raw(raw, one, 1)
    _leaves.proba_from_raw(raw, two, 3)
    _bits_equal(two, one, "proba_from_raw on 3 threads")
    _bits_equal(one[:, 1], _expit(raw), "proba_from_raw")
    K = 4
    scores = rng.normal(size=(200_000 + 77, K)) * 5
    s1, s3 = np.empty_like(scores), np.empty_like(scores)
    _leaves.softmax(scores, s1, 1)
    _leaves.softmax(scores, s3, 3)
    _bits_equal(s3, s1, "softmax on 3 threads")
    _bits_equal(s1, _softmax_rows(scores)[0], "softmax")


@pytest.mark.parametrize("n", [1, 2, 5, 256, 513, 9000])
@pytest.mark.parametrize("K", [3, 5])
def test_multiclass_probabilities_are_the_scalar_exps_bits(n, K):
    """Softmax of prediction (rows of K scores, the block's exps at once) and of the
    fit (``multinomial_state``: each class's scores of a block at once), and the
    log-probabilities: the same bits as one exp at a time with the sums in class
    order; the fit's loss is sum w (top + log(total) - F_y) in row order."""
    rng = np.random.default_rng(n + K)
    raw = rng.normal(size=(n, K)) * rng.choice([1e-9, 1.0, 30.0, 800.0], size=(n, 1))
    p, top, total = _softmax_rows(raw)
    out = np.empty_like(raw)
    _leaves.softmax(raw, out, 1)
    _bits_equal(out, p, "softmax")
    log_total = np.empty(n)
    _leaves.log_each(total, log_total)
    _leaves.multinomial_log_proba(raw, out)
    _bits_equal(out, raw - (top + log_total)[:, None], "multinomial_log_proba")
    y = rng.integers(0, K, size=n).astype(np.int32)
    w = rng.uniform(0.5, 2, size=n)
    mask = (rng.uniform(size=n) < 0.8).astype(np.uint8)
    by_class = np.ascontiguousarray(raw.T)
    prob, residual = np.empty_like(by_class), np.empty_like(by_class)
    loss = _leaves.multinomial_state(by_class, y, w, mask, prob, residual, 1)
    _bits_equal(prob, p.T, "multinomial_state's p")
    _bits_equal(residual, (y[None, :] == np.arange(K)[:, None]) - p.T, "its r")
    terms = w * ((top + log_total) - raw[np.arange(n), y])
    total_loss = total_weight = 0.0
    for start in range(0, n, 8192):
        chunk, chunk_w = 0.0, 0.0
        for t, ww, m in zip(terms[start:start + 8192].tolist(),
                            w[start:start + 8192].tolist(), mask[start:start + 8192].tolist()):
            if m:
                chunk += t
                chunk_w += ww
        total_loss += chunk
        total_weight += chunk_w
    assert loss == total_loss / total_weight


def test_no_kernel_takes_the_c_librarys_exp_or_log():
    """No kernel imports exp, log, log1p or another transcendental function from
    the C library, so that no fit, prediction or metric depends on the machine's C
    library. Reads the checkout's sources (tests/ beside src/), where the README's
    test command and CI run; the loss kernels' import line is pinned."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "gbc_core"
    if not (src / "_leaves.pyx").exists():
        pytest.skip("tests/ is not beside the sources (src/gbc_core)")
    banned = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "pow", "sqrt",
              "cbrt", "sin", "cos", "tan", "tanh", "erf", "erfc", "lgamma", "tgamma"}
    found = {}
    for path in sorted(src.glob("*.p[yx]*")):
        for line in path.read_text().splitlines():
            m = re.match(r"\s*from libc\.math cimport (.*)", line)
            if m:
                names = {n.strip().split(" as ")[0] for n in m.group(1).split(",")}
                if names & banned:
                    found[path.name] = sorted(names & banned)
    assert found == {}
    imports = [line for line in (src / "_leaves.pyx").read_text().splitlines()
               if "libc.math cimport" in line]
    assert imports == ["from libc.math cimport fabs, INFINITY"]


def test_the_log_loss_metric_takes_the_kernels_logarithms():
    """``metrics.log_loss``'s log(1 - p) (``log_one_minus``): within 2 ulp of
    NumPy's log1p(-p) over (0, 1), tiny and near-one p included, and its sums equal
    a twin built from the kernels' own log and log1p."""
    from gbc_core import _leaves
    from gbc_core.metrics import log_loss

    rng = np.random.default_rng(7)
    p = np.concatenate([rng.uniform(0.0, 1.0, 20000), 10.0 ** -rng.uniform(1, 15, 2000),
                        1.0 - 10.0 ** -rng.uniform(1, 15, 2000), [0.5, 0.25, 0.75]])
    p = np.clip(p, np.finfo(np.float64).eps, 1.0 - np.finfo(np.float64).eps)
    y = np.zeros(p.shape[0])
    total, weight = _leaves.proba_log_loss(y, p, None, np.finfo(np.float64).eps)
    terms = np.empty_like(p)
    for i, v in enumerate(p):  # one row at a time: the loss of row i alone
        terms[i] = _leaves.proba_log_loss(y[i:i + 1], p[i:i + 1], None, 0.0)[0]
    reference = -np.log1p(-p)
    ulp = np.spacing(np.abs(reference))
    assert (np.abs(terms - reference) <= 2 * ulp).all()
    twin = 0.0
    for t in terms.tolist():  # row order
        twin += t
    assert total == twin and weight == p.shape[0]
    assert abs(log_loss([0, 1, 0], [0.2, 0.7, 0.9]) - np.mean(
        -np.log([0.8, 0.7, 0.1]))) < 1e-15
