#!/bin/sh
# onscratch.sh - run a command with its temporary files in memory
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
#
# onscratch.sh COMMAND [ARG...]: run COMMAND with TMPDIR on a tmpfs of its
# own, where the tests make their repositories (cram's and pytest's
# temporary directories, Mercurial's run-tests.py).  The suite writes and
# removes a few hundred thousand small files, and on a disk that is slow
# to sync those waits cost more than the tests' own work.
#
# The tmpfs is mounted in a mount namespace of the command's own (as root,
# with unshare), so that it goes away with the command however that ends,
# and nothing outside sees it.  Where that can't be done (not root, no
# unshare, a sandbox that refuses namespaces), or with TEST_TMPFS=no, the
# command runs as it is, on the usual TMPDIR.  A command already on its
# scratch (ONSCRATCH set: make test calls make unit and make cram) stays
# there.
if [ -z "$ONSCRATCH" ] && [ "${TEST_TMPFS:-yes}" != no ] &&
    [ "$(id -u)" = 0 ] &&
    unshare --mount --propagation private true 2> /dev/null; then
  scratch="${SCRATCH_DIR:-build/scratch}"
  mkdir -p "$scratch" &&
  exec unshare --mount --propagation private sh -c '
    if mount -t tmpfs -o mode=1777 onscratch "$0"; then
      TMPDIR="$0"
      export TMPDIR
    fi
    ONSCRATCH="$0" exec "$@"' "$(cd "$scratch" && pwd)" "$@"
fi
exec "$@"
