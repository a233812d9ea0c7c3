/*
 * Integration: mosctl events over the HTTP API of the real mosgw. Without
 * --follow it prints exactly what the event log holds (compared with the
 * log in the database) and exits 0; --after, --types, --limit and --json;
 * the API's errors as the other verbs print them. With --follow (a child
 * whose output is read as it comes) it prints what happens after it
 * started, survives a restart of the daemon on the same port without
 * printing an event twice or missing one, and exits 0 on SIGTERM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_READ	"evcli-read-0123456789"
#define TOK_WRITE	"evcli-write-0123456789"
#define WAIT_MS		15000
#define MAX_IDS		512

static const char tokens[] =
    "reader read " TOK_READ "\n"
    "mam write " TOK_WRITE "\n";

/* The rig and the token files (the reader's, a wrong one). */
struct cli {
	struct gwrig	*r;
	char		 read[320], bad[320];
};

static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.sections_extra = "[events]\nkeepalive = 500ms\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

static void
cli_init(void **state, struct cli *c)
{
	c->r = *state;
	assert_int_equal(itutil_write_file(c->r, "rtok", TOK_READ "\n",
	    c->read, sizeof c->read), 0);
	assert_int_equal(itutil_write_file(c->r, "btok",
	    "evcli-read-0123456780\n", c->bad, sizeof c->bad), 0);
}

/* PUT an asset as the writer; asserts 202. */
static void
put_asset(struct cli *c, const char *obj_id)
{
	struct httpc_resp	r;
	char			path[128];

	snprintf(path, sizeof path, "/v1/assets/%s", obj_id);
	if (httpc_once(c->r->gw->api_port, "PUT", path, TOK_WRITE, NULL,
	    "{\"objSlug\":\"evcli\"}", &r) != 0 || r.status != 202)
		fail_msg("PUT %s: %d %s", path, r.status, r.body != NULL ?
		    r.body : "");
	httpc_resp_clear(&r);
}

/* mosctl over the API (itutil_mosctl_url), a failure if not as wanted */
#define run(c, tok, want, ...)						\
	itutil_must(itutil_mosctl_url((c)->r, (tok), (want), __VA_ARGS__))

/*
 * The ids of text lines "ID  TYPE  DATA" (type NULL: any; "-" ids, the
 * gaps, are skipped), into ids: how many.
 */
static size_t
out_ids(const char *out, const char *type, int64_t *ids, size_t max)
{
	const char	*l, *t;
	char		*end;
	size_t		 n = 0, tl = type != NULL ? strlen(type) : 0;

	for (l = out; *l != '\0' && n < max; l = strchr(l, '\n') + 1) {
		if (strchr(l, '\n') == NULL)
			fail_msg("an unfinished line: %s", l);
		ids[n] = strtoll(l, &end, 10);
		if (end == l || strncmp(end, "  ", 2) != 0)
			continue;
		t = end + 2;
		if (type == NULL || (strncmp(t, type, tl) == 0 &&
		    strncmp(t + tl, "  {", 3) == 0))
			n++;
	}
	return n;
}

/* got (n) and want (m) are the same ids. */
static void
same_ids(struct gwrig *r, const int64_t *got, size_t n, const int64_t *want,
    long m, const char *out)
{
	size_t	i;

	if (m < 0 || (size_t)m != n) {
		gwrig_dump(r, "ids", __FILE__, __LINE__);
		fail_msg("%zu events printed, the log has %ld:\n%s", n, m, out);
	}
	for (i = 0; i < n; i++) {
		if (got[i] != want[i])
			fail_msg("event %zu: id %lld printed, %lld in the log",
			    i, (long long)got[i], (long long)want[i]);
	}
}

