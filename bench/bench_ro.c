/*
 * bench_ro: running orders through the real mosgw, from a C NCS on
 * loopback (UTF-8 on the wire), beside a peer measured in the same run.
 *
 *   create   a roCreate of 1,000 items, and one of about 10 MB (10,000
 *            items with metadata), sent on the upper port: time until the
 *            roAck (stored and committed first), mosgw's peak RSS (VmHWM)
 *            after it, and the longest heartbeat round trip on another
 *            connection (lower port) while it was being stored; beside it
 *            the codec alone parsing the same bytes in this process
 *   actions  roElementAction MOVE, one at a time as an NCS sends them
 *            (each waits for its roAck), with synchronous = full and
 *            normal; beside the same number of bare SQLite transactions
 *            (one INSERT each, same synchronous, same directory)
 *
 * Bounded: every wait has a deadline; the whole run takes about 30 s.
 * Environment: MOSGW_BIN, MOSGW_TOP, MOSGW_TMP; BENCH_RO_FULL (actions with
 * FULL, default 300), BENCH_RO_NORMAL (default 2000).
 */
#include "gateway/tests/ncspeer.c"
#include "gateway/tests/gwproc.c"
#include "gateway/tests/itutil.c"


#include "gateway/gateway.h"

#define WAIT_MS		60000
#define MOSID		"mosgw.test"
#define NCSID		"NCSPEER"

static int	msg_id = 1;

/* A roCreate of nstories x per items; meta adds ~700 bytes per item. */
static char *
ro_create_text(const char *ro_id, int nstories, int per, bool meta)
{
	struct sbuf	sb = { NULL, 0, 0 };
	int		s, i;

	sbuf_printf(&sb, "<mos><mosID>" MOSID "</mosID><ncsID>" NCSID
	    "</ncsID><messageID>%d</messageID><roCreate><roID>%s</roID>"
	    "<roSlug>bench</roSlug>", msg_id++, ro_id);
	for (s = 0; s < nstories; s++) {
		sbuf_printf(&sb, "<story><storyID>S%d</storyID><storySlug>"
		    "Story %d</storySlug>", s, s);
		for (i = 0; i < per; i++) {
			sbuf_printf(&sb, "<item><itemID>I%d</itemID><itemSlug>"
			    "Item %d of story %d</itemSlug><objID>OBJ%d</objID>"
			    "<mosID>" MOSID "</mosID><itemChannel>A"
			    "</itemChannel><itemEdStart>0</itemEdStart>"
			    "<itemEdDur>1500</itemEdDur>", i, i, s,
			    (s * per + i) % 5000);
			if (meta)
				sbuf_printf(&sb, "<mosExternalMetadata>"
				    "<mosScope>PLAYLIST</mosScope><mosSchema>"
				    "http://ncs.example/schema/item.dtd"
				    "</mosSchema><mosPayload><graphic><line1>"
				    "Lorem ipsum dolor sit amet, consectetur "
				    "adipiscing elit, sed do eiusmod tempor"
				    "</line1><line2>incididunt ut labore et "
				    "dolore magna aliqua. Ut enim ad minim "
				    "veniam, quis nostrud exercitation</line2>"
				    "<line3>ullamco laboris nisi ut aliquip ex "
				    "ea commodo consequat. Duis aute irure "
				    "dolor in reprehenderit in voluptate velit"
				    "</line3><template id=\"%d\">lower third"
				    "</template><style>news-2026</style>"
				    "<note>esse cillum dolore eu fugiat nulla "
				    "pariatur. Excepteur sint occaecat "
				    "cupidatat non proident, sunt in culpa qui "
				    "officia deserunt mollit anim id est "
				    "laborum</note></graphic></mosPayload>"
				    "</mosExternalMetadata>", i);
			sbuf_puts(&sb, "</item>");
		}
		sbuf_puts(&sb, "</story>");
	}
	sbuf_puts(&sb, "</roCreate></mos>");
	return sb.s;
}

