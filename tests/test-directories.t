Parent directories of the files a stream writes
================================================

Core's vfs makes a file's parent directories each time it opens one: a
failed mkdir per file in an existing directory, several per new nested one.
The extension makes each directory once, top-down, and tells core's open
not to.  The tree it leaves is core's, modes included.

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src bundle -q -a --config experimental.stream-v3=yes \
  >   --type 'none-v2;stream=v3-exp' v3.hg

One mkdir per directory the apply makes, and none for a directory it made
already.  The directories it counts are the new ones in the store (stream
v1 and v3, and v2 before Mercurial 7.0, open their files through the vfs;
v2 from 7.0 on has core make each directory once, checked in
test-debugapply.t):

  $ for format in v1 v3; do
  >   hg init r-$format
  >   (cd r-$format/.hg/store && find . -type d | sort) > before-$format.list
  >   hg -R r-$format -q debugapplystreamclonebundle -T json \
  >     --config experimental.stream-v3=yes $format.hg > $format.json
  >   (cd r-$format/.hg/store && find . -type d | sort) |
  >     comm -13 before-$format.list - | wc -l > made-$format.count
  >   python3 - $format <<PY
  > import json, sys
  > fmt = sys.argv[1]
  > [report] = json.load(open(fmt + '.json'))
  > closer = report['closer']
  > made = int(open('made-%s.count' % fmt).read())
  > print(fmt, made > 100, closer['dirs-made'] == made,
  >       closer['dirs-existing'], report['ops']['mkdir']['count'] == made)
  > PY
  >   hg -R r-$format verify -q
  > done
  v1 True True 0 True
  v3 True True 0 True

A store shared by a group (setgid and group-writable): Mercurial gives
every directory it makes the store's mode.  The extension's tree and modes
are the same as core's:

  $ for ext in '!' ''; do
  >   rm -rf shared && hg init shared && chmod 2775 shared/.hg/store
  >   hg -R shared -q debugapplystreamclonebundle v1.hg \
  >     --config extensions.backgroundclose=$ext > /dev/null
  >   (cd shared/.hg/store && find . -type d -printf '%m %p\n' | sort) > modes$ext.list
  > done
  $ cmp modes!.list modes.list && echo same as core
  same as core
  $ grep -c '^2775 ./data/' modes.list | grep -qv '^0$' && echo group directories
  group directories

Directories are made only for a path core's audit accepts: a symbolic link
in the store that points outside stops the apply before anything is made
beyond it, as in core:

  $ mkdir outside
  $ hg init linked
  $ first=$(cd src/.hg/store && find data -name '*.i' | sort | head -1)
  $ top=$(echo "$first" | cut -d/ -f1-2)
  $ echo "$top"
  data/* (glob)
  $ mkdir -p linked/.hg/store/data
  $ ln -s "$PWD/outside" linked/.hg/store/$top
  $ hg -R linked -q debugapplystreamclonebundle v1.hg > /dev/null
  abort: path 'data/*' traverses symbolic link 'data/*' (glob)
  [255]
  $ find outside | sort
  outside