/* Without --follow: what the log holds, then exit 0. */
static void
test_events_snapshot(void **state)
{
	struct cli	 c;
	int64_t		 got[MAX_IDS], want[MAX_IDS], dl[3];
	char		*out, after[32], *line, *save;
	json_t		*o;
	long		 m;
	size_t		 n, i;
	const char	*obj[] = { "EC-1", "EC-2", "EC-3" };

	cli_init(state, &c);
	for (i = 0; i < 3; i++)
		put_asset(&c, obj[i]);
	GWRIG_CHECK(c.r, gwproc_wait_idle(c.r->gw, c.r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(c.r, gwproc_wait_jobs(c.r->gw, c.r->lane, QUEUE_DONE, 3,
	    WAIT_MS) == 3);

	/* the three deliveries, in order */
	out = run(&c, c.read, 0, "", "events", "--types", "asset.delivered",
	    (char *)NULL);
	n = out_ids(out, "asset.delivered", got, MAX_IDS);
	m = itutil_event_ids(c.r, "asset.delivered", 0, want, MAX_IDS);
	same_ids(c.r, got, n, want, m, out);
	assert_int_equal(n, 3);
	memcpy(dl, got, sizeof dl);
	assert_int_equal(itutil_count(out, "\n"), 3);
	for (i = 0; i < 3; i++) {
		snprintf(after, sizeof after, "\"objID\":\"%s\"", obj[i]);
		assert_non_null(strstr(out, after));
	}
	free(out);

	/* every event, as the log holds them */
	out = run(&c, c.read, 0, "", "events", (char *)NULL);
	n = out_ids(out, NULL, got, MAX_IDS);
	m = itutil_event_ids(c.r, NULL, 0, want, MAX_IDS);
	same_ids(c.r, got, n, want, m, out);
	GWRIG_CHECK(c.r, n >= 12 && (size_t)itutil_count(out, "\n") == n);
	free(out);

	/* --after: from the next one */
	snprintf(after, sizeof after, "%lld", (long long)want[2]);
	out = run(&c, c.read, 0, "", "events", "--after", after,
	    (char *)NULL);
	n = out_ids(out, NULL, got, MAX_IDS);
	same_ids(c.r, got, n, want + 3, m - 3, out);
	free(out);

	/* --limit */
	out = run(&c, c.read, 0, "", "events", "--limit", "2", (char *)NULL);
	n = out_ids(out, NULL, got, MAX_IDS);
	same_ids(c.r, got, n, want, 2, out);
	assert_int_equal(itutil_count(out, "\n"), 2);
	free(out);

	/* --json: one object a line, its data parsed */
	out = run(&c, c.read, 0, "", "events", "--types", "asset.delivered",
	    "--json", (char *)NULL);
	i = 0;
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save), i++) {
		if ((o = json_loads(line, 0, NULL)) == NULL)
			fail_msg("not JSON: %s", line);
		assert_true(i < 3);
		assert_int_equal(json_integer_value(json_object_get(o, "id")),
		    dl[i]);
		assert_string_equal(json_string_value(json_object_get(o,
		    "type")), "asset.delivered");
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(o, "data"), "objID")), obj[i]);
		json_decref(o);
	}
	assert_int_equal(i, 3);
	free(out);
}

/* The API's errors, as the other verbs print them; --db refused. */
static void
test_events_errors(void **state)
{
	struct cli	 c;
	char		*out, *err = NULL;

	cli_init(state, &c);
	free(run(&c, c.read, 64, "422 Invalid parameter: types: ", "events",
	    "--types", "asset.x", (char *)NULL));
	free(run(&c, c.bad, 69, "401 ", "events", (char *)NULL));
	free(run(&c, c.read, 64, "--limit takes a count", "events", "--limit",
	    "0", (char *)NULL));
	free(run(&c, c.read, 64, "--after takes an event id", "events",
	    "--after", "-1", (char *)NULL));
	free(run(&c, c.read, 64, "unexpected 'ls'", "events", "ls",
	    (char *)NULL));
	assert_int_equal(gwproc_mosctl_cmd(c.r->gw, &out, &err, "--db",
	    c.r->gw->db, "events", (char *)NULL), 64);
	if (strstr(err, "events need the daemon") == NULL)
		fail_msg("mosctl --db F events: %s", err);
	free(out);
	free(err);
}

