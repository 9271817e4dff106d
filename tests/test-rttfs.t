Clones, updates and pulls where every request is a round trip
=============================================================

A network home directory: the store and the working copy on a file system
whose every request (a lookup, a create, a read, a close's flush) waits for
the network, while the server costs little.  bench/rttfs.c models it: a
FUSE pass-through that holds each request a set time (0.3 ms here), many
at once.  Skipped where no such mount can be made: no /dev/fuse, not root,
or no FUSE headers (`python3 bench/rttfs.py --check` says which; `make realfs-deps`
installs them).

  $ python3 "$TESTDIR/../bench/rttfs.py" --check > /dev/null || exit 80
  $ . "$TESTDIR/setup.sh"

Writer threads adaptive, as a user has them (setup.sh turns them off):

  $ sed -i '/^backgroundclosewrites = false$/d' "$HGRCPATH"
  $ makerepo src 150
  $ hg clone -q src src2
  $ hg -R src2 files -T '{path}\n' | sed -n '1~15p' \
  >   | while IFS= read -r f; do echo more >> "src2/$f"; done
  $ hg -R src2 commit -q -m 'more'
  $ hg -R src2 files -T '{path}\n' | sed -n '2~40p' \
  >   | while IFS= read -r f; do hg -R src2 rm -q "src2/$f"; done
  $ hg -R src2 commit -q -m 'fewer'

The mount, held by a process of its own until it is sent SIGTERM (or for
five minutes at most):

  $ mkdir served
  $ RTTFS_US=300 python3 "$TESTDIR/../bench/rttfs.py" --serve served mnt rttfs 300 \
  >   > rttfs.log 2>&1 &
  $ echo $! > rttfs.pid
  $ for i in $(seq 300); do [ -e rttfs/ready ] && break; sleep 0.1; done
  $ mountpoint -q mnt && echo mounted
  mounted

A whole clone into the mount, and the same by core: the same tree, modes
and contents, the same dirstate (mtimes aside), clean, and it verifies.
Reading a filelog there waits on round trips, so the checkout read the
store ahead on threads, and wrote its files on writer threads; the
directories of the files handed to writers, in the store and in the
working copy, were made ahead of them on threads of their own:

  $ same() {
  >   diff <(wctree "served/$1") <(wctree "served/$2") &&
  >   diff <(wcdirstate "mnt/$1") <(wcdirstate "mnt/$2") &&
  >   hg -R "mnt/$2" status && hg -R "mnt/$2" verify -q && echo "$2: as core"
  > }
  $ hg clone -q --stream ssh://user@dummy/src mnt/core \
  >   --config extensions.backgroundclose=!
  $ hg clone --stream ssh://user@dummy/src mnt/wc --debug \
  >   --config worker.enabled=false > clone.out
  $ grep '^backgroundclose: .*stream closes' clone.out |
  >   grep -o ', [0-9]* writer threads, directories made ahead by'
  , * writer threads, directories made ahead by (glob)
  $ grep '^backgroundclose: .*checkout' clone.out
  backgroundclose: 150 checkout files, * written by * writer threads, the store read ahead by * threads, directories made ahead by * threads; in flight on average: * reads, * directories, * files (glob)
  $ same core wc
  wc: as core

To the null revision and back, with core's update workers and without:

  $ for workers in true false; do
  >   for rev in null tip; do
  >     hg -R mnt/core update -q $rev --config extensions.backgroundclose=!
  >     hg -R mnt/wc update -q $rev --config worker.enabled=$workers
  >     same core wc
  >   done
  > done
  wc: as core
  wc: as core
  wc: as core
  wc: as core

A pull of two revisions that change and remove files, then an update to
them, as core's.  Each file revlog of the pull waits on round trips (open,
read, write, close), so they were applied on threads, each whole; the
store is core's, byte for byte (the fncache lists the same files, in no
order, as core's does):

  $ storetree() {
  >   (cd "served/$1/.hg/store" && find . -type f ! -name 'undo*' \
  >     ! -name fncache -exec md5sum {} + | LC_ALL=C sort &&
  >     LC_ALL=C sort fncache)
  > }
  $ hg -R mnt/core pull -q src2 --config extensions.backgroundclose=!
  $ hg -R mnt/wc pull --debug src2 | grep '^backgroundclose: changegroup files'
  backgroundclose: changegroup files: * file revlogs in * s, applied by * threads, 0 too large to hold applied on the applying thread (glob)
  $ diff <(storetree core) <(storetree wc)
  $ diff <(hg -R mnt/core log -T '{node}\n') <(hg -R mnt/wc log -T '{node}\n')
  $ hg -R mnt/core update -q tip --config extensions.backgroundclose=!
  $ hg -R mnt/wc update -q tip
  $ same core wc
  wc: as core

