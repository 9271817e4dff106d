Stream clones over ssh and http, and unbundling a stream bundle
===============================================================

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300

hg clone --stream over ssh uses stream v2; the report is printed when
worker.backgroundclosereport asks for it:

  $ hg clone -U --stream ssh://user@dummy/src ssh-clone \
  >   --config worker.backgroundclosereport=yes
  streaming all changes
  * files to transfer, * of data (glob)
  (stream-cloned \d+ files / |transferred ).* in .* seconds \(.*/sec\) (re)
  stream apply (v2): * files, * in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open * (glob)
    write * (glob)
    mkdir * (glob)
    close, applier * (glob)
    close, threads * (glob)
    directories: * made*, * found existing (glob)
    closer: * (glob)
  $ hg -R ssh-clone verify -q


Not in verbose mode alone, nor with --debug: the extension adds nothing to
core's output unless asked (Mercurial's own tests read that output), and a
closer that started no thread (its threshold is out of reach here, so that
a busy machine cannot make it start any) prints no debug line either:

  $ hg clone -v --stream ssh://user@dummy/src ssh-verbose | grep -c -e '^stream apply' -e '^backgroundclose:'
  0
  [1]
  $ hg clone --debug --stream ssh://user@dummy/src ssh-debug \
  >   --config worker.backgroundclosethreshold=100000 \
  >   | grep -c -e '^stream apply' -e '^backgroundclose:'
  0
  [1]

A closer that started threads says so with --debug, in place of core's
"starting 4 threads for background file closing" (here the changegroup's
revlogs, manifests then files, and the update after the clone, here in
one process):

  $ hg clone --debug ssh://user@dummy/src pulled \
  >   --config worker.backgroundclose=yes --config worker.enabled=no \
  >   --config worker.backgroundcloseminfilecount=0 | grep '^backgroundclose:'
  backgroundclose: * revlog closes (* on threads), background mode, * threads, 0 switches, 0 revlogs left to core (glob)
  backgroundclose: 300 revlog closes (300 on threads), background mode, 4 native threads, 0 switches, 0 revlogs left to core
  backgroundclose: 300 working-copy closes (300 on threads), background mode, 4 native threads, 0 switches
  $ hg -R ssh-verbose verify -q
  $ hg -R ssh-verbose status
  $ hg -R ssh-verbose files | wc -l
  \s*300 (re)

Quiet by default:

  $ hg clone -q -U --stream ssh://user@dummy/src ssh-quiet
  $ hg clone -U --stream ssh://user@dummy/src ssh-default | grep -c 'stream apply'
  0
  [1]

-q silences the table:

  $ hg clone -q -U --stream ssh://user@dummy/src ssh-q \
  >   --config worker.backgroundclosereport=yes

A JSON report goes to standard error, so that standard output stays the
clone's, and -q does not silence what a script asked for.  Here with forced
background closing and many threads:

  $ hg clone -U --stream ssh://user@dummy/src ssh-json-loud \
  >   --config worker.backgroundclosereport=json 2> loud.json
  streaming all changes
  * files to transfer, * of data (glob)
  (stream-cloned \d+ files / |transferred ).* in .* seconds \(.*/sec\) (re)
  $ python3 -c "import json; print(json.loads(open('loud.json').read())['format'])"
  v2

A whole clone, store and checkout: one JSON object per line, each saying
what it is, with the keys of the table's rows:

  $ hg clone -q --stream ssh://user@dummy/src ssh-json-whole \
  >   --config worker.backgroundclosereport=json \
  >   --config worker.backgroundclosewrites=true 2> whole.json
  $ python3 - <<PY
  > import json
  > for line in open('whole.json'):
  >     r = json.loads(line)
  >     print(r['kind'], r['files'], sorted(r['ops']))
  > PY
  stream * ['close-applier', 'close-threads', 'close-writers', 'mkdir', 'open', 'write'] (glob)
  checkout * ['close-applier', 'close-writers', 'core-steps', 'mkdir', 'open', 'read', 'read-wait', 'stat', 'write'] (glob)

