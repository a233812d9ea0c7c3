/*
 * gwunit: small helpers shared by the gateway's unit suites (test_config,
 * test_catalog, test_msgid, test_history, test_reply): a temporary
 * directory under $MOSGW_TMP, a database in it with a clock the test moves,
 * and a configuration built from a string. With MOSGW_DB_DRIVER=postgresql
 * the database is a private one on the server of $MOSGW_PG_DSN
 * (store/tests/pgdb.h), dropped at the end; without a server the tests
 * are skipped, saying so.
 */
#ifndef GWUNIT_H
#define GWUNIT_H

#include <stdint.h>

#include "gateway/gateway.h"
#include "store/tests/pgdb.h"

struct gwunit {
	char			 dir[256];	/* mkdtemp directory */
	char			 db_path[300];	/* sqlite */
	enum store_driver	 driver;
	struct pgdb		 pg;		/* postgresql */
	struct gwdb		*db;
	int64_t			 now_ms;	/* the database's clock */
	struct gw_config	*cfg;
};

/*
 * A fresh directory and database; NULL on failure (printed). On
 * PostgreSQL without $MOSGW_PG_DSN, NULL with *skip set (printed "SKIP:").
 */
struct gwunit	*gwunit_new_or_skip(bool *skip);
struct gwunit	*gwunit_new(void);
/* Options opening the unit's database again (clock included). */
void		 gwunit_opts(struct gwunit *, struct gwdb_opts *);
/* Is the unit's database PostgreSQL? */
bool		 gwunit_pg(const struct gwunit *);
/* Close the database and remove the directory and everything in it. */
void		 gwunit_free(struct gwunit *);
/* cmocka setup (skips the suite without a server) and teardown. */
int		 gwunit_setup(void **state);
int		 gwunit_teardown(void **state);
/* Parse a configuration text ("[gateway] ..."); errors printed. */
struct gw_config *gwunit_config(const char *text);
/* Record the NCSs of a configuration in the unit's database. */
int		 gwunit_sync_ncs(struct gwunit *, const char *config_text);
/* One SQL statement on the unit's database; returns the STORE_* code. */
int		 gwunit_exec(struct gwunit *, const char *sql);
/* The first column of the first row of a query as an integer (-1 if none). */
int64_t		 gwunit_int(struct gwunit *, const char *sql);
/*
 * Drop what schema version 8 made (delivery_failed and its trigger), for
 * the tests that take the schema back to an older version and open again.
 */
int		 gwunit_rewind_v8(struct gwunit *);	/* STORE_* */
/*
 * Set the schema version to version, close the unit's database and open
 * it again (the migrations after version run): QUEUE_OK, or the failure
 * with its text printed. The schema version after it in *after.
 */
int		 gwunit_reopen_at(struct gwunit *, int version, int64_t *after);

#endif /* GWUNIT_H */
