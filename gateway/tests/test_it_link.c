/*
 * Integration: the real mosgw against a scripted NCS, links and Profile 0.
 *
 * Links come up both ways, heartbeats are answered at once and sent at the
 * interval, reqMachInfo gets listMachInfo, unknown messages, unknown pairs and
 * bad frames get a NACK on a link that stays up, an oversize frame closes only
 * its own connection, a reset mid-frame harms nothing, and a request split at
 * every byte offset is answered as if it came in one piece.
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

#include "gateway/tests/itutil.h"

#define WAIT_MS		5000

/* The same with fast heartbeats. */
static int
setup_fast_heartbeat(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF16BE,
	    "heartbeat_interval = 0.2\n");
}

/* A small frame cap. */
static int
setup_small_frames(void **state)
{
	return itutil_setup_gateway(state,
	    "max_frame = 65536\npre_handshake_frame = 65536\n");
}

/* A one-second frame deadline. */
static int
setup_deadline(void **state)
{
	return itutil_setup_gateway(state, "frame_deadline = 1\n");
}

/* A one-second idle timeout for inbound connections. */
static int
setup_idle(void **state)
{
	return itutil_setup_gateway(state, "idle_timeout = 1\n");
}

/* At most three inbound connections per port. */
static int
setup_conn_limit(void **state)
{
	return itutil_setup_gateway(state, "max_conn_per_port = 3\n");
}

/* The usual rig over UTF-8. */
static int
setup_utf8(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF8, NULL);
}

/* Whether a reply is a NACK: mosAck NACK, or roAck with a non-OK status. */
static bool
is_nack(const struct ncspeer_frame *f, const char *needle)
{
	const char	*text;

	if (f == NULL || f->msg == NULL)
		return false;
	if (f->msg->type == MOS_T_MOS_ACK) {
		if (f->msg->u.mos_ack.status == NULL ||
		    strcmp(f->msg->u.mos_ack.status, "NACK") != 0)
			return false;
		text = f->msg->u.mos_ack.status_description;
	} else if (f->msg->type == MOS_T_RO_ACK) {
		text = f->msg->u.ro_ack.ro_status;
		if (text == NULL || strcmp(text, "OK") == 0)
			return false;
	} else
		return false;
	return needle == NULL || (text != NULL && strstr(text, needle) != NULL);
}

/* Whether a heartbeat on conn is still answered with its messageID. */
static bool
heartbeat_ok(struct gwrig *r, int conn)
{
	const struct ncspeer_frame *f;

	f = gwrig_request(r, conn, MOS_T_HEARTBEAT, WAIT_MS);
	return f != NULL && f->msg != NULL && f->msg->type == MOS_T_HEARTBEAT;
}

/* The gateway dials our lower and upper ports; we dial its three. */
static void
test_link_up_both_ways(void **state)
{
	struct gwrig	*r = *state;
	enum ncspeer_port ports[] = { NCSPEER_LOWER, NCSPEER_UPPER, NCSPEER_QUERY };
	size_t		 i;
	int		 c;

	GWRIG_CHECK(r, ncspeer_count_open(r->ncs, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED) == 1);
	GWRIG_CHECK(r, ncspeer_count_open(r->ncs, NCSPEER_UPPER,
	    NCSPEER_ACCEPTED) == 1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.up",
	    "port=lower", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.up",
	    "port=upper", (char *)NULL) != -1);
	for (i = 0; i < 3; i++) {
		c = gwrig_dial(r, ports[i]);
		GWRIG_CHECK(r, c > 0);
		GWRIG_CHECK(r, heartbeat_ok(r, c));
	}
}

/*
 * The NCS refuses connections for a while: reconnects back off (not a busy
 * loop), the process stays near idle, no descriptors leak, and the links
 * come back when the NCS does.
 */
