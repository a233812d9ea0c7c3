/*
 * mosreplay import: a packet capture (pcap or pcapng, read by libpcap) to a
 * capture file.
 *
 * Packets are Ethernet, Linux cooked (SLL, SLL2), BSD loopback or raw IP;
 * IPv4 or IPv6; TCP. A stream is one TCP connection whose server port is
 * one of the three MOS ports; each direction is reassembled on its own:
 * bytes are delivered in sequence order, a retransmission (bytes already
 * delivered, in full or in part) is trimmed, a segment from the future waits
 * until the gap before it is filled. Delivered bytes go through the codec's
 * framer (UTF-16BE or UTF-8 decided per direction), and each complete frame
 * becomes a capture line with the time of the packet that completed it.
 *
 * What cannot be known is not invented: a gap that is never filled stops
 * that direction there, and bytes of a frame that never ended are reported,
 * not written. IPv4 fragments are reported and left out.
 *
 * dir: the side that opened the connection (sent the SYN, or else the one
 * whose port is not a MOS port) is taken to be the NCS, as in a capture
 * taken in front of a MOS device.
 */
#include <sys/types.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/replay.h"

#define IMP_MAX_STREAMS	4096
#define IMP_MAX_HELD	(64u << 20)	/* out-of-order bytes per direction */

/* A segment that arrived ahead of the bytes before it. */
struct imp_seg {
	uint32_t	 seq;
	uint8_t		*data;
	size_t		 len;
	int64_t		 t_ms;
	struct imp_seg	*next;		/* sorted by seq */
};

/* One direction of a stream. */
struct imp_dir {
	bool			 started;
	uint32_t		 next;		/* the next sequence number due */
	struct imp_seg		*held;
	size_t			 held_bytes;
	struct mos_framer	*fr;
	bool			 stopped;	/* framer error or gap at the end */
	bool			 fin;
	uint64_t		 bytes;
	enum history_dir	 dir;
};

struct imp_stream {
	uint8_t		 a_addr[16], b_addr[16];	/* a: client */
	uint16_t	 a_port, b_port;
	int		 family;
	enum gw_port	 port;
	uint64_t	 conn;
	struct imp_dir	 d[2];		/* [0] a to b, [1] b to a */
};

struct imp {
	const int		*ports;
	FILE			*out;
	FILE			*msgs;
	struct imp_stream	*s[IMP_MAX_STREAMS];
	size_t			 ns;
	uint64_t		 frames;
	int			 warnings;
	int			 fragments;
	struct sbuf		 line;
};

/* Signed distance from b to a in sequence space. */
static int32_t
imp_seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/* Which MOS port a TCP port is, or -1. */
static int
imp_port(const struct imp *im, uint16_t p)
{
	int	i;

	for (i = 0; i < GW_NPORTS; i++) {
		if (im->ports[i] != 0 && im->ports[i] == p)
			return i;
	}
	return -1;
}

/* A warning about a stream. */
static void
imp_warn(struct imp *im, const struct imp_stream *s, int d, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static void
imp_warn(struct imp *im, const struct imp_stream *s, int d, const char *fmt,
    ...)
{
	va_list	ap;

	fprintf(im->msgs, "mosreplay: warning: conn %llu %s %s: ",
	    (unsigned long long)s->conn, gw_port_name(s->port),
	    s->d[d].dir == HISTORY_IN ? "in" : "out");
	va_start(ap, fmt);
	vfprintf(im->msgs, fmt, ap);
	va_end(ap);
	fputc('\n', im->msgs);
	im->warnings++;
}

/* Write the frames a direction's framer holds. */
static void
imp_frames(struct imp *im, struct imp_stream *s, int d, int64_t t_ms)
{
	struct imp_dir		*dd = &s->d[d];
	struct mos_frame	 f;
	int			 rc;

	while (!dd->stopped) {
		rc = mos_framer_next(dd->fr, &f);
		if (rc == MOS_FRAME_MORE)
			return;
		if (rc != MOS_FRAME_READY) {
			imp_warn(im, s, d, "not MOS frames from here on (%s); "
			    "the rest of this direction is left out",
			    mos_framer_errmsg(dd->fr));
			dd->stopped = true;
			return;
		}
		im->line.len = 0;
		capture_line(&im->line, t_ms, "", s->port, dd->dir, s->conn,
		    f.data, f.len, f.enc);
		if (fwrite(im->line.s, 1, im->line.len, im->out) !=
		    im->line.len)
			fatalx("write failed");
		im->frames++;
	}
}

/* Deliver in-order bytes to the framer. */
static void
imp_deliver(struct imp *im, struct imp_stream *s, int d, const uint8_t *p,
    size_t len, int64_t t_ms)
{
	struct imp_dir	*dd = &s->d[d];

	dd->next += (uint32_t)len;
	dd->bytes += len;
	if (dd->stopped || len == 0)
		return;
	if (mos_framer_feed(dd->fr, p, len) != 0)
		fatalx("out of memory");
	imp_frames(im, s, d, t_ms);
}

/* Deliver what the held segments now continue. */
static void
imp_drain(struct imp *im, struct imp_stream *s, int d)
{
	struct imp_dir	*dd = &s->d[d];
	struct imp_seg	*g;
	int32_t		 skip;

	while ((g = dd->held) != NULL && imp_seq_diff(g->seq, dd->next) <= 0) {
		dd->held = g->next;
		dd->held_bytes -= g->len;
		skip = imp_seq_diff(dd->next, g->seq);
		if ((size_t)skip < g->len)
			imp_deliver(im, s, d, g->data + skip, g->len -
			    (size_t)skip, g->t_ms);
		free(g->data);
		free(g);
	}
}

/* Hold a segment from the future, in sequence order (duplicates dropped). */
static void
imp_hold(struct imp *im, struct imp_stream *s, int d, uint32_t seq,
    const uint8_t *p, size_t len, int64_t t_ms)
{
	struct imp_dir	 *dd = &s->d[d];
	struct imp_seg	**pp, *g;

	for (pp = &dd->held; *pp != NULL && imp_seq_diff((*pp)->seq, seq) < 0;
	    pp = &(*pp)->next)
		;
	if (*pp != NULL && (*pp)->seq == seq && (*pp)->len >= len)
		return;		/* the same segment again */
	if (dd->held_bytes + len > IMP_MAX_HELD) {
		imp_warn(im, s, d, "more than %u bytes wait for a gap to be "
		    "filled; this direction is left out from here on",
		    IMP_MAX_HELD);
		dd->stopped = true;
		return;
	}
	g = xcalloc(1, sizeof *g);
	g->seq = seq;
	g->data = xmalloc(len);
	memcpy(g->data, p, len);
	g->len = len;
	g->t_ms = t_ms;
	g->next = *pp;
	*pp = g;
	dd->held_bytes += len;
}

/* One TCP segment of a stream, direction d. */
static void
imp_segment(struct imp *im, struct imp_stream *s, int d, uint32_t seq,
    uint8_t flags, const uint8_t *p, size_t len, int64_t t_ms)
{
	struct imp_dir	*dd = &s->d[d];
	int32_t		 ahead;

	if (flags & 0x02) {			/* SYN: data starts after it */
		dd->started = true;
		dd->next = seq + 1;
		seq++;
	} else if (!dd->started) {
		dd->started = true;
		dd->next = seq;
	}
	if (len > 0) {
		ahead = imp_seq_diff(seq, dd->next);
		if (ahead > 0)
			imp_hold(im, s, d, seq, p, len, t_ms);
		else if ((size_t)-ahead < len)	/* new bytes after old ones */
			imp_deliver(im, s, d, p + (size_t)-ahead, len -
			    (size_t)-ahead, t_ms);
		imp_drain(im, s, d);
	}
	if (flags & 0x05)			/* FIN or RST */
		dd->fin = true;
}

/* The stream of a segment (made when new); *d its direction. NULL: not MOS. */
static struct imp_stream *
imp_stream(struct imp *im, int family, const uint8_t *src,
    const uint8_t *dst, uint16_t sport, uint16_t dport, uint8_t flags,
    int *d)
{
	struct imp_stream	*s;
	size_t			 i, alen = family == 4 ? 4 : 16;
	int			 ps = imp_port(im, sport), pd = imp_port(im, dport);

	for (i = 0; i < im->ns; i++) {
		s = im->s[i];
		if (s->family != family)
			continue;
		if (s->a_port == sport && s->b_port == dport &&
		    memcmp(s->a_addr, src, alen) == 0 &&
		    memcmp(s->b_addr, dst, alen) == 0) {
			*d = 0;
			return s;
		}
		if (s->a_port == dport && s->b_port == sport &&
		    memcmp(s->a_addr, dst, alen) == 0 &&
		    memcmp(s->b_addr, src, alen) == 0) {
			*d = 1;
			return s;
		}
	}
	if (ps < 0 && pd < 0)
		return NULL;
	if (im->ns == IMP_MAX_STREAMS) {
		fprintf(im->msgs, "mosreplay: warning: more than %d streams; "
		    "the others are left out\n", IMP_MAX_STREAMS);
		im->warnings++;
		return NULL;
	}
	s = xcalloc(1, sizeof *s);
	s->family = family;
	/* the client is whoever sent a lone SYN, else the non-MOS port */
	if ((flags & 0x12) == 0x12 || (!(flags & 0x02) && pd < 0)) {
		memcpy(s->a_addr, dst, alen);
		memcpy(s->b_addr, src, alen);
		s->a_port = dport;
		s->b_port = sport;
		*d = 1;
	} else {
		memcpy(s->a_addr, src, alen);
		memcpy(s->b_addr, dst, alen);
		s->a_port = sport;
		s->b_port = dport;
		*d = 0;
	}
	s->port = (enum gw_port)(imp_port(im, s->b_port) >= 0 ?
	    imp_port(im, s->b_port) : imp_port(im, s->a_port));
	s->conn = im->ns + 1;
	for (i = 0; i < 2; i++) {
		if ((s->d[i].fr = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL)
			fatalx("out of memory");
		s->d[i].dir = i == 0 ? HISTORY_IN : HISTORY_OUT;
	}
	im->s[im->ns++] = s;
	return s;
}

/* An IP packet. */
static void
imp_ip(struct imp *im, const uint8_t *p, size_t len, int64_t t_ms)
{
	struct imp_stream	*s;
	const uint8_t		*src, *dst, *tcp;
	size_t			 ihl, tlen, off;
	int			 family, d;

	if (len < 1)
		return;
	if ((p[0] >> 4) == 4) {
		if (len < 20 || (ihl = (size_t)(p[0] & 0x0f) * 4) < 20 ||
		    len < ihl || p[9] != 6)
			return;
		tlen = (size_t)p[2] << 8 | p[3];
		if (tlen < ihl || tlen > len)
			tlen = len;	/* Ethernet padding, or a snap length */
		if ((p[6] & 0x3f) != 0 || p[7] != 0) {
			im->fragments++;
			return;
		}
		family = 4;
		src = p + 12;
		dst = p + 16;
		tcp = p + ihl;
		tlen -= ihl;
	} else if ((p[0] >> 4) == 6) {
		if (len < 40 || p[6] != 6)	/* no extension headers */
			return;
		tlen = (size_t)p[4] << 8 | p[5];
		if (tlen > len - 40)
			tlen = len - 40;
		family = 6;
		src = p + 8;
		dst = p + 24;
		tcp = p + 40;
	} else
		return;
	if (tlen < 20 || (off = (size_t)(tcp[12] >> 4) * 4) < 20 ||
	    off > tlen)
		return;
	s = imp_stream(im, family, src, dst, (uint16_t)(tcp[0] << 8 | tcp[1]),
	    (uint16_t)(tcp[2] << 8 | tcp[3]), tcp[13], &d);
	if (s == NULL)
		return;
	imp_segment(im, s, d, (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 |
	    (uint32_t)tcp[6] << 8 | tcp[7], tcp[13], tcp + off, tlen - off,
	    t_ms);
}

/* The link types read. */
static bool
imp_link_known(int dlt)
{
	switch (dlt) {
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_NULL:
	case DLT_LOOP:
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		return true;
	default:
		return false;
	}
}

/* Where the IP packet starts for this link type; -1 if not IP. */
static ssize_t
imp_link(int dlt, const uint8_t *p, size_t len)
{
	uint16_t	et;
	size_t		o;

	switch (dlt) {
	case DLT_EN10MB:
		if (len < 14)
			return -1;
		o = 12;
		et = (uint16_t)(p[o] << 8 | p[o + 1]);
		while ((et == 0x8100 || et == 0x88a8) && len >= o + 6) {
			o += 4;		/* VLAN tags */
			et = (uint16_t)(p[o] << 8 | p[o + 1]);
		}
		return et == 0x0800 || et == 0x86dd ? (ssize_t)o + 2 : -1;
	case DLT_LINUX_SLL:
		return len >= 16 ? 16 : -1;
	case DLT_LINUX_SLL2:
		return len >= 20 ? 20 : -1;
	case DLT_NULL:
	case DLT_LOOP:
		return len >= 4 ? 4 : -1;
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		return 0;
	default:
		return -1;
	}
}

/* What is left at the end of each direction. */
static void
imp_finish(struct imp *im)
{
	struct imp_stream	*s;
	struct imp_dir		*dd;
	struct imp_seg		*g;
	size_t			 i, pending;
	int			 d;

	for (i = 0; i < im->ns; i++) {
		s = im->s[i];
		for (d = 0; d < 2; d++) {
			dd = &s->d[d];
			if (dd->held != NULL && !dd->stopped)
				imp_warn(im, s, d, "%u bytes missing at "
				    "sequence %u (never captured); %zu bytes "
				    "after the gap are left out",
				    (unsigned)imp_seq_diff(dd->held->seq,
				    dd->next), (unsigned)dd->next,
				    dd->held_bytes);
			pending = mos_framer_pending(dd->fr);
			if (!dd->stopped && mos_framer_end(dd->fr) != 0 &&
			    pending > 0)
				imp_warn(im, s, d, "the stream ends inside a "
				    "frame: %zu bytes not written", pending);
			while ((g = dd->held) != NULL) {
				dd->held = g->next;
				free(g->data);
				free(g);
			}
			mos_framer_free(dd->fr);
		}
		free(s);
	}
	im->ns = 0;
}

/* Import a packet capture. */
int
import_run(const char *in, const char *out, const int ports[GW_NPORTS],
    FILE *msgs)
{
	struct imp		 im;
	struct pcap_pkthdr	*h;
	const u_char		*pkt;
	char			 errbuf[PCAP_ERRBUF_SIZE];
	pcap_t			*pc;
	ssize_t			 o;
	int			 rc, dlt, status = 0;
	uint64_t		 packets = 0;

	memset(&im, 0, sizeof im);
	im.ports = ports;
	im.msgs = msgs;
	if ((pc = pcap_open_offline(in, errbuf)) == NULL) {
		fprintf(msgs, "mosreplay: %s: %s\n", in, errbuf);
		return 1;
	}
	dlt = pcap_datalink(pc);
	if (!imp_link_known(dlt)) {
		fprintf(msgs, "mosreplay: %s: link type %s is not supported "
		    "(Ethernet, Linux cooked, loopback or raw IP)\n", in,
		    pcap_datalink_val_to_name(dlt) != NULL ?
		    pcap_datalink_val_to_name(dlt) : "?");
		pcap_close(pc);
		return 1;
	}
	if ((im.out = fopen(out, "w")) == NULL) {
		fprintf(msgs, "mosreplay: %s: %s\n", out, strerror(errno));
		pcap_close(pc);
		return 1;
	}
	while ((rc = pcap_next_ex(pc, &h, &pkt)) == 1) {
		packets++;
		if ((o = imp_link(dlt, pkt, h->caplen)) < 0)
			continue;
		imp_ip(&im, pkt + o, h->caplen - (size_t)o,
		    (int64_t)h->ts.tv_sec * 1000 + h->ts.tv_usec / 1000);
	}
	if (rc == -1) {
		fprintf(msgs, "mosreplay: %s: after %llu packets: %s\n", in,
		    (unsigned long long)packets, pcap_geterr(pc));
		status = 1;
	}
	pcap_close(pc);
	imp_finish(&im);
	if (im.fragments > 0) {
		fprintf(msgs, "mosreplay: warning: %d IPv4 fragments left "
		    "out\n", im.fragments);
		im.warnings++;
	}
	if (fclose(im.out) != 0) {
		fprintf(msgs, "mosreplay: %s: %s\n", out, strerror(errno));
		status = 1;
	}
	sbuf_free(&im.line);
	fprintf(msgs, "imported %llu frames from %llu packets to %s (%d "
	    "warnings)\n", (unsigned long long)im.frames,
	    (unsigned long long)packets, out, im.warnings);
	return status;
}
