#!/bin/bash
# soak-interrupts.sh - Ctrl-C pressed twice, the second at a random moment
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
#
# usage: soak-interrupts.sh RUNS [BUSY]
#
# The "pressed twice" block of test-interrupt.t, RUNS times: a v1 and a v2
# stream apply and a changegroup unbundle, on the C lane and on Python
# threads, each signalled twice with a gap drawn from 10-300 ms, so that the
# second signal lands anywhere in the handling of the first (the closer
# finishing, the files taken back, core's rollback).  BUSY processes burn
# CPU meanwhile, as on a loaded CI machine (0 by default).  Each run must
# leave no descriptor or thread behind, and the repository as before once
# "hg recover" ran.  Stops at the first run that does not, printing its
# output and its gap (INTERRUPT_GAP=... repeats that gap).
#
# Expects the extension's hg and python3 first on PATH and SLOWCLOSE_SO
# set, as "make soak-interrupts" does.
set -u
runs=${1:-20}
busy=${2:-0}
TESTDIR="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
PRISTINE_LIST=
burners=()
cleanup() {
  [ ${#burners[@]} -gt 0 ] && kill "${burners[@]}" 2>/dev/null
  rm -rf "$work" "$PRISTINE_LIST"
}
trap cleanup EXIT
cd "$work" || exit 1
. "$TESTDIR/setup.sh"

makerepo src 1000 > /dev/null || exit 1
hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
hg -R src bundle -q -a --type zstd-v2 cg.hg

for _ in $(seq 1 "$busy"); do
  python3 -c 'while True: pass' &
  burners+=($!)
done

gap() {
  python3 -c 'import random; print("%.3f" % random.uniform(0.01, 0.3))'
}

# check RUN: stop if RUN's output has a line other than the expected ones
check() {
  if grep -v '^interrupted!$\|^transaction abort!$\|^rollback completed$' "out.$1" |
     grep -v '^rollback failed - please run hg recover$\|^(failure reason: )$' |
     grep -qv '^exit 255$\|: True$\|: as new$\|^-1$'; then
    echo "== $1, INTERRUPT_GAP=$INTERRUPT_GAP:"
    cat "out.$1"
    exit 1
  fi
}

for i in $(seq 1 "$runs"); do
  for native in yes no; do
    for format in v1 v2; do
      r=$format-$native-$i
      hg init $r
      export INTERRUPT_GAP=$(gap)
      SLOWCLOSE_US=3000 LD_PRELOAD="$SLOWCLOSE_SO" \
        python3 "$TESTDIR/interrupt.py" INTx2 $r/.hg/store 200 -- \
        -R $r -q debugapplystreamclonebundle $format.hg \
        --config worker.backgroundclose=yes \
        --config worker.backgroundclosenative=$native \
        --config worker.backgroundcloseminfilecount=0 > out.$r 2>&1
      hg -R $r recover -q > /dev/null 2>&1 || [ $? = 1 ] ||
        echo "recover failed" >> out.$r
      asnew $r >> out.$r 2>&1
      check $r
      rm -rf $r
    done
    r=cg-$native-$i
    hg init $r
    export INTERRUPT_GAP=$(gap)
    SLOWCLOSE_US=3000 LD_PRELOAD="$SLOWCLOSE_SO" \
      python3 "$TESTDIR/interrupt.py" INTx2 $r/.hg/store 200 -- \
      -R $r -q unbundle cg.hg \
      --config worker.backgroundclose=yes \
      --config worker.backgroundclosenative=$native > out.$r 2>&1
    hg -R $r recover -q > /dev/null 2>&1 || [ $? = 1 ] ||
      echo "recover failed" >> out.$r
    hg -R $r verify -q >> out.$r 2>&1
    hg -R $r log -r tip -T '{rev}\n' >> out.$r 2>&1
    check $r
    rm -rf $r
  done
  echo "run $i of $runs: as expected"
done
