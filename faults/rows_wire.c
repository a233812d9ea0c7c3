/*
 * Rows 1-12: what arrives on the wire (chunking, framing, encodings,
 * hostile XML, size). The scripted NCS dials the gateway's listeners
 * (directly or through the chaos proxy) and sends crafted bytes.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults/faults.h"

/* A started rig without proxies; NULL (row failed) on error. */
static struct frig *
wire_rig(struct row *row, const char *gateway_extra)
{
	return frig_up(row, false, gateway_extra, NULL, NULL);
}

/* A dialed lower-port connection that has sent one good frame (trusted). */
static int
trusted_conn(struct gwrig *r)
{
	int	c = gwrig_dial(r, NCSPEER_LOWER);

	return c > 0 && heartbeat_ok(r, c) ? c : -1;
}

/* UTF-8 text to UTF-16BE (malloc'd). */
static uint8_t *
u16(const char *text, size_t *len)
{
	uint8_t	*d = ncspeer_encode(text, MOS_ENC_UTF16BE, len);

	if (d == NULL)
		abort();
	return d;
}

/* Send a frame with this body and messageID as UTF-16BE. */
static int
send_body(struct gwrig *r, int conn, int32_t id, const char *body)
{
	char	*x = frame_xml(id, body);
	int	 rc = ncspeer_send_xml(r->ncs, conn, x);

	free(x);
	return rc;
}

/* Is the reply a NACK (mosAck or roAck)? */
static bool
is_nack(const struct ncspeer_frame *f)
{
	if (f == NULL || f->msg == NULL)
		return false;
	if (f->msg->type == MOS_T_MOS_ACK)
		return f->msg->u.mos_ack.status != NULL &&
		    strcmp(f->msg->u.mos_ack.status, "NACK") == 0;
	return f->msg->type == MOS_T_RO_ACK;
}

/* Ask for an object over conn; the reply (mosObj) or NULL. */
static const struct ncspeer_frame *
req_obj(struct gwrig *r, int conn, int32_t id, const char *obj)
{
	char	body[256];

	snprintf(body, sizeof body, "<mosReqObj><objID>%s</objID></mosReqObj>",
	    obj);
	if (send_body(r, conn, id, body) != 0)
		return NULL;
	return reply_on(r, conn, id, F_WAIT_MS);
}

/* heartbeat, reqMachInfo and mosReqObj over conn: how many were right. */
static int
three_requests(struct gwrig *r, int conn, int32_t base)
{
	const struct ncspeer_frame	*f;
	int				 ok = 0;

	if (send_body(r, conn, base, "<heartbeat><time>2026-12-01T10:00:00,"
	    "000Z</time></heartbeat>") == 0 &&
	    (f = reply_on(r, conn, base, F_WAIT_MS)) != NULL &&
	    strcmp(f->type_name, "heartbeat") == 0)
		ok++;
	if (send_body(r, conn, base + 1, "<reqMachInfo/>") == 0 &&
	    (f = reply_on(r, conn, base + 1, F_WAIT_MS)) != NULL &&
	    strcmp(f->type_name, "listMachInfo") == 0)
		ok++;
	if ((f = req_obj(r, conn, base + 2, "SPLIT-1")) != NULL &&
	    f->msg != NULL && f->msg->type == MOS_T_MOS_OBJ &&
	    strcmp(f->msg->u.mos_obj.obj_slug, "Split me") == 0)
		ok++;
	return ok;
}