static void
test_ncs_refuses(void **state)
{
	struct gwrig	*r = *state;
	double		 cpu0, cpu;
	long		 mark;
	int		 fds0, tries;

	ncspeer_down(r->ncs, true);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.down",
	    (char *)NULL) != -1);
	mark = (long)gwproc_log_size(r->gw);
	fds0 = gwproc_fd_count(r->gw);
	cpu0 = gwproc_cpu(r->gw);
	sleep(3);
	tries = gwproc_log_count(r->gw, mark, "event=link.connecting",
	    "port=lower", (char *)NULL);
	cpu = gwproc_cpu(r->gw) - cpu0;
	fprintf(stderr, "3 s refused: %d lower reconnects, %.2f s CPU, "
	    "fds %d -> %d\n", tries, cpu, fds0, gwproc_fd_count(r->gw));
	/* reconnect_min 0.1 s growing to reconnect_max 0.5 s: about 6-10. */
	GWRIG_CHECK(r, tries >= 3 && tries <= 20);
	GWRIG_CHECK(r, cpu < 0.5);
	GWRIG_CHECK(r, gwproc_fd_count(r->gw) <= fds0 + 2);
	GWRIG_CHECK(r, ncspeer_up(r->ncs) == 0);
	GWRIG_CHECK(r, ncspeer_wait_open(r->ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED,
	    1, WAIT_MS) == 0);
	GWRIG_CHECK(r, ncspeer_wait_open(r->ncs, NCSPEER_UPPER, NCSPEER_ACCEPTED,
	    1, WAIT_MS) == 0);
}

/* Our heartbeat is answered at once, with its messageID and our pair. */
static void
test_heartbeat_answered(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	int64_t				 t0;
	int				 c, i;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	for (i = 0; i < 5; i++) {
		t0 = ncspeer_now_ms();
		f = gwrig_request(r, c, MOS_T_HEARTBEAT, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		GWRIG_CHECK(r, f->msg->type == MOS_T_HEARTBEAT);
		GWRIG_CHECK(r, f->t_ms - t0 < 1000);
		GWRIG_CHECK(r, f->msg->mos_id != NULL &&
		    strcmp(f->msg->mos_id, "mosgw.test") == 0);
		GWRIG_CHECK(r, f->msg->ncs_id != NULL &&
		    strcmp(f->msg->ncs_id, "NCSPEER") == 0);
		GWRIG_CHECK(r,
		    (f->msg->u.heartbeat.time.flags & MOS_TIME_SET) != 0);
	}
}

/* The gateway's own heartbeats come on both outbound links at the interval. */
static void
test_heartbeat_interval(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .type = "heartbeat",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*f;
	int64_t				 prev = 0, gap;
	size_t				 i, n;
	int				 port;

	for (port = NCSPEER_LOWER; port <= NCSPEER_UPPER; port++) {
		mt.port = port;
		mt.from = ncspeer_nframes(r->ncs);
		n = ncspeer_wait_count(r->ncs, &mt, 6, WAIT_MS);
		GWRIG_CHECK(r, n >= 6);
		/* 0.2 s apart: allow scheduling noise on a loaded machine. */
		prev = 0;
		for (i = mt.from; (f = ncspeer_frame_at(r->ncs, i)) != NULL;
		    i++) {
			if (strcmp(f->type_name, "heartbeat") != 0 ||
			    f->side != NCSPEER_ACCEPTED || (int)f->port != port)
				continue;
			GWRIG_CHECK(r, f->has_message_id);
			if (prev != 0) {
				gap = f->t_ms - prev;
				GWRIG_CHECK(r, gap >= 120 && gap <= 900);
			}
			prev = f->t_ms;
		}
	}
	/* Answered heartbeats keep the links up. */
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=link.down",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=heartbeat.late",
	    (char *)NULL) == 0);
}

/* Unanswered heartbeats: the gateway notices within 2.5 intervals. */
static void
test_heartbeat_unanswered(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_policy	 pol;
	long			 mark;

	memset(&pol, 0, sizeof pol);
	pol.no_heartbeat_reply = true;
	mark = (long)gwproc_log_size(r->gw);
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS,
	    "event=heartbeat.late", (char *)NULL) != -1 ||
	    gwproc_log_wait(r->gw, mark, 1, "event=link.degraded",
	    (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS, "event=link.down",
	    (char *)NULL) != -1);
	/* Answer again: the gateway reconnects and the link comes back. */
	memset(&pol, 0, sizeof pol);
	mark = (long)gwproc_log_size(r->gw);
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, 2 * WAIT_MS, "event=link.up",
	    (char *)NULL) != -1);
}

