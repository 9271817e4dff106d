hg debugprobeclose: does this file system need the extension?
=============================================================

The probe writes a few hundred store-like files in the directory that
holds the repository's store (or in a directory given), times them,
removes them, and says what the closer would do there.  Closes here come
from the slow-close model.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }
  $ hg init repo
  $ (cd repo/.hg && find . | sort) > before.list

Closes of 700 us that wait (a flush, a round trip): background threads
(at least the four it starts with; how many more depends on how fast this
machine writes), on the C threads, and time to save:

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
  settings: the adaptive policy, as neither worker.backgroundclosepolicy nor worker.backgroundclose is set
  decision: close on * background threads (C threads) (glob)
  time saved per 100000 files: up to * (glob)
  advice: enable it: up to * saved per 100000 files (glob)
  $ (cd repo/.hg && find . | sort) | diff before.list - && echo nothing left
  nothing left

Without the C threads, Python threads would close, and the estimate says
it leaves their cost out:

  $ SLOWCLOSE_US=700 slow hg -R repo debugprobeclose \
  >   --config worker.backgroundclosenative=false | tail -n 4
  decision: close on * background threads (Python threads) (glob)
  time saved per 100000 files: up to * (glob)
  note: a Python thread takes the GIL back after each close, which the estimate leaves out: the saving is smaller
  advice: enable it: up to * saved per 100000 files (glob)

Closing forced inline, or fewer files expected than the minimum the user
set: the probe says so, not that closes are cheap, and gives the time
those settings give up, which the advice takes:

  $ SLOWCLOSE_US=700 slow hg -R repo debugprobeclose \
  >   --config worker.backgroundclose=false | tail -n 5
  closes: * on average, *% of it on the CPU (waiting: a flush or a round trip) (glob)
  settings: the inline policy, as worker.backgroundclose=false (--config)
  decision: close inline, as asked
  time given up per 100000 files: up to * (glob)
  advice: enable it: up to * saved per 100000 files, with the adaptive policy (the settings here close inline) (glob)
  $ SLOWCLOSE_US=700 slow hg -R repo debugprobeclose \
  >   --config worker.backgroundclosepolicy=background \
  >   --config worker.backgroundcloseminfilecount=200000 | tail -n 4
  settings: the background policy, as worker.backgroundclosepolicy=background (--config)
  decision: close inline: fewer files than worker.backgroundcloseminfilecount
  time given up per 100000 files: up to * (glob)
  advice: enable it: up to * saved per 100000 files, with the adaptive policy (the settings here close inline) (glob)

Cheap closes, whatever the settings: not needed here, and nothing given
up:

  $ hg -R repo debugprobeclose --config worker.backgroundclosethreshold=1000 \
  >   --config worker.backgroundclose=false | tail -n 2
  decision: close inline, as asked
  advice: not needed here: closes are cheap
  $ SLOWCLOSE_US=700 slow hg -R repo debugprobeclose -T json \
  >   --config worker.backgroundcloseminfilecount=200000 > minfiles.json
  $ python3 - <<PY
  > import json
  > [p] = json.load(open('minfiles.json'))
  > print(p['requested'], p['mode'], p['reason'], p['threads'], p['saved'])
  > print(p['advice'], p['advisedthreads'] >= 4, p['advisedsaved'] > 0)
  > PY
  adaptive inline fewer files than minfilecount 0 0.0
  enable True True

The same as JSON; the decision flips with the close time (the threshold
is raised here so that this machine's own closes count as cheap), and the
file count is the one the text gives:

  $ for us in 0 700; do
  >   SLOWCLOSE_US=$us slow hg -R repo debugprobeclose -T json \
  >     --config worker.backgroundclosethreshold=300 > probe-$us.json
  >   python3 - $us <<PY
  > import json, sys
  > [p] = json.load(open('probe-%s.json' % sys.argv[1]))
  > close = p['ops']['close']
  > print(sys.argv[1], p['mode'], p['threads'] >= 4 if p['threads'] else 0,
  >       p['saved'] > 0, close['count'], close['mean'] > 600e-6, p['burning'],
  >       p['kind'], p['files'], p['removed'], p['requested'], p['reason'],
  >       p['native'])
  > PY
  > done
  0 inline 0 False 300 False False cheap 332 True adaptive None True
  700 background True True 300 True False waiting 332 True adaptive closes measured slow True

Closes that burn CPU (an antivirus scan): the pool stops at the core count,
and the label and the percentage printed say the same:

  $ SLOWCLOSE_US=700 SLOWCLOSE_BURN=1 slow hg -R repo debugprobeclose -T json > burn.json
  $ python3 - <<PY
  > import json, os
  > [p] = json.load(open('burn.json'))
  > print(p['mode'], p['burning'], p['cpushare'] > 0.5, p['cpupercent'] >= 50,
  >       p['threads'] <= len(os.sched_getaffinity(0)))
  > PY
  background True True True True

Closing forced on threads: the closer then never times a close inline, so
it never learns that closes burn CPU and does not stop at the core count;
neither does the probe (one thread more than the cores asked for):

  $ threads=$(( $(python3 -c 'import os; print(len(os.sched_getaffinity(0)))') + 1 ))
  $ SLOWCLOSE_US=700 SLOWCLOSE_BURN=1 slow hg -R repo debugprobeclose -T json \
  >   --config worker.backgroundclose=true \
  >   --config worker.backgroundclosethreadcount=$threads > forced.json
  $ python3 - $threads <<PY
  > import json, sys
  > [p] = json.load(open('forced.json'))
  > print(p['requested'], p['mode'], p['burning'],
  >       p['threads'] >= int(sys.argv[1]))
  > PY
  background background True True

A share: the probe writes where the shared store is, not in the share's
own .hg:

  $ hg share -q -U --config extensions.share= repo shared
  $ hg -R shared debugprobeclose | head -n 1
  probed */repo/.hg: 332 files written, closed and removed (glob)
  $ ls shared/.hg | grep probeclose
  [1]

In a directory given, outside any repository; a close that fails aborts
naming the file, and the probe's files are removed all the same:

  $ mkdir elsewhere
  $ hg debugprobeclose elsewhere -T json > /dev/null
  $ ls elsewhere
  $ SLOWCLOSE_FAIL_MATCH=f0123 slow hg debugprobeclose elsewhere
  abort: error closing */elsewhere/hg-probeclose-*/data/d11/s4/f0123.i: Input/output error (glob)
  [255]
  $ ls elsewhere

Outside any repository and given no directory, the probe writes in the
current directory, and names it in full, in the text and in JSON:

  $ cd elsewhere
  $ hg debugprobeclose | head -n 1
  probed /*/elsewhere: 332 files written, closed and removed (glob)
  $ hg debugprobeclose -T '{directory}\n'
  /*/elsewhere (glob)
  $ cd ..
  $ ls elsewhere
  $ hg debugprobeclose missing
  abort: missing is not a directory
  [255]
  $ hg debugprobeclose before.list
  abort: before.list is not a directory
  [255]

A template that does not parse is refused before any file is written
(the first close would fail otherwise):

  $ SLOWCLOSE_FAIL_MATCH=f0000 slow hg debugprobeclose elsewhere -T '{files'
  hg: parse error at 1: unterminated template expansion
  ({files
    ^ here)
  [255]
  $ ls elsewhere

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
