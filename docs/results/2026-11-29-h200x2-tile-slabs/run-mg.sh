#!/usr/bin/env bash
# Multi-GPU multigrid with the tile smoother on slabs: the GPU tests, the
# CLI on 2 GPUs (tile default, then rb), one process per GPU against one
# process, and the scaling tables (tile, then rb) at 16384^2 f64.
# Logs: $OUT/mg.tgz (tarred after each stage).
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=/tmp/mgrun; mkdir -p $L
save() { tar czf "$OUT/mg.tgz" -C $L . ; }
for f in *.xz; do xz -dk "$f"; done
chmod +x ptxlab multi_gpu
ngpu=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi; nvidia-smi topo -m; uname -a; } > $L/device.txt 2>&1
# With one GPU the two-GPU tests skip (PTXLAB_REQUIRE_GPU would fail them).
req=1; [ "$ngpu" -ge 2 ] || req=0
g=$ngpu; [ "$g" -le 4 ] || g=4
echo "=== test multi_gpu (PTXLAB_REQUIRE_GPU=$req), $ngpu GPUs"
if [ $req = 1 ]; then export PTXLAB_REQUIRE_GPU=1; else unset PTXLAB_REQUIRE_GPU; fi
timeout 240 ./multi_gpu --test-threads=1 > $L/test-multi_gpu.log 2>&1; echo "rc=$?" >> $L/test-multi_gpu.log
grep -E "two_gpus|test result|FAILED|panicked|rc=" $L/test-multi_gpu.log | tail -n 8
save
echo "=== cli 4097^2 f64, defaults (tile), then rb"
timeout 90 ./ptxlab poisson --gpus $g --method multigrid --precision f64 --size 4097 > $L/cli-4097.log 2>&1; echo "rc=$?" >> $L/cli-4097.log
tail -n 4 $L/cli-4097.log
timeout 90 ./ptxlab poisson --gpus $g --method multigrid --smoother rb --precision f64 --size 4097 > $L/cli-4097-rb.log 2>&1; echo "rc=$?" >> $L/cli-4097-rb.log
tail -n 2 $L/cli-4097-rb.log
save
echo "=== one process per GPU (torchrun's variables) vs one process, 8193^2 f64 tile"
dist() { # name, args...
  local name=$1; shift
  for r in $(seq 0 $((ngpu - 1))); do
    RANK=$r WORLD_SIZE=$ngpu LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
      timeout 200 ./ptxlab "$@" > $L/dist-$name-rank$r.log 2>&1 &
  done; wait
  tail -n 3 $L/dist-$name-rank0.log
}
[ "$ngpu" -ge 2 ] && dist mg8k poisson --gpus $ngpu --method multigrid --size 8193 --precision f64
save
if [ "$g" -ge 4 ]; then
  echo "=== scaling 16384 f64, tile, 2 of $ngpu GPUs"
  timeout 400 ./ptxlab poisson-scaling --method multigrid --smoother tile --precision f64 --size 16384 --gpus 2 --reps 5 --md $L/table-tile-x2.md > $L/scaling-tile-x2.log 2>&1; echo "rc=$?" >> $L/scaling-tile-x2.log
  tail -n 12 $L/scaling-tile-x2.log
  save
fi
for sm in tile rb; do
  echo "=== scaling 16384 f64, $sm, $ngpu GPUs"
  timeout 400 ./ptxlab poisson-scaling --method multigrid --smoother $sm --precision f64 --size 16384 --gpus $g $([ "$g" -ge 2 ] || echo --no-weak) --reps 5 --md $L/table-$sm-x$ngpu.md > $L/scaling-$sm-x$ngpu.log 2>&1; echo "rc=$?" >> $L/scaling-$sm-x$ngpu.log
  tail -n 12 $L/scaling-$sm-x$ngpu.log
  save
done
