Closes that never return
========================

On a hard-mounted NFS server that went away, close() can block for good.
Core would hang there; with the extension, the close hangs on a background
thread, the apply goes on until it waits for that close, and Ctrl-C still
stops hg: after an interrupt, finishing waits for hung closes at most 5
seconds, then leaves them to their threads, which alone own those
descriptors.  The destination is taken back as for any interrupt.

bench/slowclose.c makes the close of one file never return
(SLOWCLOSE_HANG_MATCH).  Each run below starts hg in the background (with
SIGINT handled as in a terminal: a shell script's background jobs ignore
it), sends SIGINT once the close has hung for two seconds, and gives hg 30
seconds to exit: "hung" would mean it did not.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclose = yes
  > backgroundcloseminfilecount = 0
  > HGRC
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src bundle -q -a --type zstd-v2 cg.hg
  $ hanging() {
  >   SLOWCLOSE_HANG_MATCH=${SLOWCLOSE_HANG_MATCH:-ipc/gfx/security} \
  >   SLOWCLOSE_HANG_COUNT=${SLOWCLOSE_HANG_COUNT:-0} \
  >   LD_PRELOAD="$SLOWCLOSE_SO" \
  >     python3 "$TESTDIR/withsigint.py" hg "$@" > out 2>&1 &
  >   pid=$!
  >   sleep 2
  >   kill -INT $pid
  >   for i in $(seq 300); do
  >     kill -0 $pid 2> /dev/null || break
  >     sleep 0.1
  >   done
  >   if kill -0 $pid 2> /dev/null; then
  >     echo hung
  >     kill -9 $pid
  >   fi
  >   wait $pid
  >   echo "exit $?"
  >   cat out
  > }

Stream v1 and v2, on the C lane and on Python threads:

  $ for run in v1-yes v2-yes v1-no v2-no; do
  >   hg init $run
  >   hanging -R $run -q debugapplystreamclonebundle ${run%-*}.hg \
  >     --config worker.backgroundclosenative=${run#*-}
  >   asnew $run
  > done
  exit 255
  interrupted!
  v1-yes: as new
  exit 255
  interrupted!
  v2-yes: as new
  exit 255
  interrupted!
  v1-no: as new
  exit 255
  interrupted!
  v2-no: as new

Every close hangs, so that the queue fills (8 files here) and the writing
thread waits for room when Ctrl-C comes: the wait is interrupted, and
finishing is bounded all the same.  The descriptors it still holds are
left open (closing them would hang too), and hg exits:

  $ for run in v1 v2; do
  >   hg init full-$run
  >   SLOWCLOSE_HANG_MATCH=.i hanging -R full-$run -q \
  >     debugapplystreamclonebundle $run.hg \
  >     --config worker.backgroundclosemaxqueue=8
  >   asnew full-$run
  > done
  exit 255
  interrupted!
  full-v1: as new
  exit 255
  interrupted!
  full-v2: as new

A changegroup, rolled back by core's transaction once the closes are left
behind.  Only the first close of the file hangs: the rollback truncates it
through a descriptor of its own, which it closes on the main thread (as
Mercurial 6.5 does), and a second hang there would be core's:

  $ hg init cg
  $ SLOWCLOSE_HANG_COUNT=1 hanging -R cg -q unbundle cg.hg
  exit 255
  transaction abort!
  rollback completed
  interrupted!
  $ hg -R cg log -T x
  $ hg -R cg verify -q

An update without forked workers leaves the files it wrote, as an
interrupted update does:

  $ hg clone -q -U src wc
  $ hanging -R wc -q update tip --config worker.enabled=no
  exit 255
  interrupted!
  $ hg -R wc update -q -C tip
  $ hg -R wc status
