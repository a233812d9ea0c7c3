/*
 * faultvfs: the SQLite VFS shim of the fault tests, as an LD_PRELOAD shared
 * object (see faultvfs.h for what the environment selects). Thread safe:
 * mosgw writes from two threads.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tools/faultvfs.h"

enum fault {
	F_NONE = 0,
	F_IOERR_WRITE,
	F_IOERR_FSYNC,
	F_FULL,
	F_POWERLOSS,
};

struct ffile {
	sqlite3_file	 base;
	sqlite3_file	*real;
	bool		 watched;	/* main db, WAL or journal */
	int		 undo;		/* powerloss: FILE.undo, else -1 */
	char		*path;
};

static sqlite3_vfs		*real_vfs;
static sqlite3_vfs		 fault_vfs;
static pthread_mutex_t		 mtx = PTHREAD_MUTEX_INITIALIZER;
static enum fault		 fault;
static long			 fault_at;	/* the N of the call to fail */
static bool			 fault_on;	/* every call from N on */
static long			 nwrites, nsyncs;
static const char		*clear_path;
static const char		*arm_path;
static const char		*log_path;

/* Append a line to MOSGW_FAULTVFS_LOG. */
static void
flog(const char *what, long n, const char *path)
{
	FILE	*f;

	if (log_path == NULL || (f = fopen(log_path, "a")) == NULL)
		return;
	fprintf(f, "faultvfs pid=%d fault=%s call=%ld file=%s\n", (int)getpid(),
	    what, n, path != NULL ? path : "?");
	fclose(f);
}

/* Whether call n of this kind fails now. */
static bool
fires(long n)
{
	if (arm_path != NULL && access(arm_path, F_OK) != 0)
		return false;
	if (clear_path != NULL && access(clear_path, F_OK) == 0)
		return false;
	return n == fault_at || (fault_on && n > fault_at);
}

/* Save what [off, off + len) holds now, before it is overwritten. */
static int
undo_save(struct ffile *f, sqlite3_int64 off, sqlite3_int64 len)
{
	struct faultvfs_rec	 r;
	struct stat		 st;
	char			*buf;
	ssize_t			 got = 0;
	int			 fd, rc = 0;

	if ((fd = open(f->path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) == -1 || lseek(f->undo, 0, SEEK_END) == -1) {
		close(fd);
		return -1;
	}
	/* The epoch's first record: the size to go back to. */
	if (lseek(f->undo, 0, SEEK_END) == 0) {
		memset(&r, 0, sizeof r);
		r.magic = FAULTVFS_MAGIC;
		r.kind = 0;
		r.off = (uint64_t)st.st_size;
		if (write(f->undo, &r, sizeof r) != (ssize_t)sizeof r)
			rc = -1;
	}
	if (off < st.st_size && len > 0) {
		if (off + len > st.st_size)
			len = st.st_size - off;
		if ((buf = malloc(sizeof r + (size_t)len)) == NULL) {
			close(fd);
			return -1;
		}
		got = pread(fd, buf + sizeof r, (size_t)len, off);
		if (got < 0)
			got = 0;
		memset(&r, 0, sizeof r);
		r.magic = FAULTVFS_MAGIC;
		r.kind = 1;
		r.off = (uint64_t)off;
		r.len = (uint64_t)got;
		memcpy(buf, &r, sizeof r);
		if (write(f->undo, buf, sizeof r + (size_t)got) !=
		    (ssize_t)(sizeof r + (size_t)got))
			rc = -1;
		free(buf);
	}
	close(fd);
	return rc;
}

static int
f_close(sqlite3_file *p)
{
	struct ffile	*f = (struct ffile *)p;
	int		 rc;

	rc = f->real->pMethods->xClose(f->real);
	if (f->undo != -1)
		close(f->undo);
	free(f->path);
	return rc;
}

static int
f_read(sqlite3_file *p, void *buf, int n, sqlite3_int64 off)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xRead(f->real, buf, n, off);
}

static int
f_write(sqlite3_file *p, const void *buf, int n, sqlite3_int64 off)
{
	struct ffile	*f = (struct ffile *)p;
	long		 k;
	int		 rc;

	if (!f->watched)
		return f->real->pMethods->xWrite(f->real, buf, n, off);
	pthread_mutex_lock(&mtx);
	k = ++nwrites;
	if ((fault == F_IOERR_WRITE || fault == F_FULL) && fires(k)) {
		pthread_mutex_unlock(&mtx);
		flog(fault == F_FULL ? "full" : "ioerr-write", k, f->path);
		return fault == F_FULL ? SQLITE_FULL : SQLITE_IOERR_WRITE;
	}
	pthread_mutex_unlock(&mtx);
	if (f->undo == -1)
		return f->real->pMethods->xWrite(f->real, buf, n, off);
	/* Another process may sync the same file: one at a time. */
	flock(f->undo, LOCK_EX);
	if (undo_save(f, off, n) != 0)
		rc = SQLITE_IOERR_WRITE;
	else
		rc = f->real->pMethods->xWrite(f->real, buf, n, off);
	flock(f->undo, LOCK_UN);
	return rc;
}

