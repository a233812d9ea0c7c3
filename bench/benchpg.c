/*
 * benchpg: what the PostgreSQL parts of the benchmarks share (included by
 * them, as they include the tests' rig). bench/run.sh starts one throwaway
 * cluster for the run (tools/pgtest.sh) and exports MOSGW_PG_DSN, or says
 * in MOSGW_BENCH_NOPG why there is none.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NULL when there is a server ($MOSGW_PG_DSN), else why not. */
static const char *
benchpg_why(void)
{
	const char	*dsn = getenv("MOSGW_PG_DSN");
	const char	*why = getenv("MOSGW_BENCH_NOPG");

	if (dsn != NULL && *dsn != '\0')
		return NULL;
	if (why != NULL && *why != '\0')
		return why;
	return "MOSGW_PG_DSN is unset (make bench starts a cluster)";
}

/*
 * The server's durability settings, e.g. "PostgreSQL 15, fsync on,
 * synchronous_commit on", into buf (what the server said on failure).
 */
static void
benchpg_settings(const char *dsn, char *buf, size_t len)
{
	static const char *const names[] = { "fsync", "synchronous_commit" };
	PGconn		*c = PQconnectdb(dsn);
	PGresult	*r;
	char		 sql[64];
	size_t		 i, off;

	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(buf, len, "PostgreSQL: %s", PQerrorMessage(c));
		PQfinish(c);
		return;
	}
	off = (size_t)snprintf(buf, len, "PostgreSQL %d",
	    PQserverVersion(c) / 10000);
	for (i = 0; i < sizeof names / sizeof *names && off < len; i++) {
		snprintf(sql, sizeof sql, "SHOW %s", names[i]);
		r = PQexec(c, sql);
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
			off += (size_t)snprintf(buf + off, len - off, ", %s %s",
			    names[i], PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	PQfinish(c);
}
