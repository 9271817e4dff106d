Mercurial used as a library
===========================

TortoiseHg, build tools and scripts load the extensions and call Mercurial's
functions without going through its command line, which is what loads the
debug commands.  The extension must set itself up all the same, and either
completely or not at all.

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 40

The script below works the way such a program does: it makes a ui and
opens the source repository, which loads the extensions of the
configuration and runs their setup.  Mercurial 7 loads its command modules,
revset predicates and bundle2 part handlers in ``initialization.init()``,
which the command line calls first; a program that only clones locally may
never call it (Mercurial's own test-clone.t has such a script), and that is
when the debug command the extension wraps is not loaded yet.

  $ cat > libclone.py <<'EOF'
  > import sys
  > from mercurial import commands, extensions, streamclone, ui as uimod
  > try:  # Mercurial 7.x; hg.repository and hg.clone are deprecated there
  >     from mercurial.cmd_impls.clone import clone
  >     from mercurial.repo.factory import repository
  > except ImportError:
  >     from mercurial.hg import clone, repository
  > mode = sys.argv[1]
  > if mode == 'network':
  >     # what a program that pulls must do first on Mercurial 7
  >     try:
  >         from mercurial import initialization
  >         initialization.init()
  >     except ImportError:
  >         pass
  > elif mode == 'wrapcommand-fails':
  >     def failing(*args, **kwargs):
  >         raise RuntimeError('no room for another wrapper')
  >     extensions.wrapcommand = failing
  > elif mode == 'no-debug-command':
  >     # a Mercurial without the command: load the table, then drop it
  >     from mercurial import debugcommands
  >     getattr(debugcommands, 'init', None)
  >     for key in list(commands.table):
  >         if b'debugapplystreamclonebundle' in key:
  >             del commands.table[key]
  > u = uimod.ui.load()
  > source = repository(u, b'src')
  > def ours(fn):
  >     fn = getattr(fn, '_unboundwrapper', fn)
  >     return getattr(fn, '__module__', '').startswith('hgext3rd.')
  > chain = extensions.getwrapperchain(streamclone, 'consumev2')
  > print('stream v2 wrapped:', any(ours(fn) for fn in chain))
  > entry = commands.table.get(b'debugapplystreamclonebundle')
  > print('debug command wrapped:', entry is not None and ours(entry[0]))
  > if mode == 'network':
  >     u.setconfig(b'worker', b'backgroundclosereport', b'yes')
  >     clone(u, {}, source, dest=b'pulled', pull=True)
  >     clone(u, {}, b'ssh://user@dummy/src', dest=b'streamed', stream=True,
  >           update=False)
  > else:
  >     clone(u, {}, source, dest=mode.encode())
  > EOF

A local clone, as Mercurial's own test-clone.t makes one: the extension is
set up completely, and writes the working copy:

  $ python3 libclone.py local
  stream v2 wrapped: True
  debug command wrapped: True
  updating to branch default
  40 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R local verify -q
  $ hg -R local status

A program that pulls: the changegroup's closes and the stream clone's
timing report show that every seam works:

  $ python3 libclone.py network
  stream v2 wrapped: True
  debug command wrapped: True
  requesting all changes
  adding changesets
  adding manifests
  adding file changes
  added 2 changesets with 44 changes to 40 files
  new changesets * (glob)
  updating to branch default
  40 files updated, 0 files merged, 0 files removed, 0 files unresolved
  streaming all changes
  * files to transfer, * of data (glob)
  (stream-cloned \d+ files / |transferred ).* in .* seconds \(.*/sec\) (re)
  stream apply (v2): * files, * in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open * (glob)
    write * (glob)
    mkdir * (glob)
    close, applier * (glob)
    close, threads * (glob)
    directories: * made*, * found existing (glob)
    closer: * (glob)
  $ hg -R pulled verify -q
  $ hg -R streamed verify -q

A step of the setup that fails takes back the steps before it: Mercurial
says the extension could not be set up, and then behaves as core does,
nothing of the extension left in place:

  $ python3 libclone.py wrapcommand-fails > out 2>&1
  $ grep -e '^\*\*\*' -e 'wrapped:' -e 'files updated' out
  *** failed to set up extension backgroundclose: no room for another wrapper
  stream v2 wrapped: False
  debug command wrapped: False
  40 files updated, 0 files merged, 0 files removed, 0 files unresolved

A Mercurial without one of the things the extension wraps gets a warning
and core's behaviour:

  $ python3 libclone.py no-debug-command
  backgroundclose 0.1.0 is disabled: Mercurial * lacks debugapplystreamclonebundle (glob)
  (it was tested with Mercurial 6.5.3 to 7.2.4: install a release of it made for this Mercurial, or disable it with "backgroundclose = !" in [extensions])
  stream v2 wrapped: False
  debug command wrapped: False
  updating to branch default
  40 files updated, 0 files merged, 0 files removed, 0 files unresolved

A program that clones on a thread of its own (a GUI keeps its main thread
for the window).  Core closes in the background only on the main thread;
the extension applies the stream on whichever thread clones, and a close
that fails there aborts the clone before its transaction commits: the
pretxnclose hook never sees a broken clone.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ cat > threadclone.py <<'EOF'
  > import sys, threading
  > from mercurial import error, ui as uimod
  > try:  # Mercurial 7.x
  >     from mercurial import initialization
  >     initialization.init()
  >     from mercurial.cmd_impls.clone import clone
  > except ImportError:
  >     from mercurial.hg import clone
  > def run():
  >     u = uimod.ui.load()
  >     for setting in sys.argv[2:]:
  >         name, value = setting.split('=', 1)
  >         section, key = name.split('.', 1)
  >         u.setconfig(section.encode(), key.encode(), value.encode(), b'test')
  >     try:
  >         clone(u, {}, b'ssh://user@dummy/src', dest=sys.argv[1].encode(),
  >               stream=True, update=False)
  >     except error.Abort as exc:
  >         print('abort: %s' % exc.message.decode())
  > thread = threading.Thread(target=run)
  > thread.start()
  > thread.join()
  > EOF
  $ threaded() {
  >   SLOWCLOSE_US=1000 LD_PRELOAD="$SLOWCLOSE_SO" python3 threadclone.py "$@" \
  >     worker.backgroundclose=yes worker.backgroundcloseminfilecount=0 \
  >     'hooks.pretxnclose.seen=echo pretxnclose hook ran'
  > }
  $ threaded on-a-thread
  streaming all changes
  * files to transfer, * of data (glob)
  pretxnclose hook ran
  (stream-cloned \d+ files / |transferred ).* in .* seconds \(.*/sec\) (re)
  $ hg -R on-a-thread verify -q
  $ SLOWCLOSE_FAIL_MATCH=00manifest.i threaded failing-on-a-thread
  streaming all changes
  * files to transfer, * of data (glob)
  abort: error closing 00manifest.i: Input/output error
  $ ls failing-on-a-thread
  ls: cannot access 'failing-on-a-thread': No such file or directory
  [2]
