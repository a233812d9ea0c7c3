/*
 * bench_takeover: how long the NCS goes without a gateway when the owner of
 * its links dies. Three mosgw instances on one PostgreSQL database
 * ($MOSGW_PG_DSN, a database of its own), one scripted NCS answering at
 * once, `takeover` left at its default. KILLS times: the owner (read from
 * mosgw_owner) is killed with SIGKILL, an asset is changed at once through
 * another instance's HTTP API, and the bench waits for the new owner's
 * lower link to reach the NCS and for that change's mosObj; the killed
 * instance is started again so that three keep competing. Printed: p50 and
 * max over the kills of kill-to-link and kill-to-mosObj.
 *
 * Without a server the row says "skipped: REASON". Figures only; nothing
 * here asserts a timing. Every wait is bounded, and the whole run stops
 * after RUN_SECS with the kills done so far.
 */
#include "gateway/tests/ncspeer.c"
#include "gateway/tests/gwproc.c"
#include "gateway/tests/httpc.c"
#include "bench/benchpg.c"

#define KILLS		20
#define NGW		3
#define WAIT_MS		30000
#define RUN_SECS	300
#define TOK		"bench-takeover-token-0123456789abcdef"

struct tk {
	struct pgdb	 db;
	PGconn		*c;		/* the bench's look at mosgw_owner */
	struct ncspeer	*ncs;
	struct gwproc	*gw[NGW];
	char		 names[NGW][16];
	char		 extra[NGW][64];
};

static void
sleep_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L },
	    NULL);
}

/* The owner of n1 with an epoch above after: its index, or -1 (timeout). */
static int
tk_owner(struct tk *t, long long after, long long *epoch, int timeout_ms)
{
	int64_t		 end = ncspeer_now_ms() + timeout_ms;
	PGresult	*r;
	int		 i, idx;

	do {
		idx = -1;
		r = PQexec(t->c, "SELECT instance, epoch FROM mosgw_owner "
		    "WHERE ncs = 'n1'");
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
		    (*epoch = atoll(PQgetvalue(r, 0, 1))) > after)
			for (i = 0; i < NGW; i++)
				if (strcmp(PQgetvalue(r, 0, 0), t->names[i]) ==
				    0)
					idx = i;
		PQclear(r);
		if (idx >= 0)
			return idx;
		sleep_ms(10);
	} while (ncspeer_now_ms() < end);
	return -1;
}

/* A lower connection of the NCS newer than conn: its number, or -1. */
static int
tk_lower(struct tk *t, int conn, int timeout_ms)
{
	int64_t	end = ncspeer_now_ms() + timeout_ms;
	int	c;

	do {
		if ((c = ncspeer_conn_of(t->ncs, NCSPEER_LOWER,
		    NCSPEER_ACCEPTED)) > conn)
			return c;
		sleep_ms(2);
	} while (ncspeer_now_ms() < end);
	return -1;
}

/* The three instances (not started) and the NCS. 0 or -1. */
static int
tk_setup(struct tk *t, char *why, size_t len)
{
	struct ncspeer_opts	po;
	struct gwproc_opts	o;
	int			i;

	if (pgdb_create(&t->db, why, len) != 0)
		return -1;
	if (PQstatus(t->c = PQconnectdb(t->db.dsn)) != CONNECTION_OK) {
		snprintf(why, len, "%s", PQerrorMessage(t->c));
		return -1;
	}
	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.bench";
	po.ncs_id = "NCSBENCH";
	if ((t->ncs = ncspeer_new(&po)) == NULL) {
		snprintf(why, len, "the scripted NCS did not start");
		return -1;
	}
	for (i = 0; i < NGW; i++) {
		snprintf(t->names[i], sizeof t->names[i], "tk-%c", 'a' + i);
		snprintf(t->extra[i], sizeof t->extra[i], "instance = %s\n",
		    t->names[i]);
		memset(&o, 0, sizeof o);
		o.mos_id = "mosgw.bench";
		o.pg_dsn = t->db.dsn;
		o.gateway_extra = t->extra[i];
		o.database_extra = "busy_timeout = 5\nhistory = off\n";
		o.log_level = "info";
		o.api_tokens = "bench write " TOK "\n";
		o.nncs = 1;
		o.ncs[0].ncs_id = "NCSBENCH";
		o.ncs[0].lower_port = ncspeer_port(t->ncs, NCSPEER_LOWER);
		o.ncs[0].upper_port = ncspeer_port(t->ncs, NCSPEER_UPPER);
		o.ncs[0].extra = "reconnect_min = 0.1\nreconnect_max = 0.3\n"
		    "initial_sync = none\n";
		if ((t->gw[i] = gwproc_new(&o)) == NULL) {
			snprintf(why, len, "gwproc_new failed");
			return -1;
		}
	}
	return 0;
}

static void
tk_free(struct tk *t)
{
	int	i;

	for (i = 0; i < NGW; i++)
		gwproc_free(t->gw[i]);
	ncspeer_free(t->ncs);
	PQfinish(t->c);
	pgdb_drop(&t->db);
}