static int
f_truncate(sqlite3_file *p, sqlite3_int64 size)
{
	struct ffile	*f = (struct ffile *)p;
	struct stat	 st;
	int		 rc;

	if (f->undo == -1)
		return f->real->pMethods->xTruncate(f->real, size);
	flock(f->undo, LOCK_EX);
	if (stat(f->path, &st) == 0 && st.st_size > size &&
	    undo_save(f, size, st.st_size - size) != 0)
		rc = SQLITE_IOERR_TRUNCATE;
	else
		rc = f->real->pMethods->xTruncate(f->real, size);
	flock(f->undo, LOCK_UN);
	return rc;
}

static int
f_sync(sqlite3_file *p, int flags)
{
	struct ffile	*f = (struct ffile *)p;
	long		 k;
	int		 rc;

	if (!f->watched)
		return f->real->pMethods->xSync(f->real, flags);
	pthread_mutex_lock(&mtx);
	k = ++nsyncs;
	if (fault == F_IOERR_FSYNC && fires(k)) {
		pthread_mutex_unlock(&mtx);
		flog("ioerr-fsync", k, f->path);
		return SQLITE_IOERR_FSYNC;
	}
	if (fault == F_POWERLOSS && k == fault_at) {
		flog("powerloss", k, f->path);
		_exit(FAULTVFS_EXIT_POWER);	/* the sync never happens */
	}
	pthread_mutex_unlock(&mtx);
	if (f->undo == -1)
		return f->real->pMethods->xSync(f->real, flags);
	/* Durable now: the undo log of this file starts over. */
	flock(f->undo, LOCK_EX);
	rc = f->real->pMethods->xSync(f->real, flags);
	if (rc == SQLITE_OK && ftruncate(f->undo, 0) == -1)
		rc = SQLITE_IOERR_FSYNC;
	flock(f->undo, LOCK_UN);
	return rc;
}

static int
f_size(sqlite3_file *p, sqlite3_int64 *size)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xFileSize(f->real, size);
}

static int
f_lock(sqlite3_file *p, int l)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xLock(f->real, l);
}

static int
f_unlock(sqlite3_file *p, int l)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xUnlock(f->real, l);
}

static int
f_check_lock(sqlite3_file *p, int *out)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int
f_fcntl(sqlite3_file *p, int op, void *arg)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xFileControl(f->real, op, arg);
}

static int
f_sector(sqlite3_file *p)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xSectorSize(f->real);
}

static int
f_devchar(sqlite3_file *p)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int
f_shm_map(sqlite3_file *p, int pg, int pgsz, int extend, void volatile **pp)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, pp);
}

static int
f_shm_lock(sqlite3_file *p, int off, int n, int flags)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xShmLock(f->real, off, n, flags);
}

static void
f_shm_barrier(sqlite3_file *p)
{
	struct ffile	*f = (struct ffile *)p;

	f->real->pMethods->xShmBarrier(f->real);
}

static int
f_shm_unmap(sqlite3_file *p, int del)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xShmUnmap(f->real, del);
}

static int
f_fetch(sqlite3_file *p, sqlite3_int64 off, int n, void **pp)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xFetch(f->real, off, n, pp);
}

static int
f_unfetch(sqlite3_file *p, sqlite3_int64 off, void *pg)
{
	struct ffile	*f = (struct ffile *)p;

	return f->real->pMethods->xUnfetch(f->real, off, pg);
}

static const sqlite3_io_methods f_methods = {
	3, f_close, f_read, f_write, f_truncate, f_sync, f_size, f_lock,
	f_unlock, f_check_lock, f_fcntl, f_sector, f_devchar, f_shm_map,
	f_shm_lock, f_shm_barrier, f_shm_unmap, f_fetch, f_unfetch
};

