One hgrc for a whole fleet
==========================

An administrator enables the extension for a team whose home directories
are on a network file system: one ~/.hgrc, read by every machine's hg,
some of which lack the extension (or have it turned off with "!"). Every
setting the extension documents goes into that one file:

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ cat > shared.rc <<RC
  > [worker]
  > backgroundclose = false
  > backgroundclosepolicy = adaptive
  > backgroundclosethreadcount = 8
  > backgroundclosemaxthreadcount = 32
  > backgroundclosemaxqueue = 512
  > backgroundcloseminfilecount = 100
  > backgroundclosethreshold = 20.5
  > backgroundclosenative = true
  > backgroundclosewrites = true
  > backgroundclosejournal = true
  > backgroundclosereport = false
  > RC
  $ HGRCPATH="$HGRCPATH:$PWD/shared.rc"
  $ without="--config extensions.backgroundclose=!"

The machine with the extension follows the policy the extension's own
setting names, and says why:

  $ hg config worker.backgroundclosepolicy
  adaptive
  (backgroundclose: the adaptive policy, as worker.backgroundclosepolicy=adaptive (*shared.rc:3)) (glob)

A machine without it reads core's boolean and ignores the rest: it clones
over ssh (stream and changegroup) and updates, with no word about any
setting:

  $ hg $without clone -q --stream ssh://user@dummy/src core-stream
  $ hg $without clone -q ssh://user@dummy/src core-cg
  $ hg $without -R core-stream update -q null
  $ hg $without -R core-stream update -q tip

The machine with the extension does the same, writing its threads as the
file asks (writer threads always, the journal on):

  $ hg clone -q --stream ssh://user@dummy/src ext-stream
  $ hg clone -q ssh://user@dummy/src ext-cg
  $ hg -R ext-stream update -q null
  $ hg -R ext-stream update tip --debug | grep '^backgroundclose:' \
  >   | sed 's/[0-9]* written by [0-9]* writer/N written by N writer/'
  backgroundclose: 300 checkout files, N written by N writer threads* (glob)

Both machines made the same repositories and working copies:

  $ for r in stream cg; do
  >   hg -R ext-$r verify -q && hg $without -R core-$r verify -q
  >   diff <(wctree core-$r) <(wctree ext-$r) && echo "$r: same tree"
  >   diff <(wcdirstate core-$r) <(wcdirstate ext-$r) && echo "$r: same dirstate"
  >   diff <(cd core-$r/.hg/store && find . -type f | sort) \
  >     <(cd ext-$r/.hg/store && find . -type f | sort) && echo "$r: same store"
  > done
  stream: same tree
  stream: same dirstate
  stream: same store
  cg: same tree
  cg: same dirstate
  cg: same store
  $ hg -R ext-stream status && hg $without -R core-stream status

What the extension's old spelling of its adaptive mode did to the machines
without it, and why the file above uses the extension's own setting
instead: core refuses "auto" in its boolean, where the extension still
reads it:

  $ hg $without -R core-stream update -q null --config worker.backgroundclose=auto
  config error: worker.backgroundclose is not a boolean ('auto')
  [255]
  $ hg -R ext-stream update -q null --config worker.backgroundclose=auto \
  >   --config worker.backgroundclosepolicy=
  config error: worker.backgroundclosepolicy is not adaptive, background or inline ('')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R ext-stream update -q null --config worker.backgroundclose=auto \
  >   --config extensions.backgroundclose= \
  >   --config worker.backgroundclosepolicy=adaptive
  $ hg -R ext-stream summary | grep parent
  parent: -1:000000000000  (no revision checked out)

"false" means no threads
------------------------

On a machine whose own hgrc says worker.backgroundclose=false (and
nothing else), the extension starts no thread of any kind: no close
thread, no writer thread, and the update is core's own (no checkout line):

  $ grep -v backgroundclosewrites .hgrc > inline.rc
  $ cat >> inline.rc <<RC
  > backgroundclose = false
  > backgroundclosereport = true
  > RC
  $ HGRCPATH="$PWD/inline.rc"
  $ hg config worker
  worker.backgroundclose=false
  worker.backgroundclosereport=true
  (backgroundclose: the inline policy, as worker.backgroundclose=false (*inline.rc:*)) (glob)
  $ hg clone --stream --debug ssh://user@dummy/src inline > inline.out
  $ grep -e '^backgroundclose:' -e 'writer' inline.out
  [1]
  $ grep -e '^  close' -e '^  closer' inline.out
    close, applier          30? * (glob)
    close, threads            0           -           -           -
    closer: inline, inline, 0 threads, at most 384 files queued (peak 0)
  $ hg -R inline update -q null
  $ hg -R inline update tip --debug > update.out
  $ grep -c -e '^backgroundclose:' -e 'checkout' update.out
  0
  [1]

Writers asked for explicitly are the one exception:

  $ hg -R inline update -q null
  $ hg -R inline update tip --debug --config worker.backgroundclosewrites=true \
  >   | grep '^backgroundclose:' | sed 's/[0-9]* written by [0-9]*/N written by N/'
  backgroundclose: 300 checkout files, N written by N writer threads* (glob)