A read ahead that fails (the writers, and so the readers, started from the
first file on): one filelog damaged, and another gone from the store.  Each update aborts as core's does, with core's message, at the
same file: what core wrote before it is all there is (the writers write
nothing once a read failed), nothing is recorded in the dirstate, no
thread or descriptor is left, and hg update --clean recovers once the store
is whole again:

  $ for repo in core-bad bad core-gone gone; do
  >   hg clone -q -U --pull src "served/$repo"
  > done
  $ damaged=$(cd served/bad && find .hg/store/data -name '*.i' | LC_ALL=C sort | sed -n 100p)
  $ for repo in core-bad bad; do
  >   printf 'garbage' | dd of="served/$repo/$damaged" bs=1 seek=8 conv=notrunc 2>/dev/null
  > done
  $ gone=$(cd served/gone && find .hg/store/data -name '*.i' | LC_ALL=C sort | sed -n 120p)
  $ for repo in core-gone gone; do rm "served/$repo/$gone"; done
  $ for repo in bad gone; do
  >   hg -R mnt/core-$repo update --config extensions.backgroundclose=! \
  >     --config worker.enabled=false > core-$repo.out 2>&1; echo "core: exit $?"
  >   python3 "$TESTDIR/interrupt.py" NONE "mnt/$repo/.hg/store" 0 -- \
  >     -R "mnt/$repo" update --config worker.enabled=false \
  >     --config worker.backgroundclosewrites=true > $repo.out 2>&1
  >   diff <(sed "s/core-$repo/$repo/g" core-$repo.out) \
  >     <(grep -v '^[a-z ]*: True$\|^exit ' $repo.out)
  >   grep '^exit \|: True$' $repo.out
  >   hg -R mnt/$repo debugstate | wc -l
  >   comm -13 <(wctree served/core-$repo) <(wctree served/$repo)
  > done
  core: exit 255
  exit 255
  threads as before: True
  descriptors as before: True
  0
  core: exit 255
  exit 255
  threads as before: True
  descriptors as before: True
  0

The store whole again, hg update --clean recovers:

  $ for repo in bad gone; do
  >   rm -rf "served/$repo/.hg/store" && cp -a src/.hg/store "served/$repo/.hg/"
  >   hg -R mnt/$repo update -q --clean tip && hg -R mnt/$repo status
  > done

Ctrl-C midway through an update whose store is read ahead: hg stops
writing, joins its readers and writers, keeps no descriptor open, and the
working copy is an interrupted update that hg update --clean recovers:

  $ hg clone -q -U src served/int
  $ stored=$(find served/int -type f | wc -l)
  $ python3 "$TESTDIR/interrupt.py" INT served/int $((stored + 20)) -- \
  >   -R mnt/int -q update --config worker.enabled=false
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ hg -R mnt/int summary | grep -o '(interrupted update)'
  (interrupted update)
  $ hg -R mnt/int update -q --clean
  $ diff <(wctree src) <(wctree served/int) && hg -R mnt/int status

Ctrl-C midway through a pull into an empty repository, its file revlogs
being applied on threads: hg stops applying, joins every thread, keeps no
descriptor open, and rolls the transaction back; the repository is empty
and whole, and the same pull then runs to its end:

  $ hg init mnt/pulled
  $ python3 "$TESTDIR/interrupt.py" INT served/pulled/.hg/store 60 -- \
  >   -R mnt/pulled -q pull src2
  transaction abort!
  rollback completed
  interrupted!
  exit 255
  signalled while running: True
  stopped writing at the signal: True
  threads as before: True
  descriptors as before: True
  $ hg -R mnt/pulled log -T '{rev}\n'
  $ hg -R mnt/pulled verify -q
  $ hg -R mnt/pulled pull -q src2 && hg -R mnt/pulled verify -q
  $ diff <(hg -R src2 log -T '{node}\n') <(hg -R mnt/pulled log -T '{node}\n')

The mount goes away with its process:

  $ kill $(cat rttfs.pid)
  $ for i in $(seq 100); do kill -0 $(cat rttfs.pid) 2>/dev/null || break; sleep 0.1; done
  $ mountpoint -q mnt || echo unmounted
  unmounted
  $ cat rttfs.log
