"""How precise would the Lomb-Scargle sums be as TF32 tensor-core products?

The even-grid sums as complex matrix products (w = W_K + l step,
W_K = start + K R step):

    P1[K, l] = sum_j (y_j e^{i W_K x_j}) e^{i l step x_j}      (XC + i XS)
    P2[K, l] = sum_j e^{2i W_K x_j} e^{2i l step x_j}          (CC - SS + 2i CS)

Every operand is rounded to TF32 (10 explicit mantissa bits, round to
nearest, ties away: what `cvt.rna.tf32.f32` does), products summed in f64,
and the periodogram compared with the exact one over the material's 114
samples x 2^20 frequencies (max |error| / peak; the f32 bound is 1e-4).
Prints three lines: one TF32 pass for both products; three passes
(big*big + big*small + small*big) for P1 and one for P2; three passes for
P1 with P2 exact. Needs NumPy; run from the repository root:
`python3 docs/book/src/workloads/lomb-tf32-error.py` (a few seconds).
"""

import numpy as np

x = np.load("tests/fixtures/lomb/material_x.npy")
y = np.load("tests/fixtures/lomb/material_y.npy")
N, NF, R = len(x), 1 << 20, 64
start, step = 0.01, (10 - 0.01) / (NF - 1)


def tf32(a):
    b = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x1000) & 0xFFFFE000).astype(np.uint32)
    return b.view(np.float32).astype(np.float64)


def r(z):
    return tf32(z.real) + 1j * tf32(z.imag)


def split(z):
    big = r(z)
    return big, r(z - big)


def pgram(p1, p2):
    xc, xs = p1.real, p1.imag
    cc, ss, cs = (N + p2.real) / 2, (N - p2.real) / 2, p2.imag / 2
    wt = 0.5 * np.arctan2(2 * cs, cc - ss)
    ct, st = np.cos(wt), np.sin(wt)
    a, b = ct * xc + st * xs, ct * xs - st * xc
    d1 = ct * ct * cc + 2 * ct * st * cs + st * st * ss
    d2 = ct * ct * ss - 2 * ct * st * cs + st * st * cc
    return (0.5 * (a * a / d1 + b * b / d2)).ravel()


ref, got = [], [[], [], []]
ks, ls = np.arange(NF // R), np.arange(R)
for k0 in range(0, NF // R, 2048):
    w = start + (ks[k0 : k0 + 2048] * R)[:, None] * step
    th, ph = w * x[None, :], (ls * step)[:, None] * x[None, :]
    a1, b1 = y[None, :] * np.exp(1j * th), np.exp(1j * ph).T
    a2, b2 = np.exp(2j * th), np.exp(2j * ph).T
    p1, p2 = a1 @ b1, a2 @ b2
    q1, q2 = r(a1) @ r(b1), r(a2) @ r(b2)
    (ab, asm), (bb, bs) = split(a1), split(b1)
    t1 = ab @ bb + ab @ bs + asm @ bb
    ref.append(pgram(p1, p2))
    for i, (u, v) in enumerate([(q1, q2), (t1, q2), (t1, p2)]):
        got[i].append(pgram(u, v))
ref = np.concatenate(ref)
for name, g in zip(["1xTF32 both", "3xTF32 y, 1xTF32 double angle", "3xTF32 y, exact double angle"], got):
    print(f"{name}: max |error| / peak = {np.abs(np.concatenate(g) - ref).max() / ref.max():.2e}")
