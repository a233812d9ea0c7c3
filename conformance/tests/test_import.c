/*
 * mosreplay import: packet captures written here with libpcap (Ethernet,
 * IPv4, TCP) hold a UTF-16BE stream on the lower port and a UTF-8 stream on
 * the upper port. The same conversation with its segments reordered and
 * retransmitted (whole and overlapping) imports to the same capture, byte
 * for byte, as the clean one; a stream cut mid-frame and a segment never
 * captured are reported, and nothing after them is invented. The real
 * loopback capture in fixtures/pcap/ imports and replays against mosgw.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/replay.h"
#include "conformance/tests/rtest.h"

#define ENV	"<mos><mosID>dev</mosID><ncsID>ncs</ncsID>"
#define CSEG	37	/* odd: cuts UTF-16 code units */
#define SSEG	29

/* One TCP segment to write. */
struct seg {
	int		 stream;	/* 0 lower, 1 upper */
	bool		 from_server;
	uint32_t	 seq;
	uint8_t		 flags;
	const uint8_t	*data;
	size_t		 len;
	int		 phase;		/* the timestamp, in seconds */
};

struct conv {
	struct sbuf	 c[2], s[2];	/* client and server bytes, per stream */
	struct sbuf	 ctext, stext;
	struct seg	 segs[1024];
	size_t		 n;
};

#define ISN_C	1000u
#define ISN_S	4000000000u	/* wraps around 2^32 */

/* The conversation: requests in UTF-16BE (lower), replies in UTF-8 (upper). */
static void
conv_init(struct conv *cv)
{
	const char	*lower_req = ENV "<messageID>1</messageID><heartbeat>"
			    "<time>2026-11-18T10:00:00,000Z</time></heartbeat>"
			    "</mos>" ENV "<messageID>2</messageID><reqMachInfo/>"
			    "</mos>\r\n" ENV "<messageID>3</messageID>"
			    "<mosReqObj><objID>Ünïcödé €</objID></mosReqObj>"
			    "</mos>";
	const char	*lower_rep = ENV "<messageID>1</messageID><heartbeat>"
			    "<time>2026-11-18T10:00:01,000Z</time></heartbeat>"
			    "</mos>";
	const char	*upper_req = ENV "<messageID>9</messageID><roReq><roID>"
			    "RO-1</roID></roReq></mos>";
	const char	*upper_rep = ENV "<messageID>9</messageID><roAck><roID>"
			    "RO-1</roID><roStatus>Unknown running order RO-1"
			    "</roStatus></roAck></mos>" ENV "<messageID>10"
			    "</messageID><heartbeat><time>2026-11-18T10:00:02"
			    "</time></heartbeat></mos>";

	memset(cv, 0, sizeof *cv);
	util_utf8_to_utf16be(&cv->c[0], lower_req, strlen(lower_req));
	util_utf8_to_utf16be(&cv->s[0], lower_rep, strlen(lower_rep));
	sbuf_puts(&cv->c[1], upper_req);
	sbuf_puts(&cv->s[1], upper_rep);
}

static void
conv_free(struct conv *cv)
{
	int	i;

	for (i = 0; i < 2; i++) {
		sbuf_free(&cv->c[i]);
		sbuf_free(&cv->s[i]);
	}
}

static void
add(struct conv *cv, int stream, bool srv, uint32_t seq, uint8_t flags,
    const uint8_t *d, size_t len, int phase)
{
	assert_true(cv->n < nitems(cv->segs));
	cv->segs[cv->n++] = (struct seg){ stream, srv, seq, flags, d, len,
	    phase };
}

/* Data of one side cut into segments; their indices in [first, *end). */
static void
add_data(struct conv *cv, int stream, bool srv, const struct sbuf *b,
    size_t step, int phase)
{
	uint32_t	isn = srv ? ISN_S : ISN_C;
	size_t		o;

	for (o = 0; o < b->len; o += step)
		add(cv, stream, srv, isn + 1 + (uint32_t)o, 0x18,
		    (const uint8_t *)b->s + o, b->len - o < step ? b->len - o :
		    step, phase);
}

/* Handshake of a stream. */
static void
add_open(struct conv *cv, int stream)
{
	add(cv, stream, false, ISN_C, 0x02, NULL, 0, 1);
	add(cv, stream, true, ISN_S, 0x12, NULL, 0, 1);
}