/* mosgw's peak resident set (VmHWM) in MiB; -1 if unknown. */
static double
peak_rss_mib(pid_t pid)
{
	char	 path[64], line[256];
	FILE	*f;
	long	 kb = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb / 1024.0;
}

struct create_result {
	size_t	bytes;
	int	items;
	double	ack_ms;
	double	rss_mib;
	double	hb_max_ms;	/* longest heartbeat round trip meanwhile */
	double	hb_p50_ms;
	double	hb_p99_ms;
	int	hb_count;
	double	parse_ms;	/* the codec alone */
};

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Percentiles of the round trips (sorted here). */
static void
rtt_stats(double *v, int n, struct create_result *cr)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	cr->hb_count = n;
	cr->hb_p50_ms = n > 0 ? v[n / 2] : 0;
	cr->hb_p99_ms = n > 0 ? v[(n * 99) / 100] : 0;
	cr->hb_max_ms = n > 0 ? v[n - 1] : 0;
}

/* n heartbeats on an idle gateway: the baseline round trips. */
static int
idle_run(struct gwrig *r, int low, int n, struct create_result *cr)
{
	double	*v = xcalloc((size_t)n, sizeof *v);
	int64_t	 h0;
	int	 i;

	memset(cr, 0, sizeof *cr);
	for (i = 0; i < n; i++) {
		h0 = ncspeer_now_ms();
		if (gwrig_request(r, low, MOS_T_HEARTBEAT, WAIT_MS) == NULL) {
			free(v);
			return -1;
		}
		v[i] = (double)(ncspeer_now_ms() - h0);
	}
	rtt_stats(v, n, cr);
	free(v);
	return 0;
}

/* One roCreate through the gateway, heartbeats on lower meanwhile. */
static int
create_run(struct gwrig *r, int up, int low, const char *ro_id, int nstories,
    int per, bool meta, struct create_result *cr)
{
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt;
	struct mos_msg			*m = NULL;
	char				*text;
	double				*v;
	int64_t				 t0, t1, h0;
	int				 id, nv = 0, cap = 1024;

	memset(cr, 0, sizeof *cr);
	text = ro_create_text(ro_id, nstories, per, meta);
	cr->bytes = strlen(text);
	cr->items = nstories * per;
	t0 = ncspeer_now_ms();
	if (mos_parse(text, cr->bytes, MOS_ENC_UTF8, MOS_LENIENT, &m,
	    NULL) != MOS_OK) {
		free(text);
		return -1;
	}
	cr->parse_ms = (double)(ncspeer_now_ms() - t0);
	mos_msg_free(m);
	id = msg_id - 1;
	memset(&mt, 0, sizeof mt);
	mt.conn = up;
	mt.message_id = id;
	mt.from = ncspeer_nframes(r->ncs);
	t0 = ncspeer_now_ms();
	if (ncspeer_send_xml(r->ncs, up, text) != 0) {
		free(text);
		return -1;
	}
	free(text);
	/* heartbeats on another connection until the roAck is in */
	v = xcalloc((size_t)cap, sizeof *v);
	while ((f = ncspeer_find(r->ncs, &mt)) == NULL &&
	    ncspeer_conn_open(r->ncs, up) && ncspeer_now_ms() - t0 < WAIT_MS) {
		h0 = ncspeer_now_ms();
		if (gwrig_request(r, low, MOS_T_HEARTBEAT, WAIT_MS) == NULL) {
			free(v);
			return -1;
		}
		if (nv == cap)
			v = xreallocarray(v, (size_t)(cap *= 2), sizeof *v);
		v[nv++] = (double)(ncspeer_now_ms() - h0);
	}
	rtt_stats(v, nv, cr);
	free(v);
	if (f == NULL && (f = ncspeer_wait(r->ncs, &mt, WAIT_MS)) == NULL)
		return -1;
	t1 = ncspeer_now_ms();
	if (f->msg == NULL || f->msg->type != MOS_T_RO_ACK ||
	    strcmp(f->msg->u.ro_ack.ro_status, "OK") != 0) {
		fprintf(stderr, "bench_ro: roCreate not acknowledged OK\n");
		return -1;
	}
	cr->ack_ms = (double)(t1 - t0);
	cr->rss_mib = peak_rss_mib(r->gw->pid);
	return 0;
}

