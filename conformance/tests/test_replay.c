/*
 * mosreplay play: the comparison through the typed model, the capture
 * reader's errors, and the round trip with the real mosgw: a capture taken
 * from mosgw's own history replays against mosgw and passes; after a
 * configuration change that alters a reply it fails with a readable diff.
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

#include "conformance/replay.h"
#include "conformance/tests/rtest.h"

#define ENV	"<mos><mosID>m</mosID><ncsID>n</ncsID><messageID>4</messageID>"

/* Compare expected UTF-8 with a UTF-8 "reply"; the diff in *diff. */
static int
cmp(const char *want, const char *got, const struct cmp_rules *r,
    struct sbuf *diff)
{
	struct cmp_rules	none;

	memset(&none, 0, sizeof none);
	diff->len = 0;
	if (diff->s != NULL)
		diff->s[0] = '\0';
	return cmp_frames(want, got, strlen(got), MOS_ENC_UTF8,
	    r != NULL ? r : &none, diff);
}

/* Field by field: layout, times and messageIDs do not matter; values do. */
static void
test_compare_model(void **state)
{
	struct sbuf	 d = { NULL, 0, 0 };
	struct sbuf	 u16 = { NULL, 0, 0 };
	struct cmp_rules r;
	json_t		*any, *differ;
	const char	*ack = ENV "<mosAck><objID>A</objID><objRev>2</objRev>"
			    "<status>ACK</status><statusDescription>fine"
			    "</statusDescription></mosAck></mos>";

	(void)state;
	/* whitespace, another messageID, UTF-16BE on the wire: equal */
	assert_int_equal(cmp(ack, "<mos>\n <mosID>m</mosID> <ncsID>n</ncsID>"
	    "<messageID>99</messageID>\n<mosAck> <objID>A</objID><objRev>2"
	    "</objRev><status>ACK</status><statusDescription>fine"
	    "</statusDescription></mosAck></mos>", NULL, &d), 0);
	util_utf8_to_utf16be(&u16, ack, strlen(ack));
	memset(&r, 0, sizeof r);
	assert_int_equal(cmp_frames(ack, u16.s, u16.len, MOS_ENC_UTF16BE, &r,
	    &d), 0);
	/* a heartbeat's time is the peer's clock */
	assert_int_equal(cmp(ENV "<heartbeat><time>2020-01-01T00:00:00Z</time>"
	    "</heartbeat></mos>", ENV "<heartbeat><time>2026-12-01T10:00:00,"
	    "123Z</time></heartbeat></mos>", NULL, &d), 0);
	/* a changed value is named with both sides */
	assert_int_equal(cmp(ack, ENV "<mosAck><objID>A</objID><objRev>3"
	    "</objRev><status>NACK</status><statusDescription>fine"
	    "</statusDescription></mosAck></mos>", NULL, &d), 1);
	assert_non_null(strstr(d.s, "body.objRev: expected 2, got 3"));
	assert_non_null(strstr(d.s, "body.status: expected \"ACK\", got "
	    "\"NACK\""));
	/* another message, an absent field */
	assert_int_equal(cmp(ack, ENV "<roAck><roID>A</roID><roStatus>OK"
	    "</roStatus></roAck></mos>", NULL, &d), 1);
	assert_non_null(strstr(d.s, "message: expected \"mosAck\", got "
	    "\"roAck\""));
	assert_int_equal(cmp(ack, ENV "<mosAck><objID>A</objID><objRev>2"
	    "</objRev><status>ACK</status></mosAck></mos>", NULL, &d), 1);
	assert_non_null(strstr(d.s, "body.statusDescription: expected "
	    "\"fine\", got (absent)"));
	/* "any": presence only; "not": must differ */
	any = json_pack("[s]", "statusDescription");
	differ = json_pack("{s:s}", "status", "NACK");
	memset(&r, 0, sizeof r);
	r.any = any;
	r.differ = differ;
	assert_int_equal(cmp(ack, ENV "<mosAck><objID>A</objID><objRev>2"
	    "</objRev><status>ACK</status><statusDescription>other text"
	    "</statusDescription></mosAck></mos>", &r, &d), 0);
	assert_int_equal(cmp(ack, ENV "<mosAck><objID>A</objID><objRev>2"
	    "</objRev><status>NACK</status><statusDescription>x"
	    "</statusDescription></mosAck></mos>", &r, &d), 1);
	assert_non_null(strstr(d.s, "body.status: expected anything but "
	    "\"NACK\", got \"NACK\""));
	/* listed in "any" and left out of the expected frame: either way */
	assert_int_equal(cmp(ENV "<mosAck><objID>A</objID><objRev>2</objRev>"
	    "<status>ACK</status></mosAck></mos>", ENV "<mosAck><objID>A"
	    "</objID><objRev>2</objRev><status>ACK</status>"
	    "<statusDescription>extra</statusDescription></mosAck></mos>", &r,
	    &d), 0);
	/* a reply that does not parse is a failure that says so */
	assert_int_equal(cmp(ack, "<mos><mosID>m</mosID><bad></mos>", NULL,
	    &d), 1);
	assert_non_null(strstr(d.s, "the reply does not parse"));
	json_decref(any);
	json_decref(differ);
	sbuf_free(&d);
	sbuf_free(&u16);
}