/* Row 1: every frame in pieces, both ways, through the chaos proxy. */
void
row01_split(struct row *row)
{
	struct frig		*f;
	struct proxy		 in;
	struct ncspeer_stats	 st;
	static const char	*modes[] = { "chunk 1", "chunk random 1 7",
				    "chunk random 1 300" };
	size_t			 m;
	int			 c, ok, i;

	in.ch.pid = -1;
	in.ctl = -1;
	if ((f = frig_up(row, true, NULL, NULL, NULL)) == NULL)
		return;
	ROW_CHECK(row, proxy_start(&in, f->r->gw->lower_port, 7) == 0,
	    "inbound proxy did not start");
	ROW_CHECK(row, gwproc_asset_put(f->r->gw, "SPLIT-1", "Split me") == 0,
	    "mosctl asset put failed");
	ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane, F_WAIT_MS) == 0,
	    "first delivery did not complete");
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, c > 0 && three_requests(f->r, c, 100) == 3,
	    "direct requests not answered");
	for (m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		ROW_CHECK(row, proxy_cmd(&in, "%s", modes[m]) == 0 &&
		    proxy_cmd(&f->px[0], "%s", modes[m]) == 0 &&
		    proxy_cmd(&f->px[1], "%s", modes[m]) == 0,
		    "proxy command failed: %s", in.reply);
		c = ncspeer_dial(f->r->ncs, NCSPEER_LOWER, in.port);
		ROW_CHECK(row, c > 0, "dial through the proxy failed");
		ok = three_requests(f->r, c, 200 + (int)m * 10);
		ROW_CHECK(row, ok == 3, "%s inbound: %d of 3 answered",
		    modes[m], ok);
		for (i = 0; i < 3; i++) {
			char	id[32];

			snprintf(id, sizeof id, "SPLIT-%zu-%d", m, i);
			ROW_CHECK(row, gwproc_asset_put(f->r->gw, id,
			    "Split me") == 0, "mosctl asset put failed");
		}
		ROW_CHECK(row, gwproc_wait_idle(f->r->gw, f->r->lane,
		    F_DRAIN_MS) == 0, "%s outbound: deliveries did not "
		    "complete", modes[m]);
		row_note(row, "%s: 3/3 requests answered, 3/3 mosObj acked",
		    modes[m]);
	}
	ncspeer_stats(f->r->ncs, &st);
	ROW_CHECK(row, st.errors == 0, "the NCS saw %llu bad frames",
	    (unsigned long long)st.errors);
	ROW_CHECK(row, gwproc_log_count(f->r->gw, 0, "event=frame.error",
	    (char *)NULL) == 0, "the gateway logged frame errors");
	row_fig(row, "proxy bytes up=%lld down=%lld; NCS bad frames 0; "
	    "gateway frame errors 0", proxy_stat(&in, "up"),
	    proxy_stat(&in, "down"));
out:
	if (in.ch.pid > 0 || in.ctl != -1)
		proxy_stop(&in);
	frig_free(f);
}

/* Row 2: five requests in one send(). */
void
row02_coalesced(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep[5];
	struct ncspeer_match		 mt;
	char				*x[5], all[4096];
	static const char		*bodies[] = {
		"<heartbeat><time>2026-12-01T10:00:00Z</time></heartbeat>",
		"<heartbeat><time>2026-12-01T10:00:01Z</time></heartbeat>",
		"<heartbeat><time>2026-12-01T10:00:02Z</time></heartbeat>",
		"<reqMachInfo/>",
		"<mosReqObj><objID>NOPE</objID></mosReqObj>",
	};
	int				 c, i;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, c > 0, "dial failed");
	all[0] = '\0';
	for (i = 0; i < 5; i++) {
		x[i] = frame_xml(300 + i, bodies[i]);
		strncat(all, x[i], sizeof all - strlen(all) - 1);
		free(x[i]);
	}
	ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, all) == 0,
	    "send failed");
	for (i = 0; i < 5; i++) {
		rep[i] = reply_on(f->r, c, 300 + i, F_WAIT_MS);
		ROW_CHECK(row, rep[i] != NULL, "message %d not answered", i);
		ROW_CHECK(row, i == 0 || rep[i]->seq > rep[i - 1]->seq,
		    "answers out of order");
	}
	ROW_CHECK(row, heartbeat_ok(f->r, c), "later heartbeat unanswered");
	for (i = 0; i < 5; i++) {
		memset(&mt, 0, sizeof mt);
		mt.conn = c;
		mt.message_id = 300 + i;
		ROW_CHECK(row, ncspeer_count(f->r->ncs, &mt) == 1,
		    "message %d answered %zu times", i,
		    ncspeer_count(f->r->ncs, &mt));
	}
	row_note(row, "5/5 answered once each, in order (heartbeat x3, "
	    "listMachInfo, mosAck NACK for the unknown object)");
