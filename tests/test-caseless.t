A working copy on a case-insensitive file system
================================================

NTFS and APFS find a name whatever its case, and keep the case a name was
made with.  There, Mercurial refuses a revision with two names that differ
only by case before it writes anything, and an update that renames README
to readme removes README before it writes readme: in the other order,
opening readme would open README's file, and the name would stay README.
This test writes to such a file system: caseless (bench/caseless.c), a
FUSE file system mounted by bench/caseless.py.  It is skipped where that
can't be done: no /dev/fuse, not root, or no libfuse 3 headers
(`python3 bench/caseless.py --check` says which; `make realfs-deps`
installs them).

  $ python3 "$TESTDIR/../bench/caseless.py" --check > /dev/null || exit 80
  $ . "$TESTDIR/setup.sh"

Writer threads forced on, so that they write whatever the timings say:

  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclosewrites = true
  > HGRC

The mount, held by a process of its own until it is sent SIGTERM (or for
five minutes at most):

  $ mkdir backing
  $ python3 "$TESTDIR/../bench/caseless.py" --serve backing mnt fs 300 \
  >   > fs.log 2>&1 &
  $ echo $! > fs.pid
  $ for i in $(seq 200); do [ -e fs/ready ] && break; sleep 0.1; done
  $ mountpoint -q mnt && echo mounted
  mounted

A name finds its file whatever the case, the file keeps the case it was
made with, and Mercurial sees the file system fold case:

  $ echo made > mnt/Probe
  $ cat mnt/PROBE
  made
  $ echo again > mnt/probe
  $ ls mnt
  Probe
  $ rm mnt/PROBE
  $ hg init mnt/probe && (cd mnt/probe && hg debugfs) | grep case
  case-sensitive: no
  $ rm -r mnt/probe

A repository made on this test's case-sensitive disk.  Revision 1 renames
README to readme and the directory Docs to docs (only the case changes),
and changes enough files for core to fork update workers between
revisions 0 and 1; revision 2 adds two names that differ only by case:

  $ hg init src
  $ cd src
  $ mkdir -p deep Docs
  $ for i in $(seq 1 300); do echo "file $i" > deep/f$i; done
  $ echo readme > README
  $ echo guide > Docs/guide.txt
  $ printf '#!/bin/sh\necho run\n' > run.sh
  $ chmod +x run.sh
  $ ln -s README link
  $ hg commit -qAm one
  $ hg mv -q README readme
  $ hg mv -q Docs/guide.txt docs/guide.txt
  $ echo changed > readme
  $ for i in $(seq 1 300); do echo "more $i" >> deep/f$i; done
  $ rm link
  $ ln -s readme link
  $ hg commit -qAm two
  $ echo lower > collide
  $ echo upper > COLLIDE
  $ hg commit -qAm three
  $ cd ..

What is compared (wctree and wcdirstate, from setup.sh): each name as the
file system keeps it (its case), its type, mode and content, the dirstate
(mtimes aside), hg status and hg verify:

  $ same() {
  >   diff <(wctree mnt/core) <(wctree "mnt/$1") &&
  >   diff <(wcdirstate mnt/core) <(wcdirstate "mnt/$1") &&
  >   hg -R "mnt/$1" status && hg -R "mnt/$1" verify -q && echo "$1: as core"
  > }

Updates back and forth across the renames, by core, by the extension with
update workers (four, whatever the machine has) and without.  README
becomes readme and Docs becomes docs on the file system itself:

  $ for name in core forked single; do hg clone -q -U src mnt/$name; done
  $ for rev in 0 1 0; do
  >   hg -R mnt/core update -q $rev --config extensions.backgroundclose=!
  >   hg -R mnt/forked update -q $rev --config worker.numcpus=4
  >   hg -R mnt/single update -q $rev --config worker.enabled=false
  >   same forked && same single || echo "differs at $rev"
  > done | sort | uniq -c | sed 's/^ *//'
  3 forked: as core
  3 single: as core

The writers wrote the checkout (the symbolic link is core's): in update
workers from revision 0 to 1 (the renames, as in the loop above), and
without them from the null revision:

  $ hg -R mnt/forked update 1 --debug --config worker.numcpus=4 \
  >   | grep '^backgroundclose:'
  backgroundclose: 303 checkout files, 302 written by * writer threads* in 4 workers; in flight on average: * (glob)
  $ hg -R mnt/single update -q null
  $ hg -R mnt/single update 1 --debug --config worker.enabled=false \
  >   | grep '^backgroundclose:'
  backgroundclose: 304 checkout files, 303 written by * writer threads*; in flight on average: * (glob)
  $ hg -R mnt/core update -q 1 --config extensions.backgroundclose=!
  $ same forked && same single
  forked: as core
  single: as core
  $ ls backing/single
  deep
  docs
  link
  readme
  run.sh
  $ cat mnt/single/README
  changed

An untracked README, with the content revision 1 gives readme: the update
to revision 1 takes it over, and unlinks it before it writes readme, so
that the name too is the revision's.  Opened as it is, the file would keep
the name README:

  $ for name in core forked single; do
  >   hg -R mnt/$name update -q null
  >   echo changed > mnt/$name/README
  > done
  $ hg -R mnt/core update -q 1 --config extensions.backgroundclose=!
  $ hg -R mnt/forked update -q 1 --config worker.numcpus=4
  $ hg -R mnt/single update -q 1 --config worker.enabled=false
  $ ls backing/core backing/forked backing/single | grep -i readme
  readme
  readme
  readme
  $ same forked && same single
  forked: as core
  single: as core

Revision 2 has both collide and COLLIDE: the update is refused before a
file is written, with core's message, and the working copy stays at
revision 1:

  $ hg -R mnt/core update -q 2 --config extensions.backgroundclose=!
  abort: case-folding collision between [Cc][Oo][Ll][Ll][Ii][Dd][Ee] and [Cc][Oo][Ll][Ll][Ii][Dd][Ee] (re)
  [255]
  $ hg -R mnt/forked update -q 2 --config worker.numcpus=4
  abort: case-folding collision between [Cc][Oo][Ll][Ll][Ii][Dd][Ee] and [Cc][Oo][Ll][Ll][Ii][Dd][Ee] (re)
  [255]
  $ hg -R mnt/single update -q 2 --config worker.enabled=false
  abort: case-folding collision between [Cc][Oo][Ll][Ll][Ii][Dd][Ee] and [Cc][Oo][Ll][Ll][Ii][Dd][Ee] (re)
  [255]
  $ ls backing/forked backing/single | grep -ci collide
  0
  [1]
  $ hg -R mnt/forked log -r . -T '{rev}\n'
  1
  $ hg -R mnt/single log -r . -T '{rev}\n'
  1
  $ same forked && same single
  forked: as core
  single: as core

A stream clone over ssh into the mount, with its checkout: the store's
encoded names keep apart the revlogs of paths that differ only by case
(data/_r_e_a_d_m_e.i and data/readme.i, data/_c_o_l_l_i_d_e.i and
data/collide.i), and the clone verifies:

  $ hg clone -q --stream -u 1 ssh://user@dummy/src mnt/streamed
  $ hg -R mnt/streamed verify -q
  $ ls backing/streamed/.hg/store/data | LC_ALL=C sort
  _c_o_l_l_i_d_e.i
  _docs
  _r_e_a_d_m_e.i
  collide.i
  deep
  docs
  link.i
  readme.i
  run.sh.i
  $ same streamed
  streamed: as core

  $ kill $(cat fs.pid)
  $ wait
  $ mountpoint -q mnt || echo unmounted
  unmounted
  $ cat fs.log fs/caseless.log
