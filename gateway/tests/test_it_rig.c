/*
 * The integration rig tested on its own, without mosgw: two scripted NCS
 * peers talk to each other over loopback (one dials, one answers by its
 * policy), and the process controller runs a stand-in mosgw written as a
 * shell script. If these fail, the integration suites cannot be trusted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/gwproc.h"
#include "gateway/tests/itutil.h"

#define WAIT_MS		3000

/* An answering peer and a dialing peer connected to its lower port. */
struct two {
	struct ncspeer	*ncs;		/* listens and answers */
	struct ncspeer	*cli;		/* dials */
	int		 conn;		/* cli's connection to ncs */
	struct ncspeer	*other;		/* a third peer, if a test wants one */
};

/* An answering peer and a dialing peer, connected. */
static int
setup(void **state)
{
	struct ncspeer_opts	 o;
	struct two		*t;

	if ((t = calloc(1, sizeof *t)) == NULL)
		return -1;
	*state = t;
	memset(&o, 0, sizeof o);
	o.mos_id = "mosgw.test";
	o.ncs_id = "NCSPEER";
	if ((t->ncs = ncspeer_new(&o)) == NULL)
		return -1;
	o.no_listen = true;
	if ((t->cli = ncspeer_new(&o)) == NULL)
		return -1;
	t->conn = ncspeer_dial(t->cli, NCSPEER_LOWER,
	    ncspeer_port(t->ncs, NCSPEER_LOWER));
	if (t->conn < 1 || ncspeer_wait_open(t->ncs, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED, 1, WAIT_MS) != 0)
		return -1;
	return 0;
}

/* Stop both peers. */
static int
teardown(void **state)
{
	struct two	*t = *state;

	if (t != NULL) {
		ncspeer_free(t->other);
		ncspeer_free(t->cli);
		ncspeer_free(t->ncs);
		free(t);
	}
	return 0;
}

/* A mosObj from the client; the answer (NULL if none within timeout_ms). */
static const struct ncspeer_frame *
send_obj(struct two *t, const char *obj_id, uint32_t rev, int timeout_ms)
{
	struct mos_msg	*m = ncspeer_msg(t->cli, MOS_T_MOS_OBJ);
	struct mos_obj	*o = &m->u.mos_obj;

	o->obj_id = mos_msg_strdup(m, obj_id);
	o->obj_slug = "Rig test";
	o->obj_type = "VIDEO";
	o->obj_tb.v = 50;
	o->obj_tb.set = true;
	o->obj_rev = rev;
	o->has_obj_rev = true;
	o->obj_dur = 100;
	o->has_obj_dur = true;
	o->status = "NEW";
	o->obj_air = "READY";
	return ncspeer_request(t->cli, t->conn, m, timeout_ms);
}

#define is_ack	itutil_is_ack

/* Heartbeats and reqMachInfo are answered with the same messageID. */
static void
test_peer_profile0(void **state)
{
	struct two			*t = *state;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	struct ncspeer_match		 mt = { .type = "heartbeat",
					    .side = NCSPEER_ACCEPTED };

	m = ncspeer_msg(t->cli, MOS_T_HEARTBEAT);
	mos_time_now(&m->u.heartbeat.time);
	f = ncspeer_request(t->cli, t->conn, m, WAIT_MS);
	assert_non_null(f);
	assert_non_null(f->msg);
	assert_int_equal(f->msg->type, MOS_T_HEARTBEAT);
	assert_int_equal(f->side, NCSPEER_DIALED);
	assert_string_equal(f->msg->ncs_id, "NCSPEER");
	/* The answering side recorded the request on its accepted connection. */
	assert_non_null(ncspeer_find(t->ncs, &mt));

	f = ncspeer_request(t->cli, t->conn,
	    ncspeer_msg(t->cli, MOS_T_REQ_MACH_INFO), WAIT_MS);
	assert_non_null(f);
	assert_int_equal(f->msg->type, MOS_T_LIST_MACH_INFO);
	assert_int_equal(f->msg->u.list_mach_info.profiles[1], 1);
}

