#!/usr/bin/env python3
"""Fits the polynomial coefficients of `ptxlab_device::precise`'s math
functions (exp, log, atan, asin, erf, erfc, cbrt).

Each fit is a minimax (Remez exchange) approximation on the interval the
Rust code reduces its argument to, in mpmath at 50 digits, with the error
weight the algorithm needs (relative or absolute). The coefficients are then
rounded to the target type (f64 or f32) and the error of the rounded
polynomial is re-measured on a dense grid (in exact arithmetic: the
evaluation's own rounding is measured by the Rust tests, not here).

Usage: python3 toolkit/device/tools/fit_math.py [name ...]   (needs mpmath)
Prints, for each fit, the Rust constants to paste into the source.
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 50


def round_to(v, ty):
    """Round an mpf to the nearest f64 or f32 (as a Python float)."""
    d = float(v)  # nearest f64
    if ty == "f32":
        # nearest f32 to the exact value: compare the two f32 neighbours of d
        f = struct.unpack("f", struct.pack("f", d))[0]
        bits = struct.unpack("I", struct.pack("f", f))[0]
        cands = [f]
        for b in (bits - 1, bits + 1):
            cands.append(struct.unpack("f", struct.pack("I", b & 0xFFFFFFFF))[0])
        d = min(cands, key=lambda c: abs(mp.mpf(c) - v))
    return d


def rust_lit(d, ty):
    """Shortest decimal literal that rounds back to `d` in `ty`."""
    for digits in range(1, 20):
        s = "%.*e" % (digits - 1, d)
        if ty == "f64" and float(s) == d:
            break
        if ty == "f32" and struct.unpack("f", struct.pack("f", float(s)))[0] == d:
            break
    mant, exp = s.split("e")
    e = int(exp)
    if "." not in mant:
        mant += ".0"
    return mant + ("" if e == 0 else "e%d" % e)


def horner(c, v):
    s = mp.mpf(0)
    for a in reversed(c):
        s = s * v + a
    return s


class Grid:
    """The fit's points (Chebyshev-distributed, ends excluded) with f and
    the weight evaluated once."""

    def __init__(self, f, a, b, weight, size):
        a, b = mp.mpf(a), mp.mpf(b)
        self.v = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * (i + mp.mpf(1) / 2) / size)
                  for i in range(size)]
        self.f = [f(v) for v in self.v]
        self.w = [weight(v, fv) for v, fv in zip(self.v, self.f)]


def remez(g, fixed, n, iters=60):
    """Discrete minimax on the grid: the coefficients of v^m .. v^(m+n-1)
    (m = len(fixed)) minimising max |w (f - fixed(v) - p(v))|."""
    m0 = len(fixed)
    res = [fv - horner(fixed, v) for v, fv in zip(g.v, g.f)]
    size = len(g.v)
    m = n + 1
    ref = [round((size - 1) * (1 - mp.cos(mp.pi * i / (m - 1))) / 2) for i in range(m)]
    best = None
    for _ in range(iters):
        A = mp.matrix(m, m)
        rhs = mp.matrix(m, 1)
        for i, k in enumerate(ref):
            for j in range(n):
                A[i, j] = g.v[k] ** (m0 + j)
            A[i, n] = (-1) ** i / g.w[k]
            rhs[i] = res[k]
        sol = mp.lu_solve(A, rhs)
        c = [sol[j] for j in range(n)]
        E = abs(sol[n])
        err = [w * (r - v**m0 * horner(c, v)) for v, r, w in zip(g.v, res, g.w)]
        maxerr = max(abs(e) for e in err)
        if best is None or maxerr < best[1]:
            best = (c, maxerr)
        ext = [i for i in range(size)
               if (i == 0 or abs(err[i]) >= abs(err[i - 1]))
               and (i == size - 1 or abs(err[i]) >= abs(err[i + 1]))]
        alt = []
        for i in ext:
            if alt and mp.sign(err[i]) == mp.sign(err[alt[-1]]):
                if abs(err[i]) > abs(err[alt[-1]]):
                    alt[-1] = i
            else:
                alt.append(i)
        while len(alt) > m:
            if abs(err[alt[0]]) < abs(err[alt[-1]]):
                alt.pop(0)
            else:
                alt.pop()
        if len(alt) < m or maxerr <= E * (1 + mp.mpf("1e-6")):
            break
        ref = alt
    return best


def fit(f, ty, n, a, b, weight, exact0=False, size=3000):
    """Minimax fit, then coefficient by coefficient: round it to `ty` and
    refit the ones after it (so later coefficients absorb the rounding of
    earlier ones), keeping a refit only where it beats plain rounding. With
    `exact0` the constant term stays exact (the Rust code keeps it as a
    pair hi + lo)."""
    g = Grid(f, a, b, weight, size)

    def error(c):
        return max(abs(w * (fv - horner(c, v))) for v, fv, w in zip(g.v, g.f, g.w))

    c, e_minimax = remez(g, [], n)
    fixed = [c[0]] if exact0 else []
    while len(fixed) < n:
        if fixed:
            refit = fixed + remez(g, fixed, n - len(fixed))[0]
            rounded_rest = fixed + [mp.mpf(round_to(v, ty)) for v in c[len(fixed):]]
            if error(refit) < error(rounded_rest):
                c = refit
        fixed.append(mp.mpf(round_to(c[len(fixed)], ty)))
    return fixed, e_minimax, error(fixed)


REL = lambda v, fv: 1 / abs(fv)  # relative error


# ---- the functions ---------------------------------------------------------------
LN2 = mp.log(2)
R_EXP = LN2 / 2 * (1 + mp.mpf(2) ** -20)  # |r| after the Cody-Waite reduction, with slack


def exp_p(r):
    """(e^r - 1 - r) / r^2."""
    if abs(r) < mp.mpf("1e-12"):
        return mp.mpf(1) / 2 + r / 6 + r * r / 24
    return (mp.exp(r) - 1 - r) / (r * r)


S_LOG = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)  # max |s| = |f / (2 + f)|, f = m - 1


def log_r(z):
    """(2 atanh(s) - 2 s - 2 s^3 / 3) / s^5, z = s^2."""
    if z < mp.mpf("1e-12"):
        return mp.mpf(2) / 5 + 2 * z / 7 + 2 * z * z / 9
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) - 2 * s - 2 * s**3 / 3) / s**5


TAN_PI_8 = mp.tan(mp.pi / 8)
Z_ATAN = TAN_PI_8**2 * (1 + mp.mpf(2) ** -20)  # x^2 after the reduction, with slack


def atan_p(z):
    """(atan(x) - x) / x^3, z = x^2."""
    if z < mp.mpf("1e-12"):
        return -mp.mpf(1) / 3 + z / 5 - z * z / 7
    x = mp.sqrt(z)
    return (mp.atan(x) - x) / x**3


def asin_p(z):
    """(asin(x) - x) / x^3, z = x^2."""
    if z < mp.mpf("1e-12"):
        return mp.mpf(1) / 6 + 3 * z / 40 + 15 * z * z / 336
    x = mp.sqrt(z)
    return (mp.asin(x) - x) / x**3


def erf_q(z):
    """erf(x) / x - 1, z = x^2."""
    if z < mp.mpf("1e-30"):
        return 2 / mp.sqrt(mp.pi) - 1
    x = mp.sqrt(z)
    return mp.erf(x) / x - 1


Z_ERF = mp.mpf("0.84375") ** 2 * (1 + mp.mpf(2) ** -20)  # erf's polynomial: |x| < 0.84375
ERFC_K = mp.mpf(4)


def erfcx_g(y):
    """(1 + 2x) e^(x^2) erfc(x) with x = K (1 + y) / (1 - y)."""
    x = ERFC_K * (1 + y) / (1 - y)
    return (1 + 2 * x) * mp.exp(x * x) * mp.erfc(x)


def y_of(x):
    x = mp.mpf(x)
    return (x - ERFC_K) / (x + ERFC_K)


# The weights below say how much an error of the fitted function counts in
# the final result. Where that weight vanishes (at 0), it is floored at
# 1/64 of its largest value: Remez needs a weight bounded away from zero,
# and the floor costs a fraction of a bit near 0, where nothing is lost.
def w_exp(r, fv):
    # the error of P reaches e^r as r^2 dP / e^r
    return max(r * r / mp.exp(r), R_EXP**2 / 64)


def w_log(z, fv):
    # s^5 dR against ln(1 + f) ~ 2 s: z^2 / 2
    return max(z * z / 2, S_LOG**4 / 128)


def w_atan(z, fv):
    # x^3 dP against x: z
    return max(z, Z_ATAN / 64)


def w_asin(z, fv):
    return max(z, mp.mpf(1) / 256)


def w_erf(z, fv):
    # erf = x (1 + Q): relative error dQ / (1 + Q)
    return 1 / (1 + fv)


TINY = mp.mpf(2) ** -40
FITS = {
    # name: (function, type, coefficients, interval, weight, exact constant term)
    "exp_f64": (exp_p, "f64", 11, (-R_EXP, R_EXP), w_exp, False),
    "exp_f32": (exp_p, "f32", 5, (-R_EXP, R_EXP), w_exp, False),
    "log_f64": (log_r, "f64", 8, (TINY, S_LOG**2), w_log, False),
    "log_f32": (log_r, "f32", 3, (TINY, S_LOG**2), w_log, False),
    "atan_f64": (atan_p, "f64", 11, (TINY, Z_ATAN), w_atan, False),
    "atan_f32": (atan_p, "f32", 5, (TINY, Z_ATAN), w_atan, False),
    "asin_f64": (asin_p, "f64", 13, (TINY, mp.mpf(1) / 4), w_asin, False),
    "asin_f32": (asin_p, "f32", 6, (TINY, mp.mpf(1) / 4), w_asin, False),
    "erf_f64": (erf_q, "f64", 11, (0, Z_ERF), w_erf, False),
    "erf_f32": (erf_q, "f32", 6, (0, Z_ERF), w_erf, False),
    "erfc_f64": (erfcx_g, "f64", 22, (y_of("0.5"), y_of("27.3")), REL, True),
    "erfc_f32": (erfcx_g, "f32", 10, (y_of("0.5"), y_of("10.1")), REL, True),
    "cbrt_f64": (mp.cbrt, "f64", 6, (1, 2), REL, False),
    "cbrt_f32": (mp.cbrt, "f32", 4, (1, 2), REL, False),
}


def main(names):
    for name in names or FITS:
        f, ty, n, (a, b), w, exact0 = FITS[name]
        c, e_mm, e_r = fit(f, ty, n, a, b, w, exact0)
        print("// %s: %d coefficients on [%s, %s]: weighted minimax error 2^%.2f; "
              "with the coefficients rounded to %s: 2^%.2f"
              % (name, n, mp.nstr(mp.mpf(a), 8), mp.nstr(mp.mpf(b), 8),
                 float(mp.log(e_mm, 2)), ty, float(mp.log(e_r, 2))))
        lits = [rust_lit(float(v), ty) for v in c]
        if exact0:
            hi = round_to(c[0], ty)
            lo = round_to(c[0] - mp.mpf(hi), ty)
            lits[0] = "(%s, %s)" % (rust_lit(hi, ty), rust_lit(lo, ty))
        print("[" + ", ".join(lits) + "]")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
