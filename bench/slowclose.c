/* slowclose.c - model a file system where closing a written file is slow
 *
 * Copyright 2026 hg-backgroundclose contributors
 * This software may be used and distributed according to the terms of the
 * GNU General Public License version 2 or any later version.
 *
 * Loaded with LD_PRELOAD, this shared object remembers which descriptors
 * were opened for writing on regular files and delays close() of those
 * descriptors.  It models the cost that NTFS (antivirus scanning on close),
 * NFS (flush of dirty data on close) and FUSE mounts charge when a freshly
 * written file is closed.  Reads and every other system call are untouched.
 *
 * Environment (read once, when the library is loaded):
 *
 *   SLOWCLOSE_US=N         constant delay of N microseconds per close
 *   SLOWCLOSE_DIST=tail    heavy-tailed delays instead of a constant one:
 *                          98% near 1 us, 1.5% of 1 ms, 0.5% of 20 ms, so the
 *                          mean is about 115 us (seed 001 saw closes cluster
 *                          near 1 us and beyond 10 ms)
 *   SLOWCLOSE_DIST=heavy   most delays 100 us, one in 25 of 20 ms (a mean of
 *                          896 us): a file system slow throughout, with
 *                          stalls
 *   SLOWCLOSE_SEED=N       seed of the pseudo-random generator (tail mode)
 *   SLOWCLOSE_FROM=N       the delay only from the Nth tracked close on
 *                          (1-based, counted over the whole process): a
 *                          file system that turns slow midway, as a
 *                          scanner that wakes up
 *   SLOWCLOSE_FAIL_NTH=N   the Nth delayed close (1-based, counted over the
 *                          whole process) closes the descriptor and then
 *                          reports failure
 *   SLOWCLOSE_FAIL_FROM=N  every delayed close from the Nth on fails that way
 *   SLOWCLOSE_FAIL_MATCH=S closes of files whose path, as opened, contains
 *                          the string S fail that way
 *   SLOWCLOSE_ERRNO=NAME   errno reported by failing closes: EIO (default),
 *                          ENOSPC or EDQUOT
 *   SLOWCLOSE_BURN=1       the delay burns CPU instead of sleeping: the
 *                          closing thread spins until it has used that much
 *                          CPU time, as an antivirus scan on close does
 *   SLOWCLOSE_HANG_MATCH=S closes of files whose path contains S never
 *                          return, as on a hard-mounted NFS server gone away
 *   SLOWCLOSE_HANG_COUNT=N only the first N of those closes hang (a server
 *                          back for the next request; default: all)
 *   SLOWCLOSE_HANG_UNTIL=P hung closes return (having closed) once the path
 *                          P exists: the server came back.  Each close that
 *                          begins to hang first makes the file P.hung, for
 *                          a test to know that one hangs now
 *   SLOWCLOSE_UNLINK_FAIL_MATCH=S
 *                          unlink(), unlinkat() and rmdir() of an existing
 *                          path that contains S fail with EACCES and remove
 *                          nothing, as in a directory made read-only (for a
 *                          user other than root); EROFS and ESTALE on NFS
 *                          look the same to the caller
 *
 * Limits of the model: descriptors above SLOWCLOSE_MAXFD and ones created by
 * dup() are not tracked; only the libc entry points below are wrapped, so a
 * program making raw system calls escapes the model.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SLOWCLOSE_MAXFD 65536

static unsigned char tracked[SLOWCLOSE_MAXFD];
static long delay_us;
static int tail_mode;
static int heavy_mode;
static long fail_nth;
static long fail_from;
static long delay_from;
static int fail_errno = EIO;
static const char *fail_match;
static const char *hang_match;
static const char *hang_until;
static long hang_count;
static unsigned long hung_count;
static int burn_mode;
static unsigned long close_count;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static int (*real_close)(int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);
static const char *unlink_fail_match;

static long env_long(const char *name)
{
    const char *value = getenv(name);
    return value ? strtol(value, NULL, 10) : 0;
}

__attribute__((constructor)) static void slowclose_init(void)
{
    const char *dist = getenv("SLOWCLOSE_DIST");
    const char *err = getenv("SLOWCLOSE_ERRNO");

    real_close = dlsym(RTLD_NEXT, "close");
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real_creat = dlsym(RTLD_NEXT, "creat");
    real_creat64 = dlsym(RTLD_NEXT, "creat64");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    real_rmdir = dlsym(RTLD_NEXT, "rmdir");

    delay_us = env_long("SLOWCLOSE_US");
    tail_mode = dist && strcmp(dist, "tail") == 0;
    heavy_mode = dist && strcmp(dist, "heavy") == 0;
    fail_nth = env_long("SLOWCLOSE_FAIL_NTH");
    fail_from = env_long("SLOWCLOSE_FAIL_FROM");
    delay_from = env_long("SLOWCLOSE_FROM");
    fail_match = getenv("SLOWCLOSE_FAIL_MATCH");
    if (fail_match && !*fail_match)
        fail_match = NULL;
    hang_match = getenv("SLOWCLOSE_HANG_MATCH");
    if (hang_match && !*hang_match)
        hang_match = NULL;
    hang_until = getenv("SLOWCLOSE_HANG_UNTIL");
    if (hang_until && !*hang_until)
        hang_until = NULL;
    unlink_fail_match = getenv("SLOWCLOSE_UNLINK_FAIL_MATCH");
    if (unlink_fail_match && !*unlink_fail_match)
        unlink_fail_match = NULL;
    burn_mode = env_long("SLOWCLOSE_BURN") != 0;
    hang_count = env_long("SLOWCLOSE_HANG_COUNT");
    if (env_long("SLOWCLOSE_SEED"))
        rng_state ^= (uint64_t)env_long("SLOWCLOSE_SEED") * 0x2545f4914f6cdd1dULL;
    if (err && strcmp(err, "ENOSPC") == 0)
        fail_errno = ENOSPC;
    else if (err && strcmp(err, "EDQUOT") == 0)
        fail_errno = EDQUOT;
}

static int writes(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY;
}

/* tracked[fd]: 0 untracked, 1 delayed, 2 delayed and doomed to fail,
 * 3 never returns */