/* reqMachInfo on lower and upper: listMachInfo telling the truth. */
static void
test_req_mach_info(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	const struct mos_list_mach_info	*li;
	enum ncspeer_port		 ports[] = { NCSPEER_LOWER, NCSPEER_UPPER };
	size_t				 i;
	int				 c;

	for (i = 0; i < 2; i++) {
		c = gwrig_dial(r, ports[i]);
		GWRIG_CHECK(r, c > 0);
		f = gwrig_request(r, c, MOS_T_REQ_MACH_INFO, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		GWRIG_CHECK(r, f->msg->type == MOS_T_LIST_MACH_INFO);
		li = &f->msg->u.list_mach_info;
		GWRIG_CHECK(r, li->manufacturer != NULL && li->model != NULL);
		GWRIG_CHECK(r, li->mos_rev != NULL);
		GWRIG_CHECK(r, li->profiles[0] == 1 && li->profiles[1] == 1);
		/* running orders (2 and 4), search and placeholders (3) */
		GWRIG_CHECK(r, li->profiles[2] == 1 && li->profiles[3] == 1 &&
		    li->profiles[4] == 1);
		/* 5..7 are not implemented */
		GWRIG_CHECK(r, li->profiles[5] != 1 && li->profiles[6] != 1 &&
		    li->profiles[7] != 1);
		/* Complete with no configuration: ID is the mosID. */
		GWRIG_CHECK(r, li->hw_rev != NULL && *li->hw_rev != '\0' &&
		    li->dom != NULL && *li->dom != '\0' && li->sn != NULL &&
		    *li->sn != '\0');
		GWRIG_CHECK(r, li->id != NULL &&
		    strcmp(li->id, "mosgw.test") == 0);
		GWRIG_CHECK(r, li->device_type == NULL ||
		    strcmp(li->device_type, "MOS") == 0);
		GWRIG_CHECK(r, (li->time.flags & MOS_TIME_SET) != 0);
	}
}

/* An unknown message: NACK naming it, on lower and upper; the link stays. */
static void
test_unknown_message(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	enum ncspeer_port		 ports[] = { NCSPEER_LOWER, NCSPEER_UPPER };
	enum mos_type			 want[] = { MOS_T_MOS_ACK, MOS_T_RO_ACK };
	char				*text;
	size_t				 i;
	int				 c;

	for (i = 0; i < 2; i++) {
		c = gwrig_dial(r, ports[i]);
		GWRIG_CHECK(r, c > 0);
		text = itutil_frame_text("mosgw.test", "NCSPEER", 900 + (int)i,
		    "<fooBarRequest><x>1</x></fooBarRequest>");
		f = itutil_send_text(r, c, 900 + (int)i, text, WAIT_MS);
		free(text);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		GWRIG_CHECK(r, f->msg->type == want[i]);
		GWRIG_CHECK(r, is_nack(f, "fooBarRequest"));
		GWRIG_CHECK(r, ncspeer_conn_open(r->ncs, c));
		GWRIG_CHECK(r, heartbeat_ok(r, c));
	}
}

/* Only configured (mosID, ncsID) pairs are served: NACK and a log line. */
static void
test_unknown_pair(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = ncspeer_msg(r->ncs, MOS_T_REQ_MACH_INFO);
	m->ncs_id = mos_msg_strdup(m, "STRANGER");
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_nack(f, NULL));
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "STRANGER",
	    (char *)NULL) != -1);

	m = ncspeer_msg(r->ncs, MOS_T_REQ_MACH_INFO);
	m->mos_id = mos_msg_strdup(m, "someone.else");
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, is_nack(f, NULL));
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "someone.else",
	    (char *)NULL) != -1);
	/* The right pair on the same connection is still served. */
	f = gwrig_request(r, c, MOS_T_REQ_MACH_INFO, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_LIST_MACH_INFO);
}