/* FINs of a stream. */
static void
add_close(struct conv *cv, int stream)
{
	add(cv, stream, false, ISN_C + 1 + (uint32_t)cv->c[stream].len, 0x11,
	    NULL, 0, 4);
	add(cv, stream, true, ISN_S + 1 + (uint32_t)cv->s[stream].len, 0x11,
	    NULL, 0, 4);
}

/* Write the segments as Ethernet/IPv4/TCP packets. */
static void
write_pcap(const struct conv *cv, const char *path)
{
	pcap_t			*p;
	pcap_dumper_t		*dp;
	struct pcap_pkthdr	 h;
	uint8_t			 pkt[2048];
	size_t			 i, len;
	uint16_t		 cport, sport;
	const struct seg	*s;

	assert_non_null(p = pcap_open_dead(DLT_EN10MB, 65535));
	assert_non_null(dp = pcap_dump_open(p, path));
	for (i = 0; i < cv->n; i++) {
		s = &cv->segs[i];
		cport = (uint16_t)(40000 + s->stream);
		sport = (uint16_t)(10540 + s->stream);
		memset(pkt, 0, 54);
		pkt[12] = 0x08;				/* IPv4 */
		len = 20 + 20 + s->len;
		pkt[14] = 0x45;
		pkt[16] = (uint8_t)(len >> 8);
		pkt[17] = (uint8_t)len;
		pkt[20] = 0x40;				/* DF */
		pkt[22] = 64;
		pkt[23] = 6;
		pkt[26] = 127;			/* client .2, server .1 */
		pkt[29] = s->from_server ? 1 : 2;
		pkt[30] = 127;
		pkt[33] = s->from_server ? 2 : 1;
		pkt[34] = (uint8_t)((s->from_server ? sport : cport) >> 8);
		pkt[35] = (uint8_t)(s->from_server ? sport : cport);
		pkt[36] = (uint8_t)((s->from_server ? cport : sport) >> 8);
		pkt[37] = (uint8_t)(s->from_server ? cport : sport);
		pkt[38] = (uint8_t)(s->seq >> 24);
		pkt[39] = (uint8_t)(s->seq >> 16);
		pkt[40] = (uint8_t)(s->seq >> 8);
		pkt[41] = (uint8_t)s->seq;
		pkt[46] = 5 << 4;
		pkt[47] = s->flags;
		pkt[48] = 0xff;
		if (s->len > 0)
			memcpy(pkt + 54, s->data, s->len);
		memset(&h, 0, sizeof h);
		h.ts.tv_sec = 1795000000 + s->phase;
		h.caplen = h.len = (bpf_u_int32)(14 + len);
		pcap_dump((u_char *)dp, &h, pkt);
	}
	pcap_dump_close(dp);
	pcap_close(p);
}

/* A path under MOSGW_TMP. */
static void
tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s.%d", getenv("MOSGW_TMP") != NULL ?
	    getenv("MOSGW_TMP") : "/tmp", name, (int)getpid());
}

/* Import with mosreplay; its exit status; the capture text in *cap. */
static int
import(const char *pcap, const char *out, struct gwchild *ch, char **cap)
{
	int	st;

	st = rtest_mosreplay(ch, "import", pcap, "-o", out, "--ports",
	    "10540,10541,10542", (char *)NULL);
	*cap = gwproc_read_file(out);
	return st;
}

/* The clean conversation, in order. */
static void
build_clean(struct conv *cv)
{
	add_open(cv, 0);
	add_open(cv, 1);
	add_data(cv, 0, false, &cv->c[0], CSEG, 2);
	add_data(cv, 1, false, &cv->c[1], CSEG, 2);
	add_data(cv, 0, true, &cv->s[0], SSEG, 3);
	add_data(cv, 1, true, &cv->s[1], SSEG, 3);
	add_close(cv, 0);
	add_close(cv, 1);
}

/* Swap segments i and j. */
static void
swap(struct conv *cv, size_t i, size_t j)
{
	struct seg	t = cv->segs[i];

	cv->segs[i] = cv->segs[j];
	cv->segs[j] = t;
}