out:
	frig_free(f);
}

/* Row 3: </mos> inside CDATA and a comment, an inner <mos> in a payload. */
void
row03_inner_mos(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	static const char		*bodies[] = {
		"<mosReqObj><objID><![CDATA[X</mos>Y]]></objID></mosReqObj>",
		"<mosReqObj><!-- </mos> --><objID>C-1</objID></mosReqObj>",
		"<roCreate><roID>RO1</roID><roSlug>s</roSlug>"
		    "<mosExternalMetadata><mosSchema>http://x/s</mosSchema>"
		    "<mosPayload><mos><inner>1</inner></mos></mosPayload>"
		    "</mosExternalMetadata></roCreate>",
	};
	int				 c, i, port;
	long				 mark;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	mark = (long)gwproc_log_size(f->r->gw);
	for (i = 0; i < 3; i++) {
		port = i == 2 ? NCSPEER_UPPER : NCSPEER_LOWER;
		c = gwrig_dial(f->r, port);
		ROW_CHECK(row, c > 0, "dial failed");
		ROW_CHECK(row, send_body(f->r, c, 400 + i, bodies[i]) == 0,
		    "send failed");
		rep = reply_on(f->r, c, 400 + i, F_WAIT_MS);
		ROW_CHECK(row, rep != NULL, "frame %d not answered", i);
		ROW_CHECK(row, heartbeat_ok(f->r, c),
		    "frame %d: connection broken after it", i);
		row_note(row, "frame %d answered once (%s)", i,
		    rep->type_name);
	}
	ROW_CHECK(row, gwproc_log_count(f->r->gw, mark, "event=frame.error",
	    "stage=framing", (char *)NULL) == 0, "framing errors logged");
	row_fig(row, "framing errors 0");
out:
	frig_free(f);
}

/* Row 4: a stream that ends inside a frame. */
void
row04_truncated(struct row *row)
{
	struct frig	*f;
	uint8_t		*a, *b, *buf;
	char		*x;
	size_t		 la, lb;
	int		 c, k;
	long		 mark;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	for (k = 0; k < 2; k++) {
		x = frame_xml(500, "<heartbeat><time>2026-12-01T10:00:00Z"
		    "</time></heartbeat>");
		a = u16(x, &la);
		free(x);
		x = frame_xml(501 + k, "<reqMachInfo/>");
		b = u16(x, &lb);
		free(x);
		if ((buf = malloc(la + lb)) == NULL)
			abort();
		memcpy(buf, a, la);
		/* k = 0: a frame and one odd byte; k = 1: half a frame */
		memcpy(buf + la, b, k == 0 ? 1 : lb / 2 + 1);
		c = gwrig_dial(f->r, NCSPEER_LOWER);
		mark = (long)gwproc_log_size(f->r->gw);
		ROW_CHECK(row, c > 0 && ncspeer_send_raw(f->r->ncs, c, buf,
		    la + (k == 0 ? 1 : lb / 2 + 1)) == 0, "send failed");
		free(a);
		free(b);
		free(buf);
		ROW_CHECK(row, reply_on(f->r, c, 500, F_WAIT_MS) != NULL,
		    "the complete frame was not answered");
		ncspeer_close(f->r->ncs, c, false);
		ROW_CHECK(row, gwproc_log_wait(f->r->gw, mark, F_WAIT_MS,
		    "event=conn.close", (char *)NULL) != -1,
		    "no conn.close logged");
		ROW_CHECK(row, gwproc_log_count(f->r->gw, mark,
		    "event=msg.in", "message_id=50", (char *)NULL) <= 1,
		    "the partial frame was handled");
		ROW_CHECK(row, gwproc_log_count(f->r->gw, mark,
		    "event=frame.error", "stage=framing", (char *)NULL) == 1,
		    "no framing error logged for the end of the stream");
		row_note(row, "%s: complete frame answered, the rest "
		    "dropped with a framing error", k == 0 ?
		    "frame + odd byte + FIN" : "half a frame + FIN");
	}
	c = trusted_conn(f->r);
	ROW_CHECK(row, c > 0, "a new connection is not served");
out:
	frig_free(f);
}