/* Malformed XML with a readable envelope: NACK, the link stays up. */
static void
test_bad_frame(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	char				*text;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	GWRIG_CHECK(r, heartbeat_ok(r, c));
	text = itutil_frame_text("mosgw.test", "NCSPEER", 4242,
	    "<mosReqObj><objID>X</objID><oops></mosReqObj>");
	f = itutil_send_text(r, c, 4242, text, WAIT_MS);
	free(text);
	GWRIG_CHECK(r, is_nack(f, NULL));
	GWRIG_CHECK(r, f->msg->type == MOS_T_MOS_ACK);
	GWRIG_CHECK(r, strlen(f->msg->u.mos_ack.status_description) <= 128 * 4);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=frame.error",
	    (char *)NULL) != -1 || gwproc_log_wait(r->gw, 0, 1,
	    "event=msg.nack", (char *)NULL) != -1);
	GWRIG_CHECK(r, ncspeer_conn_open(r->ncs, c));
	GWRIG_CHECK(r, heartbeat_ok(r, c));
	/* The outbound links did not notice. */
	GWRIG_CHECK(r, ncspeer_count_open(r->ncs, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED) == 1);
}

/* Over the frame cap: that connection closes, the others carry on. */
static void
test_oversize_frame(void **state)
{
	struct gwrig	*r = *state;
	char		*pad, *body, *text;
	size_t		 n = 80000;
	int		 big, other;

	big = gwrig_dial(r, NCSPEER_LOWER);
	other = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, big > 0 && other > 0);
	GWRIG_CHECK(r, heartbeat_ok(r, big));
	if ((pad = malloc(n + 1)) == NULL)
		abort();
	memset(pad, 'x', n);
	pad[n] = '\0';
	if (asprintf(&body, "<mosReqObj><objID>%s</objID></mosReqObj>", pad) == -1)
		abort();
	text = itutil_frame_text("mosgw.test", "NCSPEER", 77, body);
	/* The peer may see a reset mid-write: the write result is not asserted. */
	(void)ncspeer_send_xml(r->ncs, big, text);
	free(text);
	free(body);
	free(pad);
	GWRIG_CHECK(r, ncspeer_wait_closed(r->ncs, big, WAIT_MS) == 0);
	GWRIG_CHECK(r, heartbeat_ok(r, other));
	GWRIG_CHECK(r, ncspeer_count_open(r->ncs, NCSPEER_LOWER,
	    NCSPEER_ACCEPTED) == 1);
	GWRIG_CHECK(r, gwproc_running(r->gw));
}

/* A reset in the middle of a frame: nothing answered, nothing else harmed. */
static void
test_reset_mid_frame(void **state)
{
	struct gwrig	*r = *state;
	uint8_t		*data;
	char		*text;
	size_t		 len;
	long		 mark;
	int		 c;

	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	text = itutil_frame_text("mosgw.test", "NCSPEER", 55, "<reqMachInfo/>");
	data = ncspeer_encode(text, MOS_ENC_UTF16BE, &len);
	free(text);
	GWRIG_CHECK(r, data != NULL);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, ncspeer_send_raw(r->ncs, c, data, len / 2 + 1) == 0);
	free(data);
	ncspeer_close(r->ncs, c, true);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS, "event=conn.close",
	    (char *)NULL) != -1);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0 && heartbeat_ok(r, c));
	GWRIG_CHECK(r, gwproc_running(r->gw));
}

/*
 * Two requests (heartbeat, reqMachInfo) in one buffer, written in pieces of
 * k bytes for every k: so the first cut falls at every byte offset, odd ones
 * included, with a pause between writes so that they arrive apart.
 */
