/* Helpers for the gateway's unit suites (see gwunit.h). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "gateway/tests/gwunit.h"

/* The test's clock. */
static int64_t
gwunit_clock(void *arg)
{
	return ((struct gwunit *)arg)->now_ms;
}

/* Remove a directory and the files in it. */
static void
gwunit_rmdir(const char *dir)
{
	struct dirent	*e;
	DIR		*d;
	char		 path[PATH_MAX];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* Options opening the unit's database (again). */
void
gwunit_opts(struct gwunit *u, struct gwdb_opts *o)
{
	memset(o, 0, sizeof *o);
	o->driver = u->driver;
	o->path = u->db_path;
	o->dsn = u->driver == STORE_POSTGRESQL ? u->pg.dsn : NULL;
	o->sync_normal = true;
	o->busy_ms = 200;
	o->clock = gwunit_clock;
	o->clock_arg = u;
}

/* Is the unit's database PostgreSQL? */
bool
gwunit_pg(const struct gwunit *u)
{
	return u->driver == STORE_POSTGRESQL;
}

/* A fresh directory and database. */
struct gwunit *
gwunit_new_or_skip(bool *skip)
{
	struct gwunit		*u;
	struct gwdb_opts	 o;
	const char		*tmp = getenv("MOSGW_TMP"), *dsn;
	char			*err = NULL, why[512];

	*skip = false;
	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	if ((u = calloc(1, sizeof *u)) == NULL)
		return NULL;
	u->driver = pgdb_driver();
	if (u->driver == STORE_POSTGRESQL &&
	    ((dsn = getenv("MOSGW_PG_DSN")) == NULL || *dsn == '\0')) {
		printf("SKIP: no PostgreSQL: MOSGW_PG_DSN is unset\n");
		*skip = true;
		free(u);
		return NULL;
	}
	snprintf(u->dir, sizeof u->dir, "%s/gwunit.XXXXXX", tmp);
	if (mkdtemp(u->dir) == NULL) {
		perror(u->dir);
		free(u);
		return NULL;
	}
	snprintf(u->db_path, sizeof u->db_path, "%s/test.db", u->dir);
	if (u->driver == STORE_POSTGRESQL &&
	    pgdb_create(&u->pg, why, sizeof why) != 0) {
		fprintf(stderr, "gwunit: PostgreSQL: %s\n", why);
		gwunit_rmdir(u->dir);
		free(u);
		return NULL;
	}
	u->now_ms = 1795946400000LL;	/* 2026-11-29T10:00:00Z */
	gwunit_opts(u, &o);
	if (gwdb_open(&u->db, &o, &err) != QUEUE_OK) {
		fprintf(stderr, "gwunit: %s: %s\n", u->driver ==
		    STORE_POSTGRESQL ? u->pg.name : u->db_path, err);
		free(err);
		pgdb_drop(&u->pg);
		gwunit_rmdir(u->dir);
		free(u);
		return NULL;
	}
	return u;
}

/* A fresh directory and database; NULL also where it would be skipped. */
struct gwunit *
gwunit_new(void)
{
	bool	skip;

	return gwunit_new_or_skip(&skip);
}

/* Close and remove everything. */
void
gwunit_free(struct gwunit *u)
{
	if (u == NULL)
		return;
	gwdb_close(u->db);
	config_free(u->cfg);
	pgdb_drop(&u->pg);
	gwunit_rmdir(u->dir);
	free(u);
}

/* Parse a configuration from text. */
struct gw_config *
gwunit_config(const char *text)
{
	struct gw_config	*cfg;
	char			*errs = NULL;

	if ((cfg = config_load_string("test.ini", text, &errs)) == NULL) {
		fprintf(stderr, "gwunit: configuration:\n%s", errs);
		free(errs);
	}
	return cfg;
}

/* Record the NCSs of a configuration. */
int
gwunit_sync_ncs(struct gwunit *u, const char *text)
{
	config_free(u->cfg);
	if ((u->cfg = gwunit_config(text)) == NULL)
		return -1;
	return gwdb_sync_ncs(u->db, u->cfg) == QUEUE_OK ? 0 : -1;
}

/* Run one SQL statement. */
int
gwunit_exec(struct gwunit *u, const char *sql)
{
	int	rc;

	rc = store_exec(u->db->db, sql);
	if (rc != STORE_OK)
		fprintf(stderr, "gwunit: %s: %s\n", sql,
		    store_errmsg(u->db->db));
	return rc;
}

/* Take back schema version 8 (see gwunit.h). */
int
gwunit_rewind_v8(struct gwunit *u)
{
	int	rc;

	rc = gwunit_exec(u, gwunit_pg(u) ?
	    "DROP TRIGGER delivery_failed_job ON job_events" :
	    "DROP TRIGGER delivery_failed_job");
	return rc != STORE_OK ? rc : gwunit_exec(u, "DROP TABLE "
	    "delivery_failed");
}

/* Take the schema back to a version and open again (see gwunit.h). */
int
gwunit_reopen_at(struct gwunit *u, int version, int64_t *after)
{
	struct gwdb_opts	 o;
	char			 sql[128], *err = NULL;
	int			 rc;

	snprintf(sql, sizeof sql, "UPDATE gw_meta SET value = %d WHERE "
	    "key = 'schema_version'", version);
	if ((rc = gwunit_exec(u, sql)) != STORE_OK)
		return QUEUE_EIO;
	gwdb_close(u->db);
	gwunit_opts(u, &o);
	o.busy_ms = 1000;
	if ((rc = gwdb_open(&u->db, &o, &err)) != QUEUE_OK) {
		fprintf(stderr, "gwunit: open at version %d: %s\n", version,
		    err != NULL ? err : "?");
		free(err);
		return rc;
	}
	*after = gwunit_int(u, "SELECT value FROM gw_meta WHERE key = "
	    "'schema_version'");
	return QUEUE_OK;
}

/* An integer from a query. */
int64_t
gwunit_int(struct gwunit *u, const char *sql)
{
	struct store_stmt	*st;
	int64_t		 v = -1;

	if (store_prepare(u->db->db, sql, 0, &st) != STORE_OK) {
		fprintf(stderr, "gwunit: %s: %s\n", sql,
		    store_errmsg(u->db->db));
		return -1;
	}
	if (store_step(st) == STORE_ROW)
		v = store_column_int64(st, 0);
	store_finalize(st);
	return v;
}

/*
 * cmocka setup: *state = a fresh struct gwunit. Without a PostgreSQL
 * server to run on, the whole suite is skipped (counted as one).
 */
int
gwunit_setup(void **state)
{
	bool	skip;

	if ((*state = gwunit_new_or_skip(&skip)) == NULL && skip) {
		printf("[  SKIPPED ] 1 test(s).\n");
		fflush(stdout);
		exit(0);
	}
	return *state == NULL ? -1 : 0;
}

/* cmocka teardown of gwunit_setup. */
int
gwunit_teardown(void **state)
{
	gwunit_free(*state);
	return 0;
}
