Enabling the extension and reading its documentation
====================================================

  $ . "$TESTDIR/setup.sh"

The extension loads by name once installed, from the hgext3rd namespace:

  $ hg version -v | grep backgroundclose
    backgroundclose  external  0.1.0 (glob)

  $ hg help -e backgroundclose | head -n 3
  backgroundclose extension - close files on background threads when closing a
  written file is slow
  

The manual fits on two screens, and leads with when it helps, then how to
enable, check and disable it, then the settings:

  $ hg help -e backgroundclose > manual.txt
  $ test "$(wc -l < manual.txt)" -le 120
  $ grep -n -e '^It helps where' -e '^Enable it' -e '^Check it' \
  >   -e '^Disable it' -e '^Settings$' manual.txt \
  >   | sed 's/^[0-9]*://' | cut -d' ' -f1-2
  It helps
  Enable it
  Check it:
  Disable it
  Settings

Every setting is documented there, and in hg help config.worker, where the
extension's text takes the place of core's:

  $ hg help config.worker > worker.txt
  $ for setting in backgroundclosepolicy backgroundclose \
  >     backgroundclosethreadcount \
  >     backgroundclosemaxqueue backgroundcloseminfilecount \
  >     backgroundclosemaxthreadcount backgroundclosethreshold \
  >     backgroundclosenative backgroundclosewrites backgroundclosejournal \
  >     backgroundclosereport; do
  >   echo "$setting $(grep -c "^\"$setting\"\$" manual.txt)" \
  >     "$(grep -c "^    \"$setting\"\$" worker.txt)"
  > done
  backgroundclosepolicy 1 1
  backgroundclose 1 1
  backgroundclosethreadcount 1 1
  backgroundclosemaxqueue 1 1
  backgroundcloseminfilecount 1 1
  backgroundclosemaxthreadcount 1 1
  backgroundclosethreshold 1 1
  backgroundclosenative 1 1
  backgroundclosewrites 1 1
  backgroundclosejournal 1 1
  backgroundclosereport 1 1
  $ grep -A 5 '^    "backgroundclose"$' worker.txt
      "backgroundclose"
          Core's boolean, read when "backgroundclosepolicy" is unset: "true" is
          "background", "false" is "inline", unset is "adaptive" (core's
          default, true on Windows, does not apply).  "auto" is read as
          "adaptive", but Mercurial without the extension refuses it.
  

hg config shows what was set; asked for the worker section, for
worker.backgroundclose or for worker.backgroundclosepolicy, it also says
which policy is in effect and which setting chose it, on standard error,
leaving core's output and return code (and -q silences it):

  $ hg config worker.backgroundclose
  (backgroundclose: the adaptive policy, as neither worker.backgroundclosepolicy nor worker.backgroundclose is set)
  [1]
  $ hg config worker.backgroundclose 2>/dev/null
  [1]
  $ hg config -q worker.backgroundclose
  [1]
  $ hg config worker.backgroundclosepolicy --config worker.backgroundclose=no
  (backgroundclose: the inline policy, as worker.backgroundclose=no (--config))
  [1]
  $ printf '[worker]\nbackgroundclose = true\nbackgroundclosepolicy = adaptive\n' \
  >   > shared.rc
  $ HGRCPATH="$HGRCPATH:$PWD/shared.rc" hg config worker
  worker.backgroundclosewrites=false
  worker.backgroundclose=true
  worker.backgroundclosepolicy=adaptive
  (backgroundclose: the adaptive policy, as worker.backgroundclosepolicy=adaptive (*shared.rc:3)) (glob)

What users set before the extension had its own setting, auto, is still
read, with a word on what it does elsewhere:

  $ hg config worker.backgroundclose --config worker.backgroundclose=auto
  auto
  (backgroundclose: the adaptive policy, as worker.backgroundclose=auto (--config); Mercurial without the extension refuses "auto": set worker.backgroundclosepolicy=adaptive instead)

Without the extension, the topic is core's own again:

  $ hg --config extensions.backgroundclose=! help config.worker \
  >   | grep -e 'true on Windows' -e '"backgroundclosemaxthreadcount"'
          substantially. (default: true on Windows, false elsewhere)
  $ grep -c 'true on Windows, false' worker.txt
  0
  [1]

