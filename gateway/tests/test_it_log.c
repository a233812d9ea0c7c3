/*
 * Integration: the log cannot be flooded. 1,000 connections opened and
 * closed against the real mosgw leave a bounded number of conn.accept and
 * conn.close lines (their budget: 20 a second together), and the
 * suppressed= counts they carry add up to every line left out; a
 * connection that names its NCS is an info line (conn.ncs).
 * `mosgw -n` on a configuration full of binary garbage prints only
 * printable characters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <poll.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/itutil.h"

#define WAIT_MS		10000
#define CONNS		1000
#define BUDGET		20	/* conn.accept + untrusted conn.close a second */
#define INTERVAL_MS	2000

/* A gateway with room for the connections, the limiter at 5 per 2 s. */
static int
setup(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.gateway_extra = "max_conn = 5000\nmax_conn_per_port = 5000\n";
	o.log_extra = "rate_burst = 5\nrate_interval = 2\n";
	o.ncs[0].extra = NULL;
	o.nncs = 1;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/*
 * Connect to 127.0.0.1:port, end the sending side at once and read until
 * the gateway has closed its side too (so it accepted and closed this
 * connection before the next one). 0, or -1.
 */
static int
touch(uint16_t port)
{
	struct sockaddr_in	sin;
	struct pollfd		pfd;
	char			buf[256];
	int64_t			deadline = ncspeer_now_ms() + WAIT_MS;
	ssize_t			n = -1;
	int			fd, rc = -1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
	    shutdown(fd, SHUT_WR) == 0) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		while (ncspeer_now_ms() < deadline && poll(&pfd, 1,
		    (int)(deadline - ncspeer_now_ms())) == 1 &&
		    (n = read(fd, buf, sizeof buf)) > 0)
			;
		rc = n == 0 ? 0 : -1;
	}
	close(fd);
	return rc;
}

/*
 * Lines of event ev after byte from of the log: how many, and the sum of
 * their suppressed= counts.
 */
static void
count_lines(struct gwproc *gw, long from, const char *ev, long *lines,
    long *suppressed)
{
	char		*text = gwproc_log_text(gw), *p, *nl, *s;
	char		 needle[64];

	*lines = *suppressed = 0;
	snprintf(needle, sizeof needle, "event=%s ", ev);
	for (p = text + from; p != NULL && *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		if (strstr(p, needle) == NULL)
			continue;
		(*lines)++;
		if ((s = strstr(p, " suppressed=")) != NULL)
			*suppressed += strtol(s + 12, NULL, 10);
	}
	free(text);
}

/* Wait until the gateway holds no more descriptors than base. */
static bool
sessions_gone(struct gwproc *gw, int base)
{
	int64_t	deadline = ncspeer_now_ms() + WAIT_MS;

	while (ncspeer_now_ms() < deadline) {
		if (gwproc_fd_count(gw) <= base)
			return true;
		usleep(20000);
	}
	return false;
}

/*
 * 1,000 connections from one address: a handful of lines, and the counts
 * of those suppressed, carried by the next line that passes, add up.
 */
static void
test_connection_flood(void **state)
{
	struct gwrig	*r = *state;
	long		 mark, lines, supp, lines2, supp2, bound;
	int64_t		 t0, elapsed;
	int		 base, i;

	base = gwproc_fd_count(r->gw);
	GWRIG_CHECK(r, base > 0);
	mark = (long)gwproc_log_size(r->gw);
	t0 = ncspeer_now_ms();
	for (i = 0; i < CONNS; i++)
		GWRIG_CHECK(r, touch(r->gw->lower_port) == 0);
	GWRIG_CHECK(r, sessions_gone(r->gw, base));
	/* One interval later, the next connection's lines pass and carry N. */
	usleep((INTERVAL_MS + 200) * 1000);
	elapsed = ncspeer_now_ms() - t0;
	GWRIG_CHECK(r, touch(r->gw->lower_port) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS, "event=conn.close",
	    "suppressed=", (char *)NULL) != -1);
	GWRIG_CHECK(r, sessions_gone(r->gw, base));
	/* at most BUDGET lines a second (and as many at once) for both */
	bound = BUDGET * (elapsed / 1000 + 2);
	count_lines(r->gw, mark, "conn.accept", &lines, &supp);
	count_lines(r->gw, mark, "conn.close", &lines2, &supp2);
	if (lines + lines2 > bound ||
	    lines + lines2 + supp + supp2 != 2 * (CONNS + 1))
		fail_msg("conn.accept %ld + conn.close %ld lines (bound %ld), "
		    "%ld + %ld suppressed", lines, lines2, bound, supp, supp2);
	GWRIG_CHECK(r, supp > 0);
	/* the link to the NCS never noticed */
	GWRIG_CHECK(r, gwproc_log_count(r->gw, mark, "event=link.down",
	    (char *)NULL) == 0);
}