/* n MOVEs, each waiting for its roAck; per second. */
static double
actions_run(struct gwrig *r, int up, int n)
{
	const struct ncspeer_frame	*f;
	char				 body[512], *text;
	int64_t				 t0, t1;
	int				 i, id;

	t0 = ncspeer_now_ms();
	for (i = 0; i < n; i++) {
		/* the first item of story i % 50 to the end of its story */
		snprintf(body, sizeof body, "<roElementAction "
		    "operation=\"MOVE\"><roID>ACT</roID><element_target>"
		    "<storyID>S%d</storyID><itemID></itemID></element_target>"
		    "<element_source><itemID>I%d</itemID></element_source>"
		    "</roElementAction>", i % 50, (i / 50) % 10);
		id = msg_id++;
		text = itutil_frame_text(MOSID, NCSID, id, body);
		f = itutil_send_text(r, up, id, text, WAIT_MS);
		free(text);
		if (f == NULL || f->msg == NULL ||
		    f->msg->type != MOS_T_RO_ACK ||
		    strcmp(f->msg->u.ro_ack.ro_status, "OK") != 0) {
			fprintf(stderr, "bench_ro: action %d not acknowledged"
			    "\n", i);
			return -1;
		}
	}
	t1 = ncspeer_now_ms();
	return n * 1000.0 / (double)(t1 - t0 > 0 ? t1 - t0 : 1);
}

/* n bare SQLite transactions in dir, one INSERT each; per second. */
static double
sqlite_run(const char *dir, bool sync_normal, int n)
{
	struct store		*db;
	struct store_stmt	*st;
	char		 path[512];
	int64_t		 t0, t1;
	int		 i, rc = STORE_OK;

	snprintf(path, sizeof path, "%s/bare-%s.db", dir, sync_normal ?
	    "normal" : "full");
	unlink(path);
	if (store_open_file(&db, path, STORE_OPEN_CREATE, NULL) != STORE_OK)
		return -1;
	store_exec(db, "PRAGMA journal_mode = WAL");
	store_exec(db, sync_normal ? "PRAGMA synchronous = NORMAL" :
	    "PRAGMA synchronous = FULL");
	store_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)");
	store_prepare(db, "INSERT INTO t(v) VALUES(?1)", 0, &st);
	t0 = ncspeer_now_ms();
	for (i = 0; i < n && rc == STORE_OK; i++) {
		store_exec(db, "BEGIN IMMEDIATE");
		store_bind_text(st, 1, "a row like a moved item", -1);
		rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
		store_reset(st);
		if (store_exec(db, "COMMIT") != STORE_OK)
			rc = STORE_ERROR;
	}
	t1 = ncspeer_now_ms();
	store_finalize(st);
	store_close(db);
	unlink(path);
	return rc != STORE_OK ? -1 : n * 1000.0 / (double)(t1 - t0 > 0 ?
	    t1 - t0 : 1);
}

/* The gateway with this synchronous, links up; the upper/lower dials. */
static struct gwrig *
rig(bool sync_normal, int *up, int *low)
{
	struct gwproc_opts	 o;
	struct gwrig		*r;

	memset(&o, 0, sizeof o);
	o.log_level = getenv("BENCH_RO_LOG") != NULL ? getenv("BENCH_RO_LOG") :
	    "info";
	o.database_extra = sync_normal ? "synchronous = normal\n" :
	    "synchronous = full\n";
	o.nncs = 1;
	o.ncs[0].extra = "heartbeat_interval = 5\nack_timeout = 30\n";
	if ((r = gwrig_new_opts(MOS_ENC_UTF8, &o)) == NULL)
		return NULL;
	/* a first frame makes the connections trusted (full frame size) */
	if ((*up = gwrig_dial(r, NCSPEER_UPPER)) <= 0 ||
	    (*low = gwrig_dial(r, NCSPEER_LOWER)) <= 0 ||
	    gwrig_request(r, *up, MOS_T_HEARTBEAT, WAIT_MS) == NULL ||
	    gwrig_request(r, *low, MOS_T_HEARTBEAT, WAIT_MS) == NULL) {
		gwrig_free(r);
		return NULL;
	}
	return r;
}