static int track(int fd, int flags, const char *path)
{
    struct stat st;
    if (fd >= 0 && fd < SLOWCLOSE_MAXFD && writes(flags) &&
        fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        unsigned char mark = 1;
        if (fail_match && path && strstr(path, fail_match))
            mark = 2;
        if (hang_match && path && strstr(path, hang_match))
            mark = 3;
        __atomic_store_n(&tracked[fd], mark, __ATOMIC_RELEASE);
    }
    return fd;
}

static uint64_t next_random(void)
{
    /* xorshift64*, shared by all threads; a lost update only reuses a draw */
    uint64_t x = __atomic_load_n(&rng_state, __ATOMIC_RELAXED);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    __atomic_store_n(&rng_state, x, __ATOMIC_RELAXED);
    return x * 0x2545f4914f6cdd1dULL;
}

static long pick_delay_us(void)
{
    if (heavy_mode)
        return next_random() % 25 == 0 ? 20000 : 100;
    if (!tail_mode)
        return delay_us;
    uint64_t r = next_random() % 1000;
    if (r < 980)
        return 1;
    if (r < 995)
        return 1000;
    return 20000;
}

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts;
    if (us <= 0)
        return;
    if (burn_mode) {
        /* CPU time of this thread, not wall time: on a busy machine the
         * scan takes longer, as a real one would */
        long long until = thread_cpu_ns() + (long long)us * 1000;
        while (thread_cpu_ns() < until)
            ;
        return;
    }
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* SLOWCLOSE_HANG_UNTIL: make P.hung, with the real calls (not tracked) */
static void mark_hanging(void)
{
    char marker[4096];
    int fd;
    if (snprintf(marker, sizeof marker, "%s.hung", hang_until) >=
        (int)sizeof marker)
        return;
    fd = real_open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        real_close(fd);
}

int close(int fd)
{
    unsigned char mark = 0;
    if (fd >= 0 && fd < SLOWCLOSE_MAXFD)
        mark = __atomic_exchange_n(&tracked[fd], 0, __ATOMIC_ACQ_REL);
    if (mark) {
        unsigned long n = __atomic_add_fetch(&close_count, 1, __ATOMIC_RELAXED);
        int saved = errno;
        if (mark == 3 && (hang_count <= 0 ||
                          (long)__atomic_add_fetch(&hung_count, 1,
                                                   __ATOMIC_RELAXED) <=
                              hang_count)) {
            if (hang_until)
                mark_hanging();
            for (;;) {
                if (!hang_until)
                    pause(); /* signal handlers run; never returns */
                else if (access(hang_until, F_OK) == 0)
                    break;
                else
                    sleep_us(10000);
            }
        }
        if (delay_from <= 0 || (long)n >= delay_from)
            sleep_us(pick_delay_us());
        errno = saved;
        if (mark == 2 || (fail_nth && (long)n == fail_nth) ||
            (fail_from && (long)n >= fail_from)) {
            real_close(fd);
            errno = fail_errno;
            return -1;
        }
    }
    return real_close(fd);
}

#define MODE_ARG(flags, mode)                                               \
    do {                                                                    \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                              \
            va_list ap;                                                     \
            va_start(ap, flags);                                            \
            mode = va_arg(ap, int);                                         \
            va_end(ap);                                                     \
        }                                                                   \
    } while (0)

int open(const char *path, int flags, ...)
{
    int mode = 0;
    MODE_ARG(flags, mode);
    return track(real_open(path, flags, mode), flags, path);
}

int open64(const char *path, int flags, ...)
{
    int mode = 0;
    MODE_ARG(flags, mode);
    return track(real_open64(path, flags, mode), flags, path);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    int mode = 0;
    MODE_ARG(flags, mode);
    return track(real_openat(dirfd, path, flags, mode), flags, path);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    int mode = 0;
    MODE_ARG(flags, mode);
    return track(real_openat64(dirfd, path, flags, mode), flags, path);
}

int creat(const char *path, mode_t mode)
{
    return track(real_creat(path, mode), O_WRONLY, path);
}

int creat64(const char *path, mode_t mode)
{
    return track(real_creat64(path, mode), O_WRONLY, path);
}

/* whether removing ``path`` is refused (SLOWCLOSE_UNLINK_FAIL_MATCH): as
 * in a read-only directory, only what exists; a name that does not is left
 * to the real call (ENOENT).  A path relative to another directory than the
 * current one (unlinkat) is looked up as if relative to the current one. */
static int refuse_removal(const char *path)
{
    struct stat st;
    if (unlink_fail_match && path && strstr(path, unlink_fail_match) &&
        lstat(path, &st) == 0) {
        errno = EACCES;
        return 1;
    }
    return 0;
}

int unlink(const char *path)
{
    return refuse_removal(path) ? -1 : real_unlink(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
    return refuse_removal(path) ? -1 : real_unlinkat(dirfd, path, flags);
}

int rmdir(const char *path)
{
    return refuse_removal(path) ? -1 : real_rmdir(path);
}
