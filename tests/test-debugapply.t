Applying stream clone bundles of every format, with a timing report
===================================================================

  $ . "$TESTDIR/setup.sh"
  $ makerepo src 300
  $ hg -R src debugcreatestreamclonebundle v1.hg
  writing 373341 bytes for 304 files
  bundle requirements: generaldelta, revlog-compression-zstd, revlogv1, sparserevlog
  $ hg -R src bundle -q -a --type 'none-v2;stream=v2' v2.hg
  $ hg -R src bundle -q -a --config experimental.stream-v3=yes --type 'none-v2;stream=v3-exp' v3.hg

A packed1 (v1) bundle, as core applies it, then the report:

  $ hg init r1
  $ hg -R r1 debugapplystreamclonebundle v1.hg
  304 files to transfer, 365 KB of data
  stream-cloned 304 files / 365 KB in * seconds (*/sec) (glob)
  stream apply (v1): 304 files, 365 KB in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open                    304 * (glob)
    write                   305 * (glob)
    mkdir                   310 * (glob)
    close (waited)          304 * (glob)
    close (threads)           0           -           -           -
    closer: adaptive, inline (fewer files than minfilecount), 0 threads, at most * files queued (peak *) (glob)
  $ hg -R r1 verify -q
  $ hg -R r1 log -T '{rev} {desc}\n'
  1 second revision
  0 initial tree

Stream v2 and v3 bundles, which core's command refuses:

  $ hg init r2
  $ hg -R r2 debugapplystreamclonebundle v2.hg
  307 files to transfer, 365 KB of data
  stream-cloned 307 files / 365 KB in * seconds (*/sec) (glob)
  new changesets 586f506ab001:44277eff5496
  stream apply (v2): 307 files, 365 KB in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open                    307 * (glob)
    write                   308 * (glob)
    mkdir                   282 * (glob)
    close (waited)          307 * (glob)
    close (threads)           0           -           -           -
    closer: adaptive, inline (fewer files than minfilecount), 0 threads, at most * files queued (peak *) (glob)
  $ hg -R r2 verify -q

  $ hg init r3
  $ hg -R r3 debugapplystreamclonebundle v3.hg
  305 entries to transfer
  stream-cloned 307 files / 365 KB in * seconds (*/sec) (glob)
  new changesets 586f506ab001:44277eff5496
  stream apply (v3): 307 files, 365 KB in * (*/s, * files/s) (glob)
    operation             count       total        mean         max
    open                    307 * (glob)
    write                   308 * (glob)
    mkdir                   307 * (glob)
    close (waited)          307 * (glob)
    close (threads)           0           -           -           -
    closer: adaptive, inline, 0 threads, at most * files queued (peak *) (glob)
  $ hg -R r3 verify -q

The report as JSON, one object per apply:

  $ hg init rj
  $ hg -R rj debugapplystreamclonebundle -T json v2.hg > report.json
  307 files to transfer, 365 KB of data
  stream-cloned 307 files / 365 KB in * seconds (*/sec) (glob)
  new changesets 586f506ab001:44277eff5496
  $ python3 - <<PY
  > import json
  > [report] = json.load(open('report.json'))
  > print(report['format'], report['files'], report['bytes'] > 0, report['seconds'] > 0)
  > print(sorted(report['ops']))
  > print(sorted(report['ops']['close']))
  > print(report['closer']['policy'], report['closer']['mode'], report['closer']['threads'])
  > PY
  v2 307 True True
  ['close', 'close-background', 'mkdir', 'open', 'write']
  ['count', 'max', 'mean', 'seconds']
  adaptive inline 0

So few files (fewer than worker.backgroundcloseminfilecount) start no thread.
Forced background closing with the minimum lowered uses threads, and the
result is the same repository:

  $ hg init rb
  $ hg -R rb debugapplystreamclonebundle -T json v2.hg \
  >   --config worker.backgroundclose=yes \
  >   --config worker.backgroundcloseminfilecount=0 > forced.json
  307 files to transfer, 365 KB of data
  stream-cloned 307 files / 365 KB in * seconds (*/sec) (glob)
  new changesets 586f506ab001:44277eff5496
  $ python3 - <<PY
  > import json
  > [report] = json.load(open('forced.json'))
  > print(report['closer']['policy'], report['closer']['mode'], report['closer']['threads'] >= 4)
  > print(report['ops']['close-background']['count'] == report['files'])
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
  abort: worker.backgroundclosemaxthreadcount must be a positive integer, not 0
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosethreadcount=lots
  abort: worker.backgroundclosethreadcount is not a valid integer ('lots')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosethreshold=-5
  abort: worker.backgroundclosethreshold must be zero or more, not -5
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclose=maybe
  abort: worker.backgroundclose is not a boolean ('maybe')
  (see "hg help -e backgroundclose")
  [255]
  $ hg -R rc debugapplystreamclonebundle v2.hg --config worker.backgroundclosereport=yaml
  abort: worker.backgroundclosereport must be a boolean or "json", not yaml
  [255]
  $ ls rc/.hg/store
  requires
