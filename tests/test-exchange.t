Pull, push and share, with the extension on one side or both
============================================================

Every case runs under modelled 700 us closes, with closing on threads
forced (worker.backgroundclose=yes) so that --debug says what the closer
did; each result is checked with hg verify.

  $ [ -n "$SLOWCLOSE_SO" ] && [ -f "$SLOWCLOSE_SO" ] || exit 80
  $ . "$TESTDIR/setup.sh"
  $ slow() { LD_PRELOAD="$SLOWCLOSE_SO" SLOWCLOSE_US=700 "$@"; }
  $ cat >> .hgrc <<HGRC
  > [worker]
  > backgroundclose = yes
  > backgroundcloseminfilecount = 0
  > HGRC
  $ makerepo src 120
  $ closes() { grep '^\(remote: \)\?backgroundclose:' | sed 's/([0-9]* on threads)/(N on threads)/; s/: [0-9]* /: N /; s/ [0-9]* native threads/ K native threads/'; }

Pull
----

Over ssh and over http (hg serve), then pull -u, which updates the working
copy as well:

  $ port=`freeport`
  $ hg serve -R src -a 127.0.0.1 -p $port -d --pid-file hg.pid -E errors.log
  $ cat hg.pid >> daemons.pids
  $ hg init pulled-ssh
  $ slow hg -R pulled-ssh pull --debug ssh://user@dummy/src | closes
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  $ hg init pulled-http
  $ slow hg -R pulled-http pull --debug http://127.0.0.1:$port/ | closes
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  $ hg init pulled-u
  $ slow hg -R pulled-u pull -u --debug ssh://user@dummy/src | closes | sort -u
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N working-copy closes (N on threads), background mode, K native threads, 0 switches
  $ for repo in pulled-ssh pulled-http pulled-u; do hg -R $repo verify -q; done
  $ hg -R pulled-u status
  $ hg -R pulled-u files | wc -l | tr -d ' '
  120

pull -u over http as well:

  $ hg init pulled-u-http
  $ slow hg -R pulled-u-http pull -u --debug http://127.0.0.1:$port/ | closes | sort -u
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N working-copy closes (N on threads), background mode, K native threads, 0 switches
  $ hg -R pulled-u-http verify -q
  $ hg -R pulled-u-http status
  $ hg -R pulled-u-http files | wc -l | tr -d ' '
  120

(one working-copy line per forked update worker: how many depends on the
cores.)  The update without forked workers (worker.enabled=false) closes
on the same threads:

  $ hg -R pulled-ssh update -q null
  $ slow hg -R pulled-ssh update --debug --config worker.enabled=no tip | closes
  backgroundclose: N working-copy closes (N on threads), background mode, K native threads, 0 switches
  $ hg -R pulled-ssh status

Push
----

To an ssh server that runs the extension: the server applies the
changegroup and says, with --debug, how it closed the files:

  $ hg init server
  $ printf '[ui]\ndebug = true\n' > server/.hg/hgrc
  $ slow hg -R src push ssh://user@dummy/server 2>&1 | closes
  remote: backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  remote: backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  $ hg -R server verify -q
  $ hg -R server log -r tip -T '{desc}\n'
  second revision

A server hook that rejects the push: the server closes every file it wrote
and rolls back.  It is left as core leaves it (core's rollback removes the
files and leaves the directories they were in), which a second server
without the extension shows:

  $ for ext in '' '!'; do
  >   hg init rejecting$ext
  >   printf '[hooks]\npretxnchangegroup.reject = false\n[extensions]\nbackgroundclose = %s\n' "$ext" \
  >     > rejecting$ext/.hg/hgrc
  > done
  $ slow hg -R src push -q ssh://user@dummy/rejecting! 2>&1 | tail -1
  abort: push failed on remote
  $ slow hg -R src push ssh://user@dummy/rejecting
  pushing to ssh://user@dummy/rejecting
  searching for changes
  remote: adding changesets
  remote: adding manifests
  remote: adding file changes
  remote: transaction abort!
  remote: rollback completed
  remote: pretxnchangegroup.reject hook exited with status 1
  abort: push failed on remote
  [255]
  $ hg -R rejecting log
  $ hg -R rejecting verify -q
  $ diff <(cd rejecting && find .hg | sort) <(cd rejecting! && find .hg | sort) \
  >   && echo "as core leaves it"
  as core leaves it

