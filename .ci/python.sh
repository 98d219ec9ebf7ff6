#!/usr/bin/env bash
# CI: ptxlab from Python. A fresh virtual environment with maturin and the
# reference libraries from PyPI, the wheel built by maturin (the dev
# profile, whose build of the ptxlab crates is its own: `cargo test` builds
# them in the test profile, with the dev-dependencies' features), installed,
# and the tests of python/tests on the simulator and CPU backends (the GPU
# tests skip with their reason on a machine without one).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/ci-pyvenv
t0=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet maturin numpy scipy astropy pytest 'dask[dataframe,distributed]'
t1=$(date +%s)
rm -rf target/wheels-ci
"$VENV/bin/maturin" build --profile dev -m python/Cargo.toml -o target/wheels-ci
"$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps target/wheels-ci/ptxlab-*.whl
t2=$(date +%s)
# The tests import the installed wheel, not the source tree.
(cd python/tests && "../../$VENV/bin/python" -m pytest -q -rs .)
t3=$(date +%s)
echo "python: venv and PyPI $((t1 - t0)) s, wheel $((t2 - t1)) s, tests $((t3 - t2)) s"