static void
test_split_every_offset(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt;
	struct mos_msg			*m[2];
	struct mos_buf			 b = { NULL, 0, 0 };
	const struct ncspeer_frame	*f;
	char				 err[128];
	size_t				 k, i;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	for (k = 1; ; k++) {
		m[0] = ncspeer_msg(r->ncs, MOS_T_HEARTBEAT);
		mos_time_now(&m[0]->u.heartbeat.time);
		m[1] = ncspeer_msg(r->ncs, MOS_T_REQ_MACH_INFO);
		b.len = 0;
		for (i = 0; i < 2; i++)
			GWRIG_CHECK(r, mos_write(m[i], MOS_ENC_UTF16BE, &b, err,
			    sizeof err) == 0);
		if (k >= b.len) {
			mos_msg_free(m[0]);
			mos_msg_free(m[1]);
			break;
		}
		memset(&mt, 0, sizeof mt);
		mt.conn = c;
		mt.from = ncspeer_nframes(r->ncs);
		/* A pause between the two writes so they arrive apart. */
		GWRIG_CHECK(r, ncspeer_send_chunked(r->ncs, c, b.data, b.len, k,
		    300) == 0);
		for (i = 0; i < 2; i++) {
			mt.message_id = m[i]->message_id;
			f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
			if (f == NULL || f->msg == NULL)
				fprintf(stderr, "split at %zu of %zu: "
				    "no reply %zu\n", k, b.len, i);
			GWRIG_CHECK(r, f != NULL && f->msg != NULL);
			GWRIG_CHECK(r, f->msg->type == (i == 0 ?
			    MOS_T_HEARTBEAT : MOS_T_LIST_MACH_INFO));
		}
		mos_msg_free(m[0]);
		mos_msg_free(m[1]);
	}
	/* Every cut of the ~480-byte pair was tried, odd offsets included. */
	fprintf(stderr, "split: %zu cuts of %zu bytes\n", k - 1, b.len);
	GWRIG_CHECK(r, k > 400);
	mos_buf_free(&b);
}

/* One byte per send() with TCP_NODELAY. */
static void
test_one_byte_writes(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	const struct ncspeer_frame	*f;
	int				 c, i;

	memset(&pol, 0, sizeof pol);
	pol.write_chunk = 1;
	pol.chunk_pause_us = 50;
	ncspeer_set_policy(r->ncs, &pol);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	for (i = 0; i < 3; i++) {
		f = gwrig_request(r, c, i == 1 ? MOS_T_HEARTBEAT :
		    MOS_T_REQ_MACH_INFO, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		GWRIG_CHECK(r, f->msg->type == (i == 1 ? MOS_T_HEARTBEAT :
		    MOS_T_LIST_MACH_INFO));
	}
}

/* Several messages in one write: all answered, in order. */
static void
test_coalesced_frames(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt;
	struct mos_msg			*m[4];
	struct mos_buf			 b = { NULL, 0, 0 };
	const struct ncspeer_frame	*f;
	char				 err[128];
	size_t				 i, prev = 0;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	for (i = 0; i < 4; i++) {
		m[i] = ncspeer_msg(r->ncs, i < 3 ? MOS_T_HEARTBEAT :
		    MOS_T_REQ_MACH_INFO);
		mos_time_now(&m[i]->u.heartbeat.time);
		GWRIG_CHECK(r, mos_write(m[i], MOS_ENC_UTF16BE, &b, err,
		    sizeof err) == 0);
	}
	memset(&mt, 0, sizeof mt);
	mt.conn = c;
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, ncspeer_send_raw(r->ncs, c, b.data, b.len) == 0);
	for (i = 0; i < 4; i++) {
		mt.message_id = m[i]->message_id;
		f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		GWRIG_CHECK(r, f->msg->type == (i < 3 ? MOS_T_HEARTBEAT :
		    MOS_T_LIST_MACH_INFO));
		GWRIG_CHECK(r, i == 0 || f->seq > prev);
		/* Each answered once. */
		GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 1);
		prev = f->seq;
		mos_msg_free(m[i]);
	}
	mos_buf_free(&b);
}

