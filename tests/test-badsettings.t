A bad setting aborts before anything is written
===============================================

Every command that closes files through the extension checks the
[worker] settings before it writes: one "abort:" naming the setting, and
the repositories as they were.

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src bundle -q -a --type zstd-v2 cg.hg
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' stream.hg
  $ bad="--config worker.backgroundclosethreshold=fast"

hg update, from the null revision (with forked workers and without) and
between two revisions: the working directory, the dirstate and "hg
summary" as before, no "interrupted update":

  $ hg clone -q -U src wc
  $ for workers in true false; do
  >   hg -R wc update tip $bad --config worker.enabled=$workers
  >   echo "exit $?"
  >   ls wc
  >   hg -R wc summary | grep -i 'interrupted\|parent'
  > done
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  exit 255
  parent: -1:000000000000  (no revision checked out)
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  exit 255
  parent: -1:000000000000  (no revision checked out)
  $ hg -R wc update -q 0
  $ hg -R wc status --all | sort > before
  $ hg -R wc update tip $bad --config worker.backgroundclose=yes
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R wc status --all | sort | cmp - before && echo "wc: as before"
  wc: as before
  $ hg -R wc summary | grep -i 'interrupted\|parent'
  parent: 0:* (glob)

The same for hg merge, which updates the working directory too:

  $ hg -R wc merge tip $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R wc status --all | sort | cmp - before && echo "wc: as before"
  wc: as before

hg unbundle of a changegroup and of a stream bundle, hg pull (local and
over ssh) and hg clone --stream: no transaction begun, nothing rolled back,
the repository as new, no clone left behind:

  $ hg init target
  $ hg -R target unbundle cg.hg $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target unbundle stream.hg $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target pull -q src $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target pull -q ssh://user@dummy/src $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg clone -q --stream ssh://user@dummy/src streamed $bad
  abort: worker.backgroundclosethreshold is not a valid integer ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ ls
  before
  cg.hg
  src
  stream.hg
  target
  wc

Other bad values are caught the same way, each naming its setting:

  $ for setting in backgroundclosethreadcount=0 backgroundclosemaxqueue=-1 \
  >     backgroundclosenative=perhaps backgroundclosejournal=often \
  >     backgroundclosereport=maybe; do
  >   hg -R target unbundle -q cg.hg --config worker.$setting
  >   asnew target > /dev/null || echo "target: changed"
  > done
  abort: worker.backgroundclosethreadcount must be a positive integer, not 0
  (see "hg help -e backgroundclose")
  abort: worker.backgroundclosemaxqueue must be a positive integer, not -1
  (see "hg help -e backgroundclose")
  abort: worker.backgroundclosenative is not a boolean ('perhaps')
  (see "hg help -e backgroundclose")
  abort: worker.backgroundclosejournal is not a boolean ('often')
  (see "hg help -e backgroundclose")
  abort: worker.backgroundclosereport must be a boolean or "json", not maybe

A good value lets the same commands through:

  $ hg -R target unbundle -q cg.hg --config worker.backgroundclosethreshold=50
  $ hg -R target verify -q
  $ hg -R wc update -q tip --config worker.backgroundclosethreshold=50
  $ hg -R wc status

A push to a server whose configuration has a bad value: the server aborts
before it writes, like a push that core's own prechangegroup hook rejects
(core's aborted transaction leaves .hg/branch and .hg/journal.desc behind
in both):

  $ hg init server
  $ printf '[worker]\nbackgroundclosethreshold = fast\n' > server/.hg/hgrc
  $ hg -R src push ssh://user@dummy/server
  pushing to ssh://user@dummy/server
  searching for changes
  remote: worker.backgroundclosethreshold is not a valid integer ('fast')
  remote: (see "hg help -e backgroundclose")
  abort: push failed on remote
  [255]
  $ hg init rejecting
  $ printf '[hooks]\nprechangegroup = false\n' > rejecting/.hg/hgrc
  $ hg -R src push -q ssh://user@dummy/rejecting
  remote: prechangegroup hook exited with status 1
  abort: push failed on remote
  [255]
  $ diff <(cd server && find .hg | sort) <(cd rejecting && find .hg | sort) \
  >   && echo "server: as after a rejected push"
  server: as after a rejected push
