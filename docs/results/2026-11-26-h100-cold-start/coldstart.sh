#!/bin/bash
# Cold start of every ptxlab subcommand: one small run each, the driver's JIT
# cache off (CUDA_CACHE_DISABLE=1), wall time of the whole process.
# Usage: coldstart.sh OUTFILE LABEL=BINARY [LABEL=BINARY ...]
# Each command runs once per binary, the binaries alternating per command.
# OLD_ONLY (a |-separated list of commands) limits every binary but the last
# to those commands (the old binary JITs its whole module on every command).
set -u
out=$1; shift
export CUDA_CACHE_DISABLE=1
cmds=(
  "info"
  "vector-add --n 100000 --reps 5"
  "poisson --nx 203 --ny 157 --method multigrid"
  "poisson --size 257 --method multigrid"
  "poisson --size 256 --iters 20"
  "poisson-scaling --sizes 512 --gpus 1 --iters 20 --reps 2 --no-weak"
  "lomb-scargle --count 4096"
  "reduce --n 100000 --reps 5"
  "histogram --n 100000 --reps 5"
  "monte-carlo-pi --samples 100000 --reps 5"
  "diffusion --size 256 --iters 10"
  "matmul --m 256 --n 256 --k 256 --precision bf16 --variant ws --reps 5"
  "matmul --m 256 --n 256 --k 256 --reps 5"
  "fusion --n 100000 --reps 5"
  "launch-overhead --kernels 100 --reps 5"
  "attention --help"
  "math-accuracy --points 10000"
)
echo "| command | $(for lb in "$@"; do printf '%s s (exit) | ' "${lb%%=*}"; done)" > "$out"
echo "|---|$(for lb in "$@"; do printf -- '---|'; done)" >> "$out"
for c in "${cmds[@]}"; do
  row="| \`ptxlab $c\` |"
  last=${!#}
  for lb in "$@"; do
    bin=${lb#*=}
    if [ -n "${OLD_ONLY:-}" ] && [ "$lb" != "$last" ] && [[ "|$OLD_ONLY|" != *"|$c|"* ]]; then
      row="$row not run |"; continue
    fi
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout 120 "$bin" $c > "$out.${lb%%=*}.log.tmp" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    { echo "### $c (exit $rc)"; tail -4 "$out.${lb%%=*}.log.tmp"; } >> "$out.${lb%%=*}.log"
    row="$row $(python3 -c "print(f'{$t1-$t0:.2f}')") ($rc) |"
  done
  echo "$row" >> "$out"
done
rm -f "$out".*.log.tmp