A command pays only for what it uses: Mercurial's help module, the costliest
to load, loads in hg help, the checkout's modules in an update, and neither in
hg status (demandimport leaves a module unrun until something in it is used):

  $ cat > loaded.py <<PY
  > import sys
  > NAMES = ('mercurial.help', 'hgext3rd.backgroundclose.checkout.batchget',
  >          'hgext3rd.backgroundclose.stream.apply')
  > def uisetup(ui):
  >     def report():
  >         for name in NAMES:
  >             module = sys.modules.get(name)
  >             ran = (module is not None
  >                    and type(module).__name__ != '_LazyModule')
  >             ui.write(b'%s %s\n' % (name.encode(), b'ran' if ran else b'-'))
  >     ui.atexit(report)
  > PY
  $ hg init used
  $ echo a > used/a
  $ hg -R used commit -qAm a
  $ hg -R used --config extensions.loaded=loaded.py status
  mercurial.help -
  hgext3rd.backgroundclose.checkout.batchget -
  hgext3rd.backgroundclose.stream.apply -
  $ hg --config extensions.loaded=loaded.py help config.worker \
  >   | grep -e '^    "backgroundclose"$' -e ' ran$' -e ' -$'
      "backgroundclose"
  mercurial.help ran
  hgext3rd.backgroundclose.checkout.batchget -
  hgext3rd.backgroundclose.stream.apply -
  $ hg -R used update -q null
  $ hg -R used --config extensions.loaded=loaded.py update
  1 files updated, 0 files merged, 0 files removed, 0 files unresolved
  mercurial.help -
  hgext3rd.backgroundclose.checkout.batchget ran
  hgext3rd.backgroundclose.stream.apply -

hgweb's help pages, served by hg serve, show the extension's settings too:

  $ port=`freeport`
  $ hg serve -R used -a 127.0.0.1 -p $port -d --pid-file web.pid -E web.log
  $ python3 -c "
  > import urllib.request
  > page = urllib.request.urlopen('http://127.0.0.1:$port/help/config').read()
  > print(page.count(b'backgroundclosenative') > 0)"
  True
  $ kill $(cat web.pid)
  $ cat web.log

hg debuginstall says whether the C close threads were built (make test
requires them):

  $ hg debuginstall | grep backgroundclose
  checking backgroundclose C close threads (built)
  $ hg debuginstall -T json | grep backgroundclose
    "backgroundclosenative": true,

  $ hg help debugprobeclose | head -n 3
  hg debugprobeclose [DIR]
  
  time closing files here, and tell what the closer would do

debugapplystreamclonebundle gains -T and says which formats it takes:

  $ hg help debugapplystreamclonebundle | tr -s ' \n' '  ' | grep -o 'stream bundles of every format are accepted'
  stream bundles of every format are accepted
  $ hg help debugapplystreamclonebundle | grep -e '-T --template'
   -T --template TEMPLATE display with template

Without the extension, settings it adds do not disturb Mercurial:

  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclosemaxthreadcount = 16
  > backgroundclosethreshold = 50
  > backgroundclosereport = json
  > HGRC
  $ hg --config extensions.backgroundclose=! init plain
  $ hg --config extensions.backgroundclose=! -R plain config worker
  worker.backgroundclosewrites=false
  worker.backgroundclosemaxthreadcount=16
  worker.backgroundclosethreshold=50
  worker.backgroundclosereport=json
  $ echo a > plain/a
  $ hg --config extensions.backgroundclose=! -R plain commit -qAm a
  $ hg --config extensions.backgroundclose=! -R plain log -T '{desc}\n'
  a

On a Mercurial whose internals moved, the extension steps aside with a
warning that names both versions and what to do, instead of failing
(simulated here by removing a function it wraps):

  $ cat > breakvfs.py <<PY
  > from mercurial import vfs
  > del vfs.backgroundfilecloser
  > PY
  $ hg --config extensions.breakvfs="$PWD/breakvfs.py" init moved
  backgroundclose 0.1.0 is disabled: Mercurial * lacks mercurial.vfs.backgroundfilecloser (glob)
  (it was tested with Mercurial 6.5.3 to 7.2.4: install a release of it made for this Mercurial, or disable it with "backgroundclose = !" in [extensions])
  $ hg --config extensions.breakvfs="$PWD/breakvfs.py" -R moved log 2>&1 | wc -l
  2
