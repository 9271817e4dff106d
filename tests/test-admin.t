An administrator's session: install the wheel, enable it for every user, clone
=============================================================================

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 100
  $ work="$PWD"

The wheel, built as `make dist` builds it (the sdist, then the wheel from
the sdist), from a copy of the source: nothing is written into the
checkout.  The Python is the one the tests run on:

  $ mkdir tree
  $ (cd "$TESTDIR/.." &&
  >  cp pyproject.toml setup.py MANIFEST.in README.rst NEWS.rst LICENSE "$work/tree" &&
  >  tar -cf - --exclude=__pycache__ --exclude='*.so' hgext3rd) | tar -xf - -C tree
  $ cd tree
  $ build() {
  >   python -c 'import sys; from setuptools import build_meta as b; getattr(b, sys.argv[1])(sys.argv[2])' "$@" \
  >     >> "$work/build.log" 2>&1 || cat "$work/build.log"
  > }
  $ build build_sdist "$work/dist"
  $ cd "$work"
  $ tar -xzf dist/hg_backgroundclose-0.1.0.tar.gz
  $ cd hg_backgroundclose-0.1.0
  $ build build_wheel "$work/dist"
  $ cd "$work"
  $ ls dist
  hg_backgroundclose-0.1.0-*.whl (glob)
  hg_backgroundclose-0.1.0.tar.gz

A virtualenv of its own, with the Mercurial release under test and the
wheel (pip's own warnings go to a file):

  $ hgversion="$(hg version -T '{ver}')"
  $ python -m venv venv
  $ venv/bin/pip install --quiet --disable-pip-version-check \
  >   "mercurial==$hgversion" dist/*.whl > pip.log 2>&1 || cat pip.log
  $ PATH="$work/venv/bin:$PATH"
  $ [ "$(command -v hg)" = "$work/venv/bin/hg" ] && [ "$(hg version -T '{ver}')" = "$hgversion" ] && echo "hg $hgversion from the virtualenv"
  hg * from the virtualenv (glob)

Mercurial reads the system-wide configuration from etc/mercurial/hgrc and
etc/mercurial/hgrc.d/*.rc under its installation prefix (two levels above
bin/hg) as well as under /: here the virtualenv is that prefix.  The test
environment's HGRCPATH replaces all of those paths, so it is unset from
here on, and HOME is a fresh directory, so that no user's hgrc is read
(HGEMITWARNINGS, which shows Mercurial's developers Python's deprecation
warnings, goes too: Mercurial 6.5 reading its own default configuration
gets some on Python 3.11):

  $ unset HGRCPATH HGEMITWARNINGS
  $ mkdir home
  $ HOME="$work/home"
  $ mkdir -p venv/etc/mercurial/hgrc.d
  $ cat > venv/etc/mercurial/hgrc.d/backgroundclose.rc <<EOF
  > [extensions]
  > backgroundclose =
  > blackbox =
  > [blackbox]
  > # each line says which part of Mercurial logged it
  > logsource = true
  > EOF

It is loaded (`hg version -v` lists the enabled extensions), and its C
close threads are those the wheel brought:

  $ hg version -v | sed -n 's/ *$//; /^  /p'
    backgroundclose  external  0.1.0
    blackbox         internal
  $ hg debugextensions -v | grep -A1 '^backgroundclose'
  backgroundclose
    location: */venv/lib/python*/site-packages/hgext3rd/backgroundclose/__init__.py (glob)
  $ venv/bin/python -c '
  > import os, sys
  > from hgext3rd.backgroundclose.engine import _closelane, _opstat
  > for m in (_closelane, _opstat):
  >     print(os.path.relpath(m.__file__, sys.prefix))
  > '
  lib/python*/site-packages/hgext3rd/backgroundclose/engine/_closelane.*.so (glob)
  lib/python*/site-packages/hgext3rd/backgroundclose/engine/_opstat.*.so (glob)

A stream clone over ssh, closing on background threads (forced here: on
so small a repository, left to itself, the extension measures closes
cheap and keeps them on the writing thread).  After it, one line of the
extension's in the clone's blackbox:

  $ hg clone -q -U --stream -e "$TESTDIR/dummyssh" ssh://user@dummy/src dest \
  >   --config worker.backgroundclose=true \
  >   --config worker.backgroundcloseminfilecount=0
  $ hg -R dest verify -q
  $ grep -F '[backgroundclose]>' dest/.hg/blackbox.log
  .* \[backgroundclose\]> backgroundclose: stream v2 apply: \d+ files in [0-9.]+ s; closes on \d+ threads took [0-9.]+ s; policy background, ended background, 0 switches (re)

Turned off for everyone with "!", in the same file:

  $ cat >> venv/etc/mercurial/hgrc.d/backgroundclose.rc <<EOF
  > [extensions]
  > backgroundclose = !
  > EOF
  $ hg version -v | sed -n 's/ *$//; /^  /p'
    blackbox  internal
  $ hg clone -q -U --stream -e "$TESTDIR/dummyssh" ssh://user@dummy/src dest2 \
  >   --config worker.backgroundclose=true \
  >   --config worker.backgroundcloseminfilecount=0
  $ hg -R dest2 verify -q

No line of the extension's in that clone's blackbox, which did log the
clone itself:

  $ grep -c -F '[backgroundclose]>' dest2/.hg/blackbox.log
  0
  [1]
  $ grep -F '[commandfinish]> clone' dest2/.hg/blackbox.log
  .* \[commandfinish\]> clone .* dest2 .* exited 0 after .* (re)
