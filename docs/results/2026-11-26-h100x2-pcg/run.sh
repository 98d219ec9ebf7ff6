#!/usr/bin/env bash
# Multi-GPU PCG (issue 28 part 2) on 2 GPUs: the 2-GPU tests, the CLI check
# at 4097^2, then the PCG scaling table. Logs go to $OUT/mgpcg.tgz.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 PTXLAB_REQUIRE_GPU=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=$(mktemp -d)
for f in *.xz; do xz -dkf "$f"; done
chmod +x ptxlab multi_gpu
{ date -u; nvidia-smi; nvidia-smi topo -m; uname -a; } > "$L/device.txt" 2>&1
echo "=== test multi_gpu two_gpus (PTXLAB_REQUIRE_GPU=1)"
timeout 45 ./multi_gpu two_gpus --test-threads=1 --nocapture > "$L/test-multi_gpu.log" 2>&1; echo "rc=$?" >> "$L/test-multi_gpu.log"
grep -E "two_gpus|GPUs \(|test result|FAILED|panicked|rc=" "$L/test-multi_gpu.log" | tail -n 8
echo "=== cli 4097^2 f64 pcg"
timeout 45 ./ptxlab poisson --gpus 2 --method pcg --smoother rb --precision f64 --size 4097 > "$L/cli-4097.log" 2>&1; echo "rc=$?" >> "$L/cli-4097.log"
tail -n 6 "$L/cli-4097.log"
tar czf "$OUT/mgpcg.tgz" -C "$L" .
echo "=== scaling 16384 f64 pcg"
timeout 135 ./ptxlab poisson-scaling --method pcg --precision f64 --sizes 16384 --gpus 2 --reps 3 --md "$L/table.md" > "$L/scaling.log" 2>&1; echo "rc=$?" >> "$L/scaling.log"
tail -n 16 "$L/scaling.log"
tar czf "$OUT/mgpcg.tgz" -C "$L" .
