/*
 * metrics.c's exposition, checked by the format checker of promparse.c:
 * label values that need escaping come back as they went in, histogram
 * buckets are cumulative; and the checker itself refuses what the format
 * does not allow (so that the integration test's checks can fail).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "gateway/tests/promparse.h"

/* The exposition of a gateway with no NCS (what metrics_render reads). */
static char *
render(void)
{
	struct gw	gw;
	struct sbuf	sb = { NULL, 0, 0 };

	memset(&gw, 0, sizeof gw);
	TAILQ_INIT(&gw.ncs);
	gw.started_ms = 1764583200000;
	metrics_render(&gw, &sb);
	return sb.s;
}

static void
test_escaping(void **state)
{
	struct prom	 p;
	struct prom_sample *s = NULL;
	char		*text;
	size_t		 i;
	bool		 found;

	(void)state;
	metrics_reset();
	metrics_count(MET_LINK_DOWN, "a\"b", "lower", "x\\y\nz");
	metrics_count(MET_LINK_DOWN, "a\"b", "lower", "x\\y\nz");
	metrics_count(MET_CONN_REFUSED, "upper", "max_conn", NULL);
	metrics_message("mosObj", HISTORY_OUT);
	metrics_message("no-such-type", HISTORY_IN);
	text = render();
	if (prom_parse(&p, text, "mosgw_") != 0)
		fail_msg("line %d: %s\n%s", p.line, p.err, text);
	for (i = 0; i < p.n; i++)
		if (strcmp(p.s[i].name, "mosgw_link_down_total") == 0)
			s = &p.s[i];
	assert_non_null(s);
	assert_int_equal(s->nl, 3);
	assert_string_equal(s->lvals[0], "a\"b");
	assert_string_equal(s->lvals[2], "x\\y\nz");
	assert_true(s->value == 2);
	assert_true(strstr(text, "reason=\"x\\\\y\\nz\"") != NULL);
	assert_true(prom_get(&p, "mosgw_connections_refused_total",
	    "port=upper,reason=max_conn", &found) == 1 && found);
	assert_true(prom_get(&p, "mosgw_messages_total",
	    "type=mosObj,direction=out", &found) == 1 && found);
	assert_true(prom_get(&p, "mosgw_messages_total",
	    "type=unknown,direction=in", &found) == 1 && found);
	/* nothing from the database before the first refresh */
	prom_get(&p, "mosgw_history_size_bytes", "", &found);
	assert_false(found);
	prom_free(&p);
	free(text);
	metrics_reset();
}

static void
test_histogram(void **state)
{
	struct prom	 p;
	char		*text;
	bool		 found;

	(void)state;
	metrics_reset();
	metrics_observe(MET_ACK_LATENCY, "n1", 0.003);
	metrics_observe(MET_ACK_LATENCY, "n1", 0.2);
	metrics_observe(MET_ACK_LATENCY, "n1", 0.2);
	metrics_observe(MET_ACK_LATENCY, "n1", 60);
	text = render();
	if (prom_parse(&p, text, "mosgw_") != 0)
		fail_msg("line %d: %s\n%s", p.line, p.err, text);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=0.005", &found) == 1 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=0.1", &found) == 1 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=0.25", &found) == 3 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=10", &found) == 3 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_bucket",
	    "ncs=n1,le=+Inf", &found) == 4 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_count", "ncs=n1",
	    &found) == 4 && found);
	assert_true(prom_get(&p, "mosgw_ack_latency_seconds_sum", "ncs=n1",
	    &found) > 60.4 && found);
	prom_free(&p);
	free(text);
	metrics_reset();
}

/* The checker refuses each of these. */
static void
test_checker(void **state)
{
	static const char *const bad[] = {
		"mosgw_x_total 1\n",				/* no TYPE */
		"# TYPE mosgw_x counter\nmosgw_x 1\n",		/* _total */
		"# TYPE mosgw_x_total counter\nmosgw_x_total{a=\"\\t\"} 1\n",
		"# TYPE mosgw_x_total counter\nmosgw_x_total{a=\"b} 1\n",
		"# TYPE mosgw_x_total counter\nmosgw_x_total{1a=\"b\"} 1\n",
		"# TYPE mosgw_x_total counter\nmosgw_x_total{a=b} 1\n",
		"# TYPE mosgw_x_total counter\n"
		    "mosgw_x_total{a=\"1\",a=\"2\"} 1\n",	/* label twice */
		"# TYPE mosgw_x_total counter\nmosgw_x_total one\n",
		"# TYPE mosgw_x_total counter\nmosgw_x_total 1\n"
		    "mosgw_x_total 2\n",			/* twice */
		"# TYPE mosgw_a gauge\nmosgw_a 1\n# TYPE mosgw_b gauge\n"
		    "mosgw_b 1\nmosgw_a 2\n",			/* split */
		"# TYPE other gauge\nother 1\n",		/* prefix */
		"# TYPE mosgw_x_total counter\nmosgw_x_total 1",	/* \n */
		"# TYPE mosgw_h histogram\nmosgw_h_bucket{le=\"1\"} 2\n"
		    "mosgw_h_bucket{le=\"2\"} 1\nmosgw_h_bucket{le=\"+Inf\"} 2\n"
		    "mosgw_h_sum 1\nmosgw_h_count 2\n",	/* not cumulative */
		"# TYPE mosgw_h histogram\nmosgw_h_bucket{le=\"1\"} 2\n"
		    "mosgw_h_sum 1\nmosgw_h_count 2\n",	/* no +Inf */
		"# TYPE mosgw_h histogram\nmosgw_h_bucket{le=\"+Inf\"} 2\n"
		    "mosgw_h_count 2\n",			/* no _sum */
		"# TYPE mosgw_h histogram\nmosgw_h_bucket{le=\"+Inf\"} 3\n"
		    "mosgw_h_sum 1\nmosgw_h_count 2\n",	/* count */
	};
	static const char good[] =
	    "# HELP mosgw_h A \"histogram\".\n# TYPE mosgw_h histogram\n"
	    "mosgw_h_bucket{a=\"x\\\"y\",le=\"1\"} 1\n"
	    "mosgw_h_bucket{a=\"x\\\"y\",le=\"+Inf\"} 2\n"
	    "mosgw_h_sum{a=\"x\\\"y\"} 3.5\nmosgw_h_count{a=\"x\\\"y\"} 2\n"
	    "# TYPE mosgw_g gauge\nmosgw_g NaN\n";
	struct prom	p;
	size_t		i;

	(void)state;
	for (i = 0; i < nitems(bad); i++) {
		if (prom_parse(&p, bad[i], "mosgw_") == 0)
			fail_msg("accepted: %s", bad[i]);
		prom_free(&p);
	}
	if (prom_parse(&p, good, "mosgw_") != 0)
		fail_msg("line %d: %s", p.line, p.err);
	prom_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_checker),
	};

	return cmocka_run_group_tests_name("gateway_metrics", tests, NULL,
	    NULL);
}