Every directory of the working copy was made once, whichever update
worker made it, and the checkout's line says so (the others found it
made):

  $ python3 - <<PY
  > import json, os
  > [checkout] = [r for r in map(json.loads, open('whole.json'))
  >               if r['kind'] == 'checkout']
  > dirs = sum(len([d for d in names if d != '.hg']) if top == 'ssh-json-whole'
  >            else len(names) for top, names, _ in os.walk('ssh-json-whole')
  >            if not top.startswith('ssh-json-whole/.hg'))
  > print(dirs > 100, checkout['dirs-made'] == dirs,
  >       checkout['dirs-existing'] < checkout['dirs-made'])
  > PY
  True True True
  $ hg clone -q -U --stream ssh://user@dummy/src ssh-json \
  >   --config worker.backgroundclosereport=json \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0 \
  >   --config worker.backgroundclosethreadcount=8 2> clone.json
  $ python3 - <<PY
  > import json
  > [report] = [json.loads(line) for line in open('clone.json')]
  > print(report['format'], report['closer']['mode'], report['closer']['threads'] >= 8)
  > print(report['ops']['close-threads']['count'] == report['files'])
  > PY
  v2 background True
  True
  $ hg -R ssh-json verify -q

After every apply, one line goes to Mercurial's log, which the blackbox
extension keeps (so does any other logger): for a fleet, the evidence of
what each clone did.  Here the stream apply and the update after it, in
one process:

  $ hg clone -q --stream ssh://user@dummy/src logged \
  >   --config extensions.blackbox= --config worker.enabled=no \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0
  $ grep -o 'backgroundclose: .*' logged/.hg/blackbox.log
  backgroundclose: stream v2 apply: 30? files in * s; closes on 4 threads took * s; policy background, ended background, 0 switches (glob)
  backgroundclose: working-copy update: 300 files in * s; closes on 4 threads took * s; policy background, ended background, 0 switches (glob)

A clone without --stream applies a changegroup: a line for its manifests
and one for its files, counted in closes (a revlog may be reopened):

  $ hg clone -q ssh://user@dummy/src logged-cg \
  >   --config extensions.blackbox= --config worker.enabled=no \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0
  $ grep -o 'backgroundclose: .*' logged-cg/.hg/blackbox.log
  backgroundclose: changegroup manifests: 1 closes in * s; closes on 4 threads took * s; policy background, ended background, 0 switches, 0 revlogs left to core (glob)
  backgroundclose: changegroup files: 300 closes in * s; closes on 4 threads took * s; policy background, ended background, 0 switches, 0 revlogs left to core (glob)
  backgroundclose: working-copy update: 300 files in * s; closes on 4 threads took * s; policy background, ended background, 0 switches (glob)

Core's parallel stream processing writer threads hand their closes over too:

  $ hg clone -q -U --stream ssh://user@dummy/src ssh-parallel \
  >   --config worker.parallel-stream-bundle-processing=yes \
  >   --config worker.parallel-stream-bundle-processing.num-writer=3 \
  >   --config worker.backgroundclosereport=json \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0 2> parallel.json
  $ python3 - <<PY
  > import json
  > [report] = [json.loads(line) for line in open('parallel.json')]
  > print(report['format'], report['closer']['mode'])
  > print(report['ops']['close-threads']['count'] == report['files'] > 300)
  > PY
  v2 background
  True
  $ hg -R ssh-parallel verify -q

Over http, from hg serve on a free port:

  $ port=`freeport`
  $ hg serve -R src -a 127.0.0.1 -p $port -d --pid-file hg.pid -E errors.log
  $ hg clone -U --stream http://127.0.0.1:$port/ http-clone \
  >   --config worker.backgroundclosereport=yes | grep -e '^streaming' -e '^stream apply'
  streaming all changes
  stream apply (v2): * files, * in * (*/s, * files/s) (glob)
  $ hg -R http-clone verify -q
  $ kill `cat hg.pid`
  $ cat errors.log

hg unbundle of a stream bundle into an empty repository:

  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' stream.hg
  $ hg init unbundled
  $ hg -R unbundled unbundle stream.hg --config worker.backgroundclosereport=yes \
  >   | grep -e '^stream apply' -e '^  closer'
  stream apply (v2): * files, * in * (*/s, * files/s) (glob)
    closer: * (glob)
  $ hg -R unbundled verify -q
  $ hg -R unbundled log -T '{rev} {desc}\n'
  1 second revision
  0 initial tree
