/*
 * Play a capture against a live peer and judge every reply.
 *
 * --device: we are the NCS. Each connection the NCS opened in the capture is
 * opened again to the device's port of the same kind; the NCS's frames are
 * sent in order (with the original gaps unless --fast) and each frame the
 * device sent in the capture is an exchange: the next frame that arrives on
 * that connection is compared with it (compare.c). Connections the device
 * opened are not played (we have nowhere to receive them) and are listed.
 *
 * --ncs: the mirror. We are the MOS device and listen on the ports given;
 * every connection of the capture is accepted, in order, on its port, the
 * device's frames are sent and the NCS's are the exchanges.
 *
 * messageIDs are mapped through the session, per connection: a frame we
 * send gets a fresh messageID unless its number was already learnt (a
 * reply carries the number of the request it answers); a number the peer
 * chose is learnt the first time it appears, and replies are checked
 * against the translation. A frame without messageID is sent without one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/replay.h"

#define PLAY_GAP_MAX_MS		30000	/* original pacing, capped */
#define PLAY_PROBE_ID		1

/* One messageID translation. */
struct play_id {
	int32_t	from;		/* in the capture */
	int32_t	to;		/* on the wire now */
};

/* One connection of the capture while it is played. */
struct play_conn {
	uint64_t	 id;
	enum gw_port	 port;
	bool		 skip;		/* not played: reason given once */
	bool		 open;
	bool		 device_opened;	/* --device --listen: accepted */
	int		 heartbeats;	/* of the device's own, answered */
	struct rconn	 rc;
	struct sbuf	 held;		/* coalesced frames not yet written */
	struct play_id	*ids;
	size_t		 nids;
};

struct play_state {
	const struct play_opts	*o;
	const struct capture	*cap;
	struct play_conn	*conns;
	size_t			 nconns;
	int			 lfd[GW_NPORTS];	/* --ncs listeners */
	int			 passed;
	int			 failed;
	int			 skipped;	/* frames not played */
	bool			 quiet;		/* suite: failures only */
	struct sbuf		 report;	/* what quiet mode prints */
};

static int32_t	play_next_id;

/* A fresh messageID for something we send. */
static int32_t
play_fresh_id(void)
{
	if (play_next_id == 0)
		play_next_id = (int32_t)(util_now_ms() % 1000000000) + 1;
	else
		play_next_id = msgid_advance(play_next_id, 1);
	return play_next_id;
}

/* Where output goes: the report (quiet) or the stream. */
static void
play_say(struct play_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
play_say(struct play_state *s, const char *fmt, ...)
{
	va_list	 ap;
	char	*line;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	sbuf_puts(&s->report, line);
	if (!s->quiet)
		fputs(line, s->o->out);
	free(line);
}

/* The translation of a capture messageID on conn, 0 if not known. */
static int32_t
play_id_get(struct play_conn *pc, int32_t from)
{
	size_t	i;

	for (i = 0; i < pc->nids; i++) {
		if (pc->ids[i].from == from)
			return pc->ids[i].to;
	}
	return 0;
}

/* Learn (or replace) a translation. */
static void
play_id_put(struct play_conn *pc, int32_t from, int32_t to)
{
	size_t	i;

	for (i = 0; i < pc->nids; i++) {
		if (pc->ids[i].from == from) {
			pc->ids[i].to = to;
			return;
		}
	}
	pc->ids = xreallocarray(pc->ids, pc->nids + 1, sizeof *pc->ids);
	pc->ids[pc->nids].from = from;
	pc->ids[pc->nids].to = to;
	pc->nids++;
}

/* The state of a capture connection (made on first use). */
static struct play_conn *
play_conn_get(struct play_state *s, uint64_t id, enum gw_port port)
{
	size_t	i;

	for (i = 0; i < s->nconns; i++) {
		if (s->conns[i].id == id)
			return &s->conns[i];
	}
	s->conns = xreallocarray(s->conns, s->nconns + 1, sizeof *s->conns);
	memset(&s->conns[s->nconns], 0, sizeof *s->conns);
	s->conns[s->nconns].id = id;
	s->conns[s->nconns].port = port;
	s->conns[s->nconns].rc.fd = -1;
	return &s->conns[s->nconns++];
}

/* Replace the text of the first <name>...</name> (or <name/>) in xml. */
static void
play_set_element(struct sbuf *xml, const char *name, const char *value)
{
	struct sbuf	 out = { NULL, 0, 0 };
	char		 open[80], close_[80], empty[80];
	char		*a, *b, *e;

	snprintf(open, sizeof open, "<%s>", name);
	snprintf(close_, sizeof close_, "</%s>", name);
	snprintf(empty, sizeof empty, "<%s/>", name);
	if ((a = strstr(xml->s, open)) != NULL &&
	    (b = strstr(a, close_)) != NULL) {
		sbuf_add(&out, xml->s, (size_t)(a - xml->s) + strlen(open));
		sbuf_xml_text(&out, value);
		sbuf_puts(&out, b);
	} else if ((e = strstr(xml->s, empty)) != NULL) {
		sbuf_add(&out, xml->s, (size_t)(e - xml->s));
		sbuf_printf(&out, "%s", open);
		sbuf_xml_text(&out, value);
		sbuf_printf(&out, "%s%s", close_, e + strlen(empty));
	} else
		return;
	sbuf_free(xml);
	*xml = out;
}

/* The bytes to send for one of our frames, in the encoding we write. */
static void
play_build(struct play_state *s, struct play_conn *pc,
    const struct cap_frame *f, struct sbuf *wire)
{
	struct sbuf	xml = { NULL, 0, 0 };
	char		num[16];
	int32_t		id;

	sbuf_puts(&xml, f->xml);
	if (f->message_id != 0) {
		/* a reply carries the number learnt; a new message a fresh one */
		if ((id = play_id_get(pc, f->message_id)) == 0) {
			id = play_fresh_id();
			play_id_put(pc, f->message_id, id);
		}
		snprintf(num, sizeof num, "%d", (int)id);
		play_set_element(&xml, "messageID", num);
	}
	if (s->o->mos_id != NULL)
		play_set_element(&xml, "mosID", s->o->mos_id);
	if (s->o->ncs_id != NULL)
		play_set_element(&xml, "ncsID", s->o->ncs_id);
	capture_wire(wire, xml.s, xml.len, s->o->enc);
	sbuf_free(&xml);
}

/* Open (connect or accept) the connection of frame f; false if skipped. */
static bool
play_open(struct play_state *s, struct play_conn *pc,
    const struct cap_frame *f)
{
	int	fd, port = s->o->ports[f->port];

	if (pc->skip)
		return false;
	if (pc->open)
		return true;
	if (s->o->device && !capture_ncs_opened(s->cap, f->conn)) {
		if (s->o->listen[f->port] == 0) {
			play_say(s, "skip conn %llu %s: opened by the device in "
			    "the capture; give --listen to receive it\n",
			    (unsigned long long)f->conn,
			    gw_port_name(f->port));
			pc->skip = true;
			return false;
		}
		pc->device_opened = true;
		port = s->o->listen[f->port];
	}
	if (port == 0) {
		play_say(s, "skip conn %llu %s: no %s port given\n",
		    (unsigned long long)f->conn, gw_port_name(f->port),
		    gw_port_name(f->port));
		pc->skip = true;
		return false;
	}
	if (s->o->device && !pc->device_opened)
		fd = net_connect(s->o->host, port, s->o->timeout_ms);
	else
		fd = net_accept(s->lfd[f->port], s->o->timeout_ms);
	if (fd == -1) {
		play_say(s, "FAIL conn %llu %s: %s %s:%d: %s\n",
		    (unsigned long long)f->conn, gw_port_name(f->port),
		    fd == -1 && s->o->device && !pc->device_opened ?
		    "cannot connect to" : "no connection on",
		    s->o->device && !pc->device_opened ? s->o->host : "port",
		    port, strerror(errno));
		s->failed++;
		pc->skip = true;
		return false;
	}
	rconn_init(&pc->rc, fd);
	pc->open = true;
	return true;
}

/* Send one of our frames (or hold it to coalesce with the next). */
static void
play_send(struct play_state *s, struct play_conn *pc,
    const struct cap_frame *f)
{
	play_build(s, pc, f, &pc->held);
	if (f->coalesce)
		return;
	if (net_write(pc->rc.fd, pc->held.s, pc->held.len, f->chunk) != 0) {
		play_say(s, "FAIL line %d conn %llu %s %s: write: %s\n",
		    f->line, (unsigned long long)f->conn,
		    gw_port_name(f->port), f->type, strerror(errno));
		s->failed++;
	}
	pc->held.len = 0;
}

/*
 * The next frame; on a connection the device opened, a heartbeat it sends
 * of its own accord (when the capture expects something else) is answered
 * with itself and skipped.
 */
static int
play_next(struct play_conn *pc, const char *want_type, struct mos_frame *fr,
    int timeout_ms)
{
	struct mos_msg		*m;
	struct mos_error	 e;
	bool			 hb;
	int			 rc;

	for (;;) {
		if ((rc = rconn_next(&pc->rc, fr, timeout_ms)) != 1 ||
		    !pc->device_opened || strcmp(want_type, "heartbeat") == 0)
			return rc;
		m = NULL;
		hb = mos_parse(fr->data, fr->len, fr->enc, MOS_LENIENT, &m,
		    &e) == MOS_OK && m->type == MOS_T_HEARTBEAT;
		mos_msg_free(m);
		if (!hb)
			return rc;
		if (net_write(pc->rc.fd, fr->data, fr->len, 0) != 0)
			return rc;
		pc->heartbeats++;
	}
}

/* After a frame marked silence_ms: nothing may arrive meanwhile. */
static void
play_silence(struct play_state *s, struct play_conn *pc,
    const struct cap_frame *f)
{
	struct mos_frame	fr;
	struct sbuf		xml = { NULL, 0, 0 };
	int			rc;

	rc = play_next(pc, "", &fr, f->silence_ms);
	if (rc == 0) {
		play_say(s, "ok   line %d conn %llu %s %s: no reply within "
		    "%d ms, as expected\n", f->line,
		    (unsigned long long)f->conn, gw_port_name(f->port),
		    f->type, f->silence_ms);
		s->passed++;
		return;
	}
	if (rc == 1)
		capture_utf8(&xml, fr.data, fr.len, fr.enc);
	play_say(s, "FAIL line %d conn %llu %s %s: expected no reply, "
	    "got %s\n", f->line, (unsigned long long)f->conn,
	    gw_port_name(f->port), f->type, rc == 1 ? xml.s : pc->rc.err);
	s->failed++;
	sbuf_free(&xml);
}

/* An exchange: the next frame on the connection against the capture's. */
static void
play_expect(struct play_state *s, struct play_conn *pc,
    const struct cap_frame *f)
{
	struct mos_frame	 fr;
	struct cmp_rules	 r;
	struct sbuf		 diff = { NULL, 0, 0 };
	int32_t			 got, want;
	int			 rc, bad;

	rc = play_next(pc, f->type, &fr, s->o->timeout_ms);
	if (rc != 1) {
		play_say(s, "FAIL line %d conn %llu %s %s: %s\n", f->line,
		    (unsigned long long)f->conn, gw_port_name(f->port),
		    f->type, rc == 0 ? "no reply within the timeout" :
		    pc->rc.err);
		s->failed++;
		if (rc == -1)
			pc->skip = true;
		return;
	}
	memset(&r, 0, sizeof r);
	r.any = f->any;
	r.differ = f->differ;
	r.mos_id = s->o->mos_id;
	r.ncs_id = s->o->ncs_id;
	bad = cmp_frames(f->xml, fr.data, fr.len, fr.enc, &r, &diff);
	got = cmp_message_id(fr.data, fr.len, fr.enc);
	if (f->message_id == 0 && got != 0) {
		sbuf_printf(&diff, "  messageID: expected (absent), got %d\n",
		    (int)got);
		bad = 1;
	} else if (f->message_id != 0 && got == 0) {
		sbuf_printf(&diff, "  messageID: expected %d, got (absent)\n",
		    (int)f->message_id);
		bad = 1;
	} else if (f->message_id != 0) {
		if ((want = play_id_get(pc, f->message_id)) == 0)
			play_id_put(pc, f->message_id, got);
		else if (want != got) {
			sbuf_printf(&diff, "  messageID: expected %d (the "
			    "capture's %d), got %d\n", (int)want,
			    (int)f->message_id, (int)got);
			bad = 1;
		}
	}
	play_say(s, "%s line %d conn %llu %s %s%s", bad ? "FAIL" : "ok  ",
	    f->line, (unsigned long long)f->conn, gw_port_name(f->port),
	    f->type, bad ? ":\n" : "\n");
	if (bad) {
		play_say(s, "%s", diff.s);
		s->failed++;
	} else
		s->passed++;
	sbuf_free(&diff);
}

/* Frames left unread on a connection were not in the capture; close it. */
static void
play_finish(struct play_state *s, struct play_conn *pc)
{
	struct mos_frame	 fr;
	struct sbuf		 xml = { NULL, 0, 0 };

	if (!pc->open)
		return;
	while (!pc->skip && play_next(pc, "", &fr, 0) == 1) {
		xml.len = 0;
		capture_utf8(&xml, fr.data, fr.len, fr.enc);
		play_say(s, "FAIL conn %llu %s: a frame the capture does not "
		    "have: %s\n", (unsigned long long)pc->id,
		    gw_port_name(pc->port), xml.s);
		s->failed++;
	}
	sbuf_free(&xml);
	if (pc->heartbeats > 0)
		play_say(s, "note conn %llu %s: %d heartbeats of the device "
		    "answered\n", (unsigned long long)pc->id,
		    gw_port_name(pc->port), pc->heartbeats);
	rconn_close(&pc->rc);
	pc->open = false;
	pc->skip = true;	/* a connection is played once */
}

/* True when frame i is the last one of its connection. */
static bool
play_last_of_conn(const struct capture *c, size_t i)
{
	size_t	j;

	for (j = i + 1; j < c->n; j++) {
		if (c->f[j].conn == c->f[i].conn)
			return false;
	}
	return true;
}

/* Play one capture; counts exchanges into s. */
static void
play_capture(struct play_state *s)
{
	const struct capture	*c = s->cap;
	const struct cap_frame	*f;
	struct play_conn	*pc;
	enum history_dir	 ours = s->o->device ? HISTORY_IN : HISTORY_OUT;
	int64_t			 prev = -1, gap;
	size_t			 i;

	for (i = 0; i < c->n; i++) {
		f = &c->f[i];
		pc = play_conn_get(s, f->conn, f->port);
		if (!play_open(s, pc, f)) {
			s->skipped++;
			continue;
		}
		if (f->dir == ours) {
			if (!s->o->fast && prev >= 0 && (gap = f->t_ms -
			    prev) > 0)
				usleep((useconds_t)(gap > PLAY_GAP_MAX_MS ?
				    PLAY_GAP_MAX_MS : gap) * 1000);
			prev = f->t_ms;
			play_send(s, pc, f);
			if (f->silence_ms > 0 && !f->coalesce)
				play_silence(s, pc, f);
		} else {
			prev = f->t_ms;
			play_expect(s, pc, f);
		}
		if (play_last_of_conn(c, i))
			play_finish(s, pc);
	}
	for (i = 0; i < s->nconns; i++) {
		play_finish(s, &s->conns[i]);
		sbuf_free(&s->conns[i].held);
		free(s->conns[i].ids);
	}
	free(s->conns);
	s->conns = NULL;
	s->nconns = 0;
}

/* The envelope IDs of the first frame the NCS sent (for the probe). */
static void
play_envelope(const struct capture *c, char *mos_id, char *ncs_id, size_t len)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 e;
	size_t			 i;

	*mos_id = *ncs_id = '\0';
	for (i = 0; i < c->n; i++) {
		if (c->f[i].dir != HISTORY_IN)
			continue;
		if (mos_parse(c->f[i].xml, strlen(c->f[i].xml), MOS_ENC_UTF8,
		    MOS_LENIENT, &m, &e) != MOS_OK)
			continue;
		util_strlcpy(mos_id, m->mos_id != NULL ? m->mos_id : "", len);
		util_strlcpy(ncs_id, m->ncs_id != NULL ? m->ncs_id : "", len);
		mos_msg_free(m);
		if (*mos_id != '\0' && *ncs_id != '\0')
			return;
	}
}