/* ACK, NACK with text, NACK the first N, wrong messageID, ignore, delay. */
static void
test_peer_obj_policies(void **state)
{
	struct two			*t = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	int64_t				 t0;

	f = send_obj(t, "O-1", 7, WAIT_MS);
	assert_true(is_ack(f, "ACK", NULL));
	assert_string_equal(f->msg->u.mos_ack.obj_id, "O-1");
	assert_int_equal(f->msg->u.mos_ack.obj_rev, 7);

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = "not today";
	ncspeer_set_policy(t->ncs, &pol);
	assert_true(is_ack(send_obj(t, "O-2", 1, WAIT_MS), "NACK", "not today"));

	memset(&pol, 0, sizeof pol);
	pol.nack_first = 2;
	ncspeer_set_policy(t->ncs, &pol);
	assert_true(is_ack(send_obj(t, "O-3", 1, WAIT_MS), "NACK", NULL));
	assert_true(is_ack(send_obj(t, "O-3", 1, WAIT_MS), "NACK", NULL));
	assert_true(is_ack(send_obj(t, "O-3", 1, WAIT_MS), "ACK", NULL));

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_IGNORE;
	ncspeer_set_policy(t->ncs, &pol);
	assert_null(send_obj(t, "O-4", 1, 300));

	pol.obj = NCSPEER_OBJ_WRONG_ID;
	ncspeer_set_policy(t->ncs, &pol);
	m = ncspeer_msg(t->cli, MOS_T_MOS_OBJ);
	m->u.mos_obj.obj_id = "O-5";
	m->u.mos_obj.obj_slug = "Wrong id";
	memset(&mt, 0, sizeof mt);
	mt.type = "mosAck";
	mt.from = ncspeer_nframes(t->cli);
	mt.message_id = m->message_id + 1;
	assert_int_equal(ncspeer_send(t->cli, t->conn, m), 0);
	mos_msg_free(m);
	assert_non_null(ncspeer_wait(t->cli, &mt, WAIT_MS));

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 300;
	ncspeer_set_policy(t->ncs, &pol);
	t0 = ncspeer_now_ms();
	f = send_obj(t, "O-6", 1, WAIT_MS);
	assert_true(is_ack(f, "ACK", NULL));
	assert_true(f->t_ms - t0 >= 250);
}

/* Frames written one byte per send() are framed the same. */
static void
test_peer_one_byte(void **state)
{
	struct two			*t = *state;
	struct ncspeer_policy		 pol;
	const struct ncspeer_frame	*f;
	int				 i;

	memset(&pol, 0, sizeof pol);
	pol.write_chunk = 1;
	ncspeer_set_policy(t->cli, &pol);
	for (i = 0; i < 3; i++) {
		f = send_obj(t, "O-B", (uint32_t)i + 1, WAIT_MS);
		assert_true(is_ack(f, "ACK", NULL));
		assert_int_equal(f->msg->u.mos_ack.obj_rev, i + 1);
	}
}

/* Split writes at every offset of two frames give the same two frames. */
static void
test_peer_split(void **state)
{
	struct two			*t = *state;
	struct ncspeer_match		 mt;
	struct mos_msg			*m[2];
	struct mos_buf			 b = { NULL, 0, 0 };
	char				 err[128];
	size_t				 k, i, total;

	for (i = 0; i < 2; i++) {
		m[i] = ncspeer_msg(t->cli, MOS_T_HEARTBEAT);
		mos_time_now(&m[i]->u.heartbeat.time);
		assert_int_equal(mos_write(m[i], MOS_ENC_UTF16BE, &b, err,
		    sizeof err), 0);
	}
	memset(&mt, 0, sizeof mt);
	mt.type = "heartbeat";
	mt.side = NCSPEER_ACCEPTED;
	mt.from = ncspeer_nframes(t->ncs);
	for (k = 1, total = 0; k < b.len; k += 37, total += 2) {
		assert_int_equal(ncspeer_send_chunked(t->cli, t->conn, b.data,
		    b.len, k, 0), 0);
		assert_int_equal(ncspeer_wait_count(t->ncs, &mt, total + 2,
		    WAIT_MS), total + 2);
	}
	/* Every frame carried one of the two messageIDs, in order. */
	for (i = mt.from; i < ncspeer_nframes(t->ncs); i++) {
		const struct ncspeer_frame *f = ncspeer_frame_at(t->ncs, i);

		if (f->side == NCSPEER_ACCEPTED)
			assert_int_equal(f->message_id,
			    m[(i - mt.from) % 2]->message_id);
	}
	mos_msg_free(m[0]);
	mos_msg_free(m[1]);
	mos_buf_free(&b);
}

/* Whether another socket trying to bind 127.0.0.1:port finds it in use. */
static bool
port_taken(uint16_t port)
{
	struct sockaddr_in	sin;
	int			fd, rc, err;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return false;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	rc = bind(fd, (struct sockaddr *)&sin, sizeof sin);
	err = errno;
	close(fd);
	return rc == -1 && err == EADDRINUSE;
}

