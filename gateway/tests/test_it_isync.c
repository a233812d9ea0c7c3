/*
 * Integration: the initial sync. A catalog imported through the HTTP API,
 * then a second scripted NCS added by SIGHUP: it receives every asset as a
 * mosObj, a live change made during the sync reaches it before the sync is
 * over, a restart in the middle resumes (without sending everything again)
 * and a finished sync is never run again; initial_sync = none sends only
 * the changes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK		"isync-write-token-0123456789"
#define NASSETS		1500
#define WAIT_MS		60000

static const char tokens[] = "mam write " TOK "\n";

/* The rig, and the NCS added later. */
struct isync_rig {
	struct gwrig	*r;
	struct ncspeer	*n2;
};

static int
setup(void **state)
{
	struct isync_rig	*s;
	struct gwproc_opts	 o;
	struct ncspeer_opts	 po;

	if ((s = calloc(1, sizeof *s)) == NULL)
		return -1;
	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.log_level = "info";
	if (itutil_setup_opts((void **)&s->r, MOS_ENC_UTF16BE, &o) != 0) {
		free(s);
		return -1;
	}
	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCS2";
	po.enc = MOS_ENC_UTF16BE;
	if ((s->n2 = ncspeer_new(&po)) == NULL) {
		itutil_teardown((void **)&s->r);
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int
teardown(void **state)
{
	struct isync_rig	*s = *state;
	int			 rc;

	rc = itutil_teardown((void **)&s->r);
	ncspeer_free(s->n2);
	free(s);
	return rc;
}

/* Import n assets S00000.. through the API; asserts that all are taken. */
static void
import(struct gwrig *r, int n)
{
	struct httpc_resp	 resp;
	char			*body, *req, *p;
	size_t			 cap = (size_t)n * 160 + 1;
	int			 fd, i, len;

	if ((body = malloc(cap)) == NULL)
		fail_msg("out of memory");
	p = body;
	for (i = 0; i < n; i++)
		p += snprintf(p, cap - (size_t)(p - body), "{\"objID\":"
		    "\"S%05d\",\"objSlug\":\"Sync clip %d\",\"objDur\":%d}\n",
		    i, i, 100 + i);
	len = asprintf(&req, "POST /v1/assets:import HTTP/1.1\r\n"
	    "Host: x\r\nAuthorization: Bearer " TOK "\r\n"
	    "Content-Type: application/x-ndjson\r\nContent-Length: %zu\r\n"
	    "\r\n%s", strlen(body), body);
	free(body);
	GWRIG_CHECK(r, len > 0);
	fd = httpc_connect(r->gw->api_port);
	GWRIG_CHECK(r, fd != -1);
	GWRIG_CHECK(r, httpc_write(fd, req, (size_t)len) == 0);
	free(req);
	memset(&resp, 0, sizeof resp);
	GWRIG_CHECK(r, httpc_read(fd, &resp, WAIT_MS) == 0);
	close(fd);
	if (resp.status != 200 || strstr(resp.body, "\"refused\":[]") == NULL)
		fail_msg("import: %d %s", resp.status, resp.body);
	httpc_resp_clear(&resp);
}

/* PUT one asset; asserts the 202. */
static void
put(struct gwrig *r, const char *obj_id, const char *slug)
{
	struct httpc_resp	 resp;
	char			 path[128], body[128];

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	snprintf(body, sizeof body, "{\"objSlug\":\"%s\"}", slug);
	memset(&resp, 0, sizeof resp);
	GWRIG_CHECK(r, httpc_once(r->gw->api_port, "PUT", path, TOK, NULL,
	    body, &resp) == 0);
	if (resp.status != 202)
		fail_msg("PUT %s: %d %s", obj_id, resp.status, resp.body);
	httpc_resp_clear(&resp);
}

/* Add [ncs.n2] for the second peer (extra lines in it) and SIGHUP. */
static void
add_n2(struct isync_rig *s, const char *extra)
{
	struct gwproc_ncs	*n = &s->r->gw->opts.ncs[1];
	long			 mark;

	memset(n, 0, sizeof *n);
	n->name = "n2";
	n->ncs_id = "NCS2";
	n->lower_port = ncspeer_port(s->n2, NCSPEER_LOWER);
	n->upper_port = ncspeer_port(s->n2, NCSPEER_UPPER);
	n->extra = extra;
	s->r->gw->opts.nncs = 2;
	GWRIG_CHECK(s->r, gwproc_write_config(s->r->gw) == 0);
	mark = (long)gwproc_log_size(s->r->gw);
	GWRIG_CHECK(s->r, gwproc_signal(s->r->gw, SIGHUP) == 0);
	GWRIG_CHECK(s->r, gwproc_log_wait(s->r->gw, mark, WAIT_MS,
	    "event=config.reload", "result=applied", (char *)NULL) != -1);
}

/* mosObj frames the second peer received so far. */
static size_t
objs(struct isync_rig *s)
{
	struct ncspeer_match	m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };

	return ncspeer_count(s->n2, &m);
}

/* Wait until n2 has every asset S00000..S<n-1>; asserts it. */
static void
wait_all(struct isync_rig *s, int n)
{
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };
	char			 id[32];
	int			 i;

	for (i = 0; i < n; i++) {
		snprintf(id, sizeof id, "S%05d", i);
		m.obj_id = id;
		if (ncspeer_wait(s->n2, &m, WAIT_MS) == NULL) {
			gwrig_dump(s->r, "asset missing at n2", __FILE__,
			    __LINE__);
			fail_msg("n2 never received %s (%zu mosObj in all)",
			    id, objs(s));
		}
	}
}

