On a Mercurial older than the extension supports
================================================

Run by "make test-unsupported" with Mercurial 6.4.5; with a supported
Mercurial there is nothing to check here, so it skips.

  $ hg version -q | sed -n 's/.*(version \([0-9.]*\).*/\1/p' > version
  $ [ "$(printf '%s\n6.5\n' "$(cat version)" | sort -V | head -n 1)" != 6.5 ] || exit 80
  $ . "$TESTDIR/setup.sh"

The extension disables itself with one warning line per command, and
Mercurial works as without it:

  $ hg init src 2>&1 | tee init.out
  (third party extension backgroundclose requires version 6.5 or newer of Mercurial (current: *); disabling) (glob)
  $ wc -l < init.out
  1
  $ echo a > src/a
  $ hg -R src commit -qAm a 2> warnings
  $ hg clone -q -U --stream ssh://user@dummy/src copy 2>> warnings
  $ hg -R copy log -T '{desc}\n' 2>> warnings
  a
  $ sort -u warnings
  (third party extension backgroundclose requires version 6.5 or newer of Mercurial (current: *); disabling) (glob)
  remote: (third party extension backgroundclose requires version 6.5 or newer of Mercurial (current: *); disabling) (glob)
