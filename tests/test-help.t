Enabling the extension and reading its documentation
====================================================

  $ . "$TESTDIR/setup.sh"

The extension loads by name once installed, from the hgext3rd namespace:

  $ hg version -v | grep backgroundclose
    backgroundclose  external  0.1.0 (glob)

  $ hg help -e backgroundclose | head -n 3
  backgroundclose extension - close files on background threads when closing a
  written file is slow
  

Every setting is documented:

  $ for setting in backgroundclose backgroundclosethreadcount \
  >     backgroundclosemaxqueue backgroundcloseminfilecount \
  >     backgroundclosemaxthreadcount backgroundclosethreshold \
  >     backgroundclosenative backgroundclosereport; do
  >   hg help -e backgroundclose | grep -c "^\"$setting\"\$"
  > done
  1
  1
  1
  1
  1
  1
  1
  1

Where it acts, one row per kind of command, and the probe command:

  $ hg help -e backgroundclose | grep -A 8 '^Where it acts'
  Where it acts (Mercurial 6.5 to 7.2; "C threads" where the C part was built,
  Python threads elsewhere, e.g. on Windows or with
  "worker.backgroundclosenative=false"; inline while closes are cheap):
  
  command                                       format      closes on
  -----------------------------------------------------------------------
  clone --stream, stream bundles, clone bundles v1, v2, v3  C threads
  pull, unbundle, clone, a push over ssh        changegroup C threads
  a push received by hg serve over http         changegroup inline (core)
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

On a Mercurial whose internals moved, the extension steps aside with one
warning instead of failing (simulated here by removing a function it wraps):

  $ cat > breakvfs.py <<PY
  > from mercurial import vfs
  > del vfs.backgroundfilecloser
  > PY
  $ hg --config extensions.breakvfs="$PWD/breakvfs.py" init moved
  backgroundclose: disabled, this Mercurial lacks mercurial.vfs.backgroundfilecloser
  $ hg --config extensions.breakvfs="$PWD/breakvfs.py" -R moved log
  backgroundclose: disabled, this Mercurial lacks mercurial.vfs.backgroundfilecloser
