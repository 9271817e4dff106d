An update's forked workers, each given whole directories
========================================================

Core deals an update's files to its forked workers one in N, so that
every worker makes files in every directory: on a network file system,
each worker then makes the directories it finds missing (all but the
first find them made, a round trip each) and creates its files beside the
others'.  With the extension, the workers of an update get runs of whole
directories, in core's order.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"

Writer threads adaptive, as a user has them (setup.sh turns them off):

  $ sed -i '/^backgroundclosewrites = false$/d' "$HGRCPATH"
  $ hg config worker.backgroundclosewrites
  [1]

Which worker got which files, written down by a small extension of this
test around core's batchget (each worker process appends to a file named
after its pid):

  $ cat > record.py <<'EOF'
  > import os
  > from mercurial import extensions, merge
  > try:
  >     from mercurial.merge_utils import update as owner
  > except ImportError:
  >     owner = merge
  > def batchget(orig, repo, mctx, wctx, wantfiledata, actions):
  >     name = os.path.join(os.environ['RECORD'], '%d' % os.getpid())
  >     with open(name, 'ab') as fp:
  >         for f, args, msg in actions:
  >             fp.write(f.rpartition(b'/')[0] + b'\n')
  >     return orig(repo, mctx, wctx, wantfiledata, actions)
  > def extsetup(ui):
  >     extensions.wrapfunction(owner, 'batchget', batchget)
  > EOF

Eight directories of 60 files each, and an update from the null revision
to it with four workers; then, of the directories, how many were written
by more than one worker, and into how many workers the update was split:

  $ hg init src
  $ for d in 1 2 3 4 5 6 7 8; do
  >   mkdir -p src/dir$d/sub
  >   for f in $(seq 1 60); do echo "$d $f" > src/dir$d/sub/f$f; done
  > done
  $ hg -R src commit -qAm files
  $ hg clone -q -U src wc
  $ shared() {
  >   hg -R wc update -q null
  >   rm -rf record && mkdir record
  >   RECORD=$PWD/record hg -R wc update -q tip --config worker.numcpus=4 \
  >     --config extensions.record=$PWD/record.py "$@"
  >   echo "$(ls record | wc -l) workers"
  >   for worker in record/*; do sort -u $worker; done | sort | uniq -d | wc -l
  > }

The extension: each directory written by one worker.

  $ shared
  4 workers
  0

Core's own partition where the checkout is core's (the writers turned
off), and without the extension: every directory written by every worker.

  $ shared --config worker.backgroundclosewrites=false
  4 workers
  8
  $ shared --config extensions.backgroundclose=!
  4 workers
  8

Either way, the working copy is the revision's:

  $ hg -R wc status
  $ hg -R wc files | wc -l
  480

Only an update's own lists are cut by directory: lfs fetches the blobs of
a checkout through core's workers too, during the update, and they go to
core's partition.  A clone over http from a server this test starts,
whose six blobs four workers download:

  $ hg init lfs --config extensions.lfs= --config lfs.track='all()'
  $ for i in 1 2 3 4 5 6; do echo "blob $i" > lfs/b$i; done
  $ hg -R lfs commit -qAm blobs --config extensions.lfs= --config lfs.track='all()'
  $ port=$(freeport)
  $ hg -R lfs serve -d -p $port -a 127.0.0.1 --pid-file hg.pid -E err.log \
  >   --config extensions.lfs=
  $ hg clone -q http://127.0.0.1:$port/ lfsclone --config extensions.lfs= \
  >   --config lfs.usercache=$PWD/usercache --config worker.numcpus=4 \
  >   --debug | grep -c '^lfs: downloading'
  6
  $ cat lfsclone/b6
  blob 6
  $ kill $(cat hg.pid)
  $ cat err.log
