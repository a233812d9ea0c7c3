/*
 * faultvfs: a SQLite VFS shim for the fault tests (never part of mosgw).
 *
 * tools/faultvfs.c builds into a shared object. Loaded with LD_PRELOAD into
 * mosgw or mosctl, its constructor registers a VFS that wraps the default
 * one and becomes the new default; what it does comes from the environment:
 *
 *   MOSGW_FAULTVFS=ioerr-write:N   the N-th xWrite fails (SQLITE_IOERR_WRITE)
 *   MOSGW_FAULTVFS=ioerr-fsync:N   the N-th xSync fails (SQLITE_IOERR_FSYNC)
 *   MOSGW_FAULTVFS=full:N          the N-th xWrite fails (SQLITE_FULL)
 *       with "N+" every call from the N-th on fails, until the file named
 *       by MOSGW_FAULTVFS_CLEAR exists ("space was freed").
 *   MOSGW_FAULTVFS=powerloss       writes reach the file, but the bytes they
 *       overwrite are saved in FILE.undo first, until the next xSync of
 *       that file (the page cache); a power loss is then simulated from
 *       outside: kill every process, faultvfs_power_loss() on the database.
 *   MOSGW_FAULTVFS=powerloss:N     the same, and the N-th xSync never
 *       happens: the process _exit()s there (FAULTVFS_EXIT_POWER).
 *   MOSGW_FAULTVFS_ARM=FILE        failures (not powerloss) only while FILE
 *                                  exists: start clean, then break the disk.
 *   MOSGW_FAULTVFS_LOG=FILE        one line appended each time a fault fires.
 *
 * Counts are per process and over the main database, its WAL and its
 * rollback journal (temporary files are left alone).
 */
#ifndef FAULTVFS_H
#define FAULTVFS_H

#include <stdint.h>

#define FAULTVFS_EXIT_POWER	87	/* exit status of a "power loss" */
#define FAULTVFS_UNDO_SUFFIX	".undo"
#define FAULTVFS_MAGIC		0x46564655u	/* "UFVF" */

/* One undo record, followed by len bytes of old data for a data record. */
struct faultvfs_rec {
	uint32_t	magic;
	uint32_t	kind;		/* 0: size at the epoch's start, 1: data */
	uint64_t	off;		/* data: offset; size: the size */
	uint64_t	len;		/* data: bytes that follow */
};

/*
 * The power loss itself, once no process has the database open: every
 * write since its file's last sync is undone (newest first, then the size
 * is put back), for the database, its WAL and its journal; the shared
 * memory file goes too. Returns the number of bytes undone, -1 on error.
 */
long long	faultvfs_power_loss(const char *db_path);

#endif /* FAULTVFS_H */
