hg debugprobeclose: does this file system need the extension?
=============================================================

The probe writes a few hundred store-like files next to the repository's
store (or in a directory given), times them, removes them, and says what
the closer would do there.  Closes here come from the slow-close model.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }
  $ hg init repo
  $ (cd repo/.hg && find . | sort) > before.list

Closes of 700 us that wait (a flush, a round trip): background threads
(at least the four it starts with; how many more depends on how fast this
machine writes) and time to save:

  $ SLOWCLOSE_US=700 slow hg -R repo debugprobeclose
  probed */repo/.hg: 332 files written, closed and removed (glob)
    operation             count       total        mean         max
    mkdir                   * (glob)
    open                    332 * (glob)
    write                   332 * (glob)
    close                   300 * (glob)
    fsync                    32 * (glob)
    close after fsync        32 * (glob)
  closes: * on average, *% of it on the CPU (waiting: a flush or a round trip) (glob)
  decision: close on * background threads (glob)
  time saved per 100000 files: up to * (glob)
  $ (cd repo/.hg && find . | sort) | diff before.list - && echo nothing left
  nothing left

The same as JSON; the decision flips with the close time (the threshold
is raised here so that this machine's own closes count as cheap):

  $ for us in 0 700; do
  >   SLOWCLOSE_US=$us slow hg -R repo debugprobeclose -T json \
  >     --config worker.backgroundclosethreshold=300 > probe-$us.json
  >   python3 - $us <<PY
  > import json, sys
  > [p] = json.load(open('probe-%s.json' % sys.argv[1]))
  > close = p['ops']['close']
  > print(sys.argv[1], p['mode'], p['threads'] >= 4 if p['threads'] else 0,
  >       p['saved'] > 0, close['count'], close['mean'] > 600e-6, p['burning'])
  > PY
  > done
  0 inline 0 False 300 False False
  700 background True True 300 True False

Closes that burn CPU (an antivirus scan): the pool stops at the core count:

  $ SLOWCLOSE_US=700 SLOWCLOSE_BURN=1 slow hg -R repo debugprobeclose -T json > burn.json
  $ python3 - <<PY
  > import json, os
  > [p] = json.load(open('burn.json'))
  > print(p['mode'], p['burning'], p['cpushare'] > 0.5,
  >       p['threads'] <= len(os.sched_getaffinity(0)))
  > PY
  background True True True

In a directory given, outside any repository; a close that fails aborts
naming the file, and the probe's files are removed all the same:

  $ mkdir elsewhere
  $ hg debugprobeclose elsewhere -T json > /dev/null
  $ ls elsewhere
  $ SLOWCLOSE_FAIL_MATCH=f0123 slow hg debugprobeclose elsewhere
  abort: error closing elsewhere/hg-probeclose-*/data/d11/s4/f0123.i: Input/output error (glob)
  [255]
  $ ls elsewhere
  $ hg debugprobeclose missing
  abort: missing is not a directory
  [255]

Interrupted half-way (Ctrl-C while closes take 10 ms each): the files are
removed too:

  $ LD_PRELOAD="$SLOWCLOSE_SO" SLOWCLOSE_US=10000 python3 "$TESTDIR/withsigint.py" \
  >   hg debugprobeclose elsewhere > interrupted.out 2>&1 &
  $ probe=$!
  $ for i in $(seq 300); do ls elsewhere | grep -q probeclose && break; sleep 0.1; done
  $ sleep 0.3; kill -INT $probe; wait $probe
  [255]
  $ cat interrupted.out
  interrupted!
  $ ls elsewhere
