#!/bin/bash
# The long run in numbered slices of 3,000 cases; each slice runs the worktree's HEAD at its start
# (an archived copy, so edits in progress never reach a running slice).
WT=/work/wt/hostile3
OUT=$WT/tests/fuzz/runs/long-3
for i in $(seq -w 0 14); do
  [ -e /tmp/hostile3/stop ] && break
  [ -e $OUT/slice-$i.json ] && grep -q '"done": true' $OUT/slice-$i.json 2>/dev/null && continue
  commit=$(git -C $WT rev-parse --short HEAD)
  code=/tmp/hostile3/code-$commit
  if [ ! -d $code ]; then mkdir -p $code && git -C $WT archive $commit | tar -x -C $code; fi
  first=$((100000 + 10#$i * 3000))
  echo "slice $i: cases $first-$((first + 2999)) on $commit, started $(date -u +%H:%M:%S)" >> $OUT/slices.log
  (cd $code && PYTHONPATH=$code nice -n 12 python tools/fuzz.py --first $first --cases 3000 --jobs 1 \
      --json $OUT/slice-$i.json > /tmp/hostile3/slice-$i.txt 2> /tmp/hostile3/slice-$i.err)
  echo "slice $i: exit $? at $(date -u +%H:%M:%S)" >> $OUT/slices.log
done
