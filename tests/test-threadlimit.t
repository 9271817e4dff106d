When the system refuses threads
===============================

In a container with a low process limit, or with little address space,
starting a thread fails ("can't start new thread").  The closer then keeps
the threads that did start, or closes inline when none did, and the
command goes on.  As root, a process limit (ulimit -u) is not enforced, so
this test refuses threads through the address space instead: every thread
reserves a stack of the size "ulimit -s" gives, and "ulimit -v" leaves room
for none (4 GB stacks in 3 GB) or for a few (1 GB stacks in 2.5 GB).

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ nothreads() { (ulimit -s 4194304; ulimit -v 3145728; "$@"); }
  $ fewthreads() { (ulimit -s 1048576; ulimit -v 2621440; "$@"); }
  $ nothreads python3 -c '
  > import threading
  > threading.Thread(target=print).start()' 2>&1 | tail -1
  RuntimeError: can't start new thread
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src bundle -q -a --type zstd-v2 cg.hg
  $ slow() { SLOWCLOSE_US=300 LD_PRELOAD="$SLOWCLOSE_SO" timeout 300 "$@"; }
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundcloseminfilecount = 0
  > HGRC

Stream applies, with background closing forced and left to the adaptive
closer, on the C threads and on Python threads: no thread at all, then a
few.

  $ for limit in nothreads fewthreads; do
  >   for native in true false; do
  >     for closing in yes adaptive; do
  >       config="--config worker.backgroundclosenative=$native"
  >       [ $closing = yes ] && config="$config --config worker.backgroundclose=yes"
  >       for format in v1 v2; do
  >         hg init $limit-$native-$closing-$format
  >         $limit slow hg -R $limit-$native-$closing-$format $config \
  >           -q debugapplystreamclonebundle -T json $format.hg > out.json
  >         echo "$limit $native $closing $format: exit $?"
  >         python3 -c "
  > import json
  > [r] = json.load(open('out.json'))
  > c = r['closer']
  > if '$limit' == 'nothreads':
  >     print('  ', c['mode'], c['threads'], c['reason'])
  > else:  # 4 threads asked for (backgroundclosethreadcount)
  >     print('   capped:', 0 < c['threads'] < 4)"
  >         hg -R $limit-$native-$closing-$format verify -q
  >       done
  >     done
  >   done
  > done
  nothreads true yes v1: exit 0
     inline 0 no thread could be started
  nothreads true yes v2: exit 0
     inline 0 no thread could be started
  nothreads true adaptive v1: exit 0
     inline 0 no thread could be started
  nothreads true adaptive v2: exit 0
     inline 0 no thread could be started
  nothreads false yes v1: exit 0
     inline 0 no thread could be started
  nothreads false yes v2: exit 0
     inline 0 no thread could be started
  nothreads false adaptive v1: exit 0
     inline 0 no thread could be started
  nothreads false adaptive v2: exit 0
     inline 0 no thread could be started
  fewthreads true yes v1: exit 0
     capped: True
  fewthreads true yes v2: exit 0
     capped: True
  fewthreads true adaptive v1: exit 0
     capped: True
  fewthreads true adaptive v2: exit 0
     capped: True
  fewthreads false yes v1: exit 0
     capped: True
  fewthreads false yes v2: exit 0
     capped: True
  fewthreads false adaptive v1: exit 0
     capped: True
  fewthreads false adaptive v2: exit 0
     capped: True

A stream clone over ssh goes through with few threads (core itself needs
one to talk to an ssh peer), and so do a changegroup unbundle and
working-copy updates (in forked workers, and in one process) with none:

  $ for native in true false; do
  >   fewthreads slow hg clone -q --stream -U ssh://user@dummy/src streamed-$native \
  >     --config worker.backgroundclose=yes --config worker.backgroundclosenative=$native
  >   hg -R streamed-$native verify -q
  > done
  $ hg init unbundled
  $ nothreads slow hg -R unbundled -q unbundle cg.hg --config worker.backgroundclose=yes
  $ hg -R unbundled verify -q
  $ for workers in true false; do
  >   nothreads slow hg -R unbundled -q update tip \
  >     --config worker.backgroundclose=yes --config worker.enabled=$workers
  >   echo "exit $?"
  >   hg -R unbundled status | wc -l
  >   hg -R unbundled -q update null
  > done
  exit 0
  0
  exit 0
  0
