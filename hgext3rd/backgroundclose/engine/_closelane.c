/* _closelane.c - close descriptors on threads that never take the GIL
 *
 * Copyright 2026 hg-backgroundclose contributors
 *
 * This software may be used and distributed according to the terms of the
 * GNU General Public License version 2 or any later version.
 *
 * Why C: a Python thread that closes a file must take the GIL back when
 * close() returns.  With the writer busy in Python, that is a GIL hand-off
 * per file (strace: about 7 futex calls per close), and at a few hundred
 * microseconds per close the hand-offs cost the writer more than closing on
 * threads saves: a 20,000-file changegroup at 700 us per close took 1.4x to
 * 1.6x core's time at zero latency.  The threads of a Lane are POSIX
 * threads that never run Python code, so they never need the GIL.
 *
 * Why the queue is here and not in Python: CPython runs signal handlers
 * between bytecodes, so after a Python-level "hand over" call returns, an
 * interrupt can land before the caller records that it handed the
 * descriptor over; its cleanup would then close the number a second time
 * (maybe a new file's by then).  Lane.submit() does everything that must
 * happen together in one C call: it queues the descriptor, drops it from
 * the caller's set of descriptors it still owns, and records the name's
 * latest token.  It either does all of that or raises having done none.
 *
 * Locking: the mutex is only ever taken by a thread that holds the GIL (or
 * by a lane thread, which never takes the GIL), and no thread waits for the
 * GIL while holding the mutex.  So the two cannot deadlock.  A forked
 * child gets the mutex as it was at the fork, maybe held by a lane thread
 * that does not exist there: every method and getter refuses in a child
 * (check_usable) before it would lock it.
 *
 * The lane threads block every signal: signals go to the Python main
 * thread, where Python's handlers run.
 *
 * POSIX only (setup.py builds it there), and it refuses to load on a
 * free-threaded Python (see PyInit__closelane); elsewhere the extension
 * closes on Python threads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/resource.h>
#endif

/* how often an interruptible wait checks for Python signals */
#define CHECK_SIGNALS_NS 50000000L

/* macOS has no pthread_condattr_setclock(): timed waits there measure the
 * wall clock, as they do wherever setting the monotonic clock fails.  A step
 * of the wall clock then only moves the next check for signals (a step back
 * delays it by as much); a finished close still wakes waiters at once.
 * BACKGROUNDCLOSE_NO_CONDATTR_SETCLOCK builds that fallback anywhere, so that
 * it is compiled and tested on Linux too. */
#if defined(__APPLE__) || defined(BACKGROUNDCLOSE_NO_CONDATTR_SETCLOCK)
#define NO_CONDATTR_SETCLOCK
#endif

struct entry {
	int fd;
	long long token;
	PyObject *name; /* a reference the lane owns, or NULL */
	/* bytes to write before the close (a reference the lane owns), or
	 * NULL; buf and len are read from it under the GIL at submission */
	PyObject *data;
	const char *buf;
	Py_ssize_t len;
};

struct failure {
	PyObject *name; /* a reference the lane owns, or NULL */
	int error;
	int writing; /* the write failed, not the close */
};

typedef struct {
	PyObject_HEAD pthread_mutex_t mutex;
	pthread_cond_t work; /* lane threads wait for entries */
	pthread_cond_t done; /* submitters wait for room, waiters for closes */
	clockid_t doneclock; /* what deadlines of timed waits on done count */
	int ready;           /* mutex and conditions initialised */
	/* left to hung closes: kept alive until its last thread exits */
	int abandoned;
	/* the threads are detached: nobody joins them, and the last one out
	 * schedules the release of the lane (release_later) */
	int detached;
	/* deallocated while threads still ran: the last one out frees it */
	int orphaned;
	/* a stop() joins the threads now (the mutex released meanwhile):
	 * nobody else may join or detach them */
	int joining;
	int joinerrors; /* pthread_join() calls that failed: a bug */

	struct entry *ring;
	Py_ssize_t capacity, head, queued;
	Py_ssize_t inflight;
	Py_ssize_t peak; /* most entries queued and in flight at once */
	long long nexttoken;
	int batch;    /* queued entries that wake a parked thread */
	/* how much lower than they began the threads run (nice steps),
	 * each setting it for itself as it takes its next entry */
	int lowered;
	int stopping; /* no more submissions; threads exit once idle */
	int waiters;  /* threads waiting on `done` */

	pthread_t *threads;
	long long *current; /* per thread: token in flight, or -1 */
	int nthreads, maxthreads, idle;
	int running; /* threads started that have not returned yet */
	pid_t pid; /* the process that started the threads */

	/* what the threads did, read under the GIL */
	long long closed;
	long long totalns, maxns;
	long long held; /* bytes submitted and not written yet */
	struct failure *failures;
	Py_ssize_t nfailures, failurecap;
	/* names of closed entries, released under the GIL */
	PyObject **spent;
	Py_ssize_t nspent, spentcap;

	PyObject *owned; /* set of descriptors the submitter owns, or NULL */
	PyObject *names; /* dict: name -> latest token, or NULL */
	/* names held when the dict is next pruned: twice what the last
	 * pruning left, so that a close held back (which keeps most names)
	 * costs a scan per so many submissions, not one each */
	Py_ssize_t pruneat;
} Lane;