/* Bad captures are refused with the file and line named. */
static void
test_capture_errors(void **state)
{
	struct capture	 c;
	char		 path[512], *err;
	const char	*good = "{\"t\":\"2026-11-29T10:06:03.392Z\",\"ncs\":"
			    "\"e\",\"port\":\"lower\",\"dir\":\"in\",\"conn\":1,"
			    "\"messageID\":1,\"type\":\"heartbeat\",\"xml\":"
			    "\"<mos/>\",\"later\":1}\n";
	char		 text[2048];

	(void)state;
	rtest_write_file(path, sizeof path, "cap", good);
	assert_int_equal(capture_load(path, &c, &err), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.f[0].port, GW_PORT_LOWER);
	assert_int_equal(c.f[0].dir, HISTORY_IN);
	assert_int_equal(c.profile, 0);
	capture_free(&c);

	snprintf(text, sizeof text, "%s%s", good, "{\"t\":\"x\"}\n");
	rtest_write_file(path, sizeof path, "cap", text);
	assert_int_equal(capture_load(path, &c, &err), -1);
	assert_non_null(strstr(err, ":2: \"t\" missing or not"));
	free(err);
	snprintf(text, sizeof text, "%s", good);
	memcpy(strstr(text, "lower"), "lowre", 5);
	rtest_write_file(path, sizeof path, "cap", text);
	assert_int_equal(capture_load(path, &c, &err), -1);
	assert_non_null(strstr(err, ":1: \"port\" must be"));
	free(err);
	rtest_write_file(path, sizeof path, "cap", "not json\n");
	assert_int_equal(capture_load(path, &c, &err), -1);
	assert_non_null(strstr(err, ":1: not JSON"));
	free(err);
	rtest_write_file(path, sizeof path, "cap", "");
	assert_int_equal(capture_load(path, &c, &err), -1);
	assert_non_null(strstr(err, "no frames"));
	free(err);
	unlink(path);
}

/* The last line of mosreplay's output that holds needle. */
static const char *
out_has(struct gwchild *ch, const char *needle)
{
	return ch->buf != NULL ? strstr(ch->buf, needle) : NULL;
}

/*
 * Traffic with mosgw, its history exported as a capture, replayed: passes.
 * The same capture against mosgw with another model name: fails, naming
 * the field with both values.
 */
static void
test_history_roundtrip(void **state)
{
	struct gwproc	*gp;
	struct gwchild	 ch;
	char		 dev[128], cap[512], scen[2][1024];
	int		 st;

	(void)state;
	assert_non_null(gp = rtest_gateway("model = Model-A\n"));
	snprintf(dev, sizeof dev, "127.0.0.1:%u:%u:%u", gp->lower_port,
	    gp->upper_port, gp->query_port);
	snprintf(scen[0], sizeof scen[0], "%s/fixtures/scenarios/"
	    "p0-reqmachinfo-lower.jsonl", rtest_top());
	snprintf(scen[1], sizeof scen[1], "%s/fixtures/scenarios/"
	    "p1-mosreqobj.jsonl", rtest_top());
	st = rtest_mosreplay(&ch, "play", scen[0], "--device", dev,
	    "--fast", (char *)NULL);
	assert_int_equal(st, 0);
	gwchild_clear(&ch);
	st = rtest_mosreplay(&ch, "play", scen[1], "--device", dev,
	    (char *)NULL);
	assert_int_equal(st, 0);
	gwchild_clear(&ch);

	/* the history is flushed within a second; stop to be sure */
	assert_int_equal(gwproc_stop(gp), 0);
	snprintf(cap, sizeof cap, "%s/history.jsonl", gp->dir);
	assert_int_equal(gwproc_mosctl(gp, NULL, "history", "export", "-o",
	    cap, (char *)NULL), 0);
	assert_int_equal(gwproc_start(gp), 0);
	st = rtest_mosreplay(&ch, "play", cap, "--device", dev, "--fast",
	    (char *)NULL);
	if (st != 0)
		rtest_print(stderr, "mosreplay", ch.buf);
	assert_int_equal(st, 0);
	assert_non_null(out_has(&ch, "\n2 passed, 0 failed"));
	gwchild_clear(&ch);

	/* a behaviour change: listMachInfo's model differs */
	assert_int_equal(gwproc_stop(gp), 0);
	gp->opts.gateway_extra = "model = Model-B\n";
	assert_int_equal(gwproc_start(gp), 0);
	st = rtest_mosreplay(&ch, "play", cap, "--device", dev, "--fast",
	    (char *)NULL);
	rtest_print(stderr, "mosreplay after the change", ch.buf);
	assert_int_equal(st, 1);
	assert_non_null(out_has(&ch, "FAIL line 2 conn "));
	assert_non_null(out_has(&ch, "lower listMachInfo:\n  body.model: "
	    "expected \"Model-A\", got \"Model-B\"\n"));
	assert_non_null(out_has(&ch, "1 passed, 1 failed"));
	gwchild_clear(&ch);
	assert_int_equal(gwproc_stop(gp), 0);
	gwproc_free(gp);
}

