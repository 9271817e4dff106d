A bad setting is refused before anything is written
===================================================

Every command that closes files through the extension checks the
[worker] settings before it writes: one "config error:" naming the
setting and quoting the value, as core says of its own settings, the same
hint on every one, and the repositories as they were.

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
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  exit 255
  parent: -1:000000000000  (no revision checked out)
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  exit 255
  parent: -1:000000000000  (no revision checked out)
  $ hg -R wc update -q 0
  $ hg -R wc status --all | sort > before
  $ hg -R wc update tip $bad --config worker.backgroundclose=yes
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R wc status --all | sort | cmp - before && echo "wc: as before"
  wc: as before
  $ hg -R wc summary | grep -i 'interrupted\|parent'
  parent: 0:* (glob)

The same for hg merge, which updates the working directory too:

  $ hg -R wc merge tip $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R wc status --all | sort | cmp - before && echo "wc: as before"
  wc: as before

hg unbundle of a changegroup and of a stream bundle, hg pull (local and
over ssh) and hg clone --stream: no transaction begun, nothing rolled back,
the repository as new, no clone left behind:

  $ hg init target
  $ hg -R target unbundle cg.hg $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target unbundle stream.hg $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target pull -q src $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target pull -q ssh://user@dummy/src $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg clone -q --stream ssh://user@dummy/src streamed $bad
  config error: worker.backgroundclosethreshold is not a valid number ('fast')
  (see "hg help -e backgroundclose")
  [255]
  $ ls
  before
  cg.hg
  src
  stream.hg
  target
  wc

Other bad values are caught the same way, each naming its setting; every
count has a maximum, checked before a thread starts, and an empty value is
quoted as such:

  $ for setting in backgroundclosethreadcount=0 backgroundclosemaxqueue=-1 \
  >     backgroundclosenative=perhaps backgroundclosejournal=often \
  >     backgroundclosereport=maybe backgroundclosereport=jsn \
  >     backgroundclosethreadcount=99999999999 \
  >     backgroundclosethreadcount=100000 \
  >     backgroundclosemaxthreadcount=257 backgroundclosemaxqueue=65537 \
  >     backgroundcloseminfilecount=1000000001 \
  >     backgroundclosethreshold=1000001 backgroundclosethreshold=nan \
  >     backgroundclose=yess backgroundclose= backgroundclosepolicy=auto-ish \
  >     backgroundclosepolicy=; do
  >   hg -R target unbundle -q cg.hg --config worker.$setting
  >   asnew target > /dev/null || echo "target: changed"
  > done
  config error: worker.backgroundclosethreadcount must be from 1 to 256 ('0')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosemaxqueue must be from 1 to 65536 ('-1')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosenative is not a boolean ('perhaps')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosejournal is not a boolean ('often')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosereport is not a boolean or json ('maybe')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosereport is not a boolean or json ('jsn')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosethreadcount must be from 1 to 256 ('99999999999')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosethreadcount must be from 1 to 256 ('100000')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosemaxthreadcount must be from 1 to 256 ('257')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosemaxqueue must be from 1 to 65536 ('65537')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundcloseminfilecount must be from 0 to 1000000000 ('1000000001')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosethreshold must be from 0 to 1000000 ('1000001')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosethreshold must be from 0 to 1000000 ('nan')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclose is not a boolean ('yess')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclose is not a boolean ('')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosepolicy is not adaptive, background or inline ('auto-ish')
  (see "hg help -e backgroundclose")
  config error: worker.backgroundclosepolicy is not adaptive, background or inline ('')
  (see "hg help -e backgroundclose")

A start above the maximum is refused where both were set, never obeyed;
with only the maximum lowered, the default start follows it (the --debug
line counts the threads started):

  $ hg -R target unbundle -q cg.hg --config worker.backgroundclosethreadcount=16 \
  >   --config worker.backgroundclosemaxthreadcount=4
  config error: worker.backgroundclosethreadcount (16) is more than worker.backgroundclosemaxthreadcount (4)
  (see "hg help -e backgroundclose")
  [255]
  $ asnew target
  target: as new
  $ hg -R target unbundle cg.hg --debug --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0 \
  >   --config worker.backgroundclosemaxthreadcount=2 \
  >   | grep -o 'background mode, [0-9]* native threads' | sort -u
  background mode, 2 native threads
  $ rm -rf target && hg init target

With ui.detailed-exit-code, a bad value exits as core's config errors do:

  $ hg -R target unbundle -q cg.hg --config ui.detailed-exit-code=yes \
  >   --config worker.backgroundclosemaxqueue=lots
  config error: worker.backgroundclosemaxqueue is not a valid integer ('lots')
  (see "hg help -e backgroundclose")
  [30]
  $ hg -R target unbundle -q cg.hg --config ui.detailed-exit-code=yes \
  >   --config worker.backgroundclose=sometimes
  config error: worker.backgroundclose is not a boolean ('sometimes')
  (see "hg help -e backgroundclose")
  [30]

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
  remote: worker.backgroundclosethreshold is not a valid number ('fast')
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
