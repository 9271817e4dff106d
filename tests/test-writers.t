Whole files written by writer threads
=====================================

Where opening a file waits on the file system (sshfs, NFS: see
test-sshfs.t), a stream apply hands whole files to writer threads, which
make the directories, open, write and close each file, many at a time.
Here the writers are forced on (worker.backgroundclosewrites=true) on a
local disk, for every stream format: v1 and v3, where files are opened
through the vfs, and v2 (through the vfs before Mercurial 7.0, through
core's prepare_streamed_file and _write_files from 7.0 on).

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclosewrites = true
  > backgroundclosemaxthreadcount = 8
  > HGRC
  $ makerepo src 600
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v3-exp' \
  >   --config experimental.stream-v3=yes v3.hg

Each apply says in its report that the writers wrote every file, and the
result verifies, with the same store as core's:

  $ allwritten() {
  >   files=$(sed -n 's/^stream apply (v.): \([0-9]*\) files.*/\1/p' $1)
  >   written=$(sed -n 's/^  writers: [0-9]* threads wrote \([0-9]*\) files.*/\1/p' $1)
  >   [ -n "$files" ] && [ "$files" = "$written" ] && echo "$1: all files by the writers"
  > }
  $ hg init v1
  $ hg -R v1 debugapplystreamclonebundle v1.hg \
  >   --config worker.backgroundclosereport=yes > v1.out
  $ allwritten v1.out
  v1.out: all files by the writers
  $ hg -R v1 verify -q
  $ hg init v3
  $ hg -R v3 unbundle v3.hg --config experimental.stream-v3=yes \
  >   --config worker.backgroundclosereport=yes > v3.out
  $ allwritten v3.out
  v3.out: all files by the writers
  $ hg -R v3 verify -q
  $ hg clone -U --stream ssh://user@dummy/src v2 \
  >   --config worker.backgroundclosereport=yes > v2.out
  $ allwritten v2.out
  v2.out: all files by the writers
  $ hg -R v2 verify -q
  $ hg init core
  $ hg -R core debugapplystreamclonebundle v1.hg -q \
  >   --config extensions.backgroundclose=!
  $ (cd core/.hg/store && find . -type f ! -name fncache ! -name 'undo.*' -print0 | sort -z | xargs -0 md5sum) > core.sums
  $ for repo in v1 v2 v3; do
  >   (cd $repo/.hg/store && find . -type f ! -name fncache ! -name 'undo.*' -print0 | sort -z | xargs -0 md5sum) | diff core.sums -
  >   diff <(sort core/.hg/store/fncache) <(sort $repo/.hg/store/fncache)
  > done

A file too big for the memory the writers may hold (32 MB) is written by
the reading thread, the others by the writers:

  $ hg init big
  $ python3 -c "import os; open('big/blob.bin', 'wb').write(os.urandom(33 << 20))"
  $ echo small > big/small.txt
  $ hg -R big commit -qAm big > /dev/null 2>&1
  $ hg -R big debugcreatestreamclonebundle big.hg > /dev/null
  $ hg init big-clone
  $ hg -R big-clone debugapplystreamclonebundle big.hg \
  >   --config worker.backgroundclosereport=yes > big.out
  $ files=$(sed -n 's/^stream apply (v.): \([0-9]*\) files.*/\1/p' big.out)
  $ written=$(sed -n 's/^  writers: [0-9]* threads wrote \([0-9]*\) files.*/\1/p' big.out)
  $ [ $((files - written)) = 1 ] && echo "all but one by the writers"
  all but one by the writers
  $ grep -c '^  close, applier *1 ' big.out
  1
  $ hg -R big-clone verify -q
  $ hg --cwd big-clone cat -r tip blob.bin | cmp - big/blob.bin && echo same data
  same data

The same over stream v2 (a clone over ssh), whose files core's
_write_files writes from Mercurial 7.0 on: the data read before the budget
ran out is written too, ahead of the rest:

  $ hg clone -U --stream ssh://user@dummy/big big-v2 \
  >   --config worker.backgroundclosereport=yes > big-v2.out
  $ files=$(sed -n 's/^stream apply (v.): \([0-9]*\) files.*/\1/p' big-v2.out)
  $ written=$(sed -n 's/^  writers: [0-9]* threads wrote \([0-9]*\) files.*/\1/p' big-v2.out)
  $ [ $((files - written)) = 1 ] && echo "all but one by the writers"
  all but one by the writers
  $ hg -R big-v2 verify -q
  $ hg --cwd big-v2 cat -r tip blob.bin | cmp - big/blob.bin && echo same data
  same data

A close that fails on a writer thread aborts the apply with the file's
name, and the repository is left as it was:

  $ hg init fail
  $ SLOWCLOSE_FAIL_MATCH=00manifest.i LD_PRELOAD="$SLOWCLOSE_SO" \
  >   hg -R fail debugapplystreamclonebundle v1.hg -q 2>&1 | grep -v '^\*\*'
  abort: error closing 00manifest.i: Input/output error
  $ asnew fail
  fail: as new

So does a file that cannot be opened (a directory stands in its place):

  $ hg init blocked
  $ victim=$(cd core/.hg/store && find data -type f | sort | head -1)
  $ mkdir -p blocked/.hg/store/$victim
  $ hg -R blocked debugapplystreamclonebundle v1.hg -q 2>&1 |
  >   sed "s|$victim|VICTIM|" | grep -v '^\*\*'
  abort: error opening VICTIM: Is a directory
  $ find blocked/.hg/store/data -type f | wc -l
  0
  $ rmdir blocked/.hg/store/$victim

The writers keep core's path audit.  A store directory that is a symbolic
link out of the repository is refused, for every format, and nothing is
written through it:

  $ mkdir outside
  $ for format in v1 v2 v3; do
  >   python3 "$TESTDIR/streamcraft.py" $format v1.hg link.hg 'data/sub/x.i'
  >   rm -rf link && hg init link && mkdir link/.hg/store/data &&
  >     ln -s "$PWD/outside" link/.hg/store/data/sub
  >   hg -R link -q debugapplystreamclonebundle link.hg \
  >     --config experimental.stream-v3=yes 2>&1 | grep -v '^\*\*'
  >   ls outside
  > done
  abort: path 'data/sub/x.i' traverses symbolic link 'data/sub'
  abort: path 'data/sub/x.i' traverses symbolic link 'data/sub'
  abort: path 'data/sub/x.i' traverses symbolic link 'data/sub'

A symbolic link or a hard link standing where a stream file goes is
treated as core treats it, format by format (core's open for stream v1 and
v3 replaces it; from Mercurial 7.0 on, core's stream v2 writer opens the
name as it is):

  $ apply_over_links() {
  >   rm -rf link && hg init link && mkdir link/.hg/store/data &&
  >   echo 'not the stream' > outside/target &&
  >   ln -s "$PWD/outside/target" link/.hg/store/data/soft.i &&
  >   ln outside/target link/.hg/store/data/hard.i || return 1
  >   if [ $format = v1 ]; then
  >     hg -R link -q debugapplystreamclonebundle link.hg \
  >       --config worker.backgroundclosereport=false "$@"
  >   else
  >     hg -R link -q unbundle link.hg --config experimental.stream-v3=yes "$@"
  >   fi
  >   echo "exit $?"
  >   cat outside/target link/.hg/store/data/soft.i link/.hg/store/data/hard.i
  >   echo
  >   stat -c '%h links, %F' outside/target link/.hg/store/data/soft.i
  > }
  $ for format in v1 v2 v3; do
  >   python3 "$TESTDIR/streamcraft.py" $format v1.hg link.hg 'data/soft.i' 'data/hard.i'
  >   apply_over_links --config extensions.backgroundclose=! > core.out 2>&1
  >   apply_over_links > ext.out 2>&1
  >   diff -u core.out ext.out && echo "$format: as core"
  > done
  v1: as core
  v2: as core
  v3: as core

Ctrl-C while writers write, under closes of 3 ms: hg stops writing at the
signal, joins every writer, keeps no descriptor open, and takes back what
it wrote:

  $ hg init int
  $ SLOWCLOSE_US=3000 LD_PRELOAD="$SLOWCLOSE_SO" \
  >   python3 "$TESTDIR/interrupt.py" INT int/.hg/store 200 -- \
  >   -R int -q debugapplystreamclonebundle v1.hg
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ asnew int
  int: as new