Over http (hg serve), a long-lived process: pushes are applied on the
server's request threads, where the extension leaves closing to core.
After a rejected push and an accepted one, the server runs no thread
besides its main one and holds no store file open (core itself keeps some
cache files open between requests, so their number is not compared):

  $ hg init web
  $ cat > web/.hg/hgrc <<HGRC
  > [web]
  > push_ssl = false
  > allow-push = *
  > [hooks]
  > pretxnchangegroup.reject = test ! -e "$PWD/reject-pushes"
  > HGRC
  $ webport=`freeport`
  $ slow hg serve -R web -a 127.0.0.1 -p $webport -d --pid-file web.pid -E web-errors.log
  $ cat web.pid >> daemons.pids
  $ webpid=$(cat web.pid)
  $ footprint() {
  >   # request threads end a little after the response: wait for them,
  >   # at most 5 s; then the threads, and the store files held open
  >   for i in $(seq 50); do
  >     [ "$(ls /proc/$webpid/task | wc -l)" = 1 ] && break; sleep 0.1
  >   done
  >   echo "threads $(ls /proc/$webpid/task | wc -l)"
  >   for fd in /proc/$webpid/fd/*; do readlink $fd; done | grep "/web/.hg/store/" | sort
  >   true
  > }
  $ hg -R pulled-ssh push -q http://127.0.0.1:$webport/
  $ footprint > before.txt
  $ cat before.txt
  threads 1
  $ echo change >> "src/$(cd src && hg files | head -1)"
  $ hg -R src commit -q -m third
  $ touch reject-pushes
  $ hg -R src push http://127.0.0.1:$webport/ 2>&1 | grep -v '^remote: \(adding\|added\)'
  pushing to http://127.0.0.1:*/ (glob)
  searching for changes
  remote: transaction abort!
  remote: rollback completed
  remote: pretxnchangegroup.reject hook exited with status 1
  abort: push failed on remote
  $ rm reject-pushes
  $ hg -R src push -q http://127.0.0.1:$webport/
  $ hg -R web verify -q
  $ hg -R web log -r tip -T '{desc}\n'
  third
  $ footprint | diff before.txt - && echo same footprint
  same footprint

Share
-----

A share writes into the store of the repository it shares: a pull into the
share closes that store's files on threads, with share-safe (the default)
and without:

  $ cat >> .hgrc <<HGRC
  > [extensions]
  > share =
  > HGRC
  $ for safe in yes no; do
  >   hg init --config format.use-share-safe=$safe base-$safe
  >   hg share -q -U --config format.use-share-safe=$safe base-$safe share-$safe
  >   slow hg -R share-$safe pull -u --debug ssh://user@dummy/src | closes | sort -u
  >   hg -R base-$safe verify -q
  >   hg -R share-$safe status
  >   test -d share-$safe/.hg/store || echo "share-$safe: no store of its own"
  > done
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N working-copy closes (N on threads), background mode, K native threads, 0 switches
  share-yes: no store of its own
  backgroundclose: N revlog closes (N on threads), background mode, K native threads, 0 switches, 0 revlogs left to core
  backgroundclose: N working-copy closes (N on threads), background mode, K native threads, 0 switches
  share-no: no store of its own

  $ kill $(cat daemons.pids)

The servers gone before the test's directory is removed (a dying server may
still write its caches there):

  $ for pid in $(cat daemons.pids); do
  >   for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  > done
  $ cat errors.log web-errors.log
