Clone bundles, as a server operator sets them up
===============================================

Large hosts serve clones from pre-generated bundles: the server enables
core's clonebundles extension and lists the bundles in
.hg/clonebundles.manifest; the client fetches one and applies it, then
pulls what is newer.  Here the bundles are served over http from
127.0.0.1, and every clone runs under modelled 700 us closes.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" "$@"; }
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundcloseminfilecount = 0
  > HGRC

The repository, its bundles, and the host that serves them:

  $ makerepo src 120
  $ mkdir bundles
  $ hg -R src debugcreatestreamclonebundle bundles/packed1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' bundles/stream-v2.hg
  $ hg -R src bundle -q -a --type zstd-v2 bundles/zstd-v2.hg
  $ cp bundles/stream-v2.hg bundles/cut.hg
  $ python3 "$TESTDIR/../bench/bundleserver.py" bundles bundles.port --cut cut.hg \
  >   > bundleserver.log 2>&1 &
  $ echo $! > bundleserver.pid
  $ for i in $(seq 100); do [ -s bundles.port ] && break; sleep 0.1; done
  $ bundles="http://127.0.0.1:$(cat bundles.port)"
  $ advertise() {
  >   echo "$bundles/$1 BUNDLESPEC=$(hg debugbundle --spec bundles/$1)" \
  >     > src/.hg/clonebundles.manifest
  > }

  $ cat >> src/.hg/hgrc <<HGRC
  > [extensions]
  > clonebundles =
  > HGRC
  $ port=`freeport`
  $ hg serve -R src -a 127.0.0.1 -p $port -d --pid-file hg.pid -E errors.log
  $ cat hg.pid >> daemons.pids

A packed1 (v1) stream bundle and a v2 stream bundle: the clone applies the
bundle the server advertises, the report says how it was closed, and the
result is what core makes of the same bundle.  That is a clone that
verifies, except for packed1 before Mercurial 6.9: core's own http reader
(keepalive.py's buffered readline) drops bytes of a file name there, so
core's clone is damaged too, and the extension's must hold the very same
files:

  $ storefiles() {
  >   (cd $1/.hg/store && find . -type f ! -name fncache -print0 | sort -z | xargs -0 md5sum
  >    sort fncache)
  > }
  $ for bundle in packed1.hg stream-v2.hg; do
  >   advertise $bundle
  >   SLOWCLOSE_US=700 slow hg clone -U http://127.0.0.1:$port/ c-$bundle \
  >     --config worker.backgroundclosereport=yes > $bundle.out
  >   echo "$bundle: exit $?"
  >   grep -c "^applying clone bundle from $bundles/$bundle$" $bundle.out
  >   grep '^stream apply' $bundle.out | sed 's/:.*//'
  >   grep '^  closer:' $bundle.out | cut -d, -f1-2
  >   hg clone -q -U http://127.0.0.1:$port/ core-$bundle \
  >     --config extensions.backgroundclose=!
  >   if hg -R core-$bundle verify -q > /dev/null 2>&1; then
  >     hg -R c-$bundle verify -q
  >   else
  >     storefiles core-$bundle > core.files; storefiles c-$bundle > ext.files
  >     diff core.files ext.files
  >   fi
  > done
  packed1.hg: exit 0
  1
  stream apply (v1)
    closer: adaptive, background (closes measured slow)
  stream-v2.hg: exit 0
  1
  stream apply (v2)
    closer: adaptive, background (closes measured slow)
  $ hg -R c-stream-v2.hg log -r tip -T '{desc}\n'
  second revision

A changegroup bundle (zstd-v2): the revlogs it writes are closed on
threads, which --debug tells:

  $ advertise zstd-v2.hg
  $ SLOWCLOSE_US=700 slow hg clone -U --debug http://127.0.0.1:$port/ c-cg \
  >   --config worker.backgroundclose=yes > cg.out
  $ grep -c "^applying clone bundle from $bundles/zstd-v2.hg$" cg.out
  1
  $ grep '^backgroundclose:' cg.out | grep -c 'revlog closes (.* on threads), background mode'
  2
  $ hg -R c-cg verify -q

An inline clone bundle, which the server sends itself over the wire
protocol (peer-bundle-cache://), over http and over ssh:

  $ mkdir src/.hg/bundle-cache
  $ cp bundles/stream-v2.hg src/.hg/bundle-cache/
  $ echo "peer-bundle-cache://stream-v2.hg BUNDLESPEC=$(hg debugbundle --spec bundles/stream-v2.hg)" \
  >   > src/.hg/clonebundles.manifest
  $ SLOWCLOSE_US=700 slow hg clone -U http://127.0.0.1:$port/ c-inline-http \
  >   --config worker.backgroundclosereport=yes > inline-http.out
  $ SLOWCLOSE_US=700 slow hg clone -U ssh://user@dummy/src c-inline-ssh \
  >   --config worker.backgroundclosereport=yes > inline-ssh.out
  $ for way in http ssh; do
  >   grep -c '^applying clone bundle from peer-bundle-cache://stream-v2.hg$' inline-$way.out
  >   grep '^  closer:' inline-$way.out | cut -d, -f1-2
  >   hg -R c-inline-$way verify -q
  > done
  1
    closer: adaptive, background (closes measured slow)
  1
    closer: adaptive, background (closes measured slow)

A clone bundle whose download is cut half-way, and one whose files fail to
close: each clone aborts, without a traceback, and leaves no destination
behind (with clone bundles, core does not fall back to a plain clone unless
ui.clonebundlefallback is set):

  $ advertise cut.hg
  $ SLOWCLOSE_US=700 slow hg clone -U http://127.0.0.1:$port/ c-cut > cut.out 2>&1
  [255]
  $ grep -c Traceback cut.out
  0
  [1]
  $ grep '^abort:' cut.out
  abort: stream ended unexpectedly* (glob)
  $ test -e c-cut || echo no destination
  no destination

  $ advertise stream-v2.hg
  $ SLOWCLOSE_US=700 SLOWCLOSE_FAIL_MATCH=00manifest.i slow \
  >   hg clone -U http://127.0.0.1:$port/ c-fail > fail.out 2>&1
  [255]
  $ grep -c Traceback fail.out
  0
  [1]
  $ grep '^abort:' fail.out
  abort: error closing 00manifest.i: Input/output error
  $ test -e c-fail || echo no destination
  no destination

  $ kill $(cat bundleserver.pid) $(cat daemons.pids)
  $ cat errors.log
