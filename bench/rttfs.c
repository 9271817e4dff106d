/* rttfs.c - a network file system's round trips, modelled: a FUSE
 * pass-through whose every request waits a set time before it is served
 *
 * Copyright 2026 hg-backgroundclose contributors
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * For the benchmark and the tests.  Each request the kernel sends (a
 * lookup, a create, a write, a close's flush, ...) sleeps ROUNDTRIP
 * microseconds on a thread of its own, then is served from BACKING (a
 * tmpfs): what a network home directory costs a client, a round trip per
 * request, with little server CPU.  Requests from many client threads wait
 * at once, as on NFS, up to the threads FUSE is allowed (-o max_threads).
 *
 *   rttfs BACKING MOUNTPOINT ROUNDTRIP_US STATSFILE [FUSE options]
 *
 * STATSFILE (made here) holds 64-bit counters, updated as requests end:
 * see the enum below.  bench/rttfs.py builds, mounts and reads it.
 */

#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* the counters of STATSFILE, in this order (bench/rttfs.py: COUNTERS) */
enum {
	REQUESTS,	/* every request served */
	BUSY_NS,	/* the sum of their durations, wait included */
	IN_FLIGHT,	/* requests being served now */
	PEAK,		/* the most ever served at once */
	/* by kind: a lookup is a getattr in FUSE's path API */
	K_GETATTR, K_MKDIR, K_CREATE, K_OPEN, K_READ, K_WRITE, K_FLUSH,
	K_RELEASE, K_UNLINK, K_RMDIR, K_RENAME, K_READDIR, K_OTHER,
	NCOUNTERS
};

static char backing[PATH_MAX];
static struct timespec roundtrip;
static uint64_t *counters;

/* FUSE's path API answers a mkdir, create, symlink, link or change of
 * attributes with the attributes it asks this program for at once, on the
 * same thread: part of the one request the kernel sent, as a network file
 * system's reply carries the new attributes.  Set when such a request
 * succeeded; the getattr that follows is served without a round trip of
 * its own and not counted. */
static __thread int attributes_follow;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* one request begins: counted in flight, then its round trip waited */
static uint64_t begin(int kind)
{
	uint64_t start = now_ns();
	uint64_t inflight =
		__atomic_add_fetch(&counters[IN_FLIGHT], 1, __ATOMIC_RELAXED);
	uint64_t peak = __atomic_load_n(&counters[PEAK], __ATOMIC_RELAXED);

	while (inflight > peak &&
	       !__atomic_compare_exchange_n(&counters[PEAK], &peak, inflight,
					    1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	__atomic_add_fetch(&counters[kind], 1, __ATOMIC_RELAXED);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &roundtrip, NULL) == EINTR)
		;
	return start;
}

/* the request that began at `start` is served: `result` goes back */
static int end(uint64_t start, int result)
{
	__atomic_add_fetch(&counters[BUSY_NS], now_ns() - start,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&counters[REQUESTS], 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&counters[IN_FLIGHT], 1, __ATOMIC_RELAXED);
	return result;
}

