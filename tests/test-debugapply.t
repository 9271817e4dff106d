Applying stream clone bundles of every format, with a timing report
===================================================================

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src bundle -q -a --config experimental.stream-v3=yes --type 'none-v2;stream=v3-exp' v3.hg

A packed1 (v1) bundle, as core applies it, then the report (-q hides core's
own progress lines; the report is the command's output):

  $ hg init r1
  $ hg -R r1 -q debugapplystreamclonebundle v1.hg
  stream apply (v1): * files, * in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open              * (glob)
    write             * (glob)
    mkdir             * (glob)
    close, applier    * (glob)
    close, threads   * (glob)
    directories: * made*, * found existing (glob)
    closer: adaptive, *, * threads, at most * files queued (peak *) (glob)
  $ hg -R r1 verify -q
  $ hg -R r1 log -T '{rev} {desc}\n'
  1 second revision
  0 initial tree

The directories line counts the directories the apply made and those it
found already there: with two of them made beforehand, those two are found
and every other one is made:

  $ hg init rd
  $ (cd r1/.hg/store && find data -type d | sort | head -2) > premade
  $ (cd rd/.hg/store && xargs mkdir -p) < premade
  $ before=$(find rd/.hg/store -type d | wc -l)
  $ hg -R rd -q debugapplystreamclonebundle v1.hg | grep 'directories:' > dirs.out
  $ made=$(($(find rd/.hg/store -type d | wc -l) - before))
  $ [ $made -gt 2 ] && echo "  directories: $made made, 2 found existing" | diff - dirs.out && echo as counted
  as counted

Stream v2 and v3 bundles, which core's command refuses:

  $ hg init r2
  $ hg -R r2 -q debugapplystreamclonebundle v2.hg
  stream apply (v2): * files, * in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open              * (glob)
    write             * (glob)
    mkdir             * (glob)
    close, applier    * (glob)
    close, threads   * (glob)
    directories: * made*, * found existing (glob)
    closer: adaptive, *, * threads, at most * files queued (peak *) (glob)
  $ hg -R r2 verify -q

  $ hg init r3
  $ hg -R r3 -q debugapplystreamclonebundle v3.hg
  stream apply (v3): * files, * in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open              * (glob)
    write             * (glob)
    mkdir             * (glob)
    close, applier    * (glob)
    close, threads   * (glob)
    directories: * made*, * found existing (glob)
    closer: adaptive, *, * threads, at most * files queued (peak *) (glob)
  $ hg -R r3 verify -q

The report as JSON, one object per apply:

  $ hg init rj
  $ hg -R rj -q debugapplystreamclonebundle -T json v2.hg > report.json
  $ python3 - <<PY
  > import json
  > [report] = json.load(open('report.json'))
  > print(report['format'], report['files'] > 300, report['bytes'] > 0, report['seconds'] > 0)
  > print(sorted(report['ops']))
  > print(sorted(report['ops']['close-applier']))
  > # inline or background: that depends on the close times measured here
  > print(report['closer']['policy'], report['closer']['mode'] in ('inline', 'background'))
  > PY
  v2 True True True
  ['close-applier', 'close-threads', 'close-writers', 'mkdir', 'open', 'write']
  ['count', 'max', 'mean', 'seconds']
  adaptive True

With worker.backgroundclosereport set to false, the apply alone, as core's
command (-q hides core's progress lines, not the report, as above); -T
still asks for the report:

  $ hg init rq
  $ hg -R rq -q debugapplystreamclonebundle v1.hg \
  >   --config worker.backgroundclosereport=false
  $ hg -R rq verify -q
  $ hg init rq2
  $ hg -R rq2 -q debugapplystreamclonebundle v2.hg \
  >   --config worker.backgroundclosereport=no
  $ hg -R rq2 verify -q
  $ hg init rq3
  $ hg -R rq3 -q debugapplystreamclonebundle v3.hg -T '{format} {files}\n' \
  >   --config worker.backgroundclosereport=false
  v3 3[0-9][0-9] (re)

Every format counts one open and one close per file (by the closer, or by
a writer thread that wrote the file whole), and the bytes written add up to
the data in the bundle; also with writer threads forced on:

  $ for writers in false true; do
  >   for format in v1 v2 v3; do
  >     hg init count-$format-$writers
  >     hg -R count-$format-$writers -q debugapplystreamclonebundle -T json \
  >       $format.hg --config worker.backgroundclosewrites=$writers > $format.json
  >     python3 -c "
  > import json
  > [r] = json.load(open('$format.json'))
  > ops = r['ops']
  > closed = ops['close-applier']['count'] + ops['close-writers']['count']
  > print(r['format'], ops['open']['count'] == closed == r['files'],
  >       ops['write']['count'] >= r['files'] - 5, r['bytes'] > 300 * 100)"
  >   done
  > done
  v1 True True True
  v2 True True True
  v3 True True True
  v1 True True True
  v2 True True True
  v3 True True True

An apply announcing fewer files than worker.backgroundcloseminfilecount
starts no thread, as in core (the adaptive mode honours the minimum only
when it is set, since it starts no thread unless closes are slow):

  $ hg init rm
  $ hg -R rm -q debugapplystreamclonebundle v2.hg \
  >   --config worker.backgroundclose=yes | grep closer:
    closer: background, inline (fewer files than worker.backgroundcloseminfilecount), 0 threads, at most * files queued (peak 0) (glob)
  $ hg init rm2
  $ hg -R rm2 -q debugapplystreamclonebundle v2.hg \
  >   --config worker.backgroundcloseminfilecount=1000 | grep closer:
    closer: adaptive, inline (fewer files than worker.backgroundcloseminfilecount), 0 threads, at most * files queued (peak 0) (glob)

Forced background closing with the minimum lowered uses threads, and the
result is the same repository:

  $ hg init rb
  $ hg -R rb -q debugapplystreamclonebundle -T json v2.hg \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0 > forced.json
  $ python3 - <<PY
  > import json
  > [report] = json.load(open('forced.json'))
  > print(report['closer']['policy'], report['closer']['mode'], report['closer']['threads'] >= 4)
  > print(report['ops']['close-threads']['count'] == report['files'])
  > PY
  background background True
  True
  $ hg -R rb verify -q
  $ hg -R rb log -T '{rev} {node}\n' > forced.log
  $ hg -R r2 log -T '{rev} {node}\n' | diff - forced.log

Bad input is refused cleanly:

  $ hg -R src bundle -q -a changegroup.hg
  $ hg init rc
  $ hg -R rc debugapplystreamclonebundle changegroup.hg
  abort: changegroup.hg is not a stream clone bundle
  (use "hg unbundle" to apply it)
  [255]
  $ hg -R r2 debugapplystreamclonebundle v2.hg
  abort: cannot apply stream clone to non empty repository
  [255]
  $ hg -R r1 debugapplystreamclonebundle v1.hg
  abort: cannot apply stream clone bundle on non-empty repo
  [255]
  $ hg -R rc debugapplystreamclonebundle missing.hg
  abort: No such file or directory: 'missing.hg'
  [255]
  $ echo 'not a bundle' > garbage.hg
  $ hg -R rc debugapplystreamclonebundle garbage.hg
  abort: garbage.hg: not a Mercurial bundle
  [255]
  $ ls rc/.hg/store
  requires

Settings are checked before anything is written:

  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosemaxthreadcount=0
  config error: worker.backgroundclosemaxthreadcount must be from 1 to 256 ('0')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosethreadcount=lots
  config error: worker.backgroundclosethreadcount is not a valid integer ('lots')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosethreshold=-5
  config error: worker.backgroundclosethreshold must be from 0 to 1000000 ('-5')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclose=maybe
  config error: worker.backgroundclose is not a boolean ('maybe')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosenative=sometimes
  config error: worker.backgroundclosenative is not a boolean ('sometimes')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosereport=yaml
  config error: worker.backgroundclosereport is not a boolean or json ('yaml')
  (see "hg help -e backgroundclose")
  [255]
  $ ls rc/.hg/store
  requires
