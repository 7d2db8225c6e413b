#!/bin/bash
# The long run in numbered slices; each slice runs the worktree's HEAD at its start (an archived
# copy, so edits in progress never reach a running slice). Touch /tmp/<worktree name>/stop to
# stop after the running slice.
#   tools/fuzz_slices.sh RUN WORKTREE FIRST_SLICE LAST_SLICE FIRST_CASE CASES_A_SLICE END_CASE NICE
# RUN names the folder under tests/fuzz/runs/ the slices' JSON and slices.log go to.
RUN=$1; WT=$2; FIRST_SLICE=$3; LAST_SLICE=$4; BASE=$5; SIZE=$6; END=$7; NICE=$8
OUT=$WT/tests/fuzz/runs/$RUN
TMP=/tmp/$(basename $WT)
mkdir -p $TMP
for i in $(seq -f %02g $FIRST_SLICE $LAST_SLICE); do
  [ -e $TMP/stop ] && break
  [ -e $OUT/slice-$i.json ] && grep -q '"done": true' $OUT/slice-$i.json 2>/dev/null && continue
  commit=$(git -C $WT rev-parse --short HEAD)
  code=$TMP/code-$commit
  if [ ! -d $code ]; then mkdir -p $code && git -C $WT archive $commit | tar -x -C $code; fi
  first=$((BASE + (10#$i - FIRST_SLICE) * SIZE))
  cases=$(( first + SIZE > END ? END - first : SIZE ))
  echo "slice $i: cases $first-$((first + cases - 1)) on $commit, started $(date -u +%H:%M:%S)" >> $OUT/slices.log
  (cd $code && PYTHONPATH=$code nice -n $NICE python tools/fuzz.py --first $first --cases $cases --jobs 1 \
      --json $OUT/slice-$i.json > $TMP/slice-$i.txt 2> $TMP/slice-$i.err)
  echo "slice $i: exit $? at $(date -u +%H:%M:%S)" >> $OUT/slices.log
done
