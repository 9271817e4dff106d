A failed stream apply is taken back under the store's lock
==========================================================

When a stream apply fails after core's consumer returned (here: the
transaction fails as it closes), the files it wrote are taken back.  That
must happen while the store is still locked: consumev1 releases its own
lock on the way out, and in between another process could write there.  An
extension made for the test says whether the store is locked each time the
apply is taken back: once, though three frames see the failure.

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 30
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ cat > undolock.py <<'PY'
  > from mercurial import error, extensions, transaction
  > from hgext3rd.backgroundclose.stream import apply as streamapply
  > def uisetup(ui):
  >     def take_back(orig, self):
  >         locked = self._repo.currentlock() is not None
  >         self.ui.write(b'taken back, store locked: %s\n'
  >                       % (b'yes' if locked else b'no'))
  >         return orig(self)
  >     def close(orig, self):
  >         raise error.Abort(b'injected: the transaction fails to close')
  >     extensions.wrapfunction(streamapply.ApplySession, 'take_back',
  >                             take_back)
  >     extensions.wrapfunction(transaction.transaction, 'close', close)
  > PY
  $ for format in v1 v2; do
  >   hg init $format
  >   hg -R $format -q debugapplystreamclonebundle $format.hg \
  >     --config extensions.undolock=$PWD/undolock.py
  >   asnew $format
  > done
  taken back, store locked: yes
  abort: injected: the transaction fails to close
  v1: as new
  taken back, store locked: yes
  abort: injected: the transaction fails to close
  v2: as new