/*
 * Ask the device which profiles it offers (reqMachInfo on the lower port):
 * offered[p] true for YES. Profile 0 is always played. 0, or -1 and why.
 */
static int
play_probe(const struct play_opts *o, const struct capture *c,
    bool offered[8], char *why, size_t wlen)
{
	struct rconn		 rc;
	struct mos_frame	 fr;
	struct mos_msg		*m = NULL;
	struct mos_error	 e;
	struct sbuf		 xml = { NULL, 0, 0 }, wire = { NULL, 0, 0 };
	char			 mos_id[130], ncs_id[130];
	int			 fd, i, ret = -1;

	play_envelope(c, mos_id, ncs_id, sizeof mos_id);
	if ((fd = net_connect(o->host, o->ports[GW_PORT_LOWER],
	    o->timeout_ms)) == -1) {
		snprintf(why, wlen, "cannot connect to %s:%d: %s", o->host,
		    o->ports[GW_PORT_LOWER], strerror(errno));
		return -1;
	}
	rconn_init(&rc, fd);
	sbuf_puts(&xml, "<mos><mosID>");
	sbuf_xml_text(&xml, o->mos_id != NULL ? o->mos_id : mos_id);
	sbuf_puts(&xml, "</mosID><ncsID>");
	sbuf_xml_text(&xml, o->ncs_id != NULL ? o->ncs_id : ncs_id);
	sbuf_printf(&xml, "</ncsID><messageID>%d</messageID><reqMachInfo/>"
	    "</mos>", (int)play_fresh_id());
	capture_wire(&wire, xml.s, xml.len, o->enc);
	if (net_write(fd, wire.s, wire.len, 0) != 0)
		snprintf(why, wlen, "reqMachInfo: write: %s", strerror(errno));
	else if (rconn_next(&rc, &fr, o->timeout_ms) != 1)
		snprintf(why, wlen, "reqMachInfo: no listMachInfo: %s",
		    rc.err[0] != '\0' ? rc.err : "timeout");
	else if (mos_parse(fr.data, fr.len, fr.enc, MOS_LENIENT, &m,
	    &e) != MOS_OK || m->type != MOS_T_LIST_MACH_INFO)
		snprintf(why, wlen, "reqMachInfo: the answer is not a "
		    "listMachInfo");
	else {
		for (i = 0; i < 8; i++)
			offered[i] = i == 0 ||
			    m->u.list_mach_info.profiles[i] == 1;
		ret = 0;
	}
	mos_msg_free(m);
	rconn_close(&rc);
	sbuf_free(&xml);
	sbuf_free(&wire);
	return ret;
}

/* Add path, or the *.jsonl files of a folder (sorted), to the list. */
static int
play_collect(const char *path, char ***list, size_t *n, FILE *err)
{
	struct dirent	**ents;
	int		  k, i;
	size_t		  len;

	if ((k = scandir(path, &ents, NULL, alphasort)) == -1) {
		if (errno != ENOTDIR) {
			fprintf(err, "mosreplay: %s: %s\n", path,
			    strerror(errno));
			return -1;
		}
		*list = xreallocarray(*list, *n + 1, sizeof **list);
		(*list)[(*n)++] = xstrdup(path);
		return 0;
	}
	for (i = 0; i < k; i++) {
		len = strlen(ents[i]->d_name);
		if (len > 6 && strcmp(ents[i]->d_name + len - 6,
		    ".jsonl") == 0) {
			*list = xreallocarray(*list, *n + 1, sizeof **list);
			xasprintf(&(*list)[(*n)++], "%s/%s", path,
			    ents[i]->d_name);
		}
		free(ents[i]);
	}
	free(ents);
	return 0;
}

/* The name of a scenario: its file name without folder and extension. */
static const char *
play_name(const char *path, char *buf, size_t len)
{
	const char	*b = strrchr(path, '/');
	char		*dot;

	util_strlcpy(buf, b != NULL ? b + 1 : path, len);
	if ((dot = strrchr(buf, '.')) != NULL)
		*dot = '\0';
	return buf;
}

/* Open the listeners: --ncs ports, or --device --listen ports. */
static int
play_listen(const struct play_opts *o, int lfd[GW_NPORTS])
{
	const int	*ports = o->device ? o->listen : o->ports;
	const char	*host = o->device ? "127.0.0.1" : o->host;
	int		 i;

	for (i = 0; i < GW_NPORTS; i++) {
		lfd[i] = -1;
		if (ports[i] == 0)
			continue;
		if ((lfd[i] = net_listen(host, ports[i])) == -1) {
			fprintf(o->out, "mosreplay: cannot listen on %s:%d: "
			    "%s\n", host, ports[i], strerror(errno));
			return -1;
		}
		fprintf(o->out, "listening on %s port %d (%s)\n", host,
		    ports[i], gw_port_name((enum gw_port)i));
	}
	return 0;
}

/* Play everything named on the command line. */
int
play_run(const struct play_opts *o, char **paths, int npaths)
{
	struct play_state	 s;
	struct capture		*caps;
	char			**files = NULL, *err, name[128];
	size_t			 nfiles = 0, i;
	bool			 offered[8], suite, probed = false;
	int			 p, status = 0, per[8][4], lfd[GW_NPORTS];
	int			 spass = 0, sfail = 0, sskip = 0;
	char			 why[300];

	for (p = 0; p < npaths; p++) {
		if (play_collect(paths[p], &files, &nfiles, o->out) != 0)
			return 1;
	}
	if (nfiles == 0) {
		fprintf(o->out, "mosreplay: no capture to play\n");
		return 1;
	}
	caps = xcalloc(nfiles, sizeof *caps);
	for (i = 0; i < nfiles; i++) {
		if (capture_load(files[i], &caps[i], &err) != 0) {
			fprintf(o->out, "mosreplay: %s\n", err);
			free(err);
			status = 1;
		}
	}
	if (status != 0)
		goto out;
	suite = nfiles > 1 || npaths > 1 || strcmp(files[0], paths[0]) != 0;
	for (p = 0; p < 8; p++)
		offered[p] = true;
	for (p = 0; p < GW_NPORTS; p++)
		lfd[p] = -1;
	status = play_listen(o, lfd);
	if (status == 0 && o->device && suite) {
		if (play_probe(o, &caps[0], offered, why, sizeof why) != 0) {
			fprintf(o->out, "mosreplay: cannot tell which profiles "
			    "the device offers: %s\n", why);
			status = 1;
		} else
			probed = true;
	}
	if (status != 0)
		goto out;
	memset(per, 0, sizeof per);
	for (i = 0; i < nfiles; i++) {
		memset(&s, 0, sizeof s);
		s.o = o;
		s.cap = &caps[i];
		s.quiet = suite;
		memcpy(s.lfd, lfd, sizeof s.lfd);
		p = caps[i].profile;
		play_name(files[i], name, sizeof name);
		if (suite && !offered[p]) {
			fprintf(o->out, "NOT OFFERED  p%d %-36s %s\n", p, name,
			    caps[i].title != NULL ? caps[i].title : "");
			per[p][3]++;
			sskip++;
			continue;
		}
		play_capture(&s);
		if (!suite) {
			fprintf(o->out, "%d passed, %d failed\n", s.passed,
			    s.failed);
			status = s.failed == 0 && s.passed > 0 ? 0 : 1;
			if (s.passed == 0 && s.failed == 0)
				fprintf(o->out, "mosreplay: nothing was "
				    "compared (%d frames not played)\n",
				    s.skipped);
			sbuf_free(&s.report);
			break;
		}
		per[p][0]++;
		if (s.failed == 0 && s.passed > 0) {
			fprintf(o->out, "PASS         p%d %-36s %d "
			    "exchanges\n", p, name, s.passed);
			per[p][1]++;
			spass++;
		} else {
			fprintf(o->out, "FAIL         p%d %-36s %d of %d "
			    "exchanges failed\n", p, name, s.failed,
			    s.passed + s.failed);
			fputs(s.report.s != NULL ? s.report.s : "", o->out);
			per[p][2]++;
			sfail++;
		}
		sbuf_free(&s.report);
	}
	if (suite) {
		fprintf(o->out, "\nprofile  scenarios  passed  failed  "
		    "not offered\n");
		for (p = 0; p < 8; p++) {
			if (per[p][0] + per[p][3] == 0)
				continue;
			fprintf(o->out, "%-8d %9d %7d %7d %12d\n", p,
			    per[p][0] + per[p][3], per[p][1], per[p][2],
			    per[p][3]);
		}
		if (sskip > 0) {
			fprintf(o->out, "SKIP: %d scenarios of profiles the "
			    "%s does not offer%s:", sskip, o->device ?
			    "device" : "peer", probed ? " (listMachInfo)" :
			    "");
			for (p = 0; p < 8; p++) {
				if (per[p][3] > 0)
					fprintf(o->out, " %d", p);
			}
			fprintf(o->out, "\n");
		}
		fprintf(o->out, "%d passed, %d failed, %d skipped\n", spass,
		    sfail, sskip);
		status = sfail == 0 && spass > 0 ? 0 : 1;
	}
	for (p = 0; p < GW_NPORTS; p++) {
		if (lfd[p] != -1)
			close(lfd[p]);
	}
out:
	for (i = 0; i < nfiles; i++) {
		capture_free(&caps[i]);
		free(files[i]);
	}
	free(caps);
	free(files);
	return status;
}
