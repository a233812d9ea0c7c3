/*
 * mosreplay record: the tap loses nothing and adds no bytes. A scripted
 * device behind the tap and a scripted NCS in front of it exchange frames:
 * the NCS writes one byte per send(), the device answers with a large
 * running order; both byte streams are compared with what the other side
 * sent, and the capture written on SIGTERM with the frames.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/replay.h"
#include "conformance/tests/rtest.h"

#define IO_MS		60000
#define NSTORIES	5000	/* the large running order: about 1.5 MB */

#define ENVELOPE	"<mos><mosID>dev</mosID><ncsID>ncs</ncsID>"

/* The scripted device: one connection, read `want` bytes, answer, close. */
struct device {
	int		 lfd;
	const char	*answer;	/* wire bytes */
	size_t		 answer_len;
	size_t		 want;
	struct sbuf	 got;
	int		 ok;
};

/* Read from fd until n bytes are in sb, EOF, or the deadline. */
static void
read_bytes(int fd, struct sbuf *sb, size_t n)
{
	char		buf[65536];
	int64_t		end = util_mono_ms() + IO_MS;
	struct pollfd	pfd = { fd, POLLIN, 0 };
	ssize_t		r;

	while (sb->len < n && util_mono_ms() < end) {
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if ((r = recv(fd, buf, sizeof buf, 0)) <= 0)
			break;
		sbuf_add(sb, buf, (size_t)r);
	}
}

static void *
device_main(void *arg)
{
	struct device	*d = arg;
	int		 fd;

	if ((fd = net_accept(d->lfd, IO_MS)) == -1)
		return NULL;
	read_bytes(fd, &d->got, d->want);
	d->ok = net_write(fd, d->answer, d->answer_len, 0) == 0;
	shutdown(fd, SHUT_WR);
	/* until the tap passes the NCS's close on */
	read_bytes(fd, &d->got, d->want + 1);
	close(fd);
	return NULL;
}

/* A large roCreate, as UTF-8 text. */
static void
big_ro(struct sbuf *sb)
{
	int	i;

	sbuf_puts(sb, ENVELOPE "<messageID>7</messageID><roCreate><roID>RO-BIG"
	    "</roID><roSlug>Large running order</roSlug>");
	for (i = 0; i < NSTORIES; i++)
		sbuf_printf(sb, "<story><storyID>S%d</storyID><storySlug>Story "
		    "%d &amp; more</storySlug><item><itemID>I%d</itemID>"
		    "<objID>OBJ-%d</objID><mosID>dev</mosID></item></story>",
		    i, i, i, i);
	sbuf_puts(sb, "</roCreate></mos>");
}