struct start {
	Lane *lane;
	int index;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* without the GIL: write all of buf into fd; 0, or the errno of the write
 * that failed (EIO for one that took nothing: never spin) */
static int write_all(int fd, const char *buf, Py_ssize_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, (size_t)len);
		if (n < 0) {
			if (errno == EINTR)
				continue; /* nothing written: the same again */
			return errno;
		}
		if (n == 0)
			return EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

static void release_later(Lane *self);

/* lower the calling thread's priority by ``steps`` nice steps, at most to
 * the lowest.  Linux only: there a nice value is the thread's own, and
 * PRIO_PROCESS 0 names the calling thread; elsewhere it would name the
 * whole process, writer included.  Refused, the thread runs as it was. */
static void lower_own_priority(int steps)
{
#ifdef __linux__
	int nice;
	errno = 0;
	nice = getpriority(PRIO_PROCESS, 0);
	if (nice == -1 && errno != 0)
		return;
	nice += steps;
	if (nice > 19)
		nice = 19;
	setpriority(PRIO_PROCESS, 0, nice);
#else
	(void)steps;
#endif
}

static void *lane_thread(void *arg)
{
	struct start *start = arg;
	Lane *self = start->lane;
	int index = start->index;
	int lowered = 0; /* nice steps this thread took (self->lowered) */
	PyMem_RawFree(start);
#ifdef SCHED_BATCH
	{
		/* A lane thread wakes once per close, when the close returns,
		 * only to take the next descriptor: as a batch thread (Linux)
		 * it keeps its fair share of the CPU but does not preempt the
		 * writer for that.  An update's forked workers keep both cores
		 * of a small machine busy: woken as normal threads, the lane
		 * threads preempted a worker at nearly every close.  Only from
		 * the default policy (one the user chose with chrt stays);
		 * refused (a sandbox), the thread runs as it was made. */
		struct sched_param param = {0};
		int policy;
		if (pthread_getschedparam(pthread_self(), &policy, &param) == 0 &&
		    policy == SCHED_OTHER) /* whose priority is always 0 */
			pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
	}
#endif

	pthread_mutex_lock(&self->mutex);
	for (;;) {
		struct entry e;
		long long began, took;
		int error = 0, writing = 0, lower = 0;

		while (self->queued == 0) {
			if (self->stopping) {
				int last;
				self->running--;
				last = self->running == 0 && self->detached;
				if (self->waiters)
					pthread_cond_broadcast(&self->done);
				pthread_mutex_unlock(&self->mutex);
				/* the lane is not touched after this: whoever
				 * releases it may do so at once */
				if (last)
					release_later(self);
				return NULL;
			}
			self->idle++;
			pthread_cond_wait(&self->work, &self->mutex);
			self->idle--;
		}
		e = self->ring[self->head];
		/* the references are ours */
		self->ring[self->head].name = NULL;
		self->ring[self->head].data = NULL;
		self->head = (self->head + 1) % self->capacity;
		self->queued--;
		self->inflight++;
		self->current[index] = e.token;
		if (self->lowered > lowered) {
			lower = self->lowered - lowered;
			lowered = self->lowered;
		}
		pthread_mutex_unlock(&self->mutex);

		if (lower)
			lower_own_priority(lower);
		if (e.data != NULL)
			writing = write_all(e.fd, e.buf, e.len);
		began = now_ns();
		/* on EINTR the descriptor is closed all the same (Linux, and
		 * POSIX leaves it unspecified): retrying could close a number
		 * another thread was just given */
		if (close(e.fd) != 0 && errno != EINTR)
			error = errno;
		took = now_ns() - began;
		if (writing) /* the first failure is the one to report */
			error = writing;

		pthread_mutex_lock(&self->mutex);
		self->inflight--;
		self->current[index] = -1;
		self->closed++;
		self->totalns += took;
		if (took > self->maxns)
			self->maxns = took;
		/* submit() made room in both arrays before queueing */
		if (error) {
			self->failures[self->nfailures].name = e.name;
			self->failures[self->nfailures].error = error;
			self->failures[self->nfailures].writing = writing != 0;
			self->nfailures++;
		} else if (e.name != NULL) {
			self->spent[self->nspent++] = e.name;
		}
		if (e.data != NULL) {
			self->held -= e.len;
			self->spent[self->nspent++] = e.data;
		}
		if (self->waiters)
			pthread_cond_broadcast(&self->done);
	}
}

/* the smallest token queued or in flight, or nexttoken if none; with the
 * mutex held */
static long long oldest_open(Lane *self)
{
	long long oldest = self->nexttoken;
	int i;
	if (self->queued)
		oldest = self->ring[self->head].token;
	for (i = 0; i < self->nthreads; i++) {
		long long t = self->current[i];
		if (t >= 0 && t < oldest)
			oldest = t;
	}
	return oldest;
}

/* with the GIL, not the mutex (the list it makes may start the garbage
 * collector, whose finalizers may submit): forget the names whose latest
 * token is below ``oldest``, all closed (a wait for them has nothing to
 * wait for), so that the dict holds about as many names as descriptors
 * may be pending, not one per name ever submitted (a changegroup's every
 * revlog).  Best effort: on failure (memory) what is left stays. */
static void prune_names(Lane *self, long long oldest)
{
	PyObject *key, *value, *stale = PyList_New(0);
	Py_ssize_t pos = 0, i;
	if (stale == NULL) {
		PyErr_Clear();
		return;
	}
	while (PyDict_Next(self->names, &pos, &key, &value)) {
		long long token = PyLong_AsLongLong(value);
		if (token == -1 && PyErr_Occurred())
			break;
		if (token < oldest && PyList_Append(stale, key) < 0)
			break;
	}
	for (i = 0; i < PyList_GET_SIZE(stale); i++)
		if (PyDict_DelItem(self->names, PyList_GET_ITEM(stale, i)) < 0)
			break;
	PyErr_Clear();
	Py_DECREF(stale);
}

enum waitfor { WAIT_ROOM, WAIT_THROUGH };

static int wait_satisfied(Lane *self, enum waitfor what, long long through)
{
	if (what == WAIT_ROOM) /* capacity bounds the files still open */
		return self->queued + self->inflight < self->capacity ||
		       self->stopping;
	return oldest_open(self) > through;
}

/* With the GIL and the mutex held: wait without either until `what` holds.
 * Returns 0 with both held again; if interruptible and a Python signal
 * handler raised, -1 with the GIL held and the mutex released. */
/* 0 once satisfied, -1 if a signal handler raised, 1 once the monotonic
 * clock reaches ``until_ns`` (never if negative; checked as often as
 * signals, so only interruptible waits have one) */
static int wait_unlocked(Lane *self, enum waitfor what, long long through,
                         int interruptible, long long until_ns)
{
	if (!wait_satisfied(self, what, through))
		/* wake parked threads now: they wait for a batch otherwise,
		 * and a deadline already past returns before the loop does
		 * (stop(0), then abandon(), would leave them queued) */
		pthread_cond_broadcast(&self->work);
	while (!wait_satisfied(self, what, through)) {
		int satisfied;
		if (until_ns >= 0 && now_ns() >= until_ns)
			return 1;
		self->waiters++;
		/* wake parked threads: they wait for a batch otherwise */
		pthread_cond_broadcast(&self->work);
		pthread_mutex_unlock(&self->mutex);
		Py_BEGIN_ALLOW_THREADS;
		pthread_mutex_lock(&self->mutex);
		satisfied = wait_satisfied(self, what, through);
		if (!satisfied && interruptible) {
			struct timespec deadline;
			clock_gettime(self->doneclock, &deadline);
			deadline.tv_nsec += CHECK_SIGNALS_NS;
			if (deadline.tv_nsec >= 1000000000L) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&self->done, &self->mutex,
			                       &deadline);
		} else if (!satisfied) {
			pthread_cond_wait(&self->done, &self->mutex);
		}
		pthread_mutex_unlock(&self->mutex);
		Py_END_ALLOW_THREADS;
		pthread_mutex_lock(&self->mutex);
		self->waiters--;
		if (interruptible) {
			pthread_mutex_unlock(&self->mutex);
			if (PyErr_CheckSignals() < 0)
				return -1;
			pthread_mutex_lock(&self->mutex);
		}
	}
	return 0;
}

