The working-copy checkout, written whole by writer threads
==========================================================

An update gets its files through core's batchget, in each forked update
worker and in an update without workers.  The extension writes each file
whole (made, written, closed, then stat'ed for the dirstate), on writer
threads once making files is measured to wait on the file system (sshfs,
NFS: see test-sshfs.t).  Here the writers are forced on
(worker.backgroundclosewrites=true) on a local disk, and every result is
compared with core's own update of the same revisions.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclosewrites = true
  > [storage]
  > dirstate-v2.slow-path = allow
  > HGRC

A repository with what a checkout must keep: executable files, symbolic
links, a file that becomes a directory and back, a file renamed to a name
that differs only by case (here, on a case-sensitive file system, a plain
rename; core checks case collisions before any file is written), and
enough files for core to fork update workers:

  $ hg init src
  $ cd src
  $ mkdir -p deep/er/still
  $ for i in $(seq 1 300); do echo "file $i" > deep/er/still/f$i; done
  $ for i in $(seq 1 100); do echo "top $i" > t$i; done
  $ printf '#!/bin/sh\necho run\n' > run.sh
  $ chmod +x run.sh
  $ ln -s run.sh link
  $ ln -s deep/er dirlink
  $ echo plain > thing
  $ echo readme > README
  $ hg commit -qAm one
  $ hg rm -q thing
  $ mkdir thing
  $ echo inside > thing/inner
  $ hg mv -q README readme
  $ chmod -x run.sh
  $ chmod +x deep/er/still/f1
  $ rm link
  $ ln -s readme link
  $ echo changed > deep/er/still/f2
  $ hg commit -qAm two
  $ cd ..

What is compared (wctree and wcdirstate, from setup.sh): each file's type,
mode and content, the dirstate (mtimes aside, and whether one is recorded:
core leaves out those of files written in the update's last second, and
which those are depends on speed), hg status and hg verify:

  $ same() {
  >   ref=${2:-core}
  >   diff <(wctree $ref) <(wctree "$1") &&
  >   diff <(wcdirstate $ref) <(wcdirstate "$1") &&
  >   hg -R "$1" status && hg -R "$1" verify -q && echo "$1: as core"
  > }

A clone's checkout, with update workers and without, then updates back and
forth, to the null revision and from it:

  $ hg clone -q src core --config extensions.backgroundclose=!
  $ hg clone -q src forked
  $ hg clone -q src single --config worker.enabled=false --debug \
  >   | grep '^backgroundclose:'
  backgroundclose: 405 checkout files, 403 written by * writer threads, the store read ahead by * threads; in flight on average: * reads, * directories, * files (glob)
  $ same forked
  forked: as core
  $ same single
  single: as core
  $ for rev in 0 null 0 1; do
  >   hg -R core update -q $rev --config extensions.backgroundclose=!
  >   hg -R forked update -q $rev
  >   hg -R single update -q $rev --config worker.enabled=false
  >   same forked && same single || echo "differs at $rev"
  > done | sort | uniq -c | sed 's/^ *//'
  4 forked: as core
  4 single: as core

However many update workers wrote the checkout, the update says once what
they did, with --debug and in the timing report
(worker.backgroundclosereport); files written by core's own steps here
are the symbolic links:

  $ hg -R forked update -q null
  $ hg -R forked update tip --debug --config worker.numcpus=4 \
  >   | grep '^backgroundclose:'
  backgroundclose: 405 checkout files, 403 written by * writer threads, the store read ahead by * threads in 4 workers; in flight on average: * reads, * directories, * files (glob)
  $ hg -R forked update -q null
  $ hg -R forked update tip --config worker.backgroundclosereport=true \
  >   --config worker.numcpus=3
  checkout: 405 files, * in * (glob)
    operation             count       total        mean         max
    store read              405 * (glob)
    read wait * (glob)
    mkdir * (glob)
    open                    403 * (glob)
    write                   403 * (glob)
    close, applier            0           -           -           -
    close, writers          403 * (glob)
    stat                    403 * (glob)
    core's steps              2 * (glob)
    in flight on average: * store reads, * directories, * files (glob)
    readers: * threads read the store ahead (at most * held) (glob)
    directories: * made*, * found existing (glob)
    writers: * threads in 3 workers wrote 403 files whole (at most * held) (glob)
  405 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R forked status

The dirstate's data is read once each file is closed.  A file changed
right after the update, in the same second and to the same size, still
shows as modified, with dirstate-v1 and dirstate-v2 (core leaves out the
data of files written in the update's last second; the extension must
give it the data of the files as they stay):

  $ for v2 in no yes; do
  >   hg clone -q src same-$v2 --config format.use-dirstate-v2=$v2 \
  >     --config worker.enabled=false
  >   hg -R same-$v2 debugrequires | grep -c dirstate-v2
  >   hg -R same-$v2 update -q 0 --config worker.enabled=false
  >   echo "file 9" > same-$v2/deep/er/still/f1
  >   hg -R same-$v2 status
  > done
  0
  M deep/er/still/f1
  1
  M deep/er/still/f1

A sparse working copy gets only the files it includes:

  $ hg clone -q src sparse -U --config extensions.sparse=
  $ hg --cwd sparse debugsparse --include 'deep/**' --config extensions.sparse=
  $ hg -R sparse update -q --config extensions.sparse=
  $ ls sparse
  deep
  $ hg -R sparse status --config extensions.sparse=
  $ find sparse/deep -type f | wc -l | tr -d ' '
  300

A close that fails aborts the update in core's words, naming the file
where core's message names none; the working copy is left as core leaves
an interrupted update, and hg update --clean recovers it:

  $ hg clone -q -U src failing
  $ SLOWCLOSE_US=1 SLOWCLOSE_FAIL_MATCH=f200 SLOWCLOSE_ERRNO=EIO \
  >   LD_PRELOAD="$SLOWCLOSE_SO" \
  >   hg -R failing update -q --config worker.enabled=false
  abort: Input/output error: '*/failing/deep/er/still/f200' (glob)
  [255]
  $ hg -R failing summary | grep -o '(interrupted update)'
  (interrupted update)
  $ hg -R failing update -q --clean
  $ diff <(wctree core) <(wctree failing)
  $ hg -R failing status

Ctrl-C midway: hg stops writing, joins its writer threads, keeps no
descriptor open, and the working copy is an interrupted update that
hg update --clean recovers:

  $ hg clone -q -U src int
  $ SLOWCLOSE_US=2000 LD_PRELOAD="$SLOWCLOSE_SO" \
  >   python3 "$TESTDIR/interrupt.py" INT int/deep 100 -- \
  >   -R int -q update --config worker.enabled=false
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ hg -R int summary | grep -o '(interrupted update)'
  (interrupted update)
  $ hg -R int update -q --clean
  $ diff <(wctree core) <(wctree int)
  $ hg -R int status

With update workers, Ctrl-C reaches each of them (a terminal sends it to
the whole process group): each stops writing, joins its writer threads
and exits; the update ends as core's does then (exit 255, and core says
nothing more), no process of it is left, nothing is written after it,
and hg update --clean recovers:

  $ hg clone -q -U src intf
  $ SLOWCLOSE_US=20000 LD_PRELOAD="$SLOWCLOSE_SO" setsid \
  >   python3 "$TESTDIR/withsigint.py" hg -R intf update \
  >   --config worker.numcpus=2 \
  >   --config worker.backgroundclosemaxthreadcount=2 > intf.out 2>&1 &
  $ pid=$!
  $ files() { find intf -type f -not -path 'intf/.hg/*' | wc -l; }
  $ while [ $(files) -lt 50 ]; do sleep 0.01; done
  $ kill -INT -- -$pid; at=$(files)
  $ wait $pid; echo "exit $?"
  exit 255
  $ written=$(files)
  $ test $((written - at)) -lt 60 && echo "stopped writing at the signal"
  stopped writing at the signal
  $ sleep 1
  $ pgrep -g $pid
  [1]
  $ test $(files) = "$written" && echo "nothing written after"
  nothing written after

No traceback through the extension's code: core's pool sends SIGTERM to
the other workers once one exits, and Mercurial raises it wherever the
worker is, even in a finalizer; a worker still joining its writers
keeps it to itself (the generator core abandoned is closed quietly):

  $ grep -c 'backgroundclose' intf.out
  0
  [1]
  $ hg -R intf summary | grep -o '(interrupted update)'
  (interrupted update)
  $ hg -R intf update -q --clean
  $ diff <(wctree core) <(wctree intf)
  $ hg -R intf status

Turned off (worker.backgroundclosewrites=false), the checkout is core's
(against a clone by core: an update by core records a file whose mode
alone changed as one to look at, a clone does not):

  $ hg clone -q src coreclone --config extensions.backgroundclose=!
  $ hg clone -q src off --config worker.backgroundclosewrites=false \
  >   --config worker.enabled=false --debug | grep -c 'checkout files'
  0
  [1]
  $ same off coreclone
  off: as core