/* Resets and closes are seen; down and up on the same port. */
static void
test_peer_close_down_up(void **state)
{
	struct two	*t = *state;
	uint16_t	 port = ncspeer_port(t->ncs, NCSPEER_LOWER);
	int		 c;

	ncspeer_close(t->cli, t->conn, true);
	assert_false(ncspeer_conn_open(t->cli, t->conn));
	/* The answering side noticed the reset. */
	assert_int_equal(ncspeer_wait_closed(t->ncs, 1, WAIT_MS), 0);

	c = ncspeer_dial(t->cli, NCSPEER_LOWER, port);
	assert_true(c > 0);
	assert_int_equal(ncspeer_wait_open(t->ncs, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED, 1, WAIT_MS), 0);
	ncspeer_down(t->ncs, false);
	assert_int_equal(ncspeer_wait_closed(t->cli, c, WAIT_MS), 0);
	assert_int_equal(ncspeer_dial(t->cli, NCSPEER_LOWER, port), -1);
	assert_int_equal(ncspeer_up(t->ncs), 0);
	assert_int_equal(ncspeer_port(t->ncs, NCSPEER_LOWER), port);
	t->conn = ncspeer_dial(t->cli, NCSPEER_LOWER, port);
	assert_true(t->conn > 0);
	assert_true(is_ack(send_obj(t, "O-U", 1, WAIT_MS), "ACK", NULL));
}

/*
 * A peer that goes down keeps its ports bound (connections are refused):
 * no other socket on the machine takes them before it comes back up.
 */
static void
test_peer_down_holds_ports(void **state)
{
	struct two		*t = *state;
	struct ncspeer_opts	 o;
	struct ncspeer		*p;
	uint16_t		 lower, upper;
	int			 c;

	memset(&o, 0, sizeof o);
	assert_non_null(p = t->other = ncspeer_new(&o));
	lower = ncspeer_port(p, NCSPEER_LOWER);
	upper = ncspeer_port(p, NCSPEER_UPPER);
	/* Never connected: no TIME_WAIT socket holds the ports for it. */
	ncspeer_down(p, false);
	assert_true(port_taken(lower));
	assert_true(port_taken(upper));
	assert_int_equal(ncspeer_dial(t->cli, NCSPEER_LOWER, lower), -1);
	assert_int_equal(ncspeer_up(p), 0);
	assert_int_equal(ncspeer_port(p, NCSPEER_LOWER), lower);
	c = ncspeer_dial(t->cli, NCSPEER_LOWER, lower);
	assert_true(c > 0);
	assert_int_equal(ncspeer_wait_open(p, NCSPEER_LOWER, NCSPEER_ACCEPTED,
	    1, WAIT_MS), 0);
}

/* A stream that ends inside a frame is recorded as a framing error. */
static void
test_peer_truncated(void **state)
{
	struct two			*t = *state;
	struct ncspeer_match		 mt = { .side = NCSPEER_ACCEPTED };
	struct ncspeer_stats		 st;
	uint8_t				*data;
	size_t				 len;

	data = ncspeer_encode("<mos><mosID>x</mosID><ncsID>y</ncsID>",
	    MOS_ENC_UTF16BE, &len);
	assert_non_null(data);
	mt.from = ncspeer_nframes(t->ncs);
	assert_int_equal(ncspeer_send_raw(t->cli, t->conn, data, len), 0);
	free(data);
	ncspeer_close(t->cli, t->conn, false);
	assert_int_equal(ncspeer_wait_count(t->ncs, &mt, 1, WAIT_MS), 1);
	assert_string_not_equal(ncspeer_frame_at(t->ncs, mt.from)->error, "");
	ncspeer_stats(t->ncs, &st);
	assert_int_equal(st.errors, 1);
}

/* UTF-8 to UTF-16BE, surrogate pairs included; bad UTF-8 refused. */
static void
test_peer_encode(void **state)
{
	const uint8_t	 want[] = { 0x00, 0x41, 0x00, 0xe9,
			    0xd8, 0x3c, 0xdf, 0xac };
	uint8_t		*data;
	size_t		 len;

	(void)state;
	data = ncspeer_encode("A\xc3\xa9\xf0\x9f\x8e\xac", MOS_ENC_UTF16BE, &len);
	assert_non_null(data);
	assert_int_equal(len, sizeof want);
	assert_memory_equal(data, want, sizeof want);
	free(data);
	assert_null(ncspeer_encode("A\xc3", MOS_ENC_UTF16BE, &len));
	data = ncspeer_encode("A\xc3\xa9", MOS_ENC_UTF8, &len);
	assert_int_equal(len, 3);
	free(data);
}