/* A mosReqObj whose objID holds these UTF-16BE code units. */
static uint8_t *
bad_text_frame(int32_t id, const uint8_t *units, size_t nunits, size_t *len)
{
	char	*x;
	uint8_t	*d, *out, *at;
	size_t	 l;

	x = frame_xml(id, "<mosReqObj><objID>A@B</objID></mosReqObj>");
	d = u16(x, &l);
	free(x);
	for (at = d; at + 1 < d + l; at += 2)
		if (at[0] == 0 && at[1] == '@')
			break;
	if ((out = malloc(l - 2 + nunits)) == NULL)
		abort();
	memcpy(out, d, (size_t)(at - d));
	memcpy(out + (at - d), units, nunits);
	memcpy(out + (at - d) + nunits, at + 2, l - (size_t)(at - d) - 2);
	*len = l - 2 + nunits;
	free(d);
	return out;
}

/* Row 5: bad characters: the message is refused, the connection stays. */
void
row05_bad_chars(struct row *row)
{
	static const struct {
		const char	*name;
		uint8_t		 u[4];
		size_t		 n;
	} bad[] = {
		{ "lone high surrogate", { 0xD8, 0x00 }, 2 },
		{ "lone low surrogate", { 0xDC, 0x00 }, 2 },
		{ "U+0000", { 0x00, 0x00 }, 2 },
		{ "U+FFFE", { 0xFF, 0xFE }, 2 },
	};
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	uint8_t				*d;
	size_t				 len, i;
	int				 c, nacks = 0;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	c = trusted_conn(f->r);
	ROW_CHECK(row, c > 0, "dial failed");
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		d = bad_text_frame(600 + (int)i, bad[i].u, bad[i].n, &len);
		ROW_CHECK(row, ncspeer_send_raw(f->r->ncs, c, d, len) == 0,
		    "send failed");
		free(d);
		rep = reply_on(f->r, c, 600 + (int)i, F_WAIT_MS);
		ROW_CHECK(row, rep != NULL && is_nack(rep), "%s: no NACK",
		    bad[i].name);
		nacks++;
		ROW_CHECK(row, heartbeat_ok(f->r, c),
		    "%s: connection unusable after it", bad[i].name);
	}
	row_note(row, "%d/4 NACKed, heartbeat after each answered on the "
	    "same connection", nacks);
out:
	frig_free(f);
}

/* Row 6: BOM and a lying XML declaration. */
void
row06_bom_decl(struct row *row)
{
	struct frig	*f;
	uint8_t		*d, *buf;
	char		*x, *y;
	size_t		 len;
	int		 c, k;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	for (k = 0; k < 2; k++) {
		x = frame_xml(700 + k, "<heartbeat><time>2026-12-01T10:00:00Z"
		    "</time></heartbeat>");
		if (k == 1) {
			if (asprintf(&y, "<?xml version=\"1.0\" encoding="
			    "\"ISO-8859-1\"?>%s", x) == -1)
				abort();
			free(x);
			x = y;
		}
		d = u16(x, &len);
		free(x);
		if ((buf = malloc(len + 2)) == NULL)
			abort();
		buf[0] = 0xFE;
		buf[1] = 0xFF;
		memcpy(buf + 2, d, len);
		free(d);
		c = gwrig_dial(f->r, NCSPEER_LOWER);
		ROW_CHECK(row, c > 0 && ncspeer_send_raw(f->r->ncs, c,
		    k == 0 ? buf : buf + 2, k == 0 ? len + 2 : len) == 0,
		    "send failed");
		free(buf);
		ROW_CHECK(row, reply_on(f->r, c, 700 + k, F_WAIT_MS) != NULL,
		    "%s: not answered", k == 0 ? "BOM" : "declaration");
		ROW_CHECK(row, heartbeat_ok(f->r, c), "connection unusable");
		row_note(row, "%s: answered", k == 0 ? "BOM + frame" :
		    "ISO-8859-1 declaration + UTF-16BE frame");
	}
out:
	frig_free(f);
}

