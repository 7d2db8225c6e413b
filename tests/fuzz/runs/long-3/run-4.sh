#!/bin/bash
# The rest of the long run, cases 111000-129999, in numbered slices of 2,000 (slices 04-13); each
# slice runs the worktree's HEAD at its start (an archived copy, so edits in progress never reach
# a running slice). Stop after the running slice: touch /tmp/hostile4/stop.
WT=/work/wt/hostile4
OUT=$WT/tests/fuzz/runs/long-3
mkdir -p /tmp/hostile4
for i in $(seq -w 4 13); do
  [ -e /tmp/hostile4/stop ] && break
  [ -e $OUT/slice-$i.json ] && grep -q '"done": true' $OUT/slice-$i.json 2>/dev/null && continue
  commit=$(git -C $WT rev-parse --short HEAD)
  code=/tmp/hostile4/code-$commit
  if [ ! -d $code ]; then mkdir -p $code && git -C $WT archive $commit | tar -x -C $code; fi
  first=$((111000 + (10#$i - 4) * 2000))
  cases=$(( first + 2000 > 130000 ? 130000 - first : 2000 ))
  echo "slice $i: cases $first-$((first + cases - 1)) on $commit, started $(date -u +%H:%M:%S)" >> $OUT/slices.log
  (cd $code && PYTHONPATH=$code nice -n 5 python tools/fuzz.py --first $first --cases $cases --jobs 1 \
      --json $OUT/slice-$i.json > /tmp/hostile4/slice-$i.txt 2> /tmp/hostile4/slice-$i.err)
  echo "slice $i: exit $? at $(date -u +%H:%M:%S)" >> $OUT/slices.log
done