/* Write an executable script. */
static void
write_script(const char *dir, const char *name, const char *text)
{
	char	 path[512];
	FILE	*f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

/* A stand-in mosgw: logs event=listen per port, exits 0 on SIGTERM. */
static const char fake_mosgw[] =
    "#!/bin/sh\n"
    "log=$(sed -n 's/^target = //p' \"$2\")\n"
    "grep -q '^\\[ncs.n1\\]' \"$2\" || exit 3\n"
    "for p in lower upper query; do\n"
    "  echo \"t level=info event=listen port=$p\" >>\"$log\"\n"
    "done\n"
    "trap 'echo \"t level=info event=shutdown\" >>\"$log\"; exit 0' TERM\n"
    "while :; do sleep 0.05; done\n";

/* A stand-in mosctl: prints its arguments. */
static const char fake_mosctl[] = "#!/bin/sh\necho \"$@\"\nexit 3\n";

/* gwproc: start, log, stop with status, restart, kill, mosctl. */
static void
test_gwproc_fake(void **state)
{
	struct gwproc_opts	 o;
	struct gwproc		*gp;
	char			 bindir[256], path[300], *old, *out = NULL;
	const char		*tmp = getenv("MOSGW_TMP");

	(void)state;
	snprintf(bindir, sizeof bindir, "%s/rig-bin.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	assert_non_null(mkdtemp(bindir));
	write_script(bindir, "mosgw", fake_mosgw);
	write_script(bindir, "mosctl", fake_mosctl);
	old = getenv("MOSGW_BIN") != NULL ? strdup(getenv("MOSGW_BIN")) : NULL;
	setenv("MOSGW_BIN", bindir, 1);

	memset(&o, 0, sizeof o);
	o.nncs = 1;
	o.ncs[0].lower_port = 1;
	o.ncs[0].upper_port = 2;
	o.ncs[0].extra = "heartbeat_interval = 0.2\n";
	assert_non_null(gp = gwproc_new(&o));
	assert_true(gp->lower_port != 0 && gp->upper_port != 0 &&
	    gp->query_port != 0);
	assert_int_equal(gwproc_start(gp), 0);
	assert_true(gwproc_running(gp));
	assert_int_equal(gwproc_log_count(gp, 0, "event=listen", (char *)NULL), 3);
	assert_true(gwproc_log_wait(gp, 0, 100, "event=listen", "port=upper",
	    (char *)NULL) > 0);
	assert_int_equal(gwproc_log_wait(gp, 0, 50, "no such line", (char *)NULL),
	    -1);
	assert_int_equal(gwproc_stop(gp), 0);
	assert_int_equal(gwproc_log_count(gp, 0, "event=shutdown",
	    (char *)NULL), 1);
	assert_false(gwproc_running(gp));

	/* A second run gets its own log; SIGKILL reports signal 9. */
	assert_int_equal(gwproc_start(gp), 0);
	assert_int_equal(gp->runs, 2);
	assert_int_equal(gwproc_log_count(gp, 0, "event=shutdown",
	    (char *)NULL), 0);
	gwproc_kill(gp);
	assert_int_equal(gp->last_status, 128 + 9);

	assert_int_equal(gwproc_mosctl(gp, &out, "asset", "put", "X", (char *)NULL),
	    3);
	assert_non_null(strstr(out, "--db"));
	assert_non_null(strstr(out, "mosgw.db asset put X"));
	free(out);
	gwproc_free(gp);

	if (old != NULL) {
		setenv("MOSGW_BIN", old, 1);
		free(old);
	} else
		unsetenv("MOSGW_BIN");
	snprintf(path, sizeof path, "%s/mosgw", bindir);
	unlink(path);
	snprintf(path, sizeof path, "%s/mosctl", bindir);
	unlink(path);
	rmdir(bindir);
}

/* The it_rig suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_peer_profile0, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_peer_obj_policies, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_peer_one_byte, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_peer_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_down_holds_ports,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_close_down_up, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_peer_truncated, setup,
		    teardown),
		cmocka_unit_test(test_peer_encode),
		cmocka_unit_test(test_gwproc_fake),
	};

	return cmocka_run_group_tests_name("it_rig", tests, NULL, NULL);
}
