/*
 * Configuration: defaults, every value type, cross-checks, and errors that
 * name FILE:LINE (all of them, not only the first).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/tests/gwunit.h"
#include "gateway/tests/tlscert.h"

#define MINIMAL \
	"[gateway]\n" \
	"mos_id = mosgw.test\n" \
	"[ncs.enps]\n" \
	"ncs_id = ENPS1\n" \
	"host = 127.0.0.1\n"

/* Parse text that must fail; returns the error text (caller frees). */
static char *
must_fail(const char *text)
{
	struct gw_config	*cfg;
	char			*errs = NULL;

	cfg = config_load_string("t.ini", text, &errs);
	assert_null(cfg);
	assert_non_null(errs);
	return errs;
}

/* How many lines an error text has. */
static int
count_lines(const char *s)
{
	int	n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* Every default is applied and documented values hold. */
static void
test_defaults(void **state)
{
	struct gw_config	*cfg;
	const struct ncs_conf	*n;

	(void)state;
	cfg = gwunit_config(MINIMAL);
	assert_non_null(cfg);
	assert_string_equal(cfg->mos_id, "mosgw.test");
	assert_string_equal(cfg->listen, "127.0.0.1");
	assert_int_equal(cfg->lower_port, 10540);
	assert_int_equal(cfg->upper_port, 10541);
	assert_int_equal(cfg->query_port, 10542);
	assert_string_equal(cfg->sw_rev, MOSGW_VERSION);
	assert_int_equal(cfg->max_frame, 16777216);
	assert_int_equal(cfg->pre_handshake_frame, 65536);
	assert_int_equal(cfg->frame_deadline_ms, 30000);
	assert_int_equal(cfg->idle_timeout_ms, 0);
	assert_int_equal(cfg->max_conn_per_port, 8);
	assert_int_equal(cfg->max_conn_per_addr, 16);
	assert_int_equal(cfg->handshake_ms, 10000);
	assert_int_equal(cfg->max_conn, 64);
	assert_int_equal(cfg->output_high_watermark, 1048576);
	assert_int_equal(cfg->pause_ms, 0);
	assert_string_equal(cfg->db_path, "var/mosgw.db");
	assert_int_equal(cfg->sync_normal, 0);
	assert_true(cfg->history);
	assert_int_equal(cfg->history_retention_ms, 604800000LL);
	assert_int_equal(cfg->history_max_bytes, 1LL << 30);
	assert_int_equal(cfg->done_retention_ms, 86400000LL);
	assert_int_equal(cfg->log_level, LL_INFO);
	assert_string_equal(cfg->log_target, "stderr");
	assert_int_equal(cfg->nncs, 1);
	n = config_find_ncs(cfg, "enps");
	assert_non_null(n);
	assert_string_equal(n->ncs_id, "ENPS1");
	assert_int_equal(n->lower_port, 10540);
	assert_int_equal(n->query_port, 0);
	assert_string_equal(n->buddy_host, "");
	assert_int_equal(n->encoding, MOS_ENC_UTF16BE);
	assert_int_equal(n->mode, MOS_LENIENT);
	assert_int_equal(n->heartbeat_ms, 10000);
	assert_int_equal(n->ack_timeout_ms, 5000);
	assert_int_equal(n->retries, 2);
	assert_int_equal(n->reconnect_min_ms, 1000);
	assert_int_equal(n->reconnect_max_ms, 30000);
	assert_int_equal(n->breaker_threshold, 5);
	assert_false(n->hot_standby);
	assert_true(n->publish);
	assert_int_equal(n->max_attempts, 10);
	assert_true(config_ro_status_on(n, "READY"));
	assert_true(config_ro_status_on(n, "NOT READY"));
	assert_false(config_ro_status_on(n, "PLAY"));
	assert_string_equal(n->allow, "hosts, loopback");
	assert_null(config_find_ncs(cfg, "other"));
	config_free(cfg);
}

/* Fractional seconds, size suffixes, booleans, enums, comments, indentation. */
static void
test_values(void **state)
{
	struct gw_config	*cfg;
	const struct ncs_conf	*n;

	(void)state;
	cfg = gwunit_config(
	    "; a comment\n# another\n[gateway]\n"
	    "  mos_id = gw.one   ; inline comment\nmax_frame = 2m\n"
	    "pre_handshake_frame = 64k\nframe_deadline = 0.25\n"
	    "idle_timeout = 0.0001\nmos_req_all_pause_unit = ms\nlisten = ::1\n"
	    "query_port = 0\n[database]\nsynchronous = normal\nhistory = off\n"
	    "[log]\nlevel = debug\n[ncs.a]\nncs_id = A\nhost = 10.0.0.1\n"
	    "buddy_host = 10.0.0.2\nhot_standby = yes\npublish = 0\n"
	    "encoding = utf8\nmode = strict\nheartbeat_interval = 0.2\n"
	    "ro_element_stat = ,READY ,\n"
	    "[ncs.b]\nncs_id = B\nhost = nrcs.example\n"
	    "heartbeat_interval = 0\nro_element_stat =\n");
	assert_non_null(cfg);
	assert_string_equal(cfg->mos_id, "gw.one");
	assert_int_equal(cfg->max_frame, 2 << 20);
	assert_int_equal(cfg->pre_handshake_frame, 65536);
	assert_int_equal(cfg->frame_deadline_ms, 250);
	assert_int_equal(cfg->idle_timeout_ms, 1);	/* rounded up,
	    never 0 */
	assert_int_equal(cfg->pause_ms, 1);
	assert_string_equal(cfg->listen, "::1");
	assert_int_equal(cfg->query_port, 0);
	assert_int_equal(cfg->sync_normal, 1);
	assert_false(cfg->history);
	assert_int_equal(cfg->log_level, LL_DEBUG);
	assert_int_equal(cfg->nncs, 2);
	n = config_find_ncs(cfg, "a");
	assert_true(n->hot_standby);
	assert_false(n->publish);
	assert_int_equal(n->encoding, MOS_ENC_UTF8);
	assert_int_equal(n->mode, MOS_STRICT);
	assert_int_equal(n->heartbeat_ms, 200);
	assert_true(config_ro_status_on(n, "READY"));
	assert_false(config_ro_status_on(n, "NOT READY"));
	n = config_find_ncs(cfg, "b");
	assert_string_equal(n->host, "nrcs.example");
	assert_int_equal(n->heartbeat_ms, 0);
	assert_false(config_ro_status_on(n, "READY"));
	config_free(cfg);
}

/* Each bad value is reported with its own line, all in one pass. */
static void
test_errors_with_lines(void **state)
{
	char	*errs;

	(void)state;
	errs = must_fail(
	    "[gateway]\n"			/* 1 */
	    "mos_id = gw\n"			/* 2 */
	    "lower_port = 70000\n"		/* 3 */
	    "frame_deadline = soon\n"		/* 4 */
	    "max_frame = 12q\n"			/* 5 */
	    "listen = localhost\n"		/* 6 */
	    "colour = blue\n"			/* 7 */
	    "[ncs.x]\n"				/* 8 */
	    "ncs_id = X\n"			/* 9 */
	    "host = h\n"			/* 10 */
	    "encoding = ucs2\n"			/* 11 */
	    "publish = maybe\n"			/* 12 */
	    "retries = -1\n"			/* 13 */
	    "just some words\n"			/* 14 */
	    "[elsewhere]\n"			/* 15 */
	    "a = b\n");				/* 16 */
	assert_non_null(strstr(errs, "t.ini:3: lower_port = '70000': not a "
	    "port"));
	assert_non_null(strstr(errs, "t.ini:4: frame_deadline = 'soon'"));
	assert_non_null(strstr(errs, "t.ini:5: max_frame = '12q'"));
	assert_non_null(strstr(errs, "t.ini:6: listen = 'localhost': not a "
	    "numeric"));
	assert_non_null(strstr(errs, "t.ini:7: unknown key 'colour' in "
	    "[gateway]"));
	assert_non_null(strstr(errs, "t.ini:11: encoding = 'ucs2': must be one "
	    "of: utf16be | utf8"));
	assert_non_null(strstr(errs, "t.ini:12: publish = 'maybe'"));
	assert_non_null(strstr(errs, "t.ini:13: retries = '-1'"));
	assert_non_null(strstr(errs, "t.ini:14: expected 'key = value'"));
	assert_non_null(strstr(errs, "t.ini:15: unknown section [elsewhere]"));
	assert_null(strstr(errs, "t.ini:16:"));	/* reported once,
	    at the header */
	assert_int_equal(count_lines(errs), 10);
	free(errs);
}

/*
 * Strings hold no control characters or bytes that are not UTF-8, and the
 * messages show such bytes as \xNN: they are printable whatever the file.
 */
static void
test_errors_printable(void **state)
{
	struct gw_config	*cfg;
	char			*errs, *p;

	(void)state;
	errs = must_fail(
	    "[gateway]\n"
	    "mos_id = gw\x1b[2J\n"
	    "model = caf\xc3\xa9 \xff\n"
	    "k\x01\x7f = v\n"
	    "[ncs.x]\n"
	    "ncs_id = X\n"
	    "host = h\n");
	assert_non_null(strstr(errs, "t.ini:2: mos_id = 'gw\\x1b[2J': a "
	    "control character or invalid UTF-8 at byte 2"));
	assert_non_null(strstr(errs, "t.ini:3: model = 'caf\xc3\xa9 \\xff'"));
	assert_non_null(strstr(errs, "t.ini:4: unknown key 'k\\x01\\x7f'"));
	for (p = errs; *p != '\0'; p++)
		assert_true(*p == '\n' || (unsigned char)*p >= 0x20);
	free(errs);
	cfg = gwunit_config("[gateway]\nmos_id = gw\nmodel = Caf\xc3\xa9 "
	    "\xe2\x80\x94 \xf0\x9f\x8e\xac\n[ncs.x]\nncs_id = X\nhost = h\n");
	assert_non_null(cfg);
	config_free(cfg);
}

/* Required keys, duplicates, cross-checks. */
static void
test_missing_and_cross_checks(void **state)
{
	char	*errs;

	(void)state;
	errs = must_fail(
	    "[gateway]\n"			/* 1 */
	    "lower_port = 10540\n"		/* 2 */
	    "upper_port = 10540\n"		/* 3 */
	    "[ncs.a]\n"				/* 4 */
	    "ncs_id = SAME\n"			/* 5 */
	    "reconnect_min = 10\n"		/* 6 */
	    "reconnect_max = 5\n"		/* 7 */
	    "ncs_id = AGAIN\n"			/* 8 */
	    "[ncs.b]\n"				/* 9 */
	    "ncs_id = SAME\n"			/* 10 */
	    "host = h\n"			/* 11 */
	    "hot_standby = true\n");		/* 12 */
	assert_non_null(strstr(errs, "t.ini:1: [gateway]: mos_id is required"));
	assert_non_null(strstr(errs, "t.ini:3: [gateway]: lower_port, "
	    "upper_port and query_port must differ"));
	assert_non_null(strstr(errs, "t.ini:4: [ncs.a]: host is required"));
	assert_non_null(strstr(errs, "t.ini:7: [ncs.a]: reconnect_max is less "
	    "than reconnect_min"));
	assert_non_null(strstr(errs, "t.ini:8: duplicate key 'ncs_id' (first "
	    "set on line 5)"));
	assert_non_null(strstr(errs, "t.ini:10: [ncs.b]: ncs_id 'SAME' is "
	    "already used by [ncs.a]"));
	assert_non_null(strstr(errs, "t.ini:12: [ncs.b]: hot_standby needs "
	    "buddy_host"));
	free(errs);

	errs = must_fail("[gateway]\nmos_id = gw\n");
	assert_non_null(strstr(errs, "t.ini: no [ncs.NAME] section"));
	free(errs);

	errs = must_fail(MINIMAL "ro_element_stat = READY, PLAY\n");
	assert_non_null(strstr(errs, "t.ini:6: [ncs.enps]: ro_element_stat "
	    "takes READY and NOT READY"));
	free(errs);

	errs = must_fail("[gateway]\nmos_id = gw\n[ncs.q]\nncs_id = Q\n"
	    "host = h\nupper_port = 11541\nquery_port = 11541\n");
	assert_non_null(strstr(errs, "t.ini:7: [ncs.q]: query_port is the "
	    "same as lower_port or upper_port (11541)"));
	free(errs);

	errs = must_fail(MINIMAL "[ncs.bad name]\nncs_id = Y\n");
	assert_non_null(strstr(errs, "t.ini:6: bad NCS name in [ncs.bad "
	    "name]"));
	free(errs);

	errs = must_fail("mos_id = early\n" MINIMAL);
	assert_non_null(strstr(errs, "t.ini:1: key 'mos_id' outside of any "
	    "section"));
	free(errs);
}

/* [database] driver and dsn: checked together, a password never taken. */
static void
test_database_driver(void **state)
{
	struct gw_config	*cfg;
	char			*errs;

	(void)state;
	cfg = gwunit_config(MINIMAL);
	assert_non_null(cfg);
	assert_int_equal(cfg->db_driver, STORE_SQLITE);
	assert_string_equal(cfg->db_dsn, "");
	config_free(cfg);

	errs = must_fail(MINIMAL "[database]\ndriver = mysql\n");
	assert_non_null(strstr(errs, "t.ini:7: driver = 'mysql': must be one "
	    "of: sqlite | postgresql"));
	free(errs);

	errs = must_fail(MINIMAL "[database]\ndsn = dbname=mosgw\n");
	assert_non_null(strstr(errs, "t.ini:7: [database]: dsn is for driver "
	    "= postgresql"));
	free(errs);

	errs = must_fail(MINIMAL "[database]\ndriver = postgresql\n");
	assert_non_null(strstr(errs, "t.ini:7: [database]: driver = "
	    "postgresql needs a dsn"));
	free(errs);

	/* refused, and the password is not repeated in the error */
	errs = must_fail(MINIMAL "[database]\ndriver = postgresql\n"
	    "dsn = host=db dbname=mosgw password=s3cret\n");
	assert_non_null(strstr(errs, "t.ini:8: [database]: dsn: a password in "
	    "the connection string"));
	assert_null(strstr(errs, "s3cret"));
	free(errs);
	errs = must_fail(MINIMAL "[database]\ndriver = postgresql\n"
	    "dsn = postgresql://mosgw:s3cret@db/mosgw\n");
	assert_non_null(strstr(errs, "t.ini:8: [database]: dsn: a password"));
	assert_null(strstr(errs, "s3cret"));
	free(errs);
	errs = must_fail(MINIMAL "[database]\ndriver = postgresql\n"
	    "dsn = dbname='open\n");
	assert_non_null(strstr(errs, "t.ini:8: [database]: dsn: not a libpq "
	    "connection string"));
	free(errs);

	if (store_driver_available(STORE_POSTGRESQL)) {
		cfg = gwunit_config(MINIMAL "[database]\ndriver = postgresql\n"
		    "dsn = host=/run/postgresql dbname=mosgw\n");
		assert_non_null(cfg);
		assert_int_equal(cfg->db_driver, STORE_POSTGRESQL);
		assert_string_equal(cfg->db_dsn,
		    "host=/run/postgresql dbname=mosgw");
		config_free(cfg);
	} else {
		errs = must_fail(MINIMAL "[database]\ndriver = postgresql\n"
		    "dsn = host=/run/postgresql dbname=mosgw\n");
		assert_non_null(strstr(errs, "t.ini:7: [database]: driver = "
		    "postgresql is not built into this mosgw"));
		free(errs);
	}
}

/* [gateway] instance (the host name by default) and takeover. */
static void
test_instance_takeover(void **state)
{
	struct gw_config	*cfg;
	char			 host[256], text[512], *errs;

	(void)state;
	cfg = gwunit_config(MINIMAL);
	assert_non_null(cfg);
	assert_int_equal(gethostname(host, sizeof host), 0);
	host[sizeof host - 1] = '\0';
	if (config_instance_ok(host))
		assert_string_equal(cfg->instance, host);
	assert_true(cfg->takeover_ms == 5000);
	config_free(cfg);

	cfg = gwunit_config(MINIMAL "[gateway]\ninstance = gw-2.site_a\n"
	    "takeover = 1500ms\n");
	assert_non_null(cfg);
	assert_string_equal(cfg->instance, "gw-2.site_a");
	assert_true(cfg->takeover_ms == 1500);
	config_free(cfg);
	snprintf(text, sizeof text, MINIMAL "[gateway]\ninstance = %.*s\n",
	    64, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaa");
	cfg = gwunit_config(text);
	assert_non_null(cfg);
	assert_int_equal(strlen(cfg->instance), 64);
	config_free(cfg);

	errs = must_fail(MINIMAL "[gateway]\ninstance = gw 2\n");
	assert_non_null(strstr(errs, "t.ini:7: [gateway]: instance \"gw 2\" "
	    "is not a name (1 to 64 of A-Z a-z 0-9 . _ -)"));
	free(errs);
	errs = must_fail(MINIMAL "[gateway]\ninstance = gw/2\n");
	assert_non_null(strstr(errs, "instance \"gw/2\" is not a name"));
	free(errs);
	errs = must_fail(MINIMAL "[gateway]\ninstance =\n");
	assert_non_null(strstr(errs, "t.ini:7: [gateway]: instance \"\" is "
	    "not a name"));
	free(errs);
	snprintf(text, sizeof text, MINIMAL "[gateway]\ninstance = %.*s\n",
	    65, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaa");
	errs = must_fail(text);
	assert_non_null(strstr(errs, "t.ini:7:"));
	free(errs);

	errs = must_fail(MINIMAL "[gateway]\ntakeover = 500ms\n");
	assert_non_null(strstr(errs, "t.ini:7: takeover = '500ms'"));
	assert_non_null(strstr(errs, "1..300 seconds"));
	free(errs);
	errs = must_fail(MINIMAL "[gateway]\ntakeover = 301\n");
	assert_non_null(strstr(errs, "1..300 seconds"));
	free(errs);
	errs = must_fail(MINIMAL "[gateway]\ntakeover = soon\n");
	assert_non_null(strstr(errs, "not a duration"));
	free(errs);
	assert_true(config_instance_ok("a"));
	assert_false(config_instance_ok(""));
	assert_false(config_instance_ok("a:b"));
}

/* A line longer than inih takes is reported, not silently split. */
static void
test_long_line(void **state)
{
	char	text[1024], *errs;

	(void)state;
	snprintf(text, sizeof text, MINIMAL "[gateway]\nmodel = %0250d\n", 7);
	errs = must_fail(text);
	assert_non_null(strstr(errs, "t.ini:7: line too long"));
	assert_int_equal(count_lines(errs), 1);
	free(errs);
}

/* From a file: OK, and a missing file says so. */
static void
test_file(void **state)
{
	struct gwunit		*u = gwunit_new();
	struct gw_config	*cfg;
	char			 path[400], *errs = NULL;
	FILE			*f;

	(void)state;
	assert_non_null(u);
	snprintf(path, sizeof path, "%s/mosgw.ini", u->dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(MINIMAL "bogus = 1\n", f);
	fclose(f);
	cfg = config_load(path, &errs);
	assert_null(cfg);
	assert_non_null(strstr(errs, ":6: unknown key 'bogus' in [ncs.enps]"));
	assert_true(strncmp(errs, path, strlen(path)) == 0);
	free(errs);
	assert_non_null(f = fopen(path, "w"));
	fputs(MINIMAL, f);
	fclose(f);
	cfg = config_load(path, &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->file, path);
	config_free(cfg);
	unlink(path);
	assert_null(config_load(path, &errs));
	assert_non_null(strstr(errs, "No such file"));
	free(errs);
	gwunit_free(u);
}

/* Allow-lists: every form accepted, each mistake named with its line. */
static void
test_allow(void **state)
{
	struct gw_config	*cfg;
	char			*errs;

	(void)state;
	cfg = gwunit_config(MINIMAL "allow = any\n[ncs.b]\nncs_id = B\n"
	    "host = 10.0.0.9\nallow = hosts,10.1.0.0/16 ::1, fd00::/8\n"
	    "[database]\nhistory_max_bytes = 64m\n[gateway]\n"
	    "handshake_timeout = 0.5\nmax_conn_per_addr = 2\n");
	assert_non_null(cfg);
	assert_string_equal(cfg->ncs[0].allow, "any");
	assert_string_equal(cfg->ncs[1].allow,
	    "hosts,10.1.0.0/16 ::1, fd00::/8");
	assert_int_equal(cfg->history_max_bytes, 64 << 20);
	assert_int_equal(cfg->handshake_ms, 500);
	assert_int_equal(cfg->max_conn_per_addr, 2);
	config_free(cfg);

	errs = must_fail(MINIMAL "allow = 10.0.0.1/33\n[ncs.b]\nncs_id = B\n"
	    "host = h\nallow = 10.0.0.1/8\n[ncs.c]\nncs_id = C\nhost = h\n"
	    "allow = nrcs.example\n[ncs.d]\nncs_id = D\nhost = h\n"
	    "allow = ,\n[database]\nhistory_max_bytes = 1k\n");
	assert_int_equal(count_lines(errs), 5);
	assert_non_null(strstr(errs, "t.ini:6: allow = '10.0.0.1/33': "
	    "'10.0.0.1/33': the prefix length must be 0..32"));
	assert_non_null(strstr(errs, "t.ini:10: allow = '10.0.0.1/8': "
	    "'10.0.0.1/8' has bits set past the prefix"));
	assert_non_null(strstr(errs, "t.ini:14: allow = 'nrcs.example': "
	    "'nrcs.example' is not a numeric"));
	assert_non_null(strstr(errs, "t.ini:18: allow = ',': empty"));
	assert_non_null(strstr(errs, "t.ini:20: history_max_bytes"));
	free(errs);
}

/* What mosgw -D prints loads as it is, with every key and its default. */
static void
test_print_defaults(void **state)
{
	struct gw_config	*cfg;
	char			*text = NULL;
	size_t			 len = 0;
	FILE			*f;

	(void)state;
	assert_non_null(f = open_memstream(&text, &len));
	config_print_defaults(f);
	fclose(f);
	assert_non_null(strstr(text, "handshake_timeout = 10\n"));
	assert_non_null(strstr(text, "max_conn_per_addr = 16\n"));
	assert_non_null(strstr(text, "history_max_bytes = 1g\n"));
	assert_non_null(strstr(text, "allow = hosts, loopback\n"));
	assert_non_null(strstr(text, "format = logfmt\n"));
	cfg = gwunit_config(text);
	assert_non_null(cfg);
	assert_string_equal(cfg->ncs[0].allow, "hosts, loopback");
	assert_string_equal(cfg->ncs[0].name, "example");
	config_free(cfg);
	free(text);
}

/* One duration syntax: units, compounds, bare seconds; the rest refused. */
static void
test_durations(void **state)
{
	static const struct {
		const char	*text;
		int64_t		 ms;	/* -1: refused */
	} cases[] = {
		{ "500ms", 500 }, { "10s", 10000 }, { "5m", 300000 },
		{ "24h", 86400000 }, { "7d", 604800000 }, { "1w", 604800000 },
		{ "1h30m", 5400000 }, { "1.5h", 5400000 }, { "30", 30000 },
		{ "0.2", 200 }, { "0", 0 }, { "0.0001", 1 }, { "0s", 0 },
		{ "", -1 }, { "10x", -1 }, { "1m5", -1 }, { "-1", -1 },
		{ "s", -1 }, { "5 m", -1 }, { "5min", -1 }, { "1e3", -1 },
		{ "36500d", 3153600000000LL }, { "40000d", -1 }, { "1..2s", -1 },
	};
	struct gw_config	*cfg;
	int64_t			 ms;
	size_t			 i;

	(void)state;
	for (i = 0; i < nitems(cases); i++) {
		ms = -1;
		if (util_parse_duration(cases[i].text, &ms) != 0)
			ms = -1;
		if (ms != cases[i].ms)
			fail_msg("'%s': %lld, want %lld", cases[i].text,
			    (long long)ms, (long long)cases[i].ms);
	}
	cfg = gwunit_config(MINIMAL "heartbeat_interval = 500ms\n"
	    "ack_timeout = 2m\n[database]\nhistory_retention = 7d\n");
	assert_non_null(cfg);
	assert_int_equal(cfg->ncs[0].heartbeat_ms, 500);
	assert_int_equal(cfg->ncs[0].ack_timeout_ms, 120000);
	assert_int_equal(cfg->history_retention_ms, 7 * 86400000LL);
	config_free(cfg);
}

/* Copies compare equal; a changed key does not. */
static void
test_ncs_equal_dup(void **state)
{
	struct gw_config	*a, *b;
	struct ncs_conf		*d;

	(void)state;
	a = gwunit_config(MINIMAL);
	b = gwunit_config(MINIMAL "retries = 3\n");
	assert_non_null(a);
	assert_non_null(b);
	d = config_ncs_dup(&a->ncs[0]);
	assert_true(config_ncs_equal(d, &a->ncs[0]));
	assert_false(config_ncs_equal(&a->ncs[0], &b->ncs[0]));
	assert_ptr_not_equal(d->ncs_id, a->ncs[0].ncs_id);
	config_ncs_free(d);
	config_free(a);
	config_free(b);
}

/* Load text written to dir/mosgw.ini: the configuration, or NULL and *errs. */
static struct gw_config *
load_file(const struct gwunit *u, const char *text, char **errs)
{
	char	path[400];
	FILE	*f;

	snprintf(path, sizeof path, "%s/mosgw.ini", u->dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	*errs = NULL;
	return config_load(path, errs);
}

/* As load_file, for text that must fail with want in its errors. */
static void
file_fails(const struct gwunit *u, const char *text, const char *want)
{
	char	*errs;

	assert_null(load_file(u, text, &errs));
	assert_non_null(errs);
	if (strstr(errs, want) == NULL)
		fail_msg("expected \"%s\" in: %s", want, errs);
	free(errs);
}

#define HOOK(url, extra) \
	MINIMAL "[webhook.h]\nurl = " url "\nevents = *\nsecret = s\n" extra

/*
 * Webhooks: http and https URLs, cacert relative to the file and loaded
 * at load time; a bad scheme, an unusable cacert, and TLS keys on a
 * plain URL are errors naming their line.
 */
static void
test_webhooks(void **state)
{
	struct gwunit		*u = gwunit_new();
	struct gw_config	*cfg;
	char			 path[400], key[400], *errs;
	FILE			*f;

	(void)state;
	assert_non_null(u);
	cfg = load_file(u, HOOK("https://hooks.example:8443/in", ""), &errs);
	assert_non_null(cfg);
	assert_non_null(cfg->webhooks[0].tls);
	assert_true(cfg->webhooks[0].tls_verify);
	assert_string_equal(cfg->webhooks[0].cacert, "");
	config_free(cfg);
	cfg = load_file(u, HOOK("http://hooks.example/in", ""), &errs);
	assert_non_null(cfg);
	assert_null(cfg->webhooks[0].tls);
	config_free(cfg);

	/* cacert: relative to the file's directory */
	snprintf(path, sizeof path, "%s/ca-key.pem", u->dir);
	snprintf(key, sizeof key, "%s", path);
	snprintf(path, sizeof path, "%s/ca.pem", u->dir);
	assert_int_equal(tlscert_pair(path, key), 0);
	cfg = load_file(u, HOOK("https://127.0.0.1/", "cacert = ca.pem\n"),
	    &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->webhooks[0].cacert, path);
	assert_non_null(cfg->webhooks[0].tls);
	config_free(cfg);
	cfg = load_file(u, HOOK("https://127.0.0.1/", "tls_verify = false\n"),
	    &errs);
	assert_non_null(cfg);
	assert_false(cfg->webhooks[0].tls_verify);
	config_free(cfg);

	file_fails(u, HOOK("ftp://127.0.0.1/", ""), "mosgw.ini:7: "
	    "[webhook.h]: url 'ftp://127.0.0.1/' is not an http:// or "
	    "https://HOST[:PORT]/PATH URL");
	file_fails(u, HOOK("https:///x", ""), "mosgw.ini:7: [webhook.h]: url");
	file_fails(u, HOOK("https://127.0.0.1/", "cacert = none.pem\n"),
	    "mosgw.ini:10: [webhook.h]: cacert: ");
	file_fails(u, HOOK("https://127.0.0.1/", "cacert = none.pem\n"),
	    "none.pem: No such file or directory");
	snprintf(path, sizeof path, "%s/junk.pem", u->dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("not a certificate\n", f);
	fclose(f);
	file_fails(u, HOOK("https://127.0.0.1/", "cacert = junk.pem\n"),
	    "junk.pem: no usable PEM certificate");
	file_fails(u, HOOK("http://127.0.0.1/", "cacert = ca.pem\n"),
	    "mosgw.ini:10: [webhook.h]: cacert is for https:// URLs only");
	file_fails(u, HOOK("http://127.0.0.1/", "tls_verify = false\n"),
	    "mosgw.ini:10: [webhook.h]: tls_verify is for https:// URLs only");
	file_fails(u, HOOK("https://127.0.0.1/", "cacert = ca.pem\n"
	    "tls_verify = false\n"), "mosgw.ini:11: [webhook.h]: tls_verify "
	    "= false ignores the cacert");
	file_fails(u, HOOK("https://127.0.0.1/", "tls_verify = maybe\n"),
	    "mosgw.ini:10:");
	gwunit_free(u);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors_with_lines),
		cmocka_unit_test(test_errors_printable),
		cmocka_unit_test(test_missing_and_cross_checks),
		cmocka_unit_test(test_database_driver),
		cmocka_unit_test(test_instance_takeover),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_ncs_equal_dup),
		cmocka_unit_test(test_allow),
		cmocka_unit_test(test_print_defaults),
		cmocka_unit_test(test_webhooks),
	};

	return cmocka_run_group_tests_name("gateway_config", tests, NULL, NULL);
}
