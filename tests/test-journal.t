The transaction owns what a stream apply writes
===============================================

With worker.backgroundclosejournal, a stream apply registers each file
with its transaction before writing it, at offset 0, as a pull registers a
new revlog (it costs every file some microseconds, so it is off by
default).  Core registers nothing: a
process killed during an apply leaves its files for good, and "hg recover"
has nothing to remove; "hg rollback" after an apply says it rolled back,
yet leaves the files.  Closes take 3 ms (bench/slowclose.c), so that the
apply of 1,000 files still runs when it is killed.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclosejournal = yes
  > HGRC
  $ makerepo src 1000
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg

killapply REPO BUNDLE [HG OPTIONS]: apply BUNDLE to a new REPO, kill -9 the
process once the store holds 100 files of the stream (no cleanup of any
kind runs), then say whether it still does.  The store's own files are not
counted (requires, the lock, the transaction's journal, which recover
removes):

  $ revlogs() {
  >   find "$1/.hg/store" -type f ! -name requires ! -name lock \
  >     ! -name 'journal*' ! -name 'undo*' | wc -l
  > }
  $ killapply() {
  >   repo=$1 bundle=$2; shift 2
  >   hg init $repo
  >   SLOWCLOSE_US=3000 LD_PRELOAD="$SLOWCLOSE_SO" \
  >     hg -R $repo -q debugapplystreamclonebundle $bundle "$@" \
  >     > /dev/null 2>&1 &
  >   pid=$!
  >   while kill -0 $pid 2>/dev/null && [ "$(revlogs $repo)" -lt 100 ]; do
  >     sleep 0.02
  >   done
  >   kill -9 $pid 2>/dev/null && echo "$repo: killed while applying"
  >   wait $pid 2>/dev/null
  >   [ "$(revlogs $repo)" -ge 100 ] && echo "$repo: 100 files or more"
  > }

Without the extension, or with the setting off, "hg recover" rolls back the
transaction and the files stay:

  $ killapply core v1.hg --config extensions.backgroundclose=!
  core: killed while applying
  core: 100 files or more
  $ hg -R core recover -q --config extensions.backgroundclose=! 2>/dev/null
  $ [ "$(revlogs core)" -ge 100 ] && echo "core: files left"
  core: files left
  $ killapply off v1.hg --config worker.backgroundclosejournal=no
  off: killed while applying
  off: 100 files or more
  $ hg -R off recover -q 2>/dev/null
  $ [ "$(revlogs off)" -ge 100 ] && echo "off: files left"
  off: files left

With it, the same "hg recover" removes every file the apply wrote data
into, for v1 and v2, closing inline, in the background, and with whole files written by
writer threads (worker.backgroundclosewrites).  A file is
registered once it is open, before a byte is written: the one being opened
when the process died may be left, empty.  The directories that held the
files remain, as after any rollback:

  $ written() { find "$1/.hg/store" -type f -size +0 ! -name requires | wc -l; }

  $ for format in v1 v2; do
  >   for closing in no yes writers; do
  >     killapply $format-$closing $format.hg \
  >       --config worker.backgroundclose=$([ $closing = no ] && echo no || echo yes) \
  >       --config worker.backgroundclosewrites=$([ $closing = writers ] && echo yes || echo no) \
  >       --config worker.backgroundcloseminfilecount=0
  >     hg -R $format-$closing recover -q 2>/dev/null
  >     echo "$format-$closing: $(written $format-$closing) files left"
  >     hg -R $format-$closing verify -q
  >   done
  > done
  v1-no: killed while applying
  v1-no: 100 files or more
  v1-no: 0 files left
  v1-yes: killed while applying
  v1-yes: 100 files or more
  v1-yes: 0 files left
  v1-writers: killed while applying
  v1-writers: 100 files or more
  v1-writers: 0 files left
  v2-no: killed while applying
  v2-no: 100 files or more
  v2-no: 0 files left
  v2-yes: killed while applying
  v2-yes: 100 files or more
  v2-yes: 0 files left
  v2-writers: killed while applying
  v2-writers: 100 files or more
  v2-writers: 0 files left

The repository takes the bundle again afterwards:

  $ hg -R v1-no -q debugapplystreamclonebundle v1.hg > /dev/null
  $ hg -R v1-no verify -q
  $ hg -R v1-no log -r tip -T '{rev}\n'
  1

"hg rollback" right after an apply undoes it whole: the repository is empty
again and verifies (core would keep the files while saying it rolled back):

  $ hg -R v1-no rollback
  repository tip rolled back to revision -1 (undo clone)
  $ echo "$(written v1-no) files left"
  0 files left
  $ hg -R v1-no verify -q
  $ hg -R v1-no log -r tip -T '{rev}\n'
  -1

Killed in the middle of a file, between its first byte and its last: the
file was registered before its first byte, so hg recover removes it too.
killwithin REPO BUNDLE: the stream comes through a named pipe, which holds
the apply of BUNDLE into the new REPO two megabytes into data/blob.bin.d
until it is killed; then hg recover, and what it left:

  $ killwithin() {
  >   held=$(python3 -c "print(open('$2', 'rb').read().find(b'data/blob.bin.d') + 2000000)")
  >   mkfifo "$1.pipe"
  >   hg init "$1"
  >   hg -R "$1" unbundle -q "$1.pipe" > /dev/null 2>&1 &
  >   pid=$!
  >   exec 3> "$1.pipe"
  >   head -c $held "$2" >&3
  >   for i in $(seq 100); do
  >     [ -s "$1/.hg/store/data/blob.bin.d" ] && break; sleep 0.1
  >   done
  >   sleep 0.2; kill -9 $pid; wait $pid 2>/dev/null
  >   exec 3>&-
  >   [ -s "$1/.hg/store/data/blob.bin.d" ] && echo "killed within the file"
  >   hg -R "$1" recover -q 2>/dev/null
  >   echo "$(written "$1") files left"
  > }

A 4 MB file after a few small ones, which the apply writes itself:

  $ hg init big
  $ python3 -c "import os; open('big/blob.bin', 'wb').write(os.urandom(4000000))"
  $ echo small > big/small
  $ hg -R big commit -qAm big
  $ hg -R big bundle -q -a --type 'none-v2;stream=v2' big.hg
  $ killwithin midfile big.hg
  killed within the file
  0 files left

The same in a file that a skip writes: closes are cheap here, so after 32
files the apply leaves the next ones to a skip (written untimed, as core
would), which registers each before its first byte too. Forty small files
come before the large one in the stream:

  $ hg init skipped
  $ for i in $(seq 40); do echo $i > skipped/a$i; done
  $ cp big/blob.bin skipped/blob.bin
  $ hg -R skipped commit -qAm skipped
  $ hg -R skipped bundle -q -a --type 'none-v2;stream=v2' skipped.hg
  $ killwithin midskip skipped.hg
  killed within the file
  0 files left