/* the backing path of `path`; -ENAMETOOLONG if it does not fit */
static int resolve(const char *path, char *out)
{
	if (snprintf(out, PATH_MAX, "%s%s", backing, path) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int status(int rc)
{
	return rc < 0 ? -errno : 0;
}

/* the body of a request on one path: `call` is run on its backing path,
 * and `reply` given its result */
#define SERVE_PATH(kind, call, reply)                                   \
	do {                                                            \
		char real[PATH_MAX];                                    \
		uint64_t start = begin(kind);                           \
		int rc = resolve(path, real);                           \
		if (rc == 0)                                            \
			rc = status(call);                              \
		return reply(end(start, rc));                           \
	} while (0)
#define ON_PATH(kind, call) SERVE_PATH(kind, call, (int))
/* a request whose success FUSE answers with the attributes */
#define WITH_ATTRIBUTES(kind, call) SERVE_PATH(kind, call, with_attributes)

/* `rc`, the result of a request FUSE answers, on success, with the
 * attributes it asks for next */
static int with_attributes(int rc)
{
	attributes_follow = rc == 0;
	return rc;
}

static int rt_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	if (attributes_follow) {
		char real[PATH_MAX];
		int rc;

		attributes_follow = 0;
		if (fi != NULL)
			return status(fstat(fi->fh, st));
		rc = resolve(path, real);
		return rc ? rc : status(lstat(real, st));
	}
	if (fi != NULL) {
		uint64_t start = begin(K_GETATTR);
		return end(start, status(fstat(fi->fh, st)));
	}
	ON_PATH(K_GETATTR, lstat(real, st));
}

static int rt_access(const char *path, int mask)
{
	ON_PATH(K_OTHER, access(real, mask));
}

static int rt_readlink(const char *path, char *buf, size_t size)
{
	char real[PATH_MAX];
	uint64_t start = begin(K_OTHER);
	ssize_t n;
	int rc = resolve(path, real);

	if (rc)
		return end(start, rc);
	n = readlink(real, buf, size - 1);
	if (n < 0)
		return end(start, -errno);
	buf[n] = '\0';
	return end(start, 0);
}

static int rt_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t offset, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	char real[PATH_MAX];
	uint64_t start = begin(K_READDIR);
	struct dirent *entry;
	DIR *dir;
	int rc = resolve(path, real);

	(void)offset;
	(void)fi;
	(void)flags;
	if (rc)
		return end(start, rc);
	dir = opendir(real);
	if (dir == NULL)
		return end(start, -errno);
	while ((entry = readdir(dir)) != NULL) {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = entry->d_ino;
		st.st_mode = DTTOIF(entry->d_type);
		if (filler(buf, entry->d_name, &st, 0, 0))
			break;
	}
	closedir(dir);
	return end(start, 0);
}

static int rt_mkdir(const char *path, mode_t mode)
{
	WITH_ATTRIBUTES(K_MKDIR, mkdir(real, mode));
}

static int rt_unlink(const char *path)
{
	ON_PATH(K_UNLINK, unlink(real));
}

static int rt_rmdir(const char *path)
{
	ON_PATH(K_RMDIR, rmdir(real));
}

static int rt_symlink(const char *target, const char *path)
{
	WITH_ATTRIBUTES(K_CREATE, symlink(target, real));
}

static int two_paths(int kind, const char *from, const char *to,
		     unsigned int flags)
{
	char real_from[PATH_MAX], real_to[PATH_MAX];
	uint64_t start = begin(kind);
	int rc = resolve(from, real_from);

	if (rc == 0)
		rc = resolve(to, real_to);
	if (rc == 0) {
		if (kind == K_RENAME)
			rc = status(renameat2(AT_FDCWD, real_from, AT_FDCWD,
					      real_to, flags));
		else
			rc = status(link(real_from, real_to));
	}
	return end(start, rc);
}

static int rt_link(const char *from, const char *to)
{
	return with_attributes(two_paths(K_CREATE, from, to, 0));
}

static int rt_rename(const char *from, const char *to, unsigned int flags)
{
	return two_paths(K_RENAME, from, to, flags);
}

static int rt_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi != NULL) {
		uint64_t start = begin(K_OTHER);
		return with_attributes(
			end(start, status(fchmod(fi->fh, mode))));
	}
	WITH_ATTRIBUTES(K_OTHER, chmod(real, mode));
}

static int rt_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	(void)fi;
	WITH_ATTRIBUTES(K_OTHER, lchown(real, uid, gid));
}

static int rt_truncate(const char *path, off_t size,
		       struct fuse_file_info *fi)
{
	if (fi != NULL) {
		uint64_t start = begin(K_OTHER);
		return with_attributes(
			end(start, status(ftruncate(fi->fh, size))));
	}
	WITH_ATTRIBUTES(K_OTHER, truncate(real, size));
}

static int rt_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	(void)fi;
	WITH_ATTRIBUTES(K_OTHER,
			utimensat(AT_FDCWD, real, tv, AT_SYMLINK_NOFOLLOW));
}

static int opened(uint64_t start, int fd, struct fuse_file_info *fi)
{
	if (fd < 0)
		return end(start, -errno);
	fi->fh = fd;
	return end(start, 0);
}

static int rt_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	char real[PATH_MAX];
	uint64_t start = begin(K_CREATE);
	int rc = resolve(path, real);

	if (rc)
		return end(start, rc);
	return with_attributes(
		opened(start, open(real, fi->flags | O_NOFOLLOW, mode), fi));
}

static int rt_open(const char *path, struct fuse_file_info *fi)
{
	char real[PATH_MAX];
	uint64_t start = begin(K_OPEN);
	int rc = resolve(path, real);

	if (rc)
		return end(start, rc);
	return opened(start, open(real, fi->flags), fi);
}

