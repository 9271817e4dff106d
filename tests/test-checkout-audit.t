The checkout keeps core's path audit
====================================

The checkout writes files itself, on writer threads too, but every path
goes through the working copy's auditor first, as core's update does.
Two working copies that core refuses to write into, each tried with core
and with the extension's writers forced on, in one process (so that the
order of the files is core's):

  $ . "$TESTDIR/setup.sh"
  $ without="--config extensions.backgroundclose=!"
  $ writers="--config worker.backgroundclosewrites=true --config worker.enabled=no"
  $ hg init src
  $ mkdir src/d
  $ echo a > src/a
  $ echo f > src/d/f
  $ hg -R src commit -qAm one
  $ for i in $(seq 1 30); do echo $i > src/d/g$i; done
  $ hg -R src commit -qAm two

A tracked directory replaced by a symbolic link to a directory outside the
working copy: core refuses the first file under it, and writes nothing
outside; so does the checkout (with no audit, a writer would create
d/g1 in the directory outside):

  $ for how in core ext; do
  >   hg clone -q -U src audit-$how && hg -R audit-$how update -q 0
  >   mkdir outside-$how
  >   rm -r audit-$how/d && ln -s "$PWD/outside-$how" audit-$how/d
  > done
  $ hg -R audit-core update -q tip $without
  abort: path 'd/g1' traverses symbolic link 'd'
  [255]
  $ hg -R audit-ext update -q tip $writers
  abort: path 'd/g1' traverses symbolic link 'd'
  [255]
  $ ls outside-core outside-ext
  outside-core:
  
  outside-ext:

A nested repository where a tracked directory goes: core refuses to
write into it; so does the checkout:

  $ for how in core ext; do
  >   hg clone -q -U src nested-$how && hg -R nested-$how update -q 0
  >   rm -r nested-$how/d && hg init nested-$how/d
  > done
  $ hg -R nested-core update -q tip $without
  abort: path 'd/g1' is inside nested repo 'd'
  [255]
  $ hg -R nested-ext update -q tip $writers
  abort: path 'd/g1' is inside nested repo 'd'
  [255]
  $ ls nested-core/d nested-ext/d
  nested-core/d:
  
  nested-ext/d:
