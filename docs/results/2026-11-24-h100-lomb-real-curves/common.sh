# Sourced by each call's script: unpack the bundle, install wheels, record the machine.
set -u
G=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/b && [ -d /tmp/b/bundle-dev ] || tar xJf $G/bundle.tar.xz -C /tmp/b
B=/tmp/b/bundle-dev
export PYTHONUNBUFFERED=1
if [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $G/whl/*.whl > $OUT/pip.log 2>&1
fi
export PYTHONPATH=/tmp/site
{ echo "git $(cat $G/GIT)"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc;
  python3 -c 'import numpy, torch, cupy; print("numpy", numpy.__version__, "torch", torch.__version__, "cupy", cupy.__version__)'; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
wall() { local t0=$(date +%s.%N); "$@"; local rc=$?; local t1=$(date +%s.%N); echo "WALL $(python3 -c "print(f'{$t1-$t0:.3f}')") s rc=$rc: $*"; }