static int
env_int(const char *name, int def)
{
	const char	*s = getenv(name);

	return s != NULL && atoi(s) > 0 ? atoi(s) : def;
}

int
main(void)
{
	struct create_result	 small, big, idle;
	struct create_result	 seed;
	struct gwrig		*r;
	const char		*tmp = getenv("MOSGW_TMP");
	double			 act[2], bare[2];
	int			 nact[2], up, low, i, rc = 1;

	mos_init();
	nact[0] = env_int("BENCH_RO_FULL", 300);
	nact[1] = env_int("BENCH_RO_NORMAL", 2000);
	if ((r = rig(false, &up, &low)) == NULL)
		return 1;
	if (idle_run(r, low, 1000, &idle) != 0 ||
	    create_run(r, up, low, "SMALL", 100, 10, false, &small) != 0 ||
	    create_run(r, up, low, "BIG", 1000, 10, true, &big) != 0) {
		gwrig_dump(r, "create", __FILE__, __LINE__);
		goto out;
	}
	printf("roCreate, synchronous=full    bytes   items  acked ms  peak RSS"
	    "   codec parse alone | heartbeats on lower meanwhile: "
	    "n p50/p99/max ms\n");
	printf("  idle (no roCreate)              -       -         -         -"
	    "                   - | %5d %4.0f/%4.0f/%4.0f\n", idle.hb_count,
	    idle.hb_p50_ms, idle.hb_p99_ms, idle.hb_max_ms);
	printf("  1,000 items              %8zu %7d %9.0f %5.1f MiB %11.0f ms | "
	    "%5d %4.0f/%4.0f/%4.0f\n", small.bytes, small.items, small.ack_ms,
	    small.rss_mib, small.parse_ms, small.hb_count, small.hb_p50_ms,
	    small.hb_p99_ms, small.hb_max_ms);
	printf("  ~10 MB                   %8zu %7d %9.0f %5.1f MiB %11.0f ms | "
	    "%5d %4.0f/%4.0f/%4.0f\n", big.bytes, big.items, big.ack_ms,
	    big.rss_mib, big.parse_ms, big.hb_count, big.hb_p50_ms,
	    big.hb_p99_ms, big.hb_max_ms);
	for (i = 0; i < 2; i++) {
		if (i == 1) {
			if (gwproc_stop(r->gw) != 0)
				goto out;
			gwrig_free(r);
			if ((r = rig(true, &up, &low)) == NULL)
				return 1;
		}
		if (create_run(r, up, low, "ACT", 50, 10, false, &seed) != 0 ||
		    (act[i] = actions_run(r, up, nact[i])) < 0) {
			gwrig_dump(r, "actions", __FILE__, __LINE__);
			goto out;
		}
		bare[i] = sqlite_run(tmp != NULL ? tmp : "/tmp", i == 1,
		    nact[i]);
	}
	printf("roElementAction MOVE, one at a time (500-item running order)"
	    "\n");
	printf("  synchronous=full    %6d actions %9.0f /s   bare SQLite "
	    "transactions %9.0f /s\n", nact[0], act[0], bare[0]);
	printf("  synchronous=normal  %6d actions %9.0f /s   bare SQLite "
	    "transactions %9.0f /s\n", nact[1], act[1], bare[1]);
	rc = gwproc_stop(r->gw) == 0 ? 0 : 1;
out:
	gwrig_free(r);
	return rc;
}
