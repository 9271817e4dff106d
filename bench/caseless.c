/* caseless.c - a case-insensitive, case-preserving FUSE file system
 *
 * Copyright 2026 hg-backgroundclose contributors
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * For the tests only: it mirrors a directory of a case-sensitive file
 * system as NTFS and APFS show theirs.  A name finds an entry whatever its
 * case; a new entry keeps the case it was made with; opening "README" with
 * O_CREAT where "readme" exists opens "readme"; renaming "readme" to
 * "README" changes the case of the one entry.  Only ASCII letters fold.
 *
 *   caseless BACKING MOUNTPOINT [FUSE options]
 *
 * bench/caseless.py builds, mounts and unmounts it.
 */

#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

static char backing[PATH_MAX];

/* The backing path of `path` into `out`: each component that exists is
 * spelt as it is stored, whatever case `path` gives it; the first that does
 * not exist, and those after it, as `path` gives them.  -ENAMETOOLONG if it
 * does not fit. */
static int resolve(const char *path, char *out)
{
	size_t len = strlen(backing);
	int found = 1;

	memcpy(out, backing, len + 1);
	while (*path) {
		const char *end;
		size_t n;
		struct stat st;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		end = strchrnul(path, '/');
		n = end - path;
		if (len + 1 + n >= PATH_MAX)
			return -ENAMETOOLONG;
		out[len] = '/';
		memcpy(out + len + 1, path, n);
		out[len + 1 + n] = '\0';
		if (found && lstat(out, &st) != 0) {
			/* not under this spelling: look for another case */
			DIR *dir;
			struct dirent *entry;
			out[len] = '\0';
			dir = opendir(out);
			found = 0;
			while (dir && (entry = readdir(dir)) != NULL) {
				if (strlen(entry->d_name) == n &&
				    strncasecmp(entry->d_name, path, n) == 0) {
					memcpy(out + len + 1, entry->d_name, n);
					found = 1;
					break;
				}
			}
			if (dir)
				closedir(dir);
			out[len] = '/';
			if (!found)
				memcpy(out + len + 1, path, n);
		}
		len += 1 + n;
		path = end;
	}
	return 0;
}

#define RESOLVE(path, real)                                                   \
	char real[PATH_MAX];                                                  \
	do {                                                                  \
		int failed = resolve(path, real);                             \
		if (failed)                                                   \
			return failed;                                        \
	} while (0)

static int ci_getattr(const char *path, struct stat *st,
                      struct fuse_file_info *fi)
{
	if (fi)
		return fstat(fi->fh, st) ? -errno : 0;
	RESOLVE(path, real);
	return lstat(real, st) ? -errno : 0;
}

static int ci_access(const char *path, int mask)
{
	RESOLVE(path, real);
	return access(real, mask) ? -errno : 0;
}

static int ci_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n;
	RESOLVE(path, real);
	n = readlink(real, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int ci_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
                      off_t offset, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
	DIR *dir;
	struct dirent *entry;
	(void)offset;
	(void)fi;
	(void)flags;
	RESOLVE(path, real);
	dir = opendir(real);
	if (dir == NULL)
		return -errno;
	while ((entry = readdir(dir)) != NULL) {
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = entry->d_ino;
		st.st_mode = entry->d_type << 12;
		if (filler(buf, entry->d_name, &st, 0, 0))
			break;
	}
	closedir(dir);
	return 0;
}

static int ci_mkdir(const char *path, mode_t mode)
{
	RESOLVE(path, real);
	return mkdir(real, mode) ? -errno : 0;
}

static int ci_unlink(const char *path)
{
	RESOLVE(path, real);
	return unlink(real) ? -errno : 0;
}

static int ci_rmdir(const char *path)
{
	RESOLVE(path, real);
	return rmdir(real) ? -errno : 0;
}

static int ci_symlink(const char *target, const char *path)
{
	RESOLVE(path, real);
	return symlink(target, real) ? -errno : 0;
}

static int ci_link(const char *from, const char *to)
{
	RESOLVE(from, realfrom);
	RESOLVE(to, realto);
	return link(realfrom, realto) ? -errno : 0;
}

