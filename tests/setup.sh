# setup.sh - common environment of the cram tests, sourced by every .t file
#
# Like Mercurial's own test runner: no user configuration, a fixed user,
# C locale, developer warnings on (Mercurial's test suite runs with them, so
# a convention the extension breaks shows up as a changed output here), the
# extension enabled by name (as an installed package), and a dummy ssh that
# runs the "remote" hg on this machine.  Writer threads are off: left
# adaptive, they start wherever opens are measured to wait, which a loaded
# CI disk makes them do now and then, and the reports and counts printed
# here would change with them.  test-writers.t turns them on, and
# test-sshfs.t leaves them adaptive on a file system whose opens wait.
HGRCPATH="$PWD/.hgrc"
export HGRCPATH
cat > "$HGRCPATH" <<HGRC
[ui]
username = test <test@example.invalid>
ssh = "$TESTDIR/dummyssh"
remotecmd = hg
[extensions]
backgroundclose =
[devel]
all-warnings = true
[worker]
backgroundclosewrites = false
HGRC
# a descriptor closed by a caller that does not own it aborts here
# (engine/descriptors.py), where in use it is left open and reported
BACKGROUNDCLOSE_STRICT_OWNERSHIP=1
export BACKGROUNDCLOSE_STRICT_OWNERSHIP
HGENCODING=ascii
LANG=C
LC_ALL=C
TZ=GMT
HGUSER=test
HGEMITWARNINGS=1
export HGENCODING LANG LC_ALL TZ HGUSER HGEMITWARNINGS
unset HGPLAIN HGPLAINEXCEPT

# makerepo DEST FILES: a small source-like repository (see bench/corpus.py).
# Most tests ask for the same few sizes: each is made once per Mercurial
# release and corpus.py version, in build/corpus-cache, and copied from
# there (made in a directory of its own, then renamed: tests run in
# parallel)
makerepo() {
  local cachedir="$TESTDIR/../build/corpus-cache" key new
  key="$(hg version -q | tr -c '0-9A-Za-z.\n' _)-$(cat "$TESTDIR/../bench/corpus.py" "$HGRCPATH" | cksum | cut -d' ' -f1)-$2"
  if [ ! -d "$cachedir/$key" ]; then
    mkdir -p "$cachedir" &&
    new="$(mktemp -d "$cachedir/.new-XXXXXX")" &&
    python3 "$TESTDIR/../bench/corpus.py" --hg hg --files "$2" --seed 1 \
      "$new/repo" > "$new/output" 2>&1 || { cat "$new/output"; rm -rf "$new"; return 1; }
    # GNU mv: fails, instead of moving into it, if another test made it
    mv -T "$new" "$cachedir/$key" 2>/dev/null || rm -rf "$new"
  fi
  cp -a "$cachedir/$key/repo" "$1" && cat "$cachedir/$key/output"
}

# freeport: a free TCP port on localhost
freeport() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# asnew REPO: "REPO: as new" when REPO/.hg holds just what "hg init" makes,
# else the difference.  .hg/journal.desc does not count: core's transaction
# leaves it after any abort.  What "hg init" makes is listed once per test.
PRISTINE_LIST="$(mktemp)"
asnew() {
  if [ ! -s "$PRISTINE_LIST" ]; then
    _pristine="$(mktemp -d)"
    hg init "$_pristine/repo"
    (cd "$_pristine/repo/.hg" && find . | sort) > "$PRISTINE_LIST"
    rm -rf "$_pristine"
  fi
  (cd "$1/.hg" && find . | grep -v '^./journal.desc$' | sort) |
    diff -u "$PRISTINE_LIST" - && echo "$1: as new"
}

# wctree DIR: each file and directory of the working copy DIR (.hg aside),
# sorted: its name as the file system keeps it, its type and mode, where a
# symbolic link points, and each file's md5sum; what tests compare with
# core's working copy
wctree() {
  (cd "$1" && {
    find . -path ./.hg -prune -o -type d ! -name . -printf '%p/\n' \
      -o -type l -printf '%p -> %l\n' -o -type f -printf '%p %m\n'
    find . -path ./.hg -prune -o -type f -exec md5sum {} +
  } | LC_ALL=C sort)
}

# wcdirstate REPO: its dirstate without mtimes, and without whether one is
# recorded (core leaves out those of files written in an update's last
# second, and which those are depends on speed)
wcdirstate() {
  hg -R "$1" debugstate --no-dates | sed 's/ \(un\)\{0,1\}set / /' | tr -s ' '
}