/* mosctl --url URL --token-file TOK events --follow, read as it prints. */
static void
follow_start(struct cli *c, struct gwchild *ch, char *errlog, size_t len)
{
	char	 prog[512], url[64], a1[] = "--url", a2[] = "--token-file";
	char	 a3[] = "events", a4[] = "--follow";
	char	*argv[] = { prog, a1, url, a2, c->read, a3, a4, NULL };

	snprintf(url, sizeof url, "http://127.0.0.1:%u", c->r->gw->api_port);
	snprintf(prog, sizeof prog, "%s/mosctl", gwproc_bindir());
	snprintf(errlog, len, "%s/follow.stderr", c->r->gw->dir);
	GWRIG_CHECK(c->r, gwchild_start(ch, NULL, argv, errlog) == 0);
}

/* A line of the child's holding both words, within ms. */
static void
follow_wait(struct cli *c, struct gwchild *ch, const char *w1,
    const char *w2, int ms)
{
	int64_t		 t0 = ncspeer_now_ms();
	const char	*l;

	while (ncspeer_now_ms() - t0 < ms) {
		if ((l = gwchild_line(ch, w1, 200)) != NULL &&
		    strstr(l, w2) != NULL)
			return;
	}
	gwrig_dump(c->r, "mosctl events --follow", __FILE__, __LINE__);
	fail_msg("no line with %s and %s; it printed:\n%s", w1, w2,
	    ch->buf != NULL ? ch->buf : "");
}

/* SIGTERM: exit 0. */
static void
follow_stop(struct cli *c, struct gwchild *ch)
{
	GWRIG_CHECK(c->r, kill(ch->pid, SIGTERM) == 0);
	assert_int_equal(gwchild_wait(ch, WAIT_MS), 0);
}

/* The ids it printed are those of the log, each once, in order. */
static void
follow_check(struct cli *c, struct gwchild *ch)
{
	int64_t	 got[MAX_IDS], want[MAX_IDS];
	size_t	 n;
	long	 m;

	n = out_ids(ch->buf, NULL, got, MAX_IDS);
	m = itutil_event_ids(c->r, NULL, 0, want, MAX_IDS);
	GWRIG_CHECK(c->r, n > 0 && m >= (long)n);
	/* the log may have more by now; up to the last printed */
	while (m > 0 && want[m - 1] > got[n - 1])
		m--;
	same_ids(c->r, got, n, want, m, ch->buf);
}

/* --follow: the backlog, then what happens, until SIGTERM. */
static void
test_events_follow(void **state)
{
	struct cli	 c;
	struct gwchild	 ch;
	char		 errlog[320];

	cli_init(state, &c);
	put_asset(&c, "FO-0");
	GWRIG_CHECK(c.r, gwproc_wait_idle(c.r->gw, c.r->lane, WAIT_MS) == 0);
	follow_start(&c, &ch, errlog, sizeof errlog);
	follow_wait(&c, &ch, "asset.delivered", "\"FO-0\"", WAIT_MS);
	put_asset(&c, "FO-1");
	follow_wait(&c, &ch, "asset.delivered", "\"FO-1\"", WAIT_MS);
	follow_stop(&c, &ch);
	follow_check(&c, &ch);
	gwchild_clear(&ch);
}

/*
 * --follow across a restart of the daemon (same database, same port): it
 * reconnects with Last-Event-ID and prints what comes after, none twice.
 */
static void
test_events_reconnect(void **state)
{
	struct cli	 c;
	struct gwchild	 ch;
	char		 errlog[320], *err;

	cli_init(state, &c);
	follow_start(&c, &ch, errlog, sizeof errlog);
	put_asset(&c, "RC-1");
	follow_wait(&c, &ch, "asset.delivered", "\"RC-1\"", WAIT_MS);
	GWRIG_CHECK(c.r, gwproc_stop(c.r->gw) == 0);
	GWRIG_CHECK(c.r, gwproc_start(c.r->gw) == 0);
	put_asset(&c, "RC-2");
	/* it tries again after 1, 2, 4 ... s */
	follow_wait(&c, &ch, "asset.delivered", "\"RC-2\"", WAIT_MS * 2);
	follow_stop(&c, &ch);
	follow_check(&c, &ch);
	err = gwproc_read_file(errlog);
	if (strstr(err, "reconnecting in 1 s") == NULL)
		fail_msg("no note of the reconnection: %s", err);
	free(err);
	gwchild_clear(&ch);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_snapshot, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_events_errors, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_events_follow, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_events_reconnect, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