/* Whitespace before <mos> is skipped; junk beyond max_junk closes. */
static void
test_junk_before_frame(void **state)
{
	struct gwrig	*r = *state;
	char		*junk;
	size_t		 n = 70 * 1024, i;
	int		 c;

	if ((junk = malloc(n + 1)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		junk[i] = "\r\n \t"[i % 4];
	junk[n] = '\0';
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	junk[1000] = '\0';
	GWRIG_CHECK(r, ncspeer_send_xml(r->ncs, c, junk) == 0);
	GWRIG_CHECK(r, heartbeat_ok(r, c));

	junk[1000] = ' ';
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	(void)ncspeer_send_xml(r->ncs, c, junk);
	free(junk);
	GWRIG_CHECK(r, ncspeer_wait_closed(r->ncs, c, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_running(r->gw));
}

/* A frame that never ends is closed at the frame deadline; others go on. */
static void
test_frame_deadline(void **state)
{
	struct gwrig	*r = *state;
	uint8_t		*data;
	char		*text;
	size_t		 len;
	int64_t		 t0;
	int		 slow, other;

	slow = gwrig_dial(r, NCSPEER_LOWER);
	other = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, slow > 0 && other > 0);
	text = itutil_frame_text("mosgw.test", "NCSPEER", 61, "<reqMachInfo/>");
	data = ncspeer_encode(text, MOS_ENC_UTF16BE, &len);
	free(text);
	GWRIG_CHECK(r, data != NULL);
	t0 = ncspeer_now_ms();
	GWRIG_CHECK(r, ncspeer_send_raw(r->ncs, slow, data, len / 2) == 0);
	/* frame_deadline = 1 s: meanwhile the other connection is served. */
	while (ncspeer_conn_open(r->ncs, slow) && ncspeer_now_ms() - t0 < 4000)
		GWRIG_CHECK(r, heartbeat_ok(r, other));
	GWRIG_CHECK(r, !ncspeer_conn_open(r->ncs, slow));
	GWRIG_CHECK(r, ncspeer_now_ms() - t0 >= 800);
	GWRIG_CHECK(r, heartbeat_ok(r, other));
	/* The rest of the frame, too late, is never answered. */
	free(data);
}

/* A silent inbound connection is closed after idle_timeout; a busy one not. */
static void
test_idle_timeout(void **state)
{
	struct gwrig	*r = *state;
	int64_t		 t0;
	int		 idle, busy;

	idle = gwrig_dial(r, NCSPEER_UPPER);
	busy = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, idle > 0 && busy > 0);
	GWRIG_CHECK(r, heartbeat_ok(r, idle));
	t0 = ncspeer_now_ms();
	while (ncspeer_now_ms() - t0 < 2500) {
		GWRIG_CHECK(r, heartbeat_ok(r, busy));
		ncspeer_wait_closed(r->ncs, idle, 300);
	}
	GWRIG_CHECK(r, !ncspeer_conn_open(r->ncs, idle));
	GWRIG_CHECK(r, ncspeer_conn_open(r->ncs, busy));
	GWRIG_CHECK(r, heartbeat_ok(r, busy));
}

/* Over max_conn_per_port: accepted and closed; the first ones keep working. */
static void
test_conn_limit(void **state)
{
	struct gwrig	*r = *state;
	int		 c[6], i, open = 0;

	for (i = 0; i < 6; i++) {
		c[i] = gwrig_dial(r, NCSPEER_LOWER);
		GWRIG_CHECK(r, c[i] > 0);
		if (i < 3)
			GWRIG_CHECK(r, heartbeat_ok(r, c[i]));
	}
	for (i = 3; i < 6; i++)
		GWRIG_CHECK(r, ncspeer_wait_closed(r->ncs, c[i], WAIT_MS) == 0);
	for (i = 0; i < 3; i++) {
		GWRIG_CHECK(r, heartbeat_ok(r, c[i]));
		open++;
	}
	GWRIG_CHECK(r, open == 3);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=conn.reject",
	    (char *)NULL) != -1);
	/* Another port has its own budget. */
	i = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, i > 0 && heartbeat_ok(r, i));
}