/* with the GIL held: release the names of closed entries */
static void release_spent(Lane *self)
{
	PyObject *batch[64];
	Py_ssize_t count, i;
	do {
		pthread_mutex_lock(&self->mutex);
		count = self->nspent < 64 ? self->nspent : 64;
		self->nspent -= count;
		memcpy(batch, self->spent + self->nspent,
		       count * sizeof(PyObject *));
		pthread_mutex_unlock(&self->mutex);
		for (i = 0; i < count; i++)
			Py_DECREF(batch[i]);
	} while (count == 64);
}

/* with the GIL and the mutex held: room for what the threads may yet
 * append to failures and spent names without allocating */
static int reserve(Lane *self)
{
	Py_ssize_t need = self->queued + self->inflight + 1;
	if (self->nfailures + need > self->failurecap) {
		Py_ssize_t cap = (self->nfailures + need) * 2;
		struct failure *grown = PyMem_RawRealloc(
		    self->failures, cap * sizeof(struct failure));
		if (grown == NULL)
			return -1;
		self->failures = grown;
		self->failurecap = cap;
	}
	/* a name and data per entry */
	if (self->nspent + 2 * need > self->spentcap) {
		Py_ssize_t cap = (self->nspent + 2 * need) * 2;
		PyObject **grown =
		    PyMem_RawRealloc(self->spent, cap * sizeof(PyObject *));
		if (grown == NULL)
			return -1;
		self->spent = grown;
		self->spentcap = cap;
	}
	return 0;
}

static int stop_threads(Lane *self, int interruptible, long long until_ns);

/* with the mutex held: stop taking descriptors, and leave the threads to
 * close what is queued and exit by themselves, detached; whether any still
 * runs (the last one out then calls release_later) */
static int detach_threads(Lane *self)
{
	int i;
	self->stopping = 1;
	pthread_cond_broadcast(&self->work);
	pthread_cond_broadcast(&self->done);
	if (self->joining)
		/* another thread's stop() joins them: a thread joined and
		 * detached at once is undefined behaviour.  Nothing is left
		 * to close once it joins, so nothing hangs there. */
		return 0;
	if (!self->detached) {
		self->detached = 1;
		for (i = 0; i < self->nthreads; i++)
			pthread_detach(self->threads[i]);
	}
	return self->running > 0;
}

static void free_lane(Lane *self);

/* with the GIL, on the main thread, once the last detached thread of the
 * lane returned (scheduled by release_later): drop what abandon() kept,
 * or free a lane deallocated while its threads ran */
static int release_now(void *arg)
{
	Lane *self = arg;
	if (self->orphaned) {
		free_lane(self);
	} else {
		release_spent(self);
		Py_DECREF(self); /* abandon()'s reference */
	}
	return 0;
}

/* set once the interpreter is finalizing (engine/native.py calls
 * finalizing() at exit): from then on no thread schedules a pending call, which would
 * reach an interpreter that may be gone; what such a lane holds goes with
 * the process.  Read and set under its own mutex. */
static pthread_mutex_t finalizing_mutex = PTHREAD_MUTEX_INITIALIZER;
static int finalizing;

/* without the GIL, from the last detached thread of the lane: have the
 * main thread release the lane at its next chance.  Python's queue of
 * pending calls is short: a full one is tried again for a while; then the
 * lane is left (kept, as it was before threads were detached). */
static void release_later(Lane *self)
{
	int tries, scheduled = 0;
	for (tries = 0; tries < 1000 && !scheduled; tries++) {
		pthread_mutex_lock(&finalizing_mutex);
		if (finalizing) {
			pthread_mutex_unlock(&finalizing_mutex);
			return;
		}
		scheduled = Py_AddPendingCall(release_now, self) == 0;
		pthread_mutex_unlock(&finalizing_mutex);
		if (!scheduled)
			usleep(1000);
	}
}

PyDoc_STRVAR(finalizing_doc,
             "finalizing()\n\n"
             "The interpreter is about to end (an atexit handler): no lane "
             "thread schedules\n"
             "the release of its lane from now on.");

static PyObject *module_finalizing(PyObject *Py_UNUSED(module),
                                   PyObject *Py_UNUSED(ignored))
{
	Py_BEGIN_ALLOW_THREADS;
	pthread_mutex_lock(&finalizing_mutex);
	finalizing = 1;
	pthread_mutex_unlock(&finalizing_mutex);
	Py_END_ALLOW_THREADS;
	Py_RETURN_NONE;
}

static void Lane_dealloc(Lane *self)
{
	if (self->ready && self->pid != getpid()) {
		/* a forked child: its copy of the mutex may be held by a
		 * thread that does not exist here; leave everything be */
		Py_TYPE(self)->tp_free((PyObject *)self);
		return;
	}
	if (self->ready) {
		/* never wait here for closes (one may hang on a dead mount,
		 * and nothing could interrupt it): threads still running are
		 * left what is queued, and the last one out frees the lane.
		 * Should the process end first, what they had not written or
		 * closed yet goes with it: the closer stops a lane (or
		 * abandons it) before dropping it, so only a lane dropped
		 * without either can lose data this way. */
		int running;
		pthread_mutex_lock(&self->mutex);
		running = detach_threads(self);
		if (running)
			self->orphaned = 1;
		pthread_mutex_unlock(&self->mutex);
		if (running)
			return;
	}
	free_lane(self);
}