/* PUT an asset through instance i's API; the HTTP status (0: none). */
static int
tk_put(struct tk *t, int i, const char *obj_id)
{
	struct httpc_resp	 r;
	char			 path[96];
	int			 fd, st = 0;

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	memset(&r, 0, sizeof r);
	if ((fd = httpc_connect(t->gw[i]->api_port)) == -1)
		return 0;
	if (httpc_do(fd, "PUT", path, TOK, NULL, "{\"objSlug\":\"Takeover\","
	    "\"objDur\":1500,\"objTB\":50}", &r) == 0)
		st = r.status;
	httpc_resp_clear(&r);
	close(fd);
	return st;
}

/*
 * The takeover the instances run with: none of them sets it, so it is the
 * default that `mosgw -D` prints ("takeover = 5"); its value into buf.
 */
static void
tk_takeover(char *buf, size_t len)
{
	char	cmd[600], line[32];
	FILE	*p;

	snprintf(buf, len, "?");
	snprintf(cmd, sizeof cmd, "'%s/mosgw' -D", gwproc_bindir());
	if ((p = popen(cmd, "r")) == NULL)
		return;
	while (fgets(line, sizeof line, p) != NULL)
		if (strncmp(line, "takeover = ", 11) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line + 11);
		}
	pclose(p);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The kills; how many were measured (took_* in ms), -1 on a failure. */
static int
tk_run(struct tk *t, int64_t *link, int64_t *obj)
{
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };
	int64_t			 t_kill, end = ncspeer_now_ms() +
				    RUN_SECS * 1000;
	long long		 epoch = 0, ep;
	char			 id[32];
	int			 i, k, owner, next, conn;

	for (i = 0; i < NGW; i++)
		if (gwproc_start(t->gw[i]) != 0)
			return -1;
	if ((owner = tk_owner(t, 0, &epoch, WAIT_MS)) < 0 ||
	    (conn = tk_lower(t, 0, WAIT_MS)) < 0) {
		fprintf(stderr, "bench_takeover: no owner at the start\n");
		return -1;
	}
	for (k = 0; k < KILLS && ncspeer_now_ms() < end; k++) {
		snprintf(id, sizeof id, "TK%02d", k);
		m.obj_id = id;
		t_kill = ncspeer_now_ms();
		gwproc_kill(t->gw[owner]);
		if (tk_put(t, (owner + 1) % NGW, id) != 202) {
			fprintf(stderr, "bench_takeover: PUT %s refused\n", id);
			return -1;
		}
		conn = tk_lower(t, conn, WAIT_MS);
		link[k] = ncspeer_now_ms() - t_kill;
		if (conn < 0 || (next = tk_owner(t, epoch, &ep, WAIT_MS)) < 0) {
			fprintf(stderr, "bench_takeover: no new owner after "
			    "kill %d\n", k + 1);
			return -1;
		}
		if (ncspeer_wait(t->ncs, &m, WAIT_MS) == NULL) {
			fprintf(stderr, "bench_takeover: %s not delivered\n",
			    id);
			return -1;
		}
		obj[k] = ncspeer_find(t->ncs, &m)->t_ms - t_kill;
		epoch = ep;
		if (gwproc_start(t->gw[owner]) != 0)
			return -1;
		owner = next;
	}
	return k;
}

int
main(void)
{
	struct tk	 t;
	const char	*why;
	int64_t		 link[KILLS], obj[KILLS];
	char		 err[512], set[256] = "", tko[64];
	int		 n = -1;

	signal(SIGPIPE, SIG_IGN);
	mos_init();
	setenv("MOSGW_DB_DRIVER", "postgresql", 1);
	memset(&t, 0, sizeof t);
	if ((why = benchpg_why()) == NULL && tk_setup(&t, err, sizeof err) !=
	    0)
		why = err;
	if (why == NULL) {
		benchpg_settings(t.db.dsn, set, sizeof set);
		if ((n = tk_run(&t, link, obj)) <= 0)
			why = "a run failed (see above)";
	}
	tk_takeover(tko, sizeof tko);
	printf("takeover: %d mosgw instances on one PostgreSQL database, one "
	    "scripted NCS; takeover not set, its default (mosgw -D): %s s; "
	    "the owner killed with SIGKILL %d times\n", NGW, tko, KILLS);
	printf("%-44s %10s %10s\n", "ms from the kill", "p50", "max");
	if (why != NULL) {
		printf("%-44s skipped: %s\n", "to the new owner's lower link",
		    why);
	} else {
		qsort(link, (size_t)n, sizeof *link, cmp64);
		qsort(obj, (size_t)n, sizeof *obj, cmp64);
		printf("%-44s %10lld %10lld\n", "to the new owner's lower link",
		    (long long)link[n / 2], (long long)link[n - 1]);
		printf("%-44s %10lld %10lld\n", "to the first mosObj after it",
		    (long long)obj[n / 2], (long long)obj[n - 1]);
		printf("%d kills; after each, one asset changed through another "
		    "instance's API; %s\n", n, set);
	}
	tk_free(&t);
	/* no server is not a failure of the bench; a failed run is */
	return why != NULL && benchpg_why() == NULL ? 1 : 0;
}
