Clones into a real network file system
======================================

Everything else here writes to a local disk, with slow closes modelled by
the LD_PRELOAD shim.  This test writes to sshfs: a FUSE file system whose
every open, mkdir and close is a round trip to an OpenSSH server, here one
started on 127.0.0.1 by bench/sshfs.py with keys it generates.  It is
skipped where that can't be done: no /dev/fuse, not root, or sshfs or
openssh-server not installed (`python3 bench/sshfs.py --check` says which;
`make realfs-deps` installs them).

  $ python3 "$TESTDIR/../bench/sshfs.py" --check > /dev/null || exit 80
  $ . "$TESTDIR/setup.sh"

Writer threads adaptive, as a user has them (setup.sh turns them off):

  $ sed -i '/^backgroundclosewrites = false$/d' "$HGRCPATH"
  $ hg config worker.backgroundclosewrites
  [1]
  $ makerepo src 150
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v3-exp' \
  >   --config experimental.stream-v3=yes v3.hg

The mount, held by a process of its own until it is sent SIGTERM (or for
five minutes at most):

  $ mkdir served
  $ python3 "$TESTDIR/../bench/sshfs.py" --serve served mnt sshd 300 \
  >   > sshfs.log 2>&1 &
  $ echo $! > sshfs.pid
  $ for i in $(seq 200); do [ -e sshd/ready ] && break; sleep 0.1; done
  $ mountpoint -q mnt && echo mounted
  mounted

A stream clone over ssh (v2), a packed1 bundle (v1) and a stream v3 bundle,
each into the mount, with the report on; each result verifies, and the
files are on the server's side:

  $ hg clone -U --stream ssh://user@dummy/src mnt/v2 \
  >   --config worker.backgroundclosereport=yes > v2.out
  $ grep -c '^stream apply (v2)' v2.out
  1
  $ hg init mnt/v1
  $ hg -R mnt/v1 debugapplystreamclonebundle v1.hg \
  >   --config worker.backgroundclosereport=yes > v1.out
  $ grep -c '^stream apply (v1)' v1.out
  1
  $ hg init mnt/v3
  $ hg -R mnt/v3 unbundle v3.hg --config experimental.stream-v3=yes \
  >   --config worker.backgroundclosereport=yes > v3.out
  $ grep -c '^stream apply (v3)' v3.out
  1

Opening a file there waits on a round trip, so each apply went to writer
threads (worker.backgroundclosewrites is left unset: adaptive):

  $ grep -c '^  writers: ' v1.out v2.out v3.out
  v1.out:1
  v2.out:1
  v3.out:1

  $ for repo in v1 v2 v3; do
  >   hg -R mnt/$repo verify -q && echo "$repo verifies"
  >   diff <(hg -R src log -T '{node}\n') <(hg -R served/$repo log -T '{node}\n')
  > done
  v1 verifies
  v2 verifies
  v3 verifies

A whole clone into the mount, store then checkout, the writers adaptive;
then updates to the null revision and back, without update workers (so
that the --debug line is the one process's).  Making a file there waits on
round trips, so the checkout went to writer threads; the working copy is
core's (the same tree, the same dirstate as core's own update makes in the
mount, mtimes aside), clean, and it verifies:

  $ hg clone -q --stream ssh://user@dummy/src mnt/wc
  $ hg clone -q --stream ssh://user@dummy/src mnt/core \
  >   --config extensions.backgroundclose=!
  $ for rev in null tip; do
  >   hg -R mnt/wc update -q $rev --config worker.enabled=false --debug \
  >     | grep -c '^backgroundclose: .* written by'
  >   hg -R mnt/core update -q $rev --config extensions.backgroundclose=!
  >   diff <(wcdirstate mnt/core) <(wcdirstate mnt/wc)
  > done
  0
  1
  $ hg -R mnt/wc status
  $ hg -R mnt/wc verify -q
  $ diff -r -q src served/wc -x .hg && echo same tree
  same tree

The mount goes away with its process:

  $ kill $(cat sshfs.pid)
  $ for i in $(seq 100); do kill -0 $(cat sshfs.pid) 2>/dev/null || break; sleep 0.1; done
  $ mountpoint -q mnt || echo unmounted
  unmounted
  $ cat sshfs.log