/* with the GIL: free a lane none of whose threads runs any more */
static void free_lane(Lane *self)
{
	Py_ssize_t i;
	if (self->ready) {
		release_spent(self);
		pthread_mutex_destroy(&self->mutex);
		pthread_cond_destroy(&self->work);
		pthread_cond_destroy(&self->done);
	}
	for (i = 0; i < self->nfailures; i++)
		Py_XDECREF(self->failures[i].name);
	PyMem_RawFree(self->failures);
	PyMem_RawFree(self->spent);
	if (self->ring != NULL) {
		/* once its threads have exited nothing is queued; a lane
		 * whose threads never started may still hold entries */
		for (i = 0; i < self->queued; i++) {
			struct entry *e =
			    &self->ring[(self->head + i) % self->capacity];
			close(e->fd);
			Py_XDECREF(e->name);
			Py_XDECREF(e->data);
		}
	}
	PyMem_RawFree(self->ring);
	PyMem_RawFree(self->threads);
	PyMem_RawFree(self->current);
	Py_XDECREF(self->owned);
	Py_XDECREF(self->names);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Lane_init(Lane *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"capacity", "maxthreads", "batch",
	                         "owned",    "names",      NULL};
	Py_ssize_t capacity;
	int maxthreads, batch = 4;
	PyObject *owned = Py_None, *names = Py_None;
#ifndef NO_CONDATTR_SETCLOCK
	pthread_condattr_t attr;
#endif

	if (self->ready) {
		PyErr_SetString(PyExc_RuntimeError, "Lane already initialised");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "ni|iOO", kwlist,
	                                 &capacity, &maxthreads, &batch,
	                                 &owned, &names))
		return -1;
	if (capacity < 1 || maxthreads < 1 || batch < 1) {
		PyErr_SetString(PyExc_ValueError,
		                "capacity, maxthreads and batch must be positive");
		return -1;
	}
	if (owned != Py_None && !PySet_Check(owned)) {
		PyErr_SetString(PyExc_TypeError, "owned must be a set or None");
		return -1;
	}
	if (names != Py_None && !PyDict_Check(names)) {
		PyErr_SetString(PyExc_TypeError, "names must be a dict or None");
		return -1;
	}
	self->ring = PyMem_RawCalloc(capacity, sizeof(struct entry));
	self->threads = PyMem_RawCalloc(maxthreads, sizeof(pthread_t));
	self->current = PyMem_RawMalloc(maxthreads * sizeof(long long));
	if (!self->ring || !self->threads || !self->current) {
		PyErr_NoMemory();
		return -1;
	}
	self->capacity = capacity;
	self->pruneat = 2 * capacity;
	self->maxthreads = maxthreads;
	self->batch = batch;
	if (owned != Py_None) {
		Py_INCREF(owned);
		self->owned = owned;
	}
	if (names != Py_None) {
		Py_INCREF(names);
		self->names = names;
	}
	pthread_mutex_init(&self->mutex, NULL);
	pthread_cond_init(&self->work, NULL);
	/* the monotonic clock where it can be had: a slice of a wait then
	 * lasts its 50 ms whatever the wall clock does */
	self->doneclock = CLOCK_REALTIME;
#ifndef NO_CONDATTR_SETCLOCK
	pthread_condattr_init(&attr);
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0)
		self->doneclock = CLOCK_MONOTONIC;
	pthread_cond_init(&self->done, &attr);
	pthread_condattr_destroy(&attr);
#else
	pthread_cond_init(&self->done, NULL);
#endif
	self->pid = getpid();
	self->ready = 1;
	return 0;
}