/* An NCS connecting to us is an info line, conn.ncs. */
static void
test_ncs_connection_info(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	long				 mark = (long)gwproc_log_size(r->gw);
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	f = gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS);
	GWRIG_CHECK(r, f != NULL);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "level=info event=conn.ncs", "ncs=n1", "port=lower",
	    (char *)NULL) != -1);
	ncspeer_close(r->ncs, c, false);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "level=info event=conn.close", "ncs=n1", (char *)NULL) != -1);
}

/* Whether s holds only printable UTF-8, spaces and line ends. */
static bool
printable(const char *s, size_t len, size_t *bad)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, n, k;

	while (i < len) {
		if (p[i] == '\n' || (p[i] >= 0x20 && p[i] < 0x7f)) {
			i++;
			continue;
		}
		n = p[i] >= 0xc2 && p[i] <= 0xdf ? 2 : p[i] >= 0xe0 &&
		    p[i] <= 0xef ? 3 : p[i] >= 0xf0 && p[i] <= 0xf4 ? 4 : 0;
		if (n == 0 || i + n > len || (p[i] == 0xc2 && p[i + 1] < 0xa0))
			break;
		for (k = 1; k < n && (p[i + k] & 0xc0) == 0x80; k++)
			;
		if (k != n)
			break;
		i += n;
	}
	*bad = i;
	return i == len;
}

/* mosgw -n -c on binary garbage: every message is printable. */
static void
test_check_binary_config(void **state)
{
	static const char garbage[] =
	    "[gateway]\nmos_id = a\x01\x02\x1b[31mred\x7f\n"
	    "\x80\xff\xfe = \xc3\x28\n"
	    "[\x1b]2;title\x07]\n"
	    "k\xe2\x82 = v\xed\xa0\x80\n"
	    "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\n"
	    "caf\xc3\xa9 = \xc2\x85\xc2\x9b\n";
	struct gwrig	*r = *state;
	struct gwchild	 ch;
	char		 conf[320], errlog[320], path[PATH_MAX];
	char		 a1[] = "-n", a2[] = "-c", *argv[5], *err;
	size_t		 bad;
	FILE		*f;
	int		 st;

	snprintf(conf, sizeof conf, "%s/garbage.conf", r->gw->dir);
	snprintf(errlog, sizeof errlog, "%s/garbage.err", r->gw->dir);
	GWRIG_CHECK(r, (f = fopen(conf, "wb")) != NULL);
	GWRIG_CHECK(r, fwrite(garbage, 1, sizeof garbage - 1, f) ==
	    sizeof garbage - 1 && fclose(f) == 0);
	snprintf(path, sizeof path, "%s/mosgw", gwproc_bindir());
	argv[0] = path;
	argv[1] = a1;
	argv[2] = a2;
	argv[3] = conf;
	argv[4] = NULL;
	GWRIG_CHECK(r, gwchild_start(&ch, NULL, argv, errlog) == 0);
	st = gwchild_wait(&ch, WAIT_MS);
	GWRIG_CHECK(r, st == 1);
	err = gwproc_read_file(errlog);
	GWRIG_CHECK(r, err != NULL && strstr(err, "garbage.conf:") != NULL);
	if (!printable(err, strlen(err), &bad))
		fail_msg("byte %zu of mosgw -n's output is not printable:\n%s",
		    bad, err);
	if (!printable(ch.buf != NULL ? ch.buf : "", ch.len, &bad))
		fail_msg("byte %zu of mosgw -n's stdout is not printable", bad);
	/* what was unprintable is shown escaped */
	GWRIG_CHECK(r, strstr(err, "\\x01\\x02\\x1b[31mred\\x7f") != NULL);
	GWRIG_CHECK(r, strstr(err, "\\x80\\xff\\xfe") != NULL);
	free(err);
	gwchild_clear(&ch);
}

/* The it_log suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connection_flood, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ncs_connection_info, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_check_binary_config, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("it_log", tests, NULL, NULL);
}