static int
f_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *p, int flags,
    int *out)
{
	struct ffile	*f = (struct ffile *)p;
	char		*upath;
	int		 rc;

	(void)vfs;
	memset(f, 0, sizeof *f);
	f->real = (sqlite3_file *)(f + 1);
	f->undo = -1;
	rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out);
	if (rc != SQLITE_OK) {
		f->base.pMethods = NULL;
		return rc;
	}
	f->base.pMethods = &f_methods;
	f->watched = name != NULL && (flags & (SQLITE_OPEN_MAIN_DB |
	    SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) != 0;
	if (!f->watched)
		return SQLITE_OK;
	f->path = strdup(name);
	if (fault == F_POWERLOSS && f->path != NULL &&
	    asprintf(&upath, "%s%s", name, FAULTVFS_UNDO_SUFFIX) != -1) {
		f->undo = open(upath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC,
		    0600);
		free(upath);
	}
	return SQLITE_OK;
}

static int
f_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	char	*upath;

	(void)vfs;
	/* A deleted WAL or journal has nothing left to undo. */
	if (fault == F_POWERLOSS &&
	    asprintf(&upath, "%s%s", name, FAULTVFS_UNDO_SUFFIX) != -1) {
		(void)unlink(upath);
		free(upath);
	}
	return real_vfs->xDelete(real_vfs, name, sync_dir);
}

static int
f_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int
f_full_path(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *
f_dl_open(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return real_vfs->xDlOpen(real_vfs, name);
}

static void
f_dl_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	real_vfs->xDlError(real_vfs, n, out);
}

static void
(*f_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return real_vfs->xDlSym(real_vfs, h, sym);
}

static void
f_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	real_vfs->xDlClose(real_vfs, h);
}

static int
f_random(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int
f_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return real_vfs->xSleep(real_vfs, us);
}

static int
f_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int
f_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xGetLastError(real_vfs, n, out);
}

static int
f_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

/* Parse MOSGW_FAULTVFS; 0, or -1 when it makes no sense. */
static int
parse_mode(const char *s)
{
	static const struct {
		const char	*name;
		enum fault	 f;
	} names[] = {
		{ "ioerr-write", F_IOERR_WRITE },
		{ "ioerr-fsync", F_IOERR_FSYNC },
		{ "full", F_FULL },
		{ "powerloss", F_POWERLOSS },
	};
	const char	*colon = strchr(s, ':');
	size_t		 len = colon != NULL ? (size_t)(colon - s) : strlen(s);
	char		*end;
	size_t		 i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i].name) == len &&
		    strncmp(s, names[i].name, len) == 0)
			fault = names[i].f;
	if (fault == F_NONE)
		return -1;
	if (colon == NULL)
		return fault == F_POWERLOSS ? 0 : -1;
	errno = 0;
	fault_at = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || fault_at < 1)
		return -1;
	if (*end == '+' && fault != F_POWERLOSS) {
		fault_on = true;
		end++;
	}
	return *end == '\0' ? 0 : -1;
}

__attribute__((constructor)) static void
faultvfs_init(void)
{
	const char	*mode = getenv("MOSGW_FAULTVFS");

	if (mode == NULL || *mode == '\0')
		return;
	if (parse_mode(mode) != 0) {
		fprintf(stderr, "faultvfs: bad MOSGW_FAULTVFS=%s\n", mode);
		_exit(2);
	}
	clear_path = getenv("MOSGW_FAULTVFS_CLEAR");
	arm_path = getenv("MOSGW_FAULTVFS_ARM");
	log_path = getenv("MOSGW_FAULTVFS_LOG");
	if ((real_vfs = sqlite3_vfs_find(NULL)) == NULL) {
		fprintf(stderr, "faultvfs: no default VFS\n");
		_exit(2);
	}
	fault_vfs.iVersion = 2;
	fault_vfs.szOsFile = (int)sizeof(struct ffile) + real_vfs->szOsFile;
	fault_vfs.mxPathname = real_vfs->mxPathname;
	fault_vfs.zName = "faultvfs";
	fault_vfs.xOpen = f_open;
	fault_vfs.xDelete = f_delete;
	fault_vfs.xAccess = f_access;
	fault_vfs.xFullPathname = f_full_path;
	fault_vfs.xDlOpen = f_dl_open;
	fault_vfs.xDlError = f_dl_error;
	fault_vfs.xDlSym = f_dl_sym;
	fault_vfs.xDlClose = f_dl_close;
	fault_vfs.xRandomness = f_random;
	fault_vfs.xSleep = f_sleep;
	fault_vfs.xCurrentTime = f_time;
	fault_vfs.xGetLastError = f_last_error;
	fault_vfs.xCurrentTimeInt64 = f_time64;
	if (sqlite3_vfs_register(&fault_vfs, 1) != SQLITE_OK) {
		fprintf(stderr, "faultvfs: cannot register\n");
		_exit(2);
	}
}
