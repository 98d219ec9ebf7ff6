#!/usr/bin/env bash
# One process per GPU (torchrun's variables) against one process driving
# both GPUs, multigrid with the tile smoother: rank 0 gathers the whole
# field over NCCL and writes --out; the two files must be equal byte for
# byte. Logs: $OUT/dist.tgz.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
L=/tmp/distrun; mkdir -p $L
xz -dk ptxlab.xz; chmod +x ptxlab
ngpu=$(nvidia-smi -L | wc -l)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > $L/device.txt 2>&1
for n in 8193 16385; do
  args="poisson --gpus $ngpu --method multigrid --size $n --precision f64"
  timeout 200 ./ptxlab $args --out $L/one-$n.npy > $L/one-$n.log 2>&1; echo "rc=$?" >> $L/one-$n.log
  for r in $(seq 0 $((ngpu - 1))); do
    RANK=$r WORLD_SIZE=$ngpu LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
      timeout 200 ./ptxlab $args --out $L/dist-$n.npy > $L/dist-$n-rank$r.log 2>&1 &
  done; wait
  echo "== $n: one process"; tail -n 2 $L/one-$n.log
  echo "== $n: $ngpu processes, rank 0"; tail -n 2 $L/dist-$n-rank0.log; tail -n 1 $L/dist-$n-rank1.log
  if cmp -s $L/one-$n.npy $L/dist-$n.npy; then echo "--out $n: identical ($(stat -c %s $L/one-$n.npy) bytes)" | tee -a $L/cmp.txt; else echo "--out $n: DIFFER" | tee -a $L/cmp.txt; fi
  rm -f $L/one-$n.npy $L/dist-$n.npy
done
tar czf "$OUT/dist.tgz" -C $L .
