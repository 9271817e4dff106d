Other extensions on the write path of an update
===============================================

The checkout writes regular files itself, beside core's batchget. Where
another extension overrides or wraps any function on core's write path
(the repository's wwrite, a working file's write or clearunknown, the
vfs's write, setflags or __call__, the auditor, or batchget itself inside
this extension's wrapper), the whole update is core's own, so that the other extension sees and changes every file as it
does without this one. tests/writepath.py is such an extension, one
override at a time: .txt files get a prefix, .sh files the exec bit, a log
under .hg lists the paths.

  $ . "$TESTDIR/setup.sh"
  $ hg init src
  $ mkdir -p src/d/e src/s
  $ for i in $(seq 1 40); do
  >   echo "text $i" > src/d/f$i.txt
  >   echo "echo $i" > src/d/e/s$i.sh
  >   echo "data $i" > src/s/g$i.c
  > done
  $ hg -R src commit -qAm files
  $ without="--config extensions.backgroundclose=!"
  $ writers="--config worker.backgroundclosewrites=true"
  $ override="--config extensions.writepath=$TESTDIR/writepath.py"

Each override, with the extension (writers forced on, so that the
checkout would write every file) and without it: the same tree, contents,
modes, dirstate and log, and no checkout of the extension's (no --debug
line):

  $ for kind in wwrite fctxwrite clearunknown vfswrite setflags vfscall batchget; do
  >   hg clone -q -U src $kind-core
  >   hg -R $kind-core update -q tip $override --config writepath.override=$kind $without
  >   hg clone -q -U src $kind-ext
  >   hg -R $kind-ext update tip --debug $writers $override \
  >     --config writepath.override=$kind | grep '^backgroundclose:'
  >   diff <(wctree $kind-core) <(wctree $kind-ext) \
  >     && diff <(wcdirstate $kind-core) <(wcdirstate $kind-ext) \
  >     && diff <(sort $kind-core/.hg/writepath.log 2>/dev/null) \
  >       <(sort $kind-ext/.hg/writepath.log 2>/dev/null) \
  >     && echo "$kind: as core"
  > done
  wwrite: as core
  fctxwrite: as core
  clearunknown: as core
  vfswrite: as core
  setflags: as core
  vfscall: as core
  batchget: as core

Each override did change what was written, so each comparison above
could fail:

  $ cat wwrite-ext/d/f1.txt fctxwrite-ext/d/f1.txt vfswrite-ext/d/f1.txt
  [override]text 1
  [override]text 1
  [override]text 1
  $ ls -l setflags-ext/d/e/s1.sh wwrite-ext/d/e/s1.sh | cut -c1-10
  -rwxr-xr-x
  -rw-r--r--
  $ wc -l < clearunknown-ext/.hg/writepath.log
  120
  $ grep -c '^open ' vfscall-ext/.hg/writepath.log
  40
  $ cat batchget-ext/.hg/writepath.log
  batchget 120

A repository subclass that leaves the write path alone, as many
extensions make one in reposetup, changes nothing the checkout skips: the
checkout still writes, and the tree is core's:

  $ hg clone -q -U src subclass-core
  $ hg -R subclass-core update -q tip $without
  $ hg clone -q -U src subclass-ext
  $ hg -R subclass-ext update tip --debug $writers $override \
  >   --config writepath.override=subclass | grep '^backgroundclose:' \
  >   | sed 's/[0-9]* written by [0-9]* writer/N written by N writer/'
  backgroundclose: 120 checkout files, N written by N writer threads* (glob)
  $ diff <(wctree subclass-core) <(wctree subclass-ext) \
  >   && diff <(wcdirstate subclass-core) <(wcdirstate subclass-ext) \
  >   && echo "subclass: as core"
  subclass: as core

An auditor of the working copy's own (a subclass of core's pathauditor
that refuses some paths) keeps its checks: the update is core's, and
stops where core's does, with core's message and the same files written
(one process, so that the order is core's):

  $ mkdir src/refused
  $ echo r > src/refused/r
  $ hg -R src commit -qAm refused
  $ for how in "$without" ""; do
  >   rm -rf audit && hg clone -q -U src audit
  >   hg -R audit update tip $writers $override --config writepath.override=auditor \
  >     --config worker.enabled=no $how
  >   echo "exit $?"
  >   wctree audit > audit-$(test -n "$how" && echo core || echo ext).tree
  > done
  abort: path refused here: refused/r
  exit 255
  abort: path refused here: refused/r
  exit 255
  $ diff audit-core.tree audit-ext.tree && echo "auditor: as core"
  auditor: as core

A failure on a writer thread
----------------------------

A non-empty directory where the update puts a file: core's steps fail on
it (clearunknown cannot remove the directory). Core's update stops at
that file, with core's message; with the extension's writers, each close
slow (2 ms), the checkout stops at once too: no file after the failing
one is started once it failed (one other writer thread may be writing
one already), where before the writers went on with every file handed
over (one process, so that the order is core's):

  $ hg init dir
  $ mkdir dir/sub
  $ for i in $(seq 10 99); do echo $i > dir/sub/b$i; echo $i > dir/sub/z$i; done
  $ echo dd > dir/sub/dd
  $ hg -R dir commit -qAm files
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" SLOWCLOSE_US=2000 "$@"; }
  $ for how in core ext; do
  >   hg clone -q -U dir dir-$how
  >   mkdir -p dir-$how/sub/dd/in && touch dir-$how/sub/dd/in/the-way
  > done
  $ hg -R dir-core update -q tip --config worker.enabled=no $without
  abort: Directory not empty: '*/dir-core/sub/dd' (glob)
  [255]
  $ slow hg -R dir-ext update -q tip --config worker.enabled=no $writers \
  >   --config worker.backgroundclosemaxthreadcount=2
  abort: Directory not empty: '*/dir-ext/sub/dd' (glob)
  [255]
  $ ls dir-core/sub | grep -c '^z'
  0
  [1]
  $ test "$(ls dir-ext/sub | grep -c '^z')" -le 1 && echo "at most one after it"
  at most one after it

With the directory moved out of the way, hg update --clean recovers, as
from core's failed update:

  $ for how in core ext; do
  >   rm -r dir-$how/sub/dd && hg -R dir-$how update -q --clean tip
  >   hg -R dir-$how status
  > done
  $ diff <(wctree dir-core) <(wctree dir-ext) && echo "as core"
  as core
