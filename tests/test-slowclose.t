Under a slow-close file system, and when closes fail
====================================================

The close-latency model is bench/slowclose.c, built by make; run through
"make test" (or set SLOWCLOSE_SO) to run this test.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundcloseminfilecount = 0
  > HGRC

When closes take 2 ms, the adaptive closer measures it and moves closes to
background threads, more than one of them (how many depends on how fast
this machine writes; the pool sizing itself is unit-tested with a fake
clock in test_closer.py):

  $ for format in v1 v2; do
  >   hg init slow-$format
  >   SLOWCLOSE_US=2000 slow hg -R slow-$format -q debugapplystreamclonebundle -T json $format.hg > $format.json
  >   python3 -c "
  > import json
  > [r] = json.load(open('$format.json'))
  > c = r['closer']
  > print(r['format'], c['policy'], c['mode'], c['threads'] > 1, r['ops']['close-threads']['count'] > 250)"
  >   hg -R slow-$format verify -q
  > done
  v1 adaptive background True True
  v2 adaptive background True True

A close that fails on a background thread aborts the apply and names the
file (its store name: this long path is hashed), for v1 and v2 alike:

  $ hg init fail-v1
  $ SLOWCLOSE_US=200 SLOWCLOSE_FAIL_MATCH=dom_184_ slow hg -R fail-v1 -q \
  >   debugapplystreamclonebundle v1.hg --config worker.backgroundclose=yes
  abort: error closing dh/ipc/build/docs/services/gfx/tests/toolkit/very_lon/dom_184_xxxxxxxxxxxxxxxxec5ab6126cbbdad22cd047cc85b31fcf0140d6f2.i: Input/output error
  [255]
  $ hg init fail-v2
  $ SLOWCLOSE_US=200 SLOWCLOSE_FAIL_MATCH=dom_184_ slow hg -R fail-v2 -q \
  >   debugapplystreamclonebundle v2.hg --config worker.backgroundclose=yes
  abort: error closing dh/ipc/build/docs/services/gfx/tests/toolkit/very_lon/dom_184_xxxxxxxxxxxxxxxxec5ab6126cbbdad22cd047cc85b31fcf0140d6f2.i: Input/output error
  [255]

The same when the closes run inline, with the reason the file system gave:

  $ hg init fail-inline
  $ SLOWCLOSE_FAIL_MATCH=dom_184_ SLOWCLOSE_ERRNO=ENOSPC slow hg -R fail-inline -q \
  >   debugapplystreamclonebundle v2.hg --config worker.backgroundclose=no
  abort: error closing dh/ipc/build/docs/services/gfx/tests/toolkit/very_lon/dom_184_xxxxxxxxxxxxxxxxec5ab6126cbbdad22cd047cc85b31fcf0140d6f2.i: No space left on device
  [255]

Taking a failed apply back removes every file it wrote, which on a network
file system can take minutes: a progress bar says what is being removed
and why (here as progress.debug prints it):

  $ hg init fail-progress
  $ SLOWCLOSE_FAIL_MATCH=dom_184_ slow hg -R fail-progress --debug \
  >   --config progress.debug=true debugapplystreamclonebundle v2.hg \
  >   --config worker.backgroundclose=no 2>&1 | grep '^removing the files' \
  >   | sed -n '1p;$p'
  removing the files of the failed stream apply: 1 files
  removing the files of the failed stream apply: 99 files
  $ ls fail-progress/.hg/store
  requires

Failures on the last files, closed after the writing thread has handed
every file over, are not lost either (the changelog is among the last files
of the stream):

  $ hg init fail-last
  $ SLOWCLOSE_US=3000 SLOWCLOSE_FAIL_MATCH=00changelog.i SLOWCLOSE_ERRNO=EDQUOT slow hg -R fail-last -q \
  >   debugapplystreamclonebundle v2.hg --config worker.backgroundclose=yes
  abort: error closing 00changelog.i: Disk quota exceeded
  [255]

The stream may be written in full and the transaction fail afterwards, when
it writes the fncache.  That error is core's own, so it carries no file
name; what matters is that the abort takes the stream's files back too
(core leaves all 300 of them behind, with an fncache that does not list
them):

  $ for format in v1 v2; do
  >   hg init fail-after-$format
  >   SLOWCLOSE_FAIL_MATCH=/.fncache- slow hg -R fail-after-$format -q \
  >     debugapplystreamclonebundle $format.hg
  > done
  transaction abort!
  rollback completed
  abort: Input/output error
  transaction abort!
  rollback completed
  abort: Input/output error
  [255]

A failed apply takes back what it wrote (core leaves the files written
before the failure behind): each repository is again as a new one, verifies,
and takes a good bundle afterwards.  (.hg/journal.desc, outside the store,
is what core's transaction leaves behind after any abort.)

  $ for repo in fail-v1 fail-v2 fail-inline fail-last fail-after-v1 fail-after-v2; do
  >   asnew $repo
  >   hg -R $repo verify -q
  > done
  fail-v1: as new
  fail-v2: as new
  fail-inline: as new
  fail-last: as new
  fail-after-v1: as new
  fail-after-v2: as new
  $ hg -R fail-v1 -q debugapplystreamclonebundle v1.hg > /dev/null
  $ hg -R fail-v2 -q debugapplystreamclonebundle v2.hg > /dev/null
  $ for repo in fail-v1 fail-v2; do
  >   hg -R $repo verify -q && hg -R $repo log -T "$repo {rev} {desc}\n"
  > done
  fail-v1 1 second revision
  fail-v1 0 initial tree
  fail-v2 1 second revision
  fail-v2 0 initial tree

A clone that fails removes its destination, as core does:

  $ SLOWCLOSE_US=200 SLOWCLOSE_FAIL_NTH=50 slow hg clone -q -U --stream \
  >   ssh://user@dummy/src failed-clone --config worker.backgroundclose=yes
  abort: error closing *: Input/output error (glob)
  [255]
  $ ls failed-clone
  ls: cannot access 'failed-clone': No such file or directory
  [2]
