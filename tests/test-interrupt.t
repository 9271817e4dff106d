Interrupted applies
===================

SIGINT (Ctrl-C) or SIGTERM during a stream apply: hg stops writing at the
signal (it creates no more than a handful of files after it, where the rest
of the apply would create about 800), joins its closing threads, keeps no
descriptor open, and the destination is as it was.  tests/interrupt.py runs
hg in its own process (to count threads, descriptors and files created before
and after) and signals itself once the store holds 200 files.  Closes take
3 ms (bench/slowclose.c) so that the apply of 1,000 files is still running
then.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 1000
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ interrupt() {
  >   sig=$1 repo=$2; shift 2
  >   SLOWCLOSE_US=3000 LD_PRELOAD="$SLOWCLOSE_SO" \
  >     python3 "$TESTDIR/interrupt.py" $sig $repo/.hg/store 200 -- "$@"
  > }

debugapplystreamclonebundle, v1 and v2, closing inline and on background
threads:

  $ for format in v1 v2; do
  >   for closing in no yes; do
  >     hg init int-$format-$closing
  >     interrupt INT int-$format-$closing -R int-$format-$closing -q \
  >       debugapplystreamclonebundle $format.hg \
  >       --config worker.backgroundclose=$closing \
  >       --config worker.backgroundcloseminfilecount=0
  >     asnew int-$format-$closing
  >     hg -R int-$format-$closing verify -q
  >   done
  > done
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-v1-no: as new
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-v1-yes: as new
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-v2-no: as new
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-v2-yes: as new

SIGTERM during hg unbundle, with the adaptive closer, and with core's
parallel writer threads (Mercurial 7.0 and later; the option is ignored
before):

  $ for parallel in no yes; do
  >   hg init term-$parallel
  >   interrupt TERM term-$parallel -R term-$parallel -q unbundle v2.hg \
  >     --config worker.parallel-stream-bundle-processing=$parallel
  >   asnew term-$parallel
  >   hg -R term-$parallel verify -q
  > done
  killed!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  term-no: as new
  killed!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  term-yes: as new

An interrupted clone removes its destination, as core does:

  $ interrupt INT cloned clone -q -U --stream ssh://user@dummy/src cloned
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ ls cloned
  ls: cannot access 'cloned': No such file or directory
  [2]

Each interrupted repository takes the bundle afterwards:

  $ for repo in int-v1-no int-v1-yes int-v2-no int-v2-yes term-no term-yes; do
  >   hg -R $repo -q unbundle v2.hg && hg -R $repo verify -q && echo "$repo: $(hg -R $repo log -r tip -T '{rev}')"
  > done
  int-v1-no: 1
  int-v1-yes: 1
  int-v2-no: 1
  int-v2-yes: 1
  term-no: 1
  term-yes: 1

Changegroups: SIGINT during hg unbundle of a changegroup bundle, closing
inline, on the C lane's background threads and on Python's, and SIGTERM
with the adaptive closer.
Every close is finished before core's transaction rolls back, so the
rollback finds closed files: the repository verifies, holds no revision,
and takes the bundle afterwards:

  $ hg -R src bundle -q -a --type zstd-v2 cg.hg
  $ for closing in no yes yes-python; do
  >   native=yes; [ $closing = yes-python ] && native=no
  >   hg init cg-$closing
  >   interrupt INT cg-$closing -R cg-$closing -q unbundle cg.hg \
  >     --config worker.backgroundclose=${closing%-python} \
  >     --config worker.backgroundclosenative=$native \
  >     --config worker.backgroundcloseminfilecount=0
  >   hg -R cg-$closing verify -q
  >   hg -R cg-$closing log -r tip -T '{rev}\n'
  > done
  transaction abort!
  rollback completed
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  -1
  transaction abort!
  rollback completed
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  -1
  transaction abort!
  rollback completed
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  -1
  $ hg init cg-term
  $ interrupt TERM cg-term -R cg-term -q unbundle cg.hg
  transaction abort!
  rollback completed
  killed!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ hg -R cg-term verify -q
  $ for repo in cg-no cg-yes cg-yes-python cg-term; do
  >   hg -R $repo -q unbundle cg.hg && hg -R $repo verify -q && echo "$repo: $(hg -R $repo log -r tip -T '{rev}')"
  > done
  cg-no: 1
  cg-yes: 1
  cg-yes-python: 1
  cg-term: 1

Ctrl-C pressed twice, 50 ms apart: the second one lands while the first is
being handled (the closer finishing, the files being taken back, the
rollback).  On both pools, no descriptor is closed twice or left open, and
the repository is as before.  Where the second signal lands is up to the
machine's load: when it cuts short core's own abort of the transaction
(the changegroup's rollback; after a stream apply, closing and removing
the journal, which the modelled 3 ms closes make long enough to hit), core
leaves its journal and asks for "hg recover", with or without the
extension.  The extension's own part of the abort, taking the files back,
finishes whatever the second signal.  On a loaded machine the signals can
also come as the apply commits its transaction (the store listed at 200
files, the apply done by then): core then rolls back what it journaled
("transaction abort!", "rollback completed").  After "hg recover", which
must not fail, the repository is as before:

  $ for native in yes no; do
  >   for format in v1 v2; do
  >     hg init twice-$format-$native
  >     interrupt INTx2 twice-$format-$native -R twice-$format-$native -q \
  >       debugapplystreamclonebundle $format.hg \
  >       --config worker.backgroundclose=yes \
  >       --config worker.backgroundclosenative=$native \
  >       --config worker.backgroundcloseminfilecount=0 2>&1 \
  >       | grep -v '^interrupted!$\|^transaction abort!$\|^rollback completed$'
  >     hg -R twice-$format-$native recover -q > /dev/null 2>&1 || [ $? = 1 ] || echo "recover failed"
  >     asnew twice-$format-$native
  >   done
  >   hg init twice-cg-$native
  >   interrupt INTx2 twice-cg-$native -R twice-cg-$native -q unbundle cg.hg \
  >     --config worker.backgroundclose=yes \
  >     --config worker.backgroundclosenative=$native 2>&1 \
  >     | grep -v '^interrupted!$\|^transaction abort!$\|^rollback completed$' \
  >     | grep -v '^rollback failed - please run hg recover$\|^(failure reason: )$'
  >   hg -R twice-cg-$native recover -q > /dev/null 2>&1 || [ $? = 1 ] || echo "recover failed"
  >   hg -R twice-cg-$native verify -q
  >   hg -R twice-cg-$native log -r tip -T '{rev}\n'
  > done
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  twice-v1-yes: as new
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  twice-v2-yes: as new
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  -1
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  twice-v1-no: as new
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  twice-v2-no: as new
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  -1