static void
test_import_reorder_retransmit(void **state)
{
	struct conv	 clean, messy;
	struct gwchild	 ch;
	struct capture	 c;
	char		 p1[512], p2[512], o1[512], o2[512], *a, *b, *err;
	size_t		 i, first, n;

	(void)state;
	conv_init(&clean);
	build_clean(&clean);
	conv_init(&messy);
	build_clean(&messy);
	/* client data of the lower stream: segments 4.. ; reverse pairs */
	first = 4;
	n = (clean.c[0].len + CSEG - 1) / CSEG;
	for (i = first; i + 1 < first + n; i += 2)
		swap(&messy, i, i + 1);
	/* the last lower-stream segment first of all its data */
	swap(&messy, first, first + n - 1);
	/* retransmissions: whole, and one overlapping two segments */
	add(&messy, 0, false, messy.segs[first + 3].seq, 0x18,
	    messy.segs[first + 3].data, messy.segs[first + 3].len, 2);
	add(&messy, 0, false, ISN_C + 1 + CSEG * 5 + 10, 0x18,
	    (const uint8_t *)clean.c[0].s + CSEG * 5 + 10, CSEG, 2);
	/* the server's segments of both streams in reverse order */
	for (i = 0; i < messy.n / 2; i++) {
		if (messy.segs[i].phase == 3) {
			size_t j;

			for (j = messy.n - 1; j > i && messy.segs[j].phase !=
			    3; j--)
				;
			if (j > i)
				swap(&messy, i, j);
		}
	}
	/* the FINs were moved into the data: put phase 4 last again */
	for (i = 0; i < messy.n; i++) {
		if (messy.segs[i].phase == 4)
			messy.segs[i].phase = 3;
	}
	/* a retransmission of the first server segment after the FIN */
	add(&messy, 0, true, ISN_S + 1, 0x18, (const uint8_t *)clean.s[0].s,
	    SSEG, 3);
	for (i = 0; i < clean.n; i++) {
		if (clean.segs[i].phase == 4)
			clean.segs[i].phase = 3;
	}

	tmp_path(p1, sizeof p1, "clean.pcap");
	tmp_path(p2, sizeof p2, "messy.pcap");
	tmp_path(o1, sizeof o1, "clean.jsonl");
	tmp_path(o2, sizeof o2, "messy.jsonl");
	write_pcap(&clean, p1);
	write_pcap(&messy, p2);
	assert_int_equal(import(p1, o1, &ch, &a), 0);
	assert_non_null(strstr(ch.buf, "imported 7 frames"));
	assert_non_null(strstr(ch.buf, "(0 warnings)"));
	gwchild_clear(&ch);
	assert_int_equal(import(p2, o2, &ch, &b), 0);
	assert_non_null(strstr(ch.buf, "imported 7 frames"));
	gwchild_clear(&ch);
	assert_string_equal(a, b);

	/* the frames are the ones sent, each stream's encoding detected */
	assert_int_equal(capture_load(o1, &c, &err), 0);
	assert_int_equal(c.n, 7);
	assert_string_equal(c.f[2].type, "mosReqObj");
	assert_non_null(strstr(c.f[2].xml, "<objID>Ünïcödé €</objID>"));
	assert_int_equal(c.f[0].dir, HISTORY_IN);
	assert_int_equal(c.f[0].port, GW_PORT_LOWER);
	assert_int_equal(c.f[3].port, GW_PORT_UPPER);
	assert_string_equal(c.f[3].type, "roReq");
	assert_int_equal(c.f[4].dir, HISTORY_OUT);
	assert_int_equal(c.f[4].conn, 1);
	assert_int_equal(c.f[5].conn, 2);
	assert_string_equal(c.f[5].type, "roAck");
	assert_int_equal(c.f[5].message_id, 9);
	assert_int_equal(c.f[6].message_id, 10);
	capture_free(&c);
	free(a);
	free(b);
	conv_free(&clean);
	conv_free(&messy);
	unlink(p1);
	unlink(p2);
	unlink(o1);
	unlink(o2);
}

