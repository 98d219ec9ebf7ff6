#!/bin/bash
# Packed variable-length attention: our rows (CLI, rung 2 and the backward
# pass) and the torch peers (varlen_attn, flex_attention with a document
# mask) in one call. Results in $OUT/results.tgz.
set -u
W=/tmp/w; mkdir -p $W /tmp/b; xz -dc gpu/bins.tar.xz | tar xf - -C /tmp/b
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; cat gpu/commits.txt; python3 -c 'import torch; print("torch", torch.__version__)'; } > $W/env.txt 2>&1
L="0,4096,5120,8120,8637,10685,18877,19654,21154,25154,25487,27709,28820,29460,31960,32061,33848"
for c in "" "--causal"; do
  timeout 60 /tmp/b/ptxlab attention --cu-seqlens $L --heads 16 --dim 128 $c --reps 20 > $W/ours${c:+-causal}.log 2>&1
  timeout 90 /tmp/b/ptxlab attention --cu-seqlens $L --heads 16 --dim 128 $c --backward --reps 10 > $W/ours-bwd${c:+-causal}.log 2>&1
  grep PASS $W/ours*${c:+-causal}.log | cut -c1-250
done
tar czf $OUT/results.tgz -C $W .
timeout 240 python3 gpu/varlen_peer.py > $W/peers.jsonl 2> $W/peers.err; echo "peers rc=$?"
python3 -c "
import json
for l in open('$W/peers.jsonl'):
    r=json.loads(l); print(r['variant'], '|', r['size'], '|', r.get('median_ms'), r.get('rel_err'), r.get('skipped','')[:160])
"
tail -3 $W/peers.err
tar czf $OUT/results.tgz -C $W .
