Writing into a full file system
===============================

A real full file system: a 256 KB tmpfs, smaller than the 300-file store
(about 290 KB of revlogs).  Mounting needs root; elsewhere this test is
skipped.

  $ [ "$(id -u)" = 0 ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --config experimental.stream-v3=yes \
  >   --type 'none-v2;stream=v3-exp' v3.hg
  $ mkdir full
  $ mount -t tmpfs -o size=256k tmpfs full || exit 80

Stream v2 writes through descriptors (Mercurial 7.0 and later), so the
write itself fails; stream v1 and v3 (and v2 before 7.0) write through
buffered file objects, whose last bytes reach the disk when the file is
flushed, on the writing thread before its close is handed over.  Either
way the apply aborts naming the file and the reason, with inline and
background closing alike (on background threads, which file meets the
full disk first depends on when the threads close their files, so the
name is not fixed there).  The files it wrote are taken back before the
transaction aborts: the transaction needs a little space to flush its
journal (without that, core's abort fails with a bare "No space left on
device" and a transaction.__del__ traceback).

  $ for closing in no yes; do
  >   for format in v1 v2 v3; do
  >     hg init full/repo
  >     hg -R full/repo -q debugapplystreamclonebundle $format.hg \
  >       --config worker.backgroundclose=$closing \
  >       --config worker.backgroundcloseminfilecount=0
  >     echo "exit $?"
  >     asnew full/repo
  >     hg -R full/repo verify -q
  >     rm -rf full/repo
  >   done
  > done
  abort: error writing data/dom/gfx/widget/dom__213.c.i: No space left on device
  exit 255
  full/repo: as new
  abort: error *ing data/dom/gfx/widget/dom__213.c.i: No space left on device (glob)
  exit 255
  full/repo: as new
  abort: error writing data/dom/gfx/widget/dom__213.c.i: No space left on device
  exit 255
  full/repo: as new
  abort: error *ing data/*: No space left on device (glob)
  exit 255
  full/repo: as new
  abort: error *ing data/*: No space left on device (glob)
  exit 255
  full/repo: as new
  abort: error *ing data/*: No space left on device (glob)
  exit 255
  full/repo: as new

The same through hg unbundle, and for a clone, which removes its
destination as core does:

  $ hg init full/repo
  $ hg -R full/repo -q unbundle v2.hg
  abort: error *ing data/dom/gfx/widget/dom__213.c.i: No space left on device (glob)
  [255]
  $ asnew full/repo
  full/repo: as new
  $ hg clone -q -U --stream ssh://user@dummy/src full/clone
  abort: error *ing data/*: No space left on device (glob)
  [255]
  $ ls full
  repo

Once the file system has room, the same repository takes the bundle and
verifies.

  $ mount -o remount,size=8m full
  $ hg -R full/repo -q unbundle v2.hg
  $ hg -R full/repo verify -q
  $ hg -R full/repo log -T '{rev} {desc}\n'
  1 second revision
  0 initial tree

  $ umount full
