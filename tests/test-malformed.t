Malformed stream bundles
========================

Truncated streams, corrupt headers, counts and sizes that do not match the
data, unknown requirements: every one is a clear abort (exit 255) and the
repository is left as it was.  The bundles are built by tests/streamcraft.py
from the 300 files of a real repository.  (Byte counts differ between
Mercurial releases, whose revlogs differ a little: they are globbed.)

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle real.hg > /dev/null
  $ cat > make-bundles.py <<'PY'
  > import sys
  > sys.path.insert(0, sys.argv[1])
  > import streamcraft as sc
  > req, files = sc.read_v1(open('real.hg', 'rb').read())
  > store = [(b's', name, data) for name, data in files]
  > n, total = len(files), sum(len(d) for _n, d in files)
  > good1, payload = sc.v1(files, req), sc.v2_payload(store)
  > bundles = {
  >     'v1-cut-in-a-header': good1[: len(good1) // 2],
  >     'v1-cut-in-the-last-file': good1[:-3],
  >     'v1-more-files-declared': sc.v1(files, req, filecount=n + 1),
  >     'v1-fewer-files-declared': sc.v1(files, req, filecount=n - 1),
  >     'v1-bytecount-too-high': sc.v1(files, req, bytecount=total + 1),
  >     'v1-sizes-too-long': sc.v1(files, req, sizes=[len(d) + 1 for _n, d in files]),
  >     'v1-compressed': sc.v1(files, req, compression=b'BZ'),
  >     'v1-unknown-requirement': sc.v1(files, req + b',frobnicate'),
  >     'v2-cut-in-a-header': sc.v2(store, req, payload=payload[: len(payload) // 2]),
  >     'v2-cut-in-the-last-file': sc.v2(store, req, payload=payload[:-3]),
  >     'v2-more-files-declared': sc.v2(store, req, filecount=b'%d' % (n + 1)),
  >     'v2-fewer-files-declared': sc.v2(store, req, filecount=b'%d' % (n - 1)),
  >     'v2-bytecount-too-high': sc.v2(store, req, bytecount=b'%d' % (total + 1)),
  >     'v2-bytecount-not-a-number': sc.v2(store, req, bytecount=b'lots'),
  >     'v2-unknown-source': sc.v2(store + [(b'x', b'data/x.i', b'x')], req),
  >     'v2-unknown-requirement': sc.v2(store, req + b',frobnicate'),
  >     'v2-cut-in-the-bundle2-container': sc.v2(store, req)[:-40],
  >     'v3-cut-in-the-last-file': sc.v3(store, req)[:-20],
  > }
  > for name, data in bundles.items():
  >     open(name + '.hg', 'wb').write(data)
  > PY
  $ python3 make-bundles.py "$TESTDIR"
  $ for bundle in *-*.hg; do
  >   echo "== $bundle"
  >   rm -rf r && hg init r
  >   hg -R r -q debugapplystreamclonebundle $bundle --config experimental.stream-v3=yes > /dev/null
  >   echo "exit $?"
  >   asnew r
  >   hg -R r verify -q
  > done
  == v1-bytecount-too-high.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v1-compressed.hg
  abort: only uncompressed stream clone bundles are supported; got BZ
  exit 255
  r: as new
  == v1-cut-in-a-header.hg
  abort: unexpected response from remote server: empty string
  exit 255
  r: as new
  == v1-cut-in-the-last-file.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v1-fewer-files-declared.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v1-more-files-declared.hg
  abort: unexpected response from remote server: empty string
  exit 255
  r: as new
  == v1-sizes-too-long.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v1-unknown-requirement.hg
  abort: unable to apply stream clone: unsupported format: frobnicate
  exit 255
  r: as new
  == v2-bytecount-not-a-number.hg
  abort: malformed stream clone data: bytecount is not a number: 'lots'
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v2-bytecount-too-high.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v2-cut-in-a-header.hg
  abort: stream ended unexpectedly* (glob)
  exit 255
  r: as new
  == v2-cut-in-the-bundle2-container.hg
  abort: stream ended unexpectedly* (glob)
  exit 255
  r: as new
  == v2-cut-in-the-last-file.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v2-fewer-files-declared.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v2-more-files-declared.hg
  abort: stream ended unexpectedly* (glob)
  exit 255
  r: as new
  == v2-unknown-requirement.hg
  abort: unable to apply stream clone: unsupported format: frobnicate
  exit 255
  r: as new
  == v2-unknown-source.hg
  abort: malformed stream clone data: unknown file source 'x'
  (the bundle or the stream from the server is damaged)
  exit 255
  r: as new
  == v3-cut-in-the-last-file.hg
  abort: stream ended unexpectedly* (glob)
  exit 255
  r: as new

The same stream cut short inside its last file, applied by 'hg unbundle'
with closes measured cheap: the closer leaves most files to core, and the
last one is still found short.  (Before Mercurial 7.0 those files are
counted by the sizes the stream declares, and the last one's bytes as
core copies them.)  A whole stream applies as it should.

  $ cheap="--config worker.backgroundclosethreshold=100000"
  $ rm -rf r && hg init r
  $ hg -R r -q unbundle $cheap v2-cut-in-the-last-file.hg
  abort: malformed stream clone data: * bytes of file data, the header declares * (glob)
  (the bundle or the stream from the server is damaged)
  [255]
  $ asnew r
  r: as new
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' whole-v2.hg
  $ rm -rf r && hg init r
  $ hg -R r -q unbundle $cheap whole-v2.hg
  $ hg -R r verify -q
