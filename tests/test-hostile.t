Hostile and malformed stream bundles
====================================

tests/streamcraft.py builds stream bundles by hand: the 300 files of a real
repository plus whatever the test adds.

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle real.hg > /dev/null
  $ craft() { python3 "$TESTDIR/streamcraft.py" "$@"; }
  $ outside() {
  >   # everything here but the store and cache of the repository "r", and
  >   # the descriptions core's transaction writes into .hg on every commit
  >   # or abort
  >   find . -path ./r/.hg/store -prune -o -path ./r/.hg/cache -prune -o -print |
  >     grep -v '^./r/.hg/\(undo\|journal\).desc$' | sort
  > }
  $ apply() {
  >   rm -rf r && hg init r && outside > before.list
  >   hg -R r -q debugapplystreamclonebundle "$@" \
  >     --config experimental.stream-v3=yes > /dev/null
  >   echo "exit $?"
  >   outside | diff -u before.list - | grep '^[-+][^-+]' | sed 's/^/outside the store: /'
  >   true
  > }

Hostile names
-------------

Names that climb out (..), absolute paths, Mercurial's own configuration,
names that the store encoding must escape.  The store encodes them all to
harmless names inside the store, as core does; nothing is written anywhere
else, for v1, v2 and v3 alike:

  $ for format in v1 v2 v3; do
  >   craft $format real.hg hostile.hg '../escape.i' '.hg/hgrc' '../hgrc' \
  >     'data/x/../../../../outside.i' 'data/.hg/hgrc.i' 'data/~2e~2e/y.i' 'hgrc'
  >   apply hostile.hg
  >   (cd r/.hg/store && find . -type f | grep -v '^./data/\|^./dh/\|^./00\|^./fncache$\|^./requires$\|^./undo' | sort)
  > done
  exit 0
  ./hgrc
  ./~2ehg.hg/hgrc
  ./~2e~2e/escape.i
  ./~2e~2e/hgrc
  exit 0
  ./hgrc
  ./~2ehg.hg/hgrc
  ./~2e~2e/escape.i
  ./~2e~2e/hgrc
  exit 0
  ./hgrc
  ./~2ehg.hg/hgrc
  ./~2e~2e/escape.i
  ./~2e~2e/hgrc

Where did the names under data/ go?  Encoded inside data/ ("~" itself is
escaped, so an already-escaped name cannot pass for another):

  $ (cd r/.hg/store && find data -name 'outside*' -o -name 'hgrc.i' -o -name 'y.i' | sort)
  data/x/~2e~2e/~2e~2e/~2e~2e/~2e~2e/outside.i
  data/~2ehg.hg/hgrc.i
  data/~7e2e~7e2e/y.i

The cache has no store encoding: there the path auditor refuses the same
names outright (v2 and v3; v1 has no cache files):

  $ for format in v2 v3; do
  >   for name in '../escape' '../../hgrc' "$PWD/abs" 'x/../../hgrc' '.hg/hgrc'; do
  >     craft $format real.hg hostile.hg "c:$name"
  >     apply hostile.hg 2>&1 | sed "s|$PWD|\$PWD|"
  >     asnew r
  >   done
  > done
  abort: path contains illegal component: ../escape
  exit 255
  r: as new
  abort: path contains illegal component: ../../hgrc
  exit 255
  r: as new
  abort: path contains illegal component: $PWD/abs
  exit 255
  r: as new
  abort: path contains illegal component: *../hgrc (glob)
  exit 255
  r: as new
  abort: path contains illegal component: .hg/hgrc
  exit 255
  r: as new
  abort: path contains illegal component: ../escape
  exit 255
  r: as new
  abort: path contains illegal component: ../../hgrc
  exit 255
  r: as new
  abort: path contains illegal component: $PWD/abs
  exit 255
  r: as new
  abort: path contains illegal component: x/../../hgrc
  exit 255
  r: as new
  abort: path contains illegal component: .hg/hgrc
  exit 255
  r: as new

An absolute cache name inside the cache itself passes core's audit, and
the file is written there, as core writes it (the extension's own
directory maker and opens take it as os.path.join does):

  $ for format in v2 v3; do
  >   craft $format real.hg inside.hg "c:$PWD/r/.hg/cache/sub/x"
  >   apply inside.hg
  >   cat r/.hg/cache/sub/x | wc -c | tr -d ' '
  >   ls r/.hg/cache/sub
  > done
  exit 0
  1
  x
  exit 0
  1
  x

A NUL byte in a name: a clear abort naming the file (core: a ValueError
traceback for v2 and v3).  Which call finds the NUL first depends on the
Mercurial release:

  $ for format in v1 v2 v3; do
  >   craft $format real.hg nul.hg 'data/a\0b.i'
  >   apply nul.hg
  >   asnew r
  > done
  abort: unexpected response from remote server:
  'data/a\x00b.i\x001\n'
  exit 255
  r: as new
  abort: error opening data/a?x00b.i: *: embedded null character in path (glob)
  exit 255
  r: as new
  abort: error opening data/a?x00b.i: *: embedded null character in path (glob)
  exit 255
  r: as new
  $ craft v2 real.hg nul.hg 'c:a\0/b'
  $ apply nul.hg 2>&1 | grep -v '^(the bundle'
  abort: * embedded null character in path (glob)
  exit 255
  $ asnew r
  r: as new

With worker.backgroundclosejournal, names that would turn the transaction's
journal against it are refused: a newline (the journal holds a line per
file the stream writes) and the transaction's own files at the store's
root.  They are refused before anything is opened, also where core's writer
threads open the files (stream v2 with
worker.parallel-stream-bundle-processing, Mercurial 7.0 and later; an
unknown setting before):

  $ for parallel in no yes; do
  >   craft v2 real.hg nl.hg $'data/a\nb.i'
  >   apply nl.hg --config worker.backgroundclosejournal=yes \
  >     --config worker.parallel-stream-bundle-processing=$parallel 2>&1 |
  >     grep -v '^(the bundle\|^transaction abort!$\|^rollback completed$'
  >   asnew r
  > done
  abort: malformed stream clone data: a file name holds a newline or a NUL byte: data/a\nb.i
  exit 255
  r: as new
  abort: malformed stream clone data: a file name holds a newline or a NUL byte: data/a\nb.i
  exit 255
  r: as new
  $ for name in journal undo.backupfiles lock; do
  >   craft v2 real.hg own.hg $name
  >   apply own.hg --config worker.backgroundclosejournal=yes 2>&1 |
  >     grep -v '^(the bundle\|^transaction abort!$\|^rollback completed$'
  >   asnew r
  > done
  abort: malformed stream clone data: the transaction's own file: journal
  exit 255
  r: as new
  abort: malformed stream clone data: the transaction's own file: undo.backupfiles
  exit 255
  r: as new
  abort: malformed stream clone data: the transaction's own file: lock
  exit 255
  r: as new

The same name twice: the second copy is written over the first, as in core
(the stream is applied in order; the pending close of the first copy does
not get in the way):

  $ craft v2 real.hg twice.hg 'data/twice.i' 'data/twice.i'
  $ apply twice.hg --config worker.backgroundclose=yes --config worker.backgroundcloseminfilecount=0
  exit 0
  $ cat r/.hg/store/data/twice.i; echo
  x
