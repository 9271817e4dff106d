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

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 1000
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ for closing in no yes; do
  >   for native in true false; do
  >     hg init par-$closing-$native
  >     SLOWCLOSE_US=100 SLOWCLOSE_FAIL_NTH=3 LD_PRELOAD="$SLOWCLOSE_SO" \
  >       hg -R par-$closing-$native --debug debugapplystreamclonebundle v2.hg \
  >       --config worker.parallel-stream-bundle-processing=yes \
  >       --config worker.backgroundclose=$closing \
  >       --config worker.backgroundclosenative=$native \
  >       --config worker.backgroundcloseminfilecount=0 > out 2> err
  >     echo "$closing $native: exit $?"
  >     grep '^abort:' err | sed 's/closing .*:/closing FILE:/'
  >     read=$(grep -c '^adding \[' out)
  >     echo "  files read from the stream: $read of 1000 or more: stopped early: $([ $read -lt 200 ] && echo True || echo False)"
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