static void
test_tap_bytes(void **state)
{
	struct device	 d;
	struct gwchild	 tap;
	struct capture	 cap;
	struct sbuf	 req = { NULL, 0, 0 }, req16 = { NULL, 0, 0 };
	struct sbuf	 ro = { NULL, 0, 0 }, ro16 = { NULL, 0, 0 };
	struct sbuf	 back = { NULL, 0, 0 }, joined = { NULL, 0, 0 };
	pthread_t	 th;
	char		 listen[64], fwd[80], out[512], *err;
	uint16_t	 lo = gwproc_free_port(), up = gwproc_free_port();
	size_t		 i;
	int		 fd;

	(void)state;
	memset(&d, 0, sizeof d);
	/* three frames, a heartbeat in between, some junk-free whitespace */
	sbuf_puts(&req, ENVELOPE "<messageID>1</messageID><heartbeat><time>"
	    "2026-11-18T10:00:00,000Z</time></heartbeat></mos>\n");
	sbuf_puts(&req, ENVELOPE "<messageID>2</messageID><reqMachInfo/>"
	    "</mos>");
	sbuf_puts(&req, ENVELOPE "<messageID>3</messageID><roReq><roID>RO-Ü"
	    "</roID></roReq></mos>");
	util_utf8_to_utf16be(&req16, req.s, req.len);
	big_ro(&ro);
	util_utf8_to_utf16be(&ro16, ro.s, ro.len);
	assert_true(ro16.len > 1000000);

	assert_int_not_equal(d.lfd = net_listen("127.0.0.1", 0), -1);
	d.answer = ro16.s;
	d.answer_len = ro16.len;
	d.want = req16.len;
	snprintf(listen, sizeof listen, "%u:%u", lo, up);
	snprintf(fwd, sizeof fwd, "127.0.0.1:%d:%d", net_local_port(d.lfd),
	    net_local_port(d.lfd));
	snprintf(out, sizeof out, "%s/tap.%d.jsonl", getenv("MOSGW_TMP") !=
	    NULL ? getenv("MOSGW_TMP") : "/tmp", (int)getpid());
	assert_int_equal(pthread_create(&th, NULL, device_main, &d), 0);
	assert_int_equal(rtest_mosreplay_start(&tap, "record",
	    "--listen", listen, "--forward", fwd, "-o", out, (char *)NULL), 0);
	assert_non_null(gwchild_line(&tap, "(upper), forwarding", 10000));

	/* the NCS: one byte per write, then read the whole answer */
	assert_int_not_equal(fd = net_connect("127.0.0.1", lo, 10000), -1);
	assert_int_equal(net_write(fd, req16.s, req16.len, 1), 0);
	read_bytes(fd, &back, ro16.len + 1);
	close(fd);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(d.lfd);
	assert_true(d.ok);

	/* nothing lost, nothing added, both ways */
	assert_int_equal(d.got.len, req16.len);
	assert_memory_equal(d.got.s, req16.s, req16.len);
	assert_int_equal(back.len, ro16.len);
	assert_memory_equal(back.s, ro16.s, ro16.len);

	/* the capture is complete once the tap has stopped */
	assert_non_null(gwchild_line(&tap, "closed", 10000));
	assert_int_equal(kill(tap.pid, SIGTERM), 0);
	assert_int_equal(rtest_mosreplay_wait(&tap), 0);
	assert_non_null(strstr(tap.buf, "recorded 4 frames on 1 connections"));
	assert_int_equal(capture_load(out, &cap, &err), 0);
	assert_int_equal(cap.n, 4);
	for (i = 0; i < 3; i++) {
		assert_int_equal(cap.f[i].dir, HISTORY_IN);
		assert_int_equal(cap.f[i].port, GW_PORT_LOWER);
		assert_int_equal(cap.f[i].conn, 1);
		assert_int_equal(cap.f[i].message_id, (int32_t)i + 1);
		sbuf_puts(&joined, cap.f[i].xml);
		if (i == 0)
			sbuf_puts(&joined, "\n");
	}
	assert_string_equal(joined.s, req.s);
	assert_string_equal(cap.f[1].type, "reqMachInfo");
	assert_int_equal(cap.f[3].dir, HISTORY_OUT);
	assert_string_equal(cap.f[3].type, "roCreate");
	assert_string_equal(cap.f[3].xml, ro.s);
	capture_free(&cap);
	gwchild_clear(&tap);
	unlink(out);
	sbuf_free(&req);
	sbuf_free(&req16);
	sbuf_free(&ro);
	sbuf_free(&ro16);
	sbuf_free(&back);
	sbuf_free(&joined);
	sbuf_free(&d.got);
}

/* Nobody behind the tap: the NCS's connection is closed, the tap lives. */
static void
test_tap_no_device(void **state)
{
	struct gwchild	 tap;
	char		 listen[64], fwd[64], out[512], b;
	uint16_t	 lo = gwproc_free_port(), up = gwproc_free_port();
	int		 fd;

	(void)state;
	snprintf(listen, sizeof listen, "%u:%u", lo, up);
	snprintf(fwd, sizeof fwd, "127.0.0.1:%u:%u", gwproc_free_port(),
	    gwproc_free_port());
	snprintf(out, sizeof out, "%s/tap0.%d.jsonl", getenv("MOSGW_TMP") !=
	    NULL ? getenv("MOSGW_TMP") : "/tmp", (int)getpid());
	assert_int_equal(rtest_mosreplay_start(&tap, "record",
	    "--listen", listen, "--forward", fwd, "-o", out, (char *)NULL), 0);
	assert_non_null(gwchild_line(&tap, "(upper), forwarding", 10000));
	assert_int_not_equal(fd = net_connect("127.0.0.1", up, 10000), -1);
	assert_non_null(gwchild_line(&tap, "cannot connect to", 20000));
	assert_true(recv(fd, &b, 1, 0) <= 0);
	close(fd);
	assert_int_equal(kill(tap.pid, SIGINT), 0);
	assert_int_equal(rtest_mosreplay_wait(&tap), 0);
	assert_non_null(strstr(tap.buf, "recorded 0 frames"));
	gwchild_clear(&tap);
	unlink(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tap_bytes),
		cmocka_unit_test(test_tap_no_device),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
