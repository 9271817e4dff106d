Changegroups and working-copy updates under slow, failing closes
================================================================

hg unbundle, hg pull and hg clone without --stream write revlogs through
changegroups: files are appended to, reopened, split from inline to index
and data, and truncated again when the transaction rolls back.  With the
extension their closes go to the closer; every case below runs with closes
forced onto background threads, under random (heavy-tailed) or constant
close latencies from the model in bench/slowclose.c, and ends in hg verify.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclose = yes
  > backgroundcloseminfilecount = 0
  > HGRC

A history to apply: 300 files, then 24 changesets that each touch five of
them and append 8 KB that does not compress to big.bin, whose revlog grows
past the 128 KB an inline revlog may hold:

  $ makerepo src 300
  $ cd src
  $ python3 - <<'EOF'
  > import base64, random, subprocess
  > rng = random.Random(1)
  > files = sorted(subprocess.run(['hg', 'files'], capture_output=True,
  >                               check=True).stdout.decode().splitlines())
  > for i in range(24):
  >     with open('big.bin', 'ab') as fp:
  >         fp.write(base64.b64encode(rng.randbytes(6000)) + b'\n')
  >     for name in rng.sample(files[:40], 5):
  >         with open(name, 'a') as fp:
  >             fp.write('change %d\n' % i)
  >     subprocess.run(['hg', 'commit', '-qAm', 'change %d' % i], check=True)
  > EOF
  $ cd ..
  $ hg -R src bundle -q -a all.hg
  $ hg -R src bundle -q --base null -r 12 part1.hg
  $ hg -R src bundle -q --base 12 -r tip part2.hg

"store REPO" lists the store's files and their checksums: not the undo
files a transaction leaves for hg rollback, nor empty files (core before
Mercurial 7.0 leaves an empty data file behind when it rolls back an inline
split).  "ondebug" reads the debug line of the file revlogs' closer and
says whether every close ran on a background thread, and on which kind:
the C lane's ("native", where it is built: make checks that it is) or
Python's:

  $ store() {
  >   (cd "$1/.hg/store" && find . -type f ! -name 'undo*' ! -empty |
  >    LC_ALL=C sort | xargs -d '\n' md5sum)
  > }
  $ ondebug() {
  >   sed -n 's/^backgroundclose: \([0-9]*\) revlog closes (\([0-9]*\) on threads), [a-z]* mode, [0-9]*\( native\)\{0,1\} threads.*/\1 \2 \3/p' |
  >   tail -1 | while read closes threaded native; do
  >     [ "$closes" -gt 30 ] && [ "$closes" = "$threaded" ] &&
  >       echo "every close on ${native:-python} threads" ||
  >       echo "$threaded of $closes closes on threads"
  >   done
  > }

A whole bundle into an empty repository, under three different draws of
random latencies (98% near 1 us, the rest 1 or 20 ms), all closes on
background threads:

  $ for seed in 1 2 3; do
  >   hg init full-$seed
  >   SLOWCLOSE_DIST=tail SLOWCLOSE_SEED=$seed slow hg -R full-$seed unbundle all.hg --debug | ondebug
  >   hg -R full-$seed verify -q
  > done
  every close on native threads
  every close on native threads
  every close on native threads

The same on Python threads, where the C lane is not built or is turned
off; the store is the same (the fncache lists the same names, in the order
of a Python set):

  $ hg init full-python
  $ SLOWCLOSE_DIST=tail SLOWCLOSE_SEED=1 slow hg -R full-python unbundle all.hg --debug \
  >   --config worker.backgroundclosenative=no | ondebug
  every close on python threads
  $ hg -R full-python verify -q
  $ store full-1 | grep -v ' ./fncache$' > full-1.sum
  $ store full-python | grep -v ' ./fncache$' | diff full-1.sum - && echo same store
  same store
  $ sort full-python/.hg/store/fncache | diff - <(sort full-1/.hg/store/fncache) && echo same fncache
  same fncache

Appending: the first half, then the second half into the same repository.
The second half appends to revlogs written by the first, and big.bin's
revlog is split from inline into index and data while the closes of the
files before it are still pending:

  $ hg init r
  $ SLOWCLOSE_DIST=tail SLOWCLOSE_SEED=4 slow hg -R r unbundle -q part1.hg
  $ ls r/.hg/store/data/big.bin.*
  r/.hg/store/data/big.bin.i
  $ hg -R r verify -q
  $ store r > r.half
  $ SLOWCLOSE_DIST=tail SLOWCLOSE_SEED=5 slow hg -R r unbundle part2.hg --debug | ondebug
  every close on native threads
  $ ls r/.hg/store/data/big.bin.*
  r/.hg/store/data/big.bin.d
  r/.hg/store/data/big.bin.i
  $ hg -R r verify -q
  $ hg -R r log -r tip -T '{node}\n' > r.tip
  $ hg -R src log -r tip -T '{node}\n' | diff r.tip - && echo same tip
  same tip

Rolling back truncates the appended revlogs and undoes the split; the store
is byte for byte what the first half left:

  $ hg -R r rollback
  repository tip rolled back to revision 12 (undo unbundle)
  $ store r | diff r.half - && echo as before
  as before
  $ hg -R r verify -q