static int check_usable(Lane *self)
{
	if (!self->ready) {
		PyErr_SetString(PyExc_RuntimeError, "Lane not initialised");
		return -1;
	}
	if (self->pid != getpid()) {
		/* a forked child has the lane's memory but not its threads */
		PyErr_SetString(PyExc_RuntimeError,
		                "Lane used in a forked process");
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(start_doc, "start(count) -> threads running\n\n"
                        "Start threads until ``count`` run (at most the "
                        "lane's maxthreads).  Raises OSError\n"
                        "if no thread at all could be started.");

static PyObject *Lane_start(Lane *self, PyObject *args)
{
	int count, failed = 0;
	sigset_t all, old;
	if (!PyArg_ParseTuple(args, "i", &count))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	if (count > self->maxthreads)
		count = self->maxthreads;
	/* new threads inherit the creator's mask: block everything while
	 * creating them, so that no signal ever lands on a lane thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&self->mutex);
	while (!self->stopping && self->nthreads < count) {
		struct start *start = PyMem_RawMalloc(sizeof(struct start));
		if (start == NULL) {
			failed = ENOMEM;
			break;
		}
		start->lane = self;
		start->index = self->nthreads;
		self->current[self->nthreads] = -1;
		failed = pthread_create(&self->threads[self->nthreads], NULL,
		                        lane_thread, start);
		if (failed) {
			PyMem_RawFree(start);
			break;
		}
		self->nthreads++;
		self->running++;
	}
	count = self->nthreads;
	pthread_mutex_unlock(&self->mutex);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (count == 0 && failed) {
		errno = failed;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	return PyLong_FromLong(count);
}

PyDoc_STRVAR(
    submit_doc,
    "submit(fd, name=None, data=None)\n\n"
    "Hand ``fd`` over to be closed, after ``data`` (bytes) is written into "
    "it, if\n"
    "given: a failed write is a failure of its own (see failures()).  "
    "In one step:\n"
    "wait (without the GIL) for room,\n"
    "queue it, drop it from the ``owned`` set and record ``name``'s latest "
    "token in\n"
    "the ``names`` dict.  Raises having done none of that when the lane "
    "stops or has\n"
    "no thread, or when a Python signal handler raises while it waits for "
    "room; the\n"
    "descriptor is then still the caller's.  Returns whether the lane is "
    "full once\n"
    "it is queued (as many descriptors pending as it has room for).  "
    "Names whose\n"
    "descriptors are all closed may be forgotten from ``names``.");

static PyObject *Lane_submit(Lane *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = {"fd", "name", "data", NULL};
	int fd;
	PyObject *name = Py_None, *data = Py_None, *token = NULL, *key = NULL;
	struct entry *e;
	int full, prune;
	long long oldest;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "i|OO", kwlist, &fd,
	                                 &name, &data))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	if (fd < 0) {
		PyErr_SetString(PyExc_ValueError, "negative file descriptor");
		return NULL;
	}
	/* a name is a key of the names dict, set with the mutex held: only
	 * types whose hash and comparison run no Python code */
	if (name != Py_None && !PyBytes_CheckExact(name) &&
	    !PyUnicode_CheckExact(name)) {
		PyErr_SetString(PyExc_TypeError,
		                "name must be bytes, str or None");
		return NULL;
	}
	/* bytes only: they cannot change while a thread writes them */
	if (data != Py_None && !PyBytes_CheckExact(data)) {
		PyErr_SetString(PyExc_TypeError, "data must be bytes or None");
		return NULL;
	}
	pthread_mutex_lock(&self->mutex);
	if (self->nspent >= 64) {
		/* read with the mutex held: the threads append to it */
		pthread_mutex_unlock(&self->mutex);
		release_spent(self);
		pthread_mutex_lock(&self->mutex);
	}
	/* interruptible: on a hard-mounted NFS server that went away, closes
	 * never finish and Ctrl-C must still stop hg.  Raising here has done
	 * nothing yet, so the descriptor is still the caller's and in owned. */
	if (wait_unlocked(self, WAIT_ROOM, 0, 1, -1) < 0)
		return NULL;
	if (self->stopping || self->nthreads == 0) {
		pthread_mutex_unlock(&self->mutex);
		PyErr_SetString(PyExc_RuntimeError,
		                self->stopping ? "Lane stopped"
		                               : "Lane has no thread");
		return NULL;
	}
	if (reserve(self) < 0) {
		pthread_mutex_unlock(&self->mutex);
		return PyErr_NoMemory();
	}
	/* what may fail comes before queueing: the dict entry.  Dict and set
	 * operations on bytes and int keys run no Python code. */
	if (self->names != NULL && name != Py_None) {
		token = PyLong_FromLongLong(self->nexttoken);
		if (token == NULL || PyDict_SetItem(self->names, name, token)) {
			Py_XDECREF(token);
			pthread_mutex_unlock(&self->mutex);
			return NULL;
		}
		Py_DECREF(token);
	}
	if (self->owned != NULL) {
		key = PyLong_FromLong(fd);
		if (key == NULL || PySet_Discard(self->owned, key) < 0) {
			/* cannot fail for an int but for memory: undo */
			Py_XDECREF(key);
			if (token != NULL)
				PyDict_DelItem(self->names, name);
			pthread_mutex_unlock(&self->mutex);
			return NULL;
		}
		Py_DECREF(key);
	}
	e = &self->ring[(self->head + self->queued) % self->capacity];
	e->fd = fd;
	e->token = self->nexttoken++;
	if (name != Py_None) {
		Py_INCREF(name);
		e->name = name;
	} else {
		e->name = NULL;
	}
	if (data != Py_None) {
		Py_INCREF(data);
		e->data = data;
		e->buf = PyBytes_AS_STRING(data);
		e->len = PyBytes_GET_SIZE(data);
		self->held += e->len;
	} else {
		e->data = NULL;
		e->buf = NULL;
		e->len = 0;
	}
	self->queued++;
	if (self->queued + self->inflight > self->peak)
		self->peak = self->queued + self->inflight;
	/* wake a parked thread only once ``batch`` entries wait and the busy
	 * threads have more than one each: one that finds work as it finishes
	 * costs nothing, one woken up costs a futex round trip */
	if (self->idle && self->queued >= self->batch &&
	    self->queued > self->nthreads - self->idle)
		pthread_cond_signal(&self->work);
	full = self->queued + self->inflight >= self->capacity;
	prune = self->names != NULL &&
	        PyDict_GET_SIZE(self->names) > self->pruneat;
	oldest = prune ? oldest_open(self) : 0;
	pthread_mutex_unlock(&self->mutex);
	if (prune) {
		Py_ssize_t left;
		prune_names(self, oldest);
		left = PyDict_GET_SIZE(self->names);
		self->pruneat = 2 * (left > self->capacity ? left
		                                            : self->capacity);
	}
	/* nothing that could fail once it is queued */
	return PyBool_FromLong(full);
}

PyDoc_STRVAR(wait_doc,
             "wait(through=-1)\n\n"
             "Wait (without the GIL) until every descriptor submitted with "
             "a token up to\n"
             "``through`` is closed; -1: every descriptor submitted so far. "
             " Python signal\n"
             "handlers run meanwhile, and what they raise is raised.");

static PyObject *Lane_wait(Lane *self, PyObject *args)
{
	long long through = -1;
	if (!PyArg_ParseTuple(args, "|L", &through))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	if (through < 0 || through >= self->nexttoken)
		through = self->nexttoken - 1;
	if (wait_unlocked(self, WAIT_THROUGH, through, 1, -1) < 0)
		return NULL;
	pthread_mutex_unlock(&self->mutex);
	release_spent(self);
	Py_RETURN_NONE;
}

/* stop and join the threads once everything is closed; 0, or -1 if
 * interrupted, or 1 once the monotonic clock reaches until_ns (if not
 * negative): then nothing is stopped */
static int stop_threads(Lane *self, int interruptible, long long until_ns)
{
	int i, count, waited, failed = 0;
	if (self->pid != getpid())
		return 0; /* a forked child: the threads (and whoever held the
		             mutex) are not here */
	pthread_mutex_lock(&self->mutex);
	if (self->detached || self->joining) {
		/* abandoned: its threads exit by themselves, nobody joins them;
		 * or another thread's stop() joins them now */
		int left = self->running;
		pthread_mutex_unlock(&self->mutex);
		return left ? 1 : 0;
	}
	/* first: a descriptor handed over while this waits (by one of core's
	 * writer threads) is refused, and closed by its submitter, instead
	 * of being closed after the wait, in a join no signal can cut short */
	self->stopping = 1;
	pthread_cond_broadcast(&self->done);
	if (self->nthreads) {
		waited = wait_unlocked(self, WAIT_THROUGH, self->nexttoken - 1,
		                       interruptible, until_ns);
		if (waited < 0)
			return -1;
		if (waited > 0) {
			pthread_mutex_unlock(&self->mutex);
			return 1;
		}
	}
	if (self->detached || self->joining) {
		/* abandon(), or another stop(), on another thread while this
		 * waited (the mutex released): those threads are not this
		 * call's to join */
		int left = self->running;
		pthread_mutex_unlock(&self->mutex);
		return left ? 1 : 0;
	}
	/* nothing queued or in flight, and nothing can come: the threads
	 * return as soon as they see it */
	pthread_cond_broadcast(&self->work);
	self->joining = 1;
	count = self->nthreads;
	pthread_mutex_unlock(&self->mutex);
	Py_BEGIN_ALLOW_THREADS;
	for (i = 0; i < count; i++)
		if (pthread_join(self->threads[i], NULL) != 0)
			failed++;
	Py_END_ALLOW_THREADS;
	pthread_mutex_lock(&self->mutex);
	self->joinerrors += failed;
	self->nthreads = 0;
	self->joining = 0;
	pthread_mutex_unlock(&self->mutex);
	return 0;
}

PyDoc_STRVAR(stop_doc,
             "stop(timeout=-1.0) -> bool\n\n"
             "Take no more descriptors (submissions from now on raise), "
             "wait until\n"
             "everything submitted is closed (interruptibly), then join "
             "the threads, and\n"
             "return True.  After ``timeout`` seconds (if not negative) "
             "return False\n"
             "instead.  If interrupted or timed out, the threads still "
             "run: call it again,\n"
             "or abandon().  False at once while another thread's stop() "
             "joins them.");

PyDoc_STRVAR(kick_doc,
             "kick()\n\n"
             "Wake the parked threads if any descriptor is queued: those "
             "queued are closed\n"
             "now, though fewer than ``batch`` wait (no more may come).");

static PyObject *Lane_kick(Lane *self, PyObject *Py_UNUSED(ignored))
{
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	if (self->queued && self->idle)
		pthread_cond_broadcast(&self->work);
	pthread_mutex_unlock(&self->mutex);
	Py_RETURN_NONE;
}

static PyObject *Lane_stop(Lane *self, PyObject *args)
{
	double timeout = -1.0;
	long long until_ns = -1;
	int stopped;
	if (!PyArg_ParseTuple(args, "|d", &timeout))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	if (timeout >= 0)
		until_ns = now_ns() + (long long)(timeout * 1e9);
	stopped = stop_threads(self, 1, until_ns);
	if (stopped < 0)
		return NULL;
	if (stopped > 0)
		Py_RETURN_FALSE;
	release_spent(self);
	Py_RETURN_TRUE;
}

PyDoc_STRVAR(lower_priority_doc,
             "lower_priority(steps)\n\n"
             "Have every thread run ``steps`` nice steps lower than it "
             "began (Linux; once\n"
             "only, as a thread may not raise its priority back), each as "
             "it takes its next\n"
             "descriptor: for closes that burn CPU, the submitting thread "
             "then gets a core\n"
             "first.");

static PyObject *Lane_lower_priority(Lane *self, PyObject *args)
{
	int steps;
	if (!PyArg_ParseTuple(args, "i", &steps))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	if (steps > self->lowered)
		self->lowered = steps;
	pthread_mutex_unlock(&self->mutex);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(abandon_doc,
             "abandon()\n\n"
             "Leave the threads to closes that hang: the lane takes no more "
             "descriptors, and\n"
             "its threads, detached, close what they were given whenever "
             "their closes\n"
             "return, then exit.  The lane is kept until the last one "
             "exits, then released\n"
             "on the main thread (a pending call): nothing it holds "
             "outlives its threads.");

static PyObject *Lane_abandon(Lane *self, PyObject *Py_UNUSED(ignored))
{
	int running;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	running = detach_threads(self);
	if (running && !self->abandoned) {
		/* kept until the last thread returns (release_now) */
		self->abandoned = 1;
		Py_INCREF(self);
	}
	pthread_mutex_unlock(&self->mutex);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(failures_doc,
             "failures(start=0) -> [(name, errno, writing), ...]\n\n"
             "The writes or closes that failed (``writing``: the write), "
             "from the\n``start``-th on, in the order they failed.\n"
             "They are kept: read them again from where you got to.");

static PyObject *Lane_failures(Lane *self, PyObject *args)
{
	Py_ssize_t start = 0, count, i;
	PyObject *result;
	if (!PyArg_ParseTuple(args, "|n", &start))
		return NULL;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	count = self->nfailures;
	pthread_mutex_unlock(&self->mutex);
	if (start < 0)
		start = 0;
	result = PyList_New(0);
	if (result == NULL)
		return NULL;
	/* entries below count are not touched by the threads any more */
	for (i = start; i < count; i++) {
		struct failure *f = &self->failures[i];
		PyObject *item =
		    Py_BuildValue("(OiO)", f->name ? f->name : Py_None,
		                  f->error, f->writing ? Py_True : Py_False);
		if (item == NULL || PyList_Append(result, item) < 0) {
			Py_XDECREF(item);
			Py_DECREF(result);
			return NULL;
		}
		Py_DECREF(item);
	}
	return result;
}

/* counters, read under the mutex; in a forked child, refused rather than
 * the parent's numbers read under a mutex nobody there may ever release */
static PyObject *get_counter(Lane *self, void *which)
{
	long long value = 0;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	switch ((intptr_t)which) {
	case 0:
		value = self->queued + self->inflight;
		break;
	case 1:
		value = self->queued;
		break;
	case 2:
		value = self->nthreads;
		break;
	case 3:
		value = self->peak;
		break;
	case 4:
		value = self->closed;
		break;
	case 5:
		value = self->nfailures;
		break;
	case 6:
		value = self->nexttoken - 1;
		break;
	case 7:
		value = self->held;
		break;
	case 8:
		value = self->idle;
		break;
	case 9:
		value = self->batch;
		break;
	case 10:
		value = self->running;
		break;
	case 11:
		value = self->joinerrors;
		break;
	}
	pthread_mutex_unlock(&self->mutex);
	return PyLong_FromLongLong(value);
}

static PyObject *get_seconds(Lane *self, void *which)
{
	long long value;
	if (check_usable(self) < 0)
		return NULL;
	pthread_mutex_lock(&self->mutex);
	value = (intptr_t)which ? self->maxns : self->totalns;
	pthread_mutex_unlock(&self->mutex);
	return PyFloat_FromDouble((double)value * 1e-9);
}

static PyGetSetDef Lane_getset[] = {
    {"pending", (getter)get_counter, NULL,
     "descriptors submitted and not closed yet", (void *)0},
    {"queued", (getter)get_counter, NULL,
     "descriptors no thread has taken yet", (void *)1},
    {"threads", (getter)get_counter, NULL, "threads running", (void *)2},
    {"peak", (getter)get_counter, NULL,
     "most descriptors pending at once", (void *)3},
    {"closed", (getter)get_counter, NULL, "closes done", (void *)4},
    {"failed", (getter)get_counter, NULL, "writes and closes that failed",
     (void *)5},
    {"held", (getter)get_counter, NULL,
     "bytes submitted to be written and not written yet", (void *)7},
    {"lasttoken", (getter)get_counter, NULL,
     "the token of the latest submission (-1: none yet)", (void *)6},
    {"parked", (getter)get_counter, NULL,
     "threads waiting for descriptors", (void *)8},
    {"batch", (getter)get_counter, NULL,
     "descriptors queued that wake a parked thread", (void *)9},
    {"running", (getter)get_counter, NULL,
     "threads started that have not exited yet", (void *)10},
    {"joinerrors", (getter)get_counter, NULL,
     "joins of its threads that failed (0 unless the lane has a bug)",
     (void *)11},
    {"seconds", (getter)get_seconds, NULL, "total time spent in close()",
     (void *)0},
    {"maxseconds", (getter)get_seconds, NULL, "longest close()",
     (void *)1},
    {NULL},
};

static PyMethodDef Lane_methods[] = {
    {"start", (PyCFunction)Lane_start, METH_VARARGS, start_doc},
    {"submit", (PyCFunction)(void (*)(void))Lane_submit,
     METH_VARARGS | METH_KEYWORDS, submit_doc},
    {"wait", (PyCFunction)Lane_wait, METH_VARARGS, wait_doc},
    {"stop", (PyCFunction)Lane_stop, METH_VARARGS, stop_doc},
    {"kick", (PyCFunction)Lane_kick, METH_NOARGS, kick_doc},
    {"lower_priority", (PyCFunction)Lane_lower_priority, METH_VARARGS,
     lower_priority_doc},
    {"abandon", (PyCFunction)Lane_abandon, METH_NOARGS, abandon_doc},
    {"failures", (PyCFunction)Lane_failures, METH_VARARGS, failures_doc},
    {NULL},
};

PyDoc_STRVAR(
    Lane_doc,
    "Lane(capacity, maxthreads, batch=4, owned=None, names=None)\n\n"
    "A bounded queue of descriptors and the POSIX threads that close "
    "them.\n"
    "``capacity``: most descriptors queued or being closed; ``batch``: queued descriptors "
    "that wake\n"
    "a parked thread; ``owned``: a set submit() removes descriptors from; "
    "``names``:\n"
    "a dict submit() records each name's latest token in (it forgets "
    "those closed\n"
    "once it holds many).");

/* called with a number close_owned() was given that its set did not hold
 * (set_not_owned), or NULL: then that raises RuntimeError */
static PyObject *not_owned_hook;

/* collections.deque, what a Python pool queues into */
static PyTypeObject *deque_type;

PyDoc_STRVAR(set_not_owned_doc,
             "set_not_owned(hook)\n\n"
             "``hook(fd)`` is called when close_owned() is given a number "
             "its set does not\n"
             "hold (a bug of the caller: the number is not closed, as it "
             "may be another\n"
             "owner's); what it raises, close_owned() raises.  None: "
             "close_owned() raises\n"
             "RuntimeError then.");

static PyObject *set_not_owned(PyObject *Py_UNUSED(module), PyObject *hook)
{
	if (hook != Py_None && !PyCallable_Check(hook)) {
		PyErr_SetString(PyExc_TypeError, "hook must be callable or None");
		return NULL;
	}
	Py_XDECREF(not_owned_hook);
	not_owned_hook = NULL;
	if (hook != Py_None) {
		Py_INCREF(hook);
		not_owned_hook = hook;
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(close_owned_doc,
             "close_owned(fd, owned)\n\n"
             "Drop ``fd`` from the set ``owned`` and close it, in one step "
             "(a Python signal\n"
             "handler cannot run in between), without the GIL while it "
             "closes.  Raises\n"
             "OSError if close() fails; ``fd`` is closed and forgotten all "
             "the same.  A\n"
             "number the set does not hold is not closed: it is another "
             "owner's, or closed\n"
             "already and maybe reused (see set_not_owned).");

static PyObject *close_owned(PyObject *Py_UNUSED(module), PyObject *args)
{
	int fd, result, error = 0;
	PyObject *owned, *key;
	if (!PyArg_ParseTuple(args, "iO!", &fd, &PySet_Type, &owned))
		return NULL;
	key = PyLong_FromLong(fd);
	if (key == NULL)
		return NULL;
	result = PySet_Discard(owned, key);
	if (result < 0) {
		Py_DECREF(key);
		return NULL; /* not forgotten, not closed: still the caller's */
	}
	if (result == 0) {
		/* not the caller's to close */
		PyObject *reported;
		if (not_owned_hook == NULL) {
			Py_DECREF(key);
			return PyErr_Format(PyExc_RuntimeError,
			                    "descriptor %d is not owned", fd);
		}
		reported = PyObject_CallOneArg(not_owned_hook, key);
		Py_DECREF(key);
		if (reported == NULL)
			return NULL;
		Py_DECREF(reported);
		Py_RETURN_NONE;
	}
	Py_DECREF(key);
	Py_BEGIN_ALLOW_THREADS;
	if (close(fd) != 0 && errno != EINTR)
		error = errno;
	Py_END_ALLOW_THREADS;
	if (error) {
		errno = error;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(hand_over_doc,
             "hand_over(queue, entry, owned, fd)\n\n"
             "Append ``entry`` to the deque ``queue`` and drop ``fd`` from "
             "the set ``owned``,\n"
             "in one step (a Python signal handler cannot run in between): "
             "a Python pool's\n"
             "hand-over.  Raises having done neither on failure (memory).");

static PyObject *hand_over(PyObject *Py_UNUSED(module), PyObject *args)
{
	PyObject *queue, *entry, *owned, *key, *done;
	int fd, result;
	if (!PyArg_ParseTuple(args, "OOO!i", &queue, &entry, &PySet_Type,
	                      &owned, &fd))
		return NULL;
	if (!PyObject_TypeCheck(queue, deque_type)) {
		PyErr_SetString(PyExc_TypeError, "queue must be a deque");
		return NULL;
	}
	key = PyLong_FromLong(fd);
	if (key == NULL)
		return NULL;
	/* a deque's append and pop run no Python code */
	done = PyObject_CallMethod(queue, "append", "(O)", entry);
	if (done == NULL) {
		Py_DECREF(key);
		return NULL;
	}
	Py_DECREF(done);
	result = PySet_Discard(owned, key);
	Py_DECREF(key);
	if (result < 0) {
		/* undo: still the caller's */
		PyObject *exc_type, *exc_value, *exc_tb;
		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
		done = PyObject_CallMethod(queue, "pop", NULL);
		Py_XDECREF(done);
		PyErr_Restore(exc_type, exc_value, exc_tb);
		return NULL;
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(take_back_doc,
             "take_back(queue, owned, fd)\n\n"
             "Pop the last entry of the deque ``queue`` (``fd``'s, just "
             "handed over) and add\n"
             "``fd`` to the set ``owned`` again, in one step: the undoing "
             "of hand_over().");

static PyObject *take_back(PyObject *Py_UNUSED(module), PyObject *args)
{
	PyObject *queue, *owned, *key, *entry;
	int fd;
	if (!PyArg_ParseTuple(args, "OO!i", &queue, &PySet_Type, &owned, &fd))
		return NULL;
	if (!PyObject_TypeCheck(queue, deque_type)) {
		PyErr_SetString(PyExc_TypeError, "queue must be a deque");
		return NULL;
	}
	key = PyLong_FromLong(fd);
	if (key == NULL)
		return NULL;
	/* room in the set first: what may fail comes before the pop */
	if (PySet_Add(owned, key) < 0) {
		Py_DECREF(key);
		return NULL;
	}
	Py_DECREF(key);
	entry = PyObject_CallMethod(queue, "pop", NULL);
	if (entry == NULL)
		return NULL;
	Py_DECREF(entry);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(open_owned_doc,
             "open_owned(path, flags, mode, owned) -> fd\n\n"
             "os.open() (without the GIL, the descriptor not inherited by "
             "children) and add\n"
             "the descriptor to the set ``owned`` in one step: a Python "
             "signal handler cannot\n"
             "run in between and lose it.");

static PyObject *open_owned(PyObject *Py_UNUSED(module), PyObject *args)
{
	PyObject *path, *owned, *key;
	int flags, mode, fd, error = 0;
	if (!PyArg_ParseTuple(args, "O&iiO!", PyUnicode_FSConverter, &path,
	                      &flags, &mode, &PySet_Type, &owned))
		return NULL;
	for (;;) {
		Py_BEGIN_ALLOW_THREADS;
		fd = open(PyBytes_AS_STRING(path), flags | O_CLOEXEC, mode);
		error = fd < 0 ? errno : 0;
		Py_END_ALLOW_THREADS;
		if (fd >= 0 || error != EINTR)
			break;
		/* as os.open(): a signal whose handler raises (Ctrl-C) ends an
		 * open that waits, on a mount that answers it with EINTR;
		 * nothing was opened */
		if (PyErr_CheckSignals() < 0) {
			Py_DECREF(path);
			return NULL;
		}
	}
	if (fd < 0) {
		errno = error;
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
		Py_DECREF(path);
		return NULL;
	}
	Py_DECREF(path);
	key = PyLong_FromLong(fd);
	if (key == NULL || PySet_Add(owned, key) < 0) {
		Py_XDECREF(key);
		close(fd);
		return NULL;
	}
	return key;
}

static PyMethodDef module_methods[] = {
    {"finalizing", module_finalizing, METH_NOARGS, finalizing_doc},
    {"open_owned", open_owned, METH_VARARGS, open_owned_doc},
    {"close_owned", close_owned, METH_VARARGS, close_owned_doc},
    {"set_not_owned", set_not_owned, METH_O, set_not_owned_doc},
    {"hand_over", hand_over, METH_VARARGS, hand_over_doc},
    {"take_back", take_back, METH_VARARGS, take_back_doc},
    {NULL},
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name =
        "hgext3rd.backgroundclose._closelane.Lane",
    .tp_basicsize = sizeof(Lane),
    .tp_dealloc = (destructor)Lane_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Lane_doc,
    .tp_methods = Lane_methods,
    .tp_getset = Lane_getset,
    .tp_init = (initproc)Lane_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef closelane_module = {
    PyModuleDef_HEAD_INIT,
    "_closelane",
    "Close descriptors on POSIX threads that never take the GIL.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* Free-threaded builds (3.13t): the lane is not safe without the GIL.
 * failures() reads the array of failures after dropping the mutex, and only
 * the GIL keeps a submit() on another thread from reallocating it meanwhile.
 * The locking argument at the top needs the GIL too: without it, a thread
 * blocked on the mutex is still attached, so a stop-the-world pause (the
 * garbage collector's) waits for it, while the thread holding the mutex
 * waits for the pause to end as it touches the owned set or the names dict.
 * With single-phase init there is no Py_mod_gil slot to say so; left alone,
 * the import would turn the GIL back on for the whole process (with a
 * RuntimeWarning), or under PYTHON_GIL=0 run the lane without it.  So the
 * module refuses to load there, and engine/pools.py closes on Python
 * threads: with no GIL to take back after each close, they no longer cost the writer the
 * hand-offs this module exists to avoid. */
PyMODINIT_FUNC PyInit__closelane(void)
{
	PyObject *module;
#ifdef Py_GIL_DISABLED
	PyErr_SetString(PyExc_ImportError,
	                "_closelane needs the GIL, and this Python runs without");
	return NULL;
#endif
	if (PyType_Ready(&LaneType) < 0)
		return NULL;
	if (deque_type == NULL) {
		PyObject *collections = PyImport_ImportModule("collections");
		if (collections == NULL)
			return NULL;
		deque_type = (PyTypeObject *)PyObject_GetAttrString(collections,
		                                                    "deque");
		Py_DECREF(collections);
		if (deque_type == NULL)
			return NULL;
	}
	module = PyModule_Create(&closelane_module);
	if (module == NULL)
		return NULL;
	Py_INCREF(&LaneType);
	if (PyModule_AddObject(module, "Lane", (PyObject *)&LaneType) < 0) {
		Py_DECREF(&LaneType);
		Py_DECREF(module);
		return NULL;
	}
	return module;
}
