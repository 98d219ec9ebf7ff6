"""Inputs of the device run's CLI calls (written in /tmp/d)."""
import os
import sys
import numpy as np
sys.path.insert(0, "/tmp/b/bundle-dev/peers")
rng = np.random.default_rng(7)
# 10^4 samples like the material's, for the 10^4 x 2^20 production run.
x = np.sort(rng.uniform(0.01, 10 * np.pi, 10_000))
np.save("x10k.npy", x)
np.save("y10k.npy", 2 * np.cos(x + 0.5 * np.pi) + rng.uniform(-0.5, 0.5, x.size))
# A long span: 300 samples over [0, 5000], w to 50.
t = np.sort(rng.uniform(0.0, 5000.0, 300))
np.save("xl.npy", t)
np.save("yl.npy", np.sin(7.3 * t) + rng.normal(0.0, 0.8, t.size))
np.save("dyl.npy", rng.uniform(0.5, 1.5, t.size))
# A batch of 10^4 ragged curves (the bench's recipe) as an .npz with offsets.
from lomb_batch import survey
ts, ys, dys = survey(10_000, 250, 350, 1000.0, False, 3)
off = np.concatenate([[0], np.cumsum([a.size for a in ts])]).astype(np.int64)
np.savez("batch.npz", t=np.concatenate(ts), y=np.concatenate(ys), dy=np.concatenate(dys), offsets=off)
print("inputs written", x.size, t.size, off[-1])