/* The state of n2's sync row ("" if none), from the database. */
static void
sync_state(struct isync_rig *s, char *buf, size_t len)
{
	struct store		*db;
	struct store_stmt	*st;

	*buf = '\0';
	GWRIG_CHECK(s->r, (db = gwproc_store(s->r->gw, STORE_OPEN_READONLY)) !=
	    NULL);
	if (store_prepare(db, "SELECT state FROM ncs_sync WHERE "
	    "ncs = 'n2'", 0, &st) == STORE_OK) {
		if (store_step(st) == STORE_ROW)
			snprintf(buf, len, "%s", store_column_text(st, 0));
		store_finalize(st);
	}
	store_close(db);
}

/*
 * An NCS added by SIGHUP receives the whole catalog; a change made while
 * the sync runs goes out before the sync is over.
 */
static void
test_sync_sighup(void **state)
{
	struct isync_rig		*s = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 m = { .type = "mosObj",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*live, *f;
	char				 st[32];
	size_t				 before = 0, i;

	import(s->r, NASSETS);
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 2;		/* a sync of a few seconds */
	ncspeer_set_policy(s->n2, &pol);
	add_n2(s, NULL);
	GWRIG_CHECK(s->r, gwproc_log_wait(s->r->gw, 0, WAIT_MS,
	    "event=ncs.sync", "ncs=n2", "phase=start", (char *)NULL) != -1);
	GWRIG_CHECK(s->r, ncspeer_wait_count(s->n2, &m, 50, WAIT_MS) >= 50);
	put(s->r, "LIVE-1", "A live change");
	m.obj_id = "LIVE-1";
	live = ncspeer_wait(s->n2, &m, WAIT_MS);
	GWRIG_CHECK(s->r, live != NULL);
	/* the sync's mosObj before the live one: not all of them */
	for (i = 0; i < live->seq; i++) {
		f = ncspeer_frame_at(s->n2, i);
		if (f->side == NCSPEER_ACCEPTED &&
		    strcmp(f->type_name, "mosObj") == 0)
			before++;
	}
	print_message("live change after %zu of %d sync mosObj\n", before,
	    NASSETS);
	if (before >= NASSETS)
		fail_msg("the live change came after the whole sync (%zu "
		    "mosObj before it)", before);
	wait_all(s, NASSETS);
	sync_state(s, st, sizeof st);
	assert_string_equal(st, "done");
	/* one mosObj per asset and the live one, none twice */
	assert_int_equal(objs(s), NASSETS + 1);
}

/*
 * A restart in the middle resumes the sync where it was; once done it is
 * never run again.
 */
static void
test_sync_restart(void **state)
{
	struct isync_rig	*s = *state;
	struct ncspeer_policy	 pol;
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };
	char			 st[32];
	size_t			 n;
	long			 mark;

	import(s->r, NASSETS);
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 2;
	ncspeer_set_policy(s->n2, &pol);
	add_n2(s, NULL);
	GWRIG_CHECK(s->r, ncspeer_wait_count(s->n2, &m, 300, WAIT_MS) >= 300);
	GWRIG_CHECK(s->r, gwproc_stop(s->r->gw) == 0);
	sync_state(s, st, sizeof st);
	assert_string_equal(st, "running");
	n = objs(s);
	GWRIG_CHECK(s->r, n < NASSETS);
	GWRIG_CHECK(s->r, gwproc_start(s->r->gw) == 0);
	wait_all(s, NASSETS);
	sync_state(s, st, sizeof st);
	assert_string_equal(st, "done");
	/* resumed, not started again: at most what was in flight twice */
	n = objs(s);
	if (n > NASSETS + 64)
		fail_msg("%zu mosObj for %d assets: the sync started over", n,
		    NASSETS);

	/* A start after it is done sends nothing to n2. */
	GWRIG_CHECK(s->r, gwproc_wait_idle(s->r->gw, "ncs:n2", WAIT_MS) == 0);
	n = objs(s);
	GWRIG_CHECK(s->r, gwproc_stop(s->r->gw) == 0);
	mark = 0;
	GWRIG_CHECK(s->r, gwproc_start(s->r->gw) == 0);
	GWRIG_CHECK(s->r, ncspeer_wait_open(s->n2, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED, 1, WAIT_MS) == 0);
	put(s->r, "AFTER", "After the restart");
	m.obj_id = "AFTER";
	GWRIG_CHECK(s->r, ncspeer_wait(s->n2, &m, WAIT_MS) != NULL);
	assert_int_equal(objs(s), n + 1);
	GWRIG_CHECK(s->r, gwproc_log_count(s->r->gw, mark, "event=ncs.sync",
	    (char *)NULL) == 0);
}

/* initial_sync = none: only the changes from then on. */
static void
test_sync_none(void **state)
{
	struct isync_rig	*s = *state;
	struct ncspeer_match	 m = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED,
				    .obj_id = "LIVE-2" };
	char			 st[32];

	import(s->r, 100);
	add_n2(s, "initial_sync = none\n");
	GWRIG_CHECK(s->r, ncspeer_wait_open(s->n2, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED, 1, WAIT_MS) == 0);
	put(s->r, "LIVE-2", "Only this one");
	GWRIG_CHECK(s->r, ncspeer_wait(s->n2, &m, WAIT_MS) != NULL);
	GWRIG_CHECK(s->r, gwproc_wait_idle(s->r->gw, "ncs:n2", WAIT_MS) == 0);
	assert_int_equal(objs(s), 1);
	sync_state(s, st, sizeof st);
	assert_string_equal(st, "none");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sync_sighup, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sync_restart, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sync_none, setup,
		    teardown),
	};

	mos_init();
	return cmocka_run_group_tests_name("gateway_it_isync", tests, NULL,
	    NULL);
}