/* Row 7: junk before <mos>. */
void
row07_junk(struct row *row)
{
	struct frig	*f;
	uint8_t		*junk, *d;
	char		*x;
	size_t		 len, n = 1 << 20, i;
	uint32_t	 s = 12345;
	int		 c, other;
	long		 mark;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	x = frame_xml(800, "<heartbeat><time>2026-12-01T10:00:00Z</time>"
	    "</heartbeat>");
	d = u16(x, &len);
	free(x);
	ROW_CHECK(row, c > 0 && ncspeer_send_raw(f->r->ncs, c,
	    "\0\r\0\n\0 \0 \0\r\0\n", 12) == 0 &&
	    ncspeer_send_raw(f->r->ncs, c, d, len) == 0, "send failed");
	free(d);
	ROW_CHECK(row, reply_on(f->r, c, 800, F_WAIT_MS) != NULL,
	    "frame after CRLF and spaces not answered");
	row_note(row, "CRLF + spaces, then a frame: answered");
	other = trusted_conn(f->r);
	ROW_CHECK(row, other > 0, "second connection failed");
	if ((junk = malloc(n)) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		junk[i] = (uint8_t)(s >> 16);
		if (junk[i] == '<')
			junk[i] = 'x';
	}
	c = gwrig_dial(f->r, NCSPEER_LOWER);
	mark = (long)gwproc_log_size(f->r->gw);
	/* the gateway may reset us mid-write: the result is not checked */
	(void)ncspeer_send_raw(f->r->ncs, c, junk, n);
	free(junk);
	ROW_CHECK(row, ncspeer_wait_closed(f->r->ncs, c, F_WAIT_MS) == 0,
	    "1 MiB of junk: connection not closed");
	ROW_CHECK(row, gwproc_log_wait(f->r->gw, mark, F_WAIT_MS,
	    "event=frame.error", (char *)NULL) != -1, "no frame.error logged");
	ROW_CHECK(row, heartbeat_ok(f->r, other), "the other connection "
	    "was harmed");
	row_note(row, "1 MiB of junk: frame.error, connection closed; "
	    "another connection unaffected");
out:
	frig_free(f);
}

/* A roCreate of about `bytes` UTF-16BE bytes. */
static char *
big_ro(int32_t id, size_t bytes)
{
	struct sbuf_lite {
		char	*s;
		size_t	 len, cap;
	}		 b = { NULL, 0, 0 };
	char		 story[256], *x;
	int		 n, k = 0;

	b.cap = bytes / 2 + 4096;
	if ((b.s = malloc(b.cap)) == NULL)
		abort();
	b.len = (size_t)snprintf(b.s, b.cap, "<roCreate><roID>BIG</roID>"
	    "<roSlug>big</roSlug>");
	while (b.len * 2 < bytes) {
		n = snprintf(story, sizeof story, "<story><storyID>S%d"
		    "</storyID><storySlug>Story number %d of a long running "
		    "order</storySlug></story>", k, k);
		k++;
		if (b.len + (size_t)n + 32 >= b.cap)
			break;
		memcpy(b.s + b.len, story, (size_t)n);
		b.len += (size_t)n;
	}
	memcpy(b.s + b.len, "</roCreate>", 12);
	x = frame_xml(id, b.s);
	free(b.s);
	return x;
}