static int rt_read(const char *path, char *buf, size_t size, off_t offset,
		   struct fuse_file_info *fi)
{
	uint64_t start = begin(K_READ);
	ssize_t n = pread(fi->fh, buf, size, offset);

	(void)path;
	return end(start, n < 0 ? -errno : (int)n);
}

static int rt_write(const char *path, const char *buf, size_t size,
		    off_t offset, struct fuse_file_info *fi)
{
	uint64_t start = begin(K_WRITE);
	ssize_t n = pwrite(fi->fh, buf, size, offset);

	(void)path;
	return end(start, n < 0 ? -errno : (int)n);
}

static int rt_statfs(const char *path, struct statvfs *st)
{
	ON_PATH(K_OTHER, statvfs(real, st));
}

/* a close(): the client's flush waits for its answer, as NFS's
 * close-to-open flush does */
static int rt_flush(const char *path, struct fuse_file_info *fi)
{
	uint64_t start = begin(K_FLUSH);

	(void)path;
	(void)fi;
	return end(start, 0);
}

static int rt_release(const char *path, struct fuse_file_info *fi)
{
	uint64_t start = begin(K_RELEASE);

	(void)path;
	return end(start, status(close(fi->fh)));
}

static int rt_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	uint64_t start = begin(K_OTHER);

	(void)path;
	return end(start, status(datasync ? fdatasync(fi->fh)
					  : fsync(fi->fh)));
}

static void *rt_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* the backing inode numbers, as a network file system gives the
	 * server's */
	cfg->use_ino = 1;
	/* unlinked open files go at once, as on a local disk, not to a
	 * .fuse_hidden file that hg status would see */
	cfg->hard_remove = 1;
	return NULL;
}

static const struct fuse_operations operations = {
    .init = rt_init,
    .getattr = rt_getattr,
    .access = rt_access,
    .readlink = rt_readlink,
    .readdir = rt_readdir,
    .mkdir = rt_mkdir,
    .unlink = rt_unlink,
    .rmdir = rt_rmdir,
    .symlink = rt_symlink,
    .link = rt_link,
    .rename = rt_rename,
    .chmod = rt_chmod,
    .chown = rt_chown,
    .truncate = rt_truncate,
    .utimens = rt_utimens,
    .create = rt_create,
    .open = rt_open,
    .read = rt_read,
    .write = rt_write,
    .statfs = rt_statfs,
    .flush = rt_flush,
    .release = rt_release,
    .fsync = rt_fsync,
};

static uint64_t *map_counters(const char *name)
{
	size_t size = NCOUNTERS * sizeof(uint64_t);
	void *mem;
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || ftruncate(fd, size) != 0) {
		perror(name);
		return NULL;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mem == MAP_FAILED) {
		perror(name);
		return NULL;
	}
	return mem;
}

int main(int argc, char *argv[])
{
	char *rest, **fargv;
	long us;
	int i;

	/* gone with the process that mounted it (rttfs.py, killed): FUSE
	 * unmounts on SIGTERM */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	/* a sleep of 200 us ends within a few us of it, not the default
	 * slack's 50 us later: every thread FUSE starts inherits this */
	prctl(PR_SET_TIMERSLACK, 1UL);
	if (argc < 5 || realpath(argv[1], backing) == NULL) {
		fprintf(stderr, "usage: rttfs BACKING MOUNTPOINT ROUNDTRIP_US "
				"STATSFILE [options]\n");
		return 2;
	}
	us = strtol(argv[3], &rest, 10);
	if (*rest || us < 0 || us > 10000000) {
		fprintf(stderr, "rttfs: bad round trip: %s\n", argv[3]);
		return 2;
	}
	roundtrip.tv_sec = us / 1000000;
	roundtrip.tv_nsec = (us % 1000000) * 1000;
	counters = map_counters(argv[4]);
	if (counters == NULL)
		return 1;
	/* FUSE sees the program, the mount point and the options, not
	 * BACKING, ROUNDTRIP_US and STATSFILE */
	fargv = calloc(argc - 2, sizeof(char *));
	if (fargv == NULL)
		return 1;
	fargv[0] = argv[0];
	fargv[1] = argv[2];
	for (i = 5; i < argc; i++)
		fargv[i - 3] = argv[i];
	return fuse_main(argc - 3, fargv, &operations, NULL);
}
