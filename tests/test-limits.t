Descriptor limits, threads and descriptors after an apply
=========================================================

A store of 20,000 files, quickly: the 300 files of a real repository plus
copies of one small revlog under new names (tests/streamcraft.py "many").

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle real.hg > /dev/null
  $ for format in v1 v2; do
  >   python3 "$TESTDIR/streamcraft.py" many 20000 $format real.hg many-$format.hg
  > done

With only 64 descriptors (ulimit -n 64), background closing of 20,000
files still succeeds: the queue of files waiting to be closed is clamped to
half of the descriptors left (core's default would allow 384 pending files,
far more than the process may open).  Closes take 200 us, so the queue does
fill up.

  $ for format in v1 v2; do
  >   hg init limited-$format
  >   (ulimit -n 64
  >    SLOWCLOSE_US=200 LD_PRELOAD="$SLOWCLOSE_SO" hg -R limited-$format -q \
  >      debugapplystreamclonebundle -T json many-$format.hg \
  >      --config worker.backgroundclose=yes \
  >      --config worker.backgroundcloseminfilecount=0) > $format.json
  >   echo "exit $?"
  >   python3 -c "
  > import json
  > [r] = json.load(open('$format.json'))
  > c = r['closer']
  > print(r['format'], r['files'] > 20000, 'files;', c['mode'], 'queue clamped:', c['max-queued'] < 16, 'peak within it:', c['peak-queued'] <= c['max-queued'])"
  >   find limited-$format/.hg/store/data/many -type f | wc -l
  >   hg -R limited-$format log -r tip -T '{rev} {desc}\n'
  > done
  exit 0
  v1 True files; background queue clamped: True peak within it: True
  20000
  1 second revision
  exit 0
  v2 True files; background queue clamped: True peak within it: True
  20000
  1 second revision

After a successful apply, in the same process: as many threads and
descriptors as before (tests/interrupt.py NONE runs hg in its own process
and counts them), adaptive and forced background closing alike:

  $ for closing in adaptive yes; do
  >   hg init counted-$closing
  >   config="--config worker.backgroundcloseminfilecount=0"
  >   [ $closing = yes ] && config="$config --config worker.backgroundclose=yes"
  >   SLOWCLOSE_US=300 LD_PRELOAD="$SLOWCLOSE_SO" python3 "$TESTDIR/interrupt.py" NONE x 0 -- \
  >     -R counted-$closing -q debugapplystreamclonebundle -T json many-v2.hg $config > counted.out
  >   grep -v '^\[\|^ \|^\]' counted.out
  >   hg -R counted-$closing log -r tip -T '{rev}\n'
  > done
  exit 0
  threads as before: True
  descriptors as before: True
  1
  exit 0
  threads as before: True
  descriptors as before: True
  1
