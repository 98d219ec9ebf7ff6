"""Writes the corpus seeds that tests/fixtures lacks: layouts NumPy writes
that the fuzz targets should start from. Run from this folder:
`python3 make_seeds.py` (NumPy 2; the output is the same on every run).
The other seeds are copies of tests/fixtures/lomb files, and the `cli`
seeds are documented command lines, NUL-separated (see ../README.md)."""

import numpy as np
from numpy.lib import format as npf

rng = np.random.default_rng(26)

# .npy: byte order, Fortran order, 2-D, integer dtypes, format version 2.
np.save("npy/big_endian_f4.npy", np.arange(7, dtype=">f4"))
np.save("npy/curve_n3_f4.npy", rng.random((6, 3), dtype=np.float32))
np.save("npy/fortran_2d_f8.npy", np.asfortranarray(np.arange(12.0).reshape(3, 4)))
np.save("npy/i8.npy", np.arange(-3, 4, dtype=np.int64))
np.save("npy/u1.npy", np.arange(9, dtype=np.uint8))
with open("npy/v2_f8.npy", "wb") as f:
    a = np.linspace(0.0, 1.0, 5)
    npf.write_array(f, a, version=(2, 0))

# Batches (.npz): float32 with int32 offsets (savez), and x/dy with
# savez_compressed (deflate).
t = np.sort(rng.random(7))
y = rng.random(7)
for d in ("npz", "lomb_batch"):
    np.savez(f"{d}/f32_int32_offsets.npz", t=t.astype(np.float32),
             y=y.astype(np.float32), offsets=np.array([0, 3, 7], dtype=np.int32))
    np.savez_compressed(f"{d}/x_dy_compressed.npz", x=t, y=y, dy=np.full(7, 0.5),
                        offsets=np.array([0, 2, 4, 7], dtype=np.int64))