static int ci_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags)
		return -EINVAL;
	char wanted[PATH_MAX];
	const char *name = strrchr(to, '/');
	char *slash;
	struct stat st;
	RESOLVE(from, realfrom);
	RESOLVE(to, realto);
	/* the target's name as asked for, in the directory found */
	name = name ? name + 1 : to;
	slash = strrchr(realto, '/');
	if ((size_t)(slash + 1 - realto) + strlen(name) >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(wanted, realto, slash + 1 - realto);
	strcpy(wanted + (slash + 1 - realto), name);
	if (strcmp(realfrom, realto) == 0)
		/* the same entry under another case: it takes the new case */
		return rename(realfrom, wanted) ? -errno : 0;
	if (strcmp(wanted, realto) != 0 && lstat(realto, &st) == 0 &&
	    !S_ISDIR(st.st_mode)) {
		/* a file replaced by one named in another case: the name is
		 * the new one's, as NTFS and APFS have it */
		if (rename(realfrom, wanted) != 0)
			return -errno;
		return unlink(realto) ? -errno : 0;
	}
	return rename(realfrom, realto) ? -errno : 0;
}

static int ci_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi)
		return fchmod(fi->fh, mode) ? -errno : 0;
	RESOLVE(path, real);
	return chmod(real, mode) ? -errno : 0;
}

static int ci_chown(const char *path, uid_t uid, gid_t gid,
                    struct fuse_file_info *fi)
{
	if (fi)
		return fchown(fi->fh, uid, gid) ? -errno : 0;
	RESOLVE(path, real);
	return lchown(real, uid, gid) ? -errno : 0;
}

static int ci_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return ftruncate(fi->fh, size) ? -errno : 0;
	RESOLVE(path, real);
	return truncate(real, size) ? -errno : 0;
}

static int ci_utimens(const char *path, const struct timespec tv[2],
                      struct fuse_file_info *fi)
{
	if (fi)
		return futimens(fi->fh, tv) ? -errno : 0;
	RESOLVE(path, real);
	return utimensat(AT_FDCWD, real, tv, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int ci_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd;
	RESOLVE(path, real);
	fd = open(real, fi->flags, mode);
	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int ci_open(const char *path, struct fuse_file_info *fi)
{
	int fd;
	RESOLVE(path, real);
	fd = open(real, fi->flags);
	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int ci_read(const char *path, char *buf, size_t size, off_t offset,
                   struct fuse_file_info *fi)
{
	ssize_t n = pread(fi->fh, buf, size, offset);
	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int ci_write(const char *path, const char *buf, size_t size,
                    off_t offset, struct fuse_file_info *fi)
{
	ssize_t n = pwrite(fi->fh, buf, size, offset);
	(void)path;
	return n < 0 ? -errno : (int)n;
}

static int ci_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return statvfs(backing, st) ? -errno : 0;
}

static int ci_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	return close(fi->fh) ? -errno : 0;
}

static int ci_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	return (datasync ? fdatasync(fi->fh) : fsync(fi->fh)) ? -errno : 0;
}

static void *ci_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* the backing inode numbers: Mercurial tells a case-insensitive file
	 * system by lstat() giving the same result under two spellings */
	cfg->use_ino = 1;
	/* nothing cached by name: the kernel's names are case-sensitive, so
	 * a cached "readme" would outlive its rename to "README" */
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->attr_timeout = 0;
	/* unlinked open files go at once, as on a local disk, not to a
	 * .fuse_hidden file that hg status would see */
	cfg->hard_remove = 1;
	return NULL;
}

static const struct fuse_operations operations = {
    .init = ci_init,
    .getattr = ci_getattr,
    .access = ci_access,
    .readlink = ci_readlink,
    .readdir = ci_readdir,
    .mkdir = ci_mkdir,
    .unlink = ci_unlink,
    .rmdir = ci_rmdir,
    .symlink = ci_symlink,
    .link = ci_link,
    .rename = ci_rename,
    .chmod = ci_chmod,
    .chown = ci_chown,
    .truncate = ci_truncate,
    .utimens = ci_utimens,
    .create = ci_create,
    .open = ci_open,
    .read = ci_read,
    .write = ci_write,
    .statfs = ci_statfs,
    .release = ci_release,
    .fsync = ci_fsync,
};

int main(int argc, char *argv[])
{
#ifdef __linux__
	/* gone with the process that mounted it (caseless.py, killed): FUSE
	 * unmounts on SIGTERM */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
	if (argc < 3 || realpath(argv[1], backing) == NULL) {
		fprintf(stderr, "usage: caseless BACKING MOUNTPOINT [options]\n");
		return 2;
	}
	/* FUSE sees the mount point and the options, not BACKING */
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &operations, NULL);
}
