A failure in a parallel stream apply stops the stream
=====================================================

With worker.parallel-stream-bundle-processing (Mercurial 7.0 and later),
the main thread reads the stream and writer threads write and close the
files.  When a close fails on a writer thread, the apply must stop reading
the stream at once: on a 230,000-file clone over the network, reading on
would download the whole clone for nothing.  --debug prints one "adding"
line per file the main thread read from the stream; the third close of the
apply fails (bench/slowclose.c).  Releases before 7.0 apply v2 on one
thread, where the failure stops the apply all the same.

Core's reading thread reads ahead of the writers as far as its memory
target lets it (500 MB by default: a whole clone of this size, as fast as
the machine reads it).  At 256 KB, it reads ahead about 300 of these
files at most.  That is also where a clone larger than the target leaves
core's reading thread as the apply fails: waiting for room that nobody
makes, which hung the apply until the extension's wrapper of core's
abort() let it see the abort (timeout turns a hang into exit 137 here):

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 1000
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ for closing in no yes; do
  >   for native in true false; do
  >     hg init par-$closing-$native
  >     SLOWCLOSE_US=100 SLOWCLOSE_FAIL_NTH=3 LD_PRELOAD="$SLOWCLOSE_SO" \
  >       timeout -s KILL 120 \
  >       hg -R par-$closing-$native --debug debugapplystreamclonebundle v2.hg \
  >       --config worker.parallel-stream-bundle-processing=yes \
  >       --config worker.parallel-stream-bundle-processing.memory-target=256k \
  >       --config worker.backgroundclose=$closing \
  >       --config worker.backgroundclosenative=$native \
  >       --config worker.backgroundcloseminfilecount=0 > out 2> err
  >     echo "$closing $native: exit $?"
  >     grep '^abort:' err | sed 's/closing .*:/closing FILE:/'
  >     read=$(grep -c '^adding \[' out)
  >     echo "  files read from the stream: $read of 1000 or more: stopped early: $([ $read -lt 500 ] && echo True || echo False)"
  >     asnew par-$closing-$native
  >   done
  > done
  no true: exit 255
  abort: error closing FILE: Input/output error
    files read from the stream: * stopped early: True (glob)
  par-no-true: as new
  no false: exit 255
  abort: error closing FILE: Input/output error
    files read from the stream: * stopped early: True (glob)
  par-no-false: as new
  yes true: exit 255
  abort: error closing FILE: Input/output error
    files read from the stream: * stopped early: True (glob)
  par-yes-true: as new
  yes false: exit 255
  abort: error closing FILE: Input/output error
    files read from the stream: * stopped early: True (glob)
  par-yes-false: as new

Ctrl-C while core's writer threads write (every close of theirs takes 10
ms here, so the main thread still reads the stream when the signal comes:
core lets it read only so far ahead of the writers, and on the signal
joins them before anything else, which would have them write every file
read so far): the writers stop at their next file, the take-back waits
for them before it closes the descriptors the main thread kept and
removes what was written, and nothing is written after it:

  $ for native in true false; do
  >   hg init int-$native
  >   SLOWCLOSE_US=10000 LD_PRELOAD="$SLOWCLOSE_SO" \
  >     python3 "$TESTDIR/interrupt.py" INT int-$native/.hg/store 300 -- \
  >     -R int-$native -q debugapplystreamclonebundle v2.hg \
  >     --config worker.parallel-stream-bundle-processing=yes \
  >     --config worker.backgroundclose=no \
  >     --config worker.backgroundclosenative=$native
  >   sleep 1  # a writer left running would write on meanwhile
  >   asnew int-$native
  > done
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-true: as new
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  int-false: as new
