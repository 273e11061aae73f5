#!/bin/bash
# bench/state_growth.py part a (sealtime only) on two commits, alternating fresh processes.
#   git worktree add /tmp/wt/old REV_OLD; git worktree add /tmp/wt/new REV_NEW
#   bash bench/ab_state_growth.sh /tmp/wt/old /tmp/wt/new 3 [OUT_DIR]
# Each worktree runs its own bench/state_growth.py (which puts its own tree first on
# sys.path) with this checkout's .venv; the old commit goes first in odd rounds. Results:
# OUT_DIR/{old,new}-ROUND.md (each checks its output against a pyarrow batch aggregate).
set -eu
old=$1 new=$2 rounds=$3 out=${4:-/tmp/sg_ab}
python=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="$old $new"; else order="$new $old"; fi
  for wt in $order; do
    tag=$([ "$wt" = "$old" ] && echo old || echo new)
    (cd "$wt" && "$python" bench/state_growth.py --part a --systems sealtime --repeat 3 \
      --out "$out/$tag-$r.md" > "$out/$tag-$r.log" 2>&1)
    echo "round $r $tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
