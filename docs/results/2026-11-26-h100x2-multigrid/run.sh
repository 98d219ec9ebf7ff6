#!/usr/bin/env bash
# Multi-GPU multigrid (issue 28 part 2) on 2 GPUs: the GPU test, the CLI
# check, then the scaling table. Logs go to $OUT/mgmulti.tgz.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 PTXLAB_REQUIRE_GPU=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$(mktemp -d)
for f in *.xz; do xz -dk "$f"; done
chmod +x ptxlab multi_gpu
{ date -u; nvidia-smi; nvidia-smi topo -m; uname -a; } > "$L/device.txt" 2>&1
echo "=== test multi_gpu (PTXLAB_REQUIRE_GPU=1)"
timeout 150 ./multi_gpu --test-threads=1 > "$L/test-multi_gpu.log" 2>&1; echo "rc=$?" >> "$L/test-multi_gpu.log"
grep -E "two_gpus|test result|FAILED|panicked|rc=" "$L/test-multi_gpu.log" | tail -n 8
echo "=== cli 4097^2 f64"
timeout 60 ./ptxlab poisson --gpus 2 --method multigrid --smoother rb --precision f64 --size 4097 > "$L/cli-4097.log" 2>&1; echo "rc=$?" >> "$L/cli-4097.log"
tail -n 5 "$L/cli-4097.log"
echo "=== scaling 16384 f64"
timeout 330 ./ptxlab poisson-scaling --method multigrid --precision f64 --sizes 16384 --gpus 2 --reps 3 --md "$L/table.md" > "$L/scaling.log" 2>&1; echo "rc=$?" >> "$L/scaling.log"
cat "$L/scaling.log" | tail -n 30
tar czf "$OUT/mgmulti.tgz" -C "$L" .
