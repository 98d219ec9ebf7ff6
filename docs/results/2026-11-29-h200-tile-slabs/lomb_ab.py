"""Lomb A/B table from lomb-<bin>-<k>-<i>.log files: median ms per rung,
old (ptxlab-head) against new (ptxlab), two runs each."""
import re, sys, glob, os
from collections import defaultdict
d = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))
order = []
for f in sorted(glob.glob(os.path.join(d, "lomb-*.log"))):
    m = re.match(r"lomb-(ptxlab(?:-head)?)-(\d)-(\d)\.log", os.path.basename(f))
    if not m:
        continue
    binname, k, i = m.groups()
    for line in open(f):
        mm = re.match(r"\s+(.+?): median ([0-9.]+) ms", line)
        if mm:
            key = (int(k), mm.group(1))
            if key not in order:
                order.append(key)
            rows[key][binname].append(float(mm.group(2)))
print("| cmd | rung | old (ms, 2 runs) | new (ms, 2 runs) | new/old |")
print("|---|---|---|---|---|")
for key in sorted(order, key=lambda k: (k[0], order.index(k))):
    o, n = rows[key]["ptxlab-head"], rows[key]["ptxlab"]
    if not o or not n:
        continue
    r = min(n) / min(o)
    print(f"| L{key[0]} | {key[1][:44]} | {', '.join(map(str, o))} | {', '.join(map(str, n))} | {r:.3f} |")