/* Bytes that are not UTF-16 (a lone surrogate): rejected, the link stays. */
static void
test_bad_encoding(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .message_id = 31 };
	const struct ncspeer_frame	*f;
	uint8_t				*data;
	char				*text;
	size_t				 len, i;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	text = itutil_frame_text("mosgw.test", "NCSPEER", 31,
	    "<reqMachInfo><note>@</note></reqMachInfo>");
	data = ncspeer_encode(text, MOS_ENC_UTF16BE, &len);
	free(text);
	GWRIG_CHECK(r, data != NULL);
	for (i = 0; i + 1 < len; i += 2) {
		if (data[i] == 0 && data[i + 1] == '@') {
			data[i] = 0xd8;		/* a high surrogate, alone */
			data[i + 1] = 0x00;
		}
	}
	mt.conn = c;
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, ncspeer_send_raw(r->ncs, c, data, len) == 0);
	free(data);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=frame.error",
	    (char *)NULL) != -1);
	/* A NACK if the envelope could be read, never a listMachInfo. */
	f = ncspeer_wait(r->ncs, &mt, 500);
	GWRIG_CHECK(r, f == NULL || is_nack(f, NULL));
	GWRIG_CHECK(r, ncspeer_conn_open(r->ncs, c));
	GWRIG_CHECK(r, heartbeat_ok(r, c));
}

/* SIGHUP: a bad file is refused and nothing changes; a good one applies. */
static void
test_sighup_reload(void **state)
{
	struct gwrig	*r = *state;
	long		 mark;
	int		 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	r->gw->opts.gateway_extra = "max_conn = -5\n";
	GWRIG_CHECK(r, gwproc_write_config(r->gw) == 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS, "event=config.reload",
	    "result=rejected", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_running(r->gw));
	GWRIG_CHECK(r, heartbeat_ok(r, c));

	/* A valid change to the NCS section takes effect. */
	r->gw->opts.gateway_extra = NULL;
	r->gw->opts.ncs[0].extra = "heartbeat_interval = 0.2\n";
	GWRIG_CHECK(r, gwproc_write_config(r->gw) == 0);
	mark = (long)gwproc_log_size(r->gw);
	GWRIG_CHECK(r, gwproc_signal(r->gw, SIGHUP) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, mark, WAIT_MS, "event=config.reload",
	    "result=applied", (char *)NULL) != -1);
	{
		struct ncspeer_match mt = { .type = "heartbeat",
		    .port = NCSPEER_LOWER, .side = NCSPEER_ACCEPTED };

		/* 0.2 s apart now: at least 5 in 1.5 s (1 s before). */
		mt.from = ncspeer_nframes(r->ncs);
		GWRIG_CHECK(r, ncspeer_wait_count(r->ncs, &mt, 5, 1500) >= 5);
	}
	/* Inbound idle timeout is 2.5 x 0.2 s now: c may be gone; dial again. */
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0 && heartbeat_ok(r, c));
}

/* The whole exchange over UTF-8 for an NCS configured that way. */
static void
test_utf8_link(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .type = "heartbeat",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*f;
	int				 c;

	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->enc == MOS_ENC_UTF8 && f->msg != NULL);
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	f = gwrig_request(r, c, MOS_T_REQ_MACH_INFO, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_LIST_MACH_INFO && f->enc == MOS_ENC_UTF8);
}

/* The it_link suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_link_up_both_ways,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ncs_refuses, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_heartbeat_answered,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_heartbeat_interval,
		    setup_fast_heartbeat, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_heartbeat_unanswered,
		    setup_fast_heartbeat, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_req_mach_info,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_message,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_pair, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_bad_frame, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_oversize_frame,
		    setup_small_frames, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_reset_mid_frame,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_split_every_offset,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_one_byte_writes,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_coalesced_frames,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_junk_before_frame,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_frame_deadline,
		    setup_deadline, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_idle_timeout, setup_idle,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_conn_limit,
		    setup_conn_limit, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_bad_encoding, itutil_setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_sighup_reload,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_utf8_link, setup_utf8,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("it_link", tests, NULL, NULL);
}
