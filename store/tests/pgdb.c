/* A private PostgreSQL database per test (pgdb.h). */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/tests/pgdb.h"

/* Run one statement on the server of $MOSGW_PG_DSN. */
static int
pgdb_admin(const char *sql, char *why, size_t whylen)
{
	const char	*dsn = getenv("MOSGW_PG_DSN");
	struct store	*s;
	char		*err = NULL;
	int		 rc;

	if (dsn == NULL || *dsn == '\0') {
		snprintf(why, whylen, "MOSGW_PG_DSN is unset");
		return -1;
	}
	if (store_open(&s, &(struct store_conf){ STORE_POSTGRESQL, NULL, dsn },
	    0, &err) != STORE_OK) {
		snprintf(why, whylen, "%s", err != NULL ? err : "?");
		free(err);
		return -1;
	}
	if ((rc = store_exec(s, sql)) != STORE_OK)
		snprintf(why, whylen, "%s: %s", sql, store_errmsg(s));
	store_close(s);
	return rc == STORE_OK ? 0 : -1;
}

/* $MOSGW_PG_DSN with dbname replaced, as key='value' pairs. */
static int
pgdb_dsn(struct pgdb *d, char *why, size_t whylen)
{
	PQconninfoOption	*opts, *o;
	char			*err = NULL, *p = d->dsn, *end = d->dsn +
				    sizeof d->dsn;
	const char		*v, *c;

	if ((opts = PQconninfoParse(getenv("MOSGW_PG_DSN"), &err)) == NULL) {
		snprintf(why, whylen, "MOSGW_PG_DSN: %s", err != NULL ? err :
		    "out of memory");
		PQfreemem(err);
		return -1;
	}
	for (o = opts; o->keyword != NULL; o++) {
		v = strcmp(o->keyword, "dbname") == 0 ? d->name : o->val;
		if (v == NULL || end - p < 8)
			continue;
		p += snprintf(p, (size_t)(end - p), "%s%s='", p == d->dsn ?
		    "" : " ", o->keyword);
		for (c = v; *c != '\0' && end - p > 3; c++) {
			if (*c == '\'' || *c == '\\')
				*p++ = '\\';
			*p++ = *c;
		}
		p += snprintf(p, (size_t)(end - p), "'");
	}
	PQconninfoFree(opts);
	if (end - p < 2) {
		snprintf(why, whylen, "MOSGW_PG_DSN too long");
		return -1;
	}
	return 0;
}

int
pgdb_create(struct pgdb *d, char *why, size_t whylen)
{
	static unsigned	 n;
	char		 sql[128];

	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "mosgw_t_%ld_%u", (long)getpid(),
	    ++n);
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)",
	    d->name);
	if (pgdb_admin(sql, why, whylen) != 0)
		return -1;
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", d->name);
	if (pgdb_admin(sql, why, whylen) != 0)
		return -1;
	return pgdb_dsn(d, why, whylen);
}

void
pgdb_drop(struct pgdb *d)
{
	char	sql[128], why[256];

	if (d->name[0] == '\0')
		return;
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)",
	    d->name);
	if (pgdb_admin(sql, why, sizeof why) != 0)
		fprintf(stderr, "pgdb: %s\n", why);
	d->name[0] = '\0';
}

enum store_driver
pgdb_driver(void)
{
	const char		*v = getenv("MOSGW_DB_DRIVER");
	enum store_driver	 d;

	if (v == NULL || *v == '\0')
		return STORE_SQLITE;
	if (store_driver_parse(v, &d) != 0) {
		fprintf(stderr, "MOSGW_DB_DRIVER=%s: not sqlite or "
		    "postgresql\n", v);
		exit(1);
	}
	return d;
}
