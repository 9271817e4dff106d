A file system that turns slow midway
====================================

While closes are cheap, the extension leaves whole runs of files to core
(skips), timing one close in 64 of them; a scanner that wakes up in the
middle of a clone makes those closes slow, which ends the skip, and the
closer moves closes to threads.  bench/slowclose.c models it:
SLOWCLOSE_FROM=N adds the latency from the Nth close on.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ makerepo src 3000
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }

No timing report: with one, every close is timed and no file is left to
core.  --debug says what the closer decided and why (on a machine so busy
that cheap closes are preempted past the threshold, they measure as CPU
burnt, and the threads also run at a lower priority):

  $ SLOWCLOSE_US=700 SLOWCLOSE_FROM=1500 slow \
  >   hg clone -U --stream --debug ssh://user@dummy/src onset > onset.out
  $ grep '^backgroundclose:' onset.out
  backgroundclose: \d+ stream closes \(\d+ on threads\), background mode, \d+ native threads, 1 switches \(closes measured slow\)(, threads at a lower priority)?(, \d+ skips ended early \(the last by a .* close\))? (re)
  $ hg -R onset verify -q

(Before Mercurial 7.0, core closes a stream v2 skip's files itself: no
skip ends early there, they are only kept short.)  Of the files written
after the onset, all but a few went to the threads: those left to core
before the skip ended (64 at most; 224 before 7.0), the sample's closes
until the switch (256 at most in all), and the closer's probes, 8 closes
each, that measure the file system again now and then (3 in 1,500 files):

  $ total=$(sed -n 's/^\([0-9]*\) files to transfer.*/\1/p' onset.out)
  $ threads=$(sed -n 's/^backgroundclose: .* (\([0-9]*\) on threads).*/\1/p' onset.out)
  $ inline=$((total - 1500 - threads))
  $ [ "$inline" -le $((256 + 3 * 8)) ] && echo "at most 256 closed inline after the onset, and the probes"
  at most 256 closed inline after the onset, and the probes

The same in a stream v1 apply (clone bundles in v1, a server that only
speaks v1).  Its files are left to core only where another extension
wraps core's open (tests/writepath.py here; else the session opens them
itself): core then hands each skip's closes back to the closer, which
times one in 64 of them, so that the onset ends the skip there too
(without that timing, no close would go to threads):

  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg init v1onset
  $ SLOWCLOSE_US=700 SLOWCLOSE_FROM=1500 slow \
  >   hg -R v1onset debugapplystreamclonebundle --debug v1.hg \
  >   --config worker.backgroundclosereport=false \
  >   --config extensions.writepath="$TESTDIR/writepath.py" \
  >   --config writepath.override=vfscall > v1onset.out
  $ grep '^backgroundclose:' v1onset.out
  backgroundclose: \d+ stream closes \(\d+ on threads\), background mode, \d+ native threads, 1 switches \(closes measured slow\)(, threads at a lower priority)?, \d+ skips ended early \(the last by a .* close\) (re)
  $ hg -R v1onset verify -q

Without the onset, closes stay cheap and the closer says nothing:

  $ SLOWCLOSE_US=700 SLOWCLOSE_FROM=1000000 slow \
  >   hg clone -U --stream --debug ssh://user@dummy/src cheap \
  >   | grep -c '^backgroundclose:'
  0
  [1]

worker.backgroundclosepolicy=adaptive names that adaptive mode, and
undoes a system-wide worker.backgroundclose=true without %unset, where a
Mercurial without the extension ignores it (forced, the closer starts
threads and says so):

  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclose = true
  > backgroundcloseminfilecount = 0
  > HGRC
  $ hg clone -U --stream --debug ssh://user@dummy/src forced \
  >   | grep -o '^backgroundclose: .* mode'
  backgroundclose: * stream closes (* on threads), background mode (glob)
  $ hg clone -U --stream --debug ssh://user@dummy/src auto \
  >   --config worker.backgroundclosepolicy=adaptive | grep -c '^backgroundclose:'
  0
  [1]
