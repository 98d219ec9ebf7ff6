#!/usr/bin/env bash
# Runs the README's Quick start in this checkout, so the README cannot drift
# from what works: the commands are the ```sh block right after the
# `<!-- quickstart -->` marker. `git clone` and `cd` into the clone are
# skipped (CI is already in a checkout); every other command must succeed,
# and a command with `--out DIR` must leave DIR/report.html behind.
#
#   bash .ci/readme-quickstart.sh            # run them
#   bash .ci/readme-quickstart.sh --dry-run  # print what would run
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=1 ;;
  *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac

# The block: the first ```sh fence after the marker, up to its closing fence.
block=$(awk '
  /<!-- quickstart -->/ { marker = 1; next }
  marker && !inside && /^```sh[[:space:]]*$/ { inside = 1; next }
  marker && !inside && NF > 0 { exit 3 }
  inside && /^```[[:space:]]*$/ { found = 1; exit }
  inside { print }
  END { if (!found) exit 3 }
' README.md) || {
  echo "readme-quickstart: README.md has no \`\`\`sh block right after <!-- quickstart -->" >&2
  exit 1
}

commands=()
while IFS= read -r line; do
  line="${line%%#*}"                                   # a trailing comment
  line="$(printf '%s' "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')"
  [ -z "$line" ] && continue
  # `git clone URL && cd DIR`: CI is that checkout already.
  case "$line" in
    "git clone "*) echo "skip (CI is the checkout): $line"; continue ;;
    "cd "*) echo "skip (CI is the checkout): $line"; continue ;;
  esac
  commands+=("$line")
done <<< "$block"

if [ "${#commands[@]}" -eq 0 ]; then
  echo "readme-quickstart: the Quick start block has no command to run" >&2
  exit 1
fi

for cmd in "${commands[@]}"; do
  if [ "$dry_run" = 1 ]; then
    echo "would run: $cmd"
    continue
  fi
  echo "== readme-quickstart: $cmd"
  if ! bash -c "$cmd"; then
    echo "readme-quickstart: the README's Quick start command failed: $cmd" >&2
    exit 1
  fi
  out=$(printf '%s\n' "$cmd" | sed -n 's/.*--out[ =]\([^ ]*\).*/\1/p')
  if [ -n "$out" ] && [ ! -f "$out/report.html" ]; then
    echo "readme-quickstart: \`$cmd\` left no $out/report.html, which the README tells the reader to open" >&2
    exit 1
  fi
done
[ "$dry_run" = 1 ] || echo "readme-quickstart: all ${#commands[@]} commands passed"
