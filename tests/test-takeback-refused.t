A failed stream apply whose files cannot all be removed
=======================================================

When a stream apply fails, the extension removes the files it wrote.  On a
read-only directory (for a user other than root), a read-only or stale
network mount, the system may refuse some of those removals.  Then the
files it can remove are removed, the others are named in one warning, and
core's rollback still runs, with the error that failed the apply shown.
The shim refuses every removal below the store's data/ directory, as a
read-only data/ would:

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 40
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ refused() {
  >   SLOWCLOSE_UNLINK_FAIL_MATCH=/store/data/ LD_PRELOAD="$SLOWCLOSE_SO" "$@"
  > }

A pretxnclose hook fails once the stream is written: the transaction
aborts, the take-back runs as its abort callback and leaves what it may not
remove.  The hook's failure is what the user sees, the journal is gone, and
what is left reads as an empty repository (the changelog went first), which
verifies:

  $ hg init hooked
  $ refused hg -R hooked unbundle -q v2.hg --config hooks.pretxnclose.x=false
  warning: * files the failed stream apply wrote could not be removed, the first data/*: Permission denied (glob)
  (the repository does not use them: remove them by hand, or remove the repository and clone again)
  abort: pretxnclose.x hook exited with status 1
  [255]
  $ ls hooked/.hg/store
  data
  requires
  $ hg -R hooked verify -q
  $ hg -R hooked log -T '{rev}\n'

The same with worker.backgroundclosejournal, which registers each file
with the transaction (for hg recover after a killed apply): the files the
system refuses to remove do not make core's rollback fail, where core
alone, which registers none of them, rolls back (core says it rolls back,
as the transaction holds entries); no journal is left, and hg recover has
nothing to do:

  $ hg init journaled
  $ refused hg -R journaled unbundle -q v2.hg --config hooks.pretxnclose.x=false \
  >   --config worker.backgroundclosejournal=yes
  transaction abort!
  warning: * files the failed stream apply wrote could not be removed, the first data/*: Permission denied (glob)
  (the repository does not use them: remove them by hand, or remove the repository and clone again)
  rollback completed
  abort: pretxnclose.x hook exited with status 1
  [255]
  $ ls journaled/.hg/store
  data
  requires
  $ hg -R journaled verify -q
  $ hg -R journaled recover
  no interrupted transaction available
  [1]

Without the shim, the same failure leaves the repository as new:

  $ hg init clean
  $ hg -R clean unbundle -q v2.hg --config hooks.pretxnclose.x=false
  abort: pretxnclose.x hook exited with status 1
  [255]
  $ asnew clean
  clean: as new

A close that fails midway: the apply is taken back at once, then again by
the transaction's abort; the files left are named once, and the failed
close is the error shown:

  $ hg init closing
  $ SLOWCLOSE_FAIL_MATCH=00manifest.i refused \
  >   hg -R closing debugapplystreamclonebundle -q v1.hg \
  >   --config worker.backgroundclosereport=false
  warning: * files the failed stream apply wrote could not be removed, the first data/*: Permission denied (glob)
  (the repository does not use them: remove them by hand, or remove the repository and clone again)
  abort: error closing 00manifest.i: Input/output error
  [255]
  $ ls closing/.hg/store
  data
  requires
  $ hg -R closing verify -q

As the hint says, once the files left are removed by hand, the same
repository takes a stream clone again, and the result verifies:

  $ rm -r closing/.hg/store/data
  $ hg -R closing debugapplystreamclonebundle -q v1.hg \
  >   --config worker.backgroundclosereport=false
  $ hg -R closing verify -q
  $ hg -R closing log -T '{rev}\n'
  1
  0