/* Row 8: a big frame answered with RSS bounded; over the cap: closed. */
void
row08_big(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	struct mos_msg			*hb;
	char				*x;
	size_t				 size = row->full ? 10u << 20 : 2u << 20;
	int64_t				 t0;
	long				 hwm0, hwm1, mark;
	int				 c, c2;

	if ((f = wire_rig(row, "max_frame = 12m\n")) == NULL)
		return;
	c = gwrig_dial(f->r, NCSPEER_UPPER);
	ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c), "dial failed");
	hwm0 = proc_kb(f->r->gw->pid, "VmHWM");
	x = big_ro(900, size);
	ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0, "send failed");
	free(x);
	/*
	 * Wait for the roAck heartbeating meanwhile, as an NCS does: a
	 * connection that sends nothing for 2.5 heartbeat intervals is closed.
	 */
	t0 = ncspeer_now_ms();
	while ((rep = reply_on(f->r, c, 900, 1000)) == NULL &&
	    ncspeer_now_ms() - t0 < F_DRAIN_MS) {
		hb = ncspeer_msg(f->r->ncs, MOS_T_HEARTBEAT);
		mos_time_now(&hb->u.heartbeat.time);
		(void)ncspeer_send(f->r->ncs, c, hb);
		mos_msg_free(hb);
	}
	ROW_CHECK(row, rep != NULL, "%zu MiB roCreate not answered%s",
	    size >> 20, gwproc_log_count(f->r->gw, 0, "event=ro.noreply",
	    (char *)NULL) > 0 && gwproc_log_count(f->r->gw, 0,
	    "event=conn.close", "reason=idle-timeout", (char *)NULL) > 0 ?
	    ": the gateway closed the connection for idle-timeout while it "
	    "was still storing the running order, and dropped the roAck "
	    "(ro.noreply)" : "");
	hwm1 = proc_kb(f->r->gw->pid, "VmHWM");
	row_note(row, "%zu MiB roCreate answered (%s)", size >> 20,
	    rep->type_name);
	row_fig(row, "peak RSS %ld -> %ld MiB (+%ld MiB for a %zu MiB frame)",
	    hwm0 / 1024, hwm1 / 1024, (hwm1 - hwm0) / 1024, size >> 20);
	ROW_CHECK(row, !rss_meaningful() || hwm1 - hwm0 < (long)(size /
	    1024) * 20, "peak RSS grew %ld kB", hwm1 - hwm0);
	c2 = gwrig_dial(f->r, NCSPEER_UPPER);
	ROW_CHECK(row, c2 > 0 && heartbeat_ok(f->r, c2), "dial failed");
	mark = (long)gwproc_log_size(f->r->gw);
	x = big_ro(901, (12u << 20) + 4096);
	(void)ncspeer_send_xml(f->r->ncs, c2, x);
	free(x);
	ROW_CHECK(row, ncspeer_wait_closed(f->r->ncs, c2, F_DRAIN_MS) == 0,
	    "over-cap frame: connection not closed");
	ROW_CHECK(row, reply_on(f->r, c2, 901, 100) == NULL,
	    "over-cap frame was answered");
	ROW_CHECK(row, gwproc_log_count(f->r->gw, mark, "event=frame.error",
	    (char *)NULL) >= 1, "no frame.error logged");
	row_note(row, "12 MiB + 4 KiB frame (cap 12 MiB): frame.error, "
	    "closed, no answer");
	row_fig(row, "peak RSS after both %ld MiB",
	    proc_kb(f->r->gw->pid, "VmHWM") / 1024);
	ROW_CHECK(row, heartbeat_ok(f->r, c), "first connection harmed");
out:
	frig_free(f);
}

/* Row 9: a frame trickled one byte at a time. */
void
row09_slowloris(struct row *row)
{
	struct frig	*f;
	uint8_t		*d;
	char		*x;
	size_t		 len, i;
	int64_t		 t0, closed_ms = -1;
	int		 slow, other, hb = 0;

	if ((f = wire_rig(row, "frame_deadline = 2\n")) == NULL)
		return;
	other = trusted_conn(f->r);
	slow = gwrig_dial(f->r, NCSPEER_LOWER);
	ROW_CHECK(row, other > 0 && slow > 0, "dial failed");
	x = frame_xml(1000, "<heartbeat><time>2026-12-01T10:00:00Z</time>"
	    "</heartbeat>");
	d = u16(x, &len);
	free(x);
	t0 = ncspeer_now_ms();
	for (i = 0; i < len && ncspeer_now_ms() - t0 < 30000; i++) {
		if (ncspeer_send_raw(f->r->ncs, slow, d + i, 1) != 0 ||
		    !ncspeer_conn_open(f->r->ncs, slow))
			break;
		if (i % 5 == 0 && heartbeat_ok(f->r, other))
			hb++;
		usleep(200000);
	}
	free(d);
	if (ncspeer_wait_closed(f->r->ncs, slow, F_WAIT_MS) == 0)
		closed_ms = ncspeer_now_ms() - t0;
	ROW_CHECK(row, closed_ms >= 0, "the trickling connection was never "
	    "closed");
	ROW_CHECK(row, reply_on(f->r, slow, 1000, 100) == NULL,
	    "the trickled frame was answered");
	ROW_CHECK(row, gwproc_log_count(f->r->gw, 0, "event=conn.close",
	    "frame-deadline", (char *)NULL) >= 1, "no frame-deadline close");
	ROW_CHECK(row, heartbeat_ok(f->r, other), "other connection harmed");
	row_note(row, "trickler closed with reason frame-deadline after %zu "
	    "bytes; %d heartbeats on another connection answered meanwhile",
	    i, hb);
	row_fig(row, "closed %.1f s after the first byte (frame_deadline 2 s)",
	    (double)closed_ms / 1000);
out:
	frig_free(f);
}

