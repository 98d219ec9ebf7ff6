"""Old against new binary from `ptxlab bench --only W --out DIR` results, several runs each:
ab_bench.py RAW_DIR  (folders ab-<w>-<bin>-<i>/results.json, bin = ptxlab-old or ptxlab).
For every GPU row in both: min over runs of the median time, new/old; prints per workload the
spread and every row beyond +-2%."""
import json, sys, glob, os, re, statistics
from collections import defaultdict
d = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))
for f in sorted(glob.glob(os.path.join(d, "ab-*-*", "results.json"))):
    m = re.match(r"ab-(.+)-(ptxlab(?:-old)?)-(\d+)$", os.path.basename(os.path.dirname(f)))
    if not m:
        continue
    w, b, _ = m.groups()
    for r in json.load(open(f))["rows"]:
        if r.get("backend") != "gpu" or not r.get("timing") or r["status"]["kind"] != "ok":
            continue
        key = (w, r["size"], r["variant"], r["precision"])
        rows[key][b].append(r["timing"]["median_ms"])
byw = defaultdict(list)
for key, v in rows.items():
    if v["ptxlab-old"] and v["ptxlab"]:
        byw[key[0]].append((min(v["ptxlab"]) / min(v["ptxlab-old"]), key, v))
for w, lst in sorted(byw.items()):
    rs = [x[0] for x in lst]
    slow = [x for x in lst if x[0] > 1.02]
    print(f"{w}: {len(lst)} GPU rows in both; new/old (min of the runs' medians): min {min(rs):.3f}, "
          f"median {statistics.median(rs):.3f}, max {max(rs):.3f}; rows slower by >2%: {len(slow)}")
    for r, key, v in sorted(lst):
        if abs(r - 1) > 0.02:
            print(f"  {r:.3f}  old {', '.join(f'{x:.4g}' for x in v['ptxlab-old'])} -> new "
                  f"{', '.join(f'{x:.4g}' for x in v['ptxlab'])} ms  {key[1]} | {key[2][:60]} | {key[3]}")