A hook that refuses the changegroup aborts the transaction after every
close is done; its rollback leaves the store as it was:

  $ SLOWCLOSE_US=300 slow hg -R r unbundle -q part2.hg --config hooks.pretxnchangegroup=false
  transaction abort!
  rollback completed
  abort: pretxnchangegroup hook exited with status 1
  [255]
  $ store r | diff r.half - && echo as before
  as before
  $ hg -R r verify -q

A bad setting aborts before the changegroup is applied: nothing to roll
back (test-badsettings.t has every command):

  $ hg -R r unbundle -q part2.hg --config worker.backgroundclosenative=sometimes
  config error: worker.backgroundclosenative is not a boolean ('sometimes')
  (see "hg help -e backgroundclose")
  [255]
  $ store r | diff r.half - && echo as before
  as before

A store whose revlogs are hardlinked to another's (a local clone): before
appending, the vfs breaks each link by copying the revlog to a temporary
file (util.mktempcopy) and renaming it over.  That copy is core's own file
and must own its descriptor; "storefds" counts the descriptors into a store
that are still open when hg exits:

  $ cat > storefds.py <<'PY'
  > import atexit, os, sys
  > def report():
  >     held = 0
  >     for fd in os.listdir('/proc/self/fd'):
  >         try:
  >             held += '/.hg/store/' in os.readlink('/proc/self/fd/' + fd)
  >         except OSError:
  >             pass
  >     sys.stderr.write('store descriptors left open: %d\n' % held)
  > atexit.register(report)
  > PY
  $ hg clone -q -U full-1 linked-base
  $ hg -R linked-base strip -q --config extensions.strip= -r 13:
  $ hg clone -q -U linked-base linked
  $ stat -c %h linked/.hg/store/data/big.bin.i
  2
  $ SLOWCLOSE_US=300 slow hg -R linked unbundle -q part2.hg \
  >   --config extensions.storefds="$PWD/storefds.py"
  store descriptors left open: 0
  $ stat -c %h linked/.hg/store/data/big.bin.i
  1
  $ hg -R linked verify -q
  $ hg -R linked-base verify -q

A close that fails, on a background thread or inline, names the file and
aborts; the transaction rolls back, and the same bundle applies afterwards:

  $ for policy in yes no; do
  >   SLOWCLOSE_US=300 SLOWCLOSE_FAIL_NTH=20 slow hg -R r unbundle -q part2.hg --config worker.backgroundclose=$policy
  >   echo "exit $?"
  >   store r | diff r.half - && echo as before
  >   hg -R r verify -q
  > done
  transaction abort!
  rollback completed
  abort: error closing data/*: Input/output error (glob)
  exit 255
  as before
  transaction abort!
  rollback completed
  abort: error closing data/*: Input/output error (glob)
  exit 255
  as before
  $ SLOWCLOSE_US=300 slow hg -R r unbundle -q part2.hg
  $ hg -R r verify -q

Pulling over ssh with server.validate, which reads back every file revlog
the changegroup wrote, right after its close was handed over:

  $ hg init p
  $ SLOWCLOSE_US=300 slow hg -R p pull -q ssh://user@dummy/src --config server.validate=yes
  $ hg -R p verify -q
  $ hg -R p log -r tip -T '{rev}\n'
  25

Clone without --stream: the changegroup, then the working copy, written by
Mercurial's forked update workers, each with its own closer (one debug line
per worker):

  $ SLOWCLOSE_DIST=tail SLOWCLOSE_SEED=6 slow hg clone --debug --config worker.numcpus=4 \
  >   ssh://user@dummy/src c > clone.out
  $ grep -c 'working-copy closes' clone.out
  4
  $ grep -o 'working-copy closes ([0-9]* on threads)' clone.out | grep -vc '(0 on'
  4

Each worker's closes run on C threads, which never take the GIL:

  $ grep -c 'working-copy closes .* native threads' clone.out
  4
  $ grep 'files updated' clone.out
  301 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R c verify -q
  $ hg -R c status
  $ diff -r -x .hg src c && echo same tree
  same tree

Updating away and back, under constant 300 us closes:

  $ hg -R c update -q null
  $ SLOWCLOSE_US=300 slow hg -R c update --config worker.numcpus=4
  301 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R c status
  $ diff -r -x .hg src c && echo same tree
  same tree

A close that fails in an update worker names the file and aborts.  Each
forked worker counts its own closes (the model's counter is copied at the
fork), so more than one worker may meet its 50th close before core stops
them: one such line per worker that did, and nothing else:

  $ hg -R c update -q null
  $ SLOWCLOSE_US=300 SLOWCLOSE_FAIL_NTH=50 slow hg -R c update -q --config worker.numcpus=4 > update.err 2>&1
  [255]
  $ grep -c '^abort: error closing .*/c/.*: Input/output error$' update.err | grep -qv '^0$' && echo aborted naming the file
  aborted naming the file
  $ grep -v '^abort: error closing .*/c/.*: Input/output error$' update.err
  [1]
  $ hg -R c update -q -C tip
  $ hg -R c status
  $ diff -r -x .hg src c && echo same tree
  same tree