/* A TCP listener on loopback that counts connections (row 10). */
static int
counting_listener(uint16_t *port)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(fd, 8) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Row 10: DOCTYPEs of every kind. */
void
row10_doctype(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	char				 body[4096], dtd[512];
	char				*x;
	uint16_t			 lport = 0;
	long				 rss0, rss1;
	int				 lfd, c, i, accepted = 0, fd, nack = 0;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	lfd = counting_listener(&lport);
	ROW_CHECK(row, lfd != -1, "no loopback listener");
	c = trusted_conn(f->r);
	ROW_CHECK(row, c > 0, "dial failed");
	rss0 = proc_kb(f->r->gw->pid, "VmRSS");
	for (i = 0; i < 4; i++) {
		switch (i) {
		case 0:	/* billion laughs */
			snprintf(dtd, sizeof dtd, "<!DOCTYPE mos [<!ENTITY a "
			    "\"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;"
			    "&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;"
			    "&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;"
			    "&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;"
			    "&d;\">]>");
			break;
		case 1:	/* quadratic */
			snprintf(dtd, sizeof dtd, "<!DOCTYPE mos [<!ENTITY e "
			    "\"%0300d\">]>", 7);
			break;
		case 2:
			snprintf(dtd, sizeof dtd, "<!DOCTYPE mos [<!ENTITY e "
			    "SYSTEM \"file:///etc/passwd\">]>");
			break;
		default:
			snprintf(dtd, sizeof dtd, "<!DOCTYPE mos SYSTEM "
			    "\"http://127.0.0.1:%u/x.dtd\">", lport);
			break;
		}
		snprintf(body, sizeof body, "<mosReqObj><objID>%s</objID>"
		    "</mosReqObj>", i == 1 ? "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"
		    "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;" :
		    i == 3 ? "X" : "&e;");
		x = frame_xml(1100 + i, body);
		/* the DOCTYPE goes inside the frame, after <mos>'s prolog */
		{
			char	*y;

			if (asprintf(&y, "%s%s", dtd, x) == -1)
				abort();
			free(x);
			x = y;
		}
		ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0,
		    "send failed");
		free(x);
		rep = reply_on(f->r, c, 1100 + i, 3000);
		if (rep != NULL && is_nack(rep))
			nack++;
		ROW_CHECK(row, rep == NULL || is_nack(rep),
		    "DOCTYPE %d answered positively (%s)", i, rep->type_name);
		ROW_CHECK(row, gwproc_running(f->r->gw), "the gateway died");
		if (!ncspeer_conn_open(f->r->ncs, c))
			c = trusted_conn(f->r);
		ROW_CHECK(row, c > 0 && heartbeat_ok(f->r, c),
		    "not served after DOCTYPE %d", i);
	}
	while ((fd = accept(lfd, NULL, NULL)) != -1) {
		accepted++;
		close(fd);
	}
	rss1 = proc_kb(f->r->gw->pid, "VmRSS");
	ROW_CHECK(row, accepted == 0, "the gateway connected to the DTD "
	    "URL %d times", accepted);
	ROW_CHECK(row, !rss_meaningful() || rss1 - rss0 < 64 * 1024,
	    "RSS grew %ld kB", rss1 - rss0);
	row_note(row, "4/4 refused (%d NACK, rest dropped), gateway alive, "
	    "connection served after each", nack);
	row_fig(row, "connections to the DTD URL 0; RSS %ld -> %ld MiB",
	    rss0 / 1024, rss1 / 1024);