/* No peer listening: a clear failure, exit status 1. */
static void
test_play_no_peer(void **state)
{
	struct gwchild	 ch;
	char		 dev[64], scen[1024];
	int		 st;

	(void)state;
	snprintf(dev, sizeof dev, "127.0.0.1:%u:%u", gwproc_free_port(),
	    gwproc_free_port());
	snprintf(scen, sizeof scen, "%s/fixtures/scenarios/"
	    "p0-heartbeat-lower.jsonl", rtest_top());
	st = rtest_mosreplay(&ch, "play", scen, "--device", dev,
	    "--fast", "--timeout", "2000", (char *)NULL);
	assert_int_equal(st, 1);
	assert_non_null(out_has(&ch, "cannot connect to 127.0.0.1:"));
	assert_non_null(out_has(&ch, "0 passed, 1 failed"));
	gwchild_clear(&ch);
	st = rtest_mosreplay(&ch, "play", scen, "--device", "nohost",
	    (char *)NULL);
	assert_int_equal(st, 64);
	gwchild_clear(&ch);
}

/* A whole file as a string (malloc'd). */
static char *
slurp(const char *path)
{
	char	*s = gwproc_read_file(path);

	assert_non_null(s);
	assert_true(*s != '\0');
	return s;
}

/*
 * --ncs is the mirror of --device: the same capture played from both sides
 * passes on both; a capture that expects another ncsID from the NCS fails
 * on the --ncs side with the field named.
 */
static void
test_play_ncs_mirror(void **state)
{
	struct gwchild	 ncs, dev;
	char		 ports[64], host[80], scen[2][1024], mod[512];
	char		*text, *p;
	uint16_t	 lo = gwproc_free_port(), up = gwproc_free_port();
	int		 i;

	(void)state;
	snprintf(ports, sizeof ports, "%u:%u", lo, up);
	snprintf(host, sizeof host, "127.0.0.1:%u:%u", lo, up);
	snprintf(scen[0], sizeof scen[0], "%s/fixtures/scenarios/"
	    "p0-coalesced-frames.jsonl", rtest_top());
	snprintf(scen[1], sizeof scen[1], "%s/fixtures/scenarios/"
	    "p0-two-sockets-per-port.jsonl", rtest_top());
	for (i = 0; i < 2; i++) {
		assert_int_equal(rtest_mosreplay_start(&ncs, "play",
		    scen[i], "--ncs", ports, "--fast", (char *)NULL), 0);
		assert_non_null(gwchild_line(&ncs, "listening on 127.0.0.1 "
		    "port", 10000));
		assert_int_equal(rtest_mosreplay(&dev, "play", scen[i],
		    "--device", host, "--fast", (char *)NULL), 0);
		assert_int_equal(rtest_mosreplay_wait(&ncs), 0);
		assert_non_null(out_has(&ncs, " passed, 0 failed\n"));
		gwchild_clear(&ncs);
		gwchild_clear(&dev);
	}

	text = slurp(scen[0]);
	/* the first frame the NCS sends, as the --ncs side expects it */
	assert_non_null(p = strstr(text, "NCS.CONFORMANCE"));
	memcpy(p, "NCS.OTHERWISE__", 15);
	rtest_write_file(mod, sizeof mod, "mirror.jsonl", text);
	free(text);
	assert_int_equal(rtest_mosreplay_start(&ncs, "play", mod,
	    "--ncs", ports, "--fast", "--timeout", "3000", (char *)NULL), 0);
	assert_non_null(gwchild_line(&ncs, "listening on", 10000));
	(void)rtest_mosreplay(&dev, "play", scen[0], "--device", host,
	    "--fast", "--timeout", "3000", (char *)NULL);
	assert_int_equal(rtest_mosreplay_wait(&ncs), 1);
	assert_non_null(out_has(&ncs, "FAIL line 1 conn 1 lower heartbeat:\n"
	    "  ncsID: expected \"NCS.OTHERWISE__\", got \"NCS.CONFORMANCE\""));
	gwchild_clear(&ncs);
	gwchild_clear(&dev);
	unlink(mod);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_model),
		cmocka_unit_test(test_capture_errors),
		cmocka_unit_test(test_play_no_peer),
		cmocka_unit_test(test_play_ncs_mirror),
		cmocka_unit_test(test_history_roundtrip),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
