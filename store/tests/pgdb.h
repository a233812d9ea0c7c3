/*
 * A private PostgreSQL database for one test, on the server named by
 * $MOSGW_PG_DSN (make check starts a throwaway one: tools/pgtest.sh).
 */
#ifndef PGDB_H
#define PGDB_H

#include <stddef.h>

#include "store/store.h"

struct pgdb {
	char	name[64];	/* the database, "mosgw_t_PID_N" */
	char	dsn[1024];	/* $MOSGW_PG_DSN with dbname = name */
};

/*
 * Create a fresh database: 0, or -1 with why in why[] (no server:
 * "MOSGW_PG_DSN is unset", or the server's error).
 */
int	 pgdb_create(struct pgdb *, char *why, size_t whylen);
/* Drop it, ending any session still on it. */
void	 pgdb_drop(struct pgdb *);
/* The backend a suite runs on: $MOSGW_DB_DRIVER, sqlite when unset. */
enum store_driver pgdb_driver(void);

#endif /* PGDB_H */