/* Cut mid-frame, and a segment that was never captured: reported. */
static void
test_import_cut_and_gap(void **state)
{
	struct conv	 cv;
	struct gwchild	 ch;
	struct capture	 c;
	char		 p[512], o[512], *text, *err;
	size_t		 i, last = 0, gap = 0;

	(void)state;
	conv_init(&cv);
	add_open(&cv, 0);
	add_open(&cv, 1);
	add_data(&cv, 0, false, &cv.c[0], CSEG, 2);
	add_data(&cv, 1, true, &cv.s[1], SSEG, 3);
	/* the lower client stream loses its 13th segment; upper its last */
	for (i = 0; i < cv.n; i++) {
		if (cv.segs[i].stream == 0 && cv.segs[i].len > 0 &&
		    cv.segs[i].seq == ISN_C + 1 + CSEG * 12)
			gap = i;
		if (cv.segs[i].stream == 1 && cv.segs[i].from_server)
			last = i;
	}
	assert_true(gap > 0 && last > gap);
	cv.segs[last] = cv.segs[--cv.n];
	memmove(&cv.segs[gap], &cv.segs[gap + 1], (cv.n - gap - 1) *
	    sizeof cv.segs[0]);
	cv.n--;
	tmp_path(p, sizeof p, "cut.pcap");
	tmp_path(o, sizeof o, "cut.jsonl");
	write_pcap(&cv, p);
	assert_int_equal(import(p, o, &ch, &text), 0);
	rtest_print(stderr, "mosreplay import", ch.buf);
	assert_non_null(strstr(ch.buf, "warning: conn 1 lower in: 37 bytes "
	    "missing at sequence 1445"));
	assert_non_null(strstr(ch.buf, "warning: conn 2 upper out: the "
	    "stream ends inside a frame"));
	/* before the gap (byte 444): the frames that end at 262 and 436 */
	assert_int_equal(capture_load(o, &c, &err), 0);
	assert_int_equal(c.n, 3);
	assert_string_equal(c.f[0].type, "heartbeat");
	assert_int_equal(c.f[0].message_id, 1);
	assert_string_equal(c.f[1].type, "reqMachInfo");
	assert_string_equal(c.f[2].type, "roAck");
	assert_null(strstr(text, "heartbeat\",\"xml\":\"<mos><mosID>dev"
	    "</mosID><ncsID>ncs</ncsID><messageID>10"));
	capture_free(&c);
	gwchild_clear(&ch);
	free(text);
	conv_free(&cv);
	unlink(p);
	unlink(o);
}

/*
 * The capture with its listMachInfo answers compared for presence only:
 * the device's identity and profiles are those of the mosgw that was
 * recorded, not of the one it is played against. Written to out.
 */
static void
identity_any(const char *text, char *out, size_t len)
{
	struct sbuf	 sb = { NULL, 0, 0 };
	const char	*p = text, *nl;

	while (*p != '\0') {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		if (strstr(p, "\"type\":\"listMachInfo\"") != NULL &&
		    strstr(p, "\"type\":\"listMachInfo\"") < nl &&
		    nl > p && nl[-1] == '}') {
			sbuf_add(&sb, p, (size_t)(nl - p - 1));
			sbuf_puts(&sb, ",\"any\":[\"supportedProfiles\","
			    "\"hwRev\",\"DOM\",\"SN\",\"ID\"]}");
		} else
			sbuf_add(&sb, p, (size_t)(nl - p));
		sbuf_puts(&sb, "\n");
		p = *nl != '\0' ? nl + 1 : nl;
	}
	rtest_write_file(out, len, "loopback-any.jsonl", sb.s);
	sbuf_free(&sb);
}

/* The loopback capture in fixtures/pcap/ replays against mosgw. */
static void
test_import_real_capture(void **state)
{
	struct gwproc	*gp;
	struct gwchild	 ch;
	char		 pcap[1024], o[512], o2[512], dev[128], *text;
	int		 rc;

	(void)state;
	snprintf(pcap, sizeof pcap, "%s/fixtures/pcap/mos-loopback.pcapng",
	    rtest_top());
	tmp_path(o, sizeof o, "loopback.jsonl");
	assert_int_equal(import(pcap, o, &ch, &text), 0);
	assert_non_null(strstr(ch.buf, "imported 20 frames"));
	assert_non_null(strstr(ch.buf, "(0 warnings)"));
	gwchild_clear(&ch);
	identity_any(text, o2, sizeof o2);
	free(text);
	assert_non_null(gp = rtest_gateway(NULL));
	snprintf(dev, sizeof dev, "127.0.0.1:%u:%u:%u", gp->lower_port,
	    gp->upper_port, gp->query_port);
	rc = rtest_mosreplay(&ch, "play", o2, "--device", dev, "--fast",
	    (char *)NULL);
	rtest_print(stderr, "mosreplay play", ch.buf);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(ch.buf, "10 passed, 0 failed"));
	gwchild_clear(&ch);
	assert_int_equal(gwproc_stop(gp), 0);
	gwproc_free(gp);
	unlink(o);
	unlink(o2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_reorder_retransmit),
		cmocka_unit_test(test_import_cut_and_gap),
		cmocka_unit_test(test_import_real_capture),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