out:
	if (lfd != -1)
		close(lfd);
	frig_free(f);
}

/* Row 11: deep nesting. */
void
row11_depth(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	char				*body, *x;
	size_t				 depth = 10000, i, len = 0;
	int				 c;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	c = trusted_conn(f->r);
	ROW_CHECK(row, c > 0, "dial failed");
	if ((body = malloc(depth * 8 + 128)) == NULL)
		abort();
	len = (size_t)sprintf(body, "<mosReqObj><objID>D</objID>");
	for (i = 0; i < depth; i++)
		len += (size_t)sprintf(body + len, "<a>");
	for (i = 0; i < depth; i++)
		len += (size_t)sprintf(body + len, "</a>");
	sprintf(body + len, "</mosReqObj>");
	x = frame_xml(1200, body);
	free(body);
	ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0, "send failed");
	free(x);
	rep = reply_on(f->r, c, 1200, F_WAIT_MS);
	ROW_CHECK(row, gwproc_running(f->r->gw), "the gateway died");
	ROW_CHECK(row, rep != NULL && is_nack(rep), "no NACK for depth %zu",
	    depth);
	ROW_CHECK(row, heartbeat_ok(f->r, c), "connection unusable after");
	row_note(row, "depth %zu: NACK, gateway alive, next message answered",
	    depth);
out:
	frig_free(f);
}

/* Row 12: many distinct element names. */
void
row12_names(struct row *row)
{
	struct frig			*f;
	const struct ncspeer_frame	*rep;
	char				*body = NULL, *x;
	int				 msgs = row->full ? 10000 : 1000;
	int				 per = 100, m, k, c, answered = 0;
	size_t				 len;
	long				 rss0, rss1, rss_mid = 0;

	if ((f = wire_rig(row, NULL)) == NULL)
		return;
	c = trusted_conn(f->r);
	ROW_CHECK(row, c > 0, "dial failed");
	if ((body = malloc((size_t)per * 40 + 128)) == NULL)
		abort();
	rss0 = proc_kb(f->r->gw->pid, "VmRSS");
	for (m = 0; m < msgs; m++) {
		len = (size_t)sprintf(body, "<mosReqObj><objID>N</objID>");
		for (k = 0; k < per; k++)
			len += (size_t)sprintf(body + len, "<n%dx%d/>", m, k);
		sprintf(body + len, "</mosReqObj>");
		x = frame_xml(100000 + m, body);
		ROW_CHECK(row, ncspeer_send_xml(f->r->ncs, c, x) == 0,
		    "send failed");
		free(x);
		/* one at a time keeps the peer's record small to search */
		rep = reply_on(f->r, c, 100000 + m, F_WAIT_MS);
		ROW_CHECK(row, rep != NULL, "message %d not answered", m);
		if (rep->msg != NULL)
			answered++;
		if (m == msgs / 2)
			rss_mid = proc_kb(f->r->gw->pid, "VmRSS");
	}
	rss1 = proc_kb(f->r->gw->pid, "VmRSS");
	ROW_CHECK(row, heartbeat_ok(f->r, c), "heartbeat after unanswered");
	ROW_CHECK(row, !rss_meaningful() || rss1 - rss_mid < 32 * 1024,
	    "RSS still growing: %ld -> %ld kB in the second half", rss_mid,
	    rss1);
	if (!rss_meaningful())
		row_note(row, "RSS not asserted under AddressSanitizer");
	row_note(row, "%d messages, %d distinct names: all answered, "
	    "heartbeat after OK", msgs, msgs * per);
	row_fig(row, "RSS %ld -> %ld (half-way) -> %ld MiB", rss0 / 1024,
	    rss_mid / 1024, rss1 / 1024);
out:
	free(body);
	frig_free(f);
}
