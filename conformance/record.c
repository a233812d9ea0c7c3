/*
 * mosreplay record: a transparent tap. It listens on the MOS ports, and for
 * every connection accepted opens one to the same kind of port of the
 * forward host; bytes are copied both ways unchanged, as they come (nothing
 * added, dropped or reordered), and a copy of each direction goes through a
 * framer so that every complete frame becomes a capture line.
 *
 * One poll() loop, no threads. Each direction has its own output buffer;
 * a side is not read while the buffer towards the other side holds more
 * than TAP_HIGH bytes, so a slow peer slows the fast one instead of growing
 * memory. A direction whose bytes stop being MOS frames (the framer fails)
 * is still forwarded, only no longer recorded, and that is reported.
 *
 * SIGINT or SIGTERM: stop accepting, write the pending data, flush and
 * fsync the capture, and exit 0. Frames still incomplete at that moment are
 * reported, not written.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/replay.h"

#define TAP_HIGH	(4u << 20)	/* bytes queued towards one side */
#define TAP_MAX_PAIRS	256

/* One direction of a pair. */
struct tap_dir {
	int			 from;		/* fd read */
	int			 to;		/* fd written */
	struct sbuf		 out;		/* read, not yet written */
	size_t			 off;		/* of out, written */
	struct mos_framer	*fr;
	bool			 eof;		/* from said EOF */
	bool			 shut;		/* to was shut down for writing */
	bool			 broken;	/* framer failed: not recorded */
	enum history_dir	 dir;
	uint64_t		 bytes;
};

struct tap_pair {
	uint64_t	 conn;
	enum gw_port	 port;
	struct tap_dir	 d[2];		/* [0] client to server, [1] back */
	bool		 dead;
};

struct tap {
	const struct record_opts *o;
	FILE			*cap;
	int			 lfd[GW_NPORTS];
	struct tap_pair		*pairs[TAP_MAX_PAIRS];
	size_t			 npairs;
	uint64_t		 conns;
	uint64_t		 frames;
	struct sbuf		 line;
};

static volatile sig_atomic_t	tap_stop;

/* SIGINT, SIGTERM. */
static void
tap_signal(int sig)
{
	(void)sig;
	tap_stop = 1;
}

/* Record the complete frames a direction holds. */
static void
tap_frames(struct tap *t, struct tap_pair *p, struct tap_dir *d)
{
	struct mos_frame	f;
	int			rc;

	while (!d->broken) {
		rc = mos_framer_next(d->fr, &f);
		if (rc == MOS_FRAME_MORE)
			return;
		if (rc != MOS_FRAME_READY) {
			fprintf(t->o->out, "mosreplay: conn %llu %s %s: no "
			    "longer recorded (still forwarded): %s\n",
			    (unsigned long long)p->conn, gw_port_name(p->port),
			    d->dir == HISTORY_IN ? "in" : "out",
			    mos_framer_errmsg(d->fr));
			d->broken = true;
			return;
		}
		t->line.len = 0;
		capture_line(&t->line, util_now_ms(), "", p->port, d->dir,
		    p->conn, f.data, f.len, f.enc);
		if (fwrite(t->line.s, 1, t->line.len, t->cap) != t->line.len)
			fatalx("%s: write failed", t->o->output);
		fflush(t->cap);
		t->frames++;
	}
}

/* Close a pair (both sides are done). */
static void
tap_pair_free(struct tap *t, struct tap_pair *p)
{
	int	i;
	size_t	pending;

	for (i = 0; i < 2; i++) {
		pending = mos_framer_pending(p->d[i].fr);
		if (!p->d[i].broken && mos_framer_end(p->d[i].fr) != 0 &&
		    pending > 0)
			fprintf(t->o->out, "mosreplay: conn %llu %s %s: %zu "
			    "bytes of an incomplete frame at the end, not "
			    "recorded\n", (unsigned long long)p->conn,
			    gw_port_name(p->port), p->d[i].dir == HISTORY_IN ?
			    "in" : "out", pending);
		mos_framer_free(p->d[i].fr);
		sbuf_free(&p->d[i].out);
	}
	close(p->d[0].from);
	close(p->d[0].to);
	free(p);
}

/* A new connection on a listener: connect onwards and pair them. */
static void
tap_accept(struct tap *t, enum gw_port port)
{
	struct tap_pair	*p;
	int		 cfd, sfd, i;

	if ((cfd = net_accept(t->lfd[port], 0)) == -1)
		return;
	if (t->npairs == TAP_MAX_PAIRS || (t->o->max_conns > 0 &&
	    t->conns >= (uint64_t)t->o->max_conns)) {
		fprintf(t->o->out, "mosreplay: %s: connection refused: "
		    "too many connections\n", gw_port_name(port));
		close(cfd);
		return;
	}
	if ((sfd = net_connect(t->o->host, t->o->forward[port], 10000)) ==
	    -1) {
		fprintf(t->o->out, "mosreplay: %s: cannot connect to %s:%d: "
		    "%s; connection closed\n", gw_port_name(port),
		    t->o->host, t->o->forward[port], strerror(errno));
		close(cfd);
		return;
	}
	p = xcalloc(1, sizeof *p);
	p->conn = ++t->conns;
	p->port = port;
	p->d[0].from = p->d[1].to = cfd;
	p->d[0].to = p->d[1].from = sfd;
	p->d[0].dir = t->o->forward_ncs ? HISTORY_OUT : HISTORY_IN;
	p->d[1].dir = t->o->forward_ncs ? HISTORY_IN : HISTORY_OUT;
	for (i = 0; i < 2; i++) {
		if ((p->d[i].fr = mos_framer_new(MOS_ENC_AUTO, NULL)) == NULL)
			fatalx("out of memory");
		fcntl(p->d[i].from, F_SETFL, fcntl(p->d[i].from, F_GETFL) |
		    O_NONBLOCK);
	}
	t->pairs[t->npairs++] = p;
	fprintf(t->o->out, "conn %llu %s: open\n", (unsigned long long)p->conn,
	    gw_port_name(port));
}

/* Read what a direction's source has. */
static void
tap_read(struct tap *t, struct tap_pair *p, struct tap_dir *d)
{
	uint8_t	buf[65536];
	ssize_t	n;

	n = recv(d->from, buf, sizeof buf, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		d->eof = true;
		return;
	}
	sbuf_add(&d->out, (const char *)buf, (size_t)n);
	d->bytes += (uint64_t)n;
	if (!d->broken) {
		if (mos_framer_feed(d->fr, buf, (size_t)n) != 0)
			fatalx("out of memory");
		tap_frames(t, p, d);
	}
}

/* Write what a direction holds; at EOF with nothing left, pass it on. */
static void
tap_write(struct tap_dir *d, struct tap_pair *p)
{
	ssize_t	n;

	if (d->off < d->out.len) {
		n = send(d->to, d->out.s + d->off, d->out.len - d->off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			d->off += (size_t)n;
		else if (n == -1 && errno != EAGAIN && errno != EINTR)
			p->dead = true;
		if (d->off == d->out.len)
			d->off = d->out.len = 0;
	}
	if (d->eof && d->off == d->out.len && !d->shut) {
		shutdown(d->to, SHUT_WR);
		d->shut = true;
	}
}

/* Bytes read and not yet written, all pairs. */
static size_t
tap_held(const struct tap *t)
{
	size_t	i, n = 0;
	int	j;

	for (i = 0; i < t->npairs; i++) {
		for (j = 0; j < 2; j++)
			n += t->pairs[i]->d[j].out.len - t->pairs[i]->d[j].off;
	}
	return n;
}

/* The loop: until a signal, then write out what is held. */
static int
tap_loop(struct tap *t)
{
	struct pollfd	 pfd[GW_NPORTS + 2 * TAP_MAX_PAIRS];
	struct tap_pair	*p;
	struct tap_dir	*d;
	size_t		 n, i, k;
	int		 j, drain_ms = -1;
	int64_t		 drain_end = 0;

	for (;;) {
		if (tap_stop && drain_ms < 0) {
			/* stop accepting; give held bytes 2 s to leave */
			drain_ms = 2000;
			drain_end = util_mono_ms() + drain_ms;
		}
		n = 0;
		for (j = 0; j < GW_NPORTS && drain_ms < 0; j++) {
			if (t->lfd[j] != -1)
				pfd[n++] = (struct pollfd){ t->lfd[j], POLLIN,
				    0 };
		}
		k = n;
		for (i = 0; i < t->npairs; i++) {
			for (j = 0; j < 2; j++) {
				d = &t->pairs[i]->d[j];
				pfd[n].fd = d->from;
				pfd[n].events = 0;
				pfd[n].revents = 0;
				if (!d->eof && drain_ms < 0 &&
				    t->pairs[i]->d[j].out.len < TAP_HIGH)
					pfd[n].events |= POLLIN;
				/* our output towards `from` is the other one */
				if (t->pairs[i]->d[1 - j].off <
				    t->pairs[i]->d[1 - j].out.len)
					pfd[n].events |= POLLOUT;
				n++;
			}
		}
		if (drain_ms >= 0 && (util_mono_ms() >= drain_end ||
		    tap_held(t) == 0))
			break;
		if (poll(pfd, n, 200) == -1 && errno != EINTR) {
			fprintf(t->o->out, "mosreplay: poll: %s\n",
			    strerror(errno));
			return 1;
		}
		for (i = 0; i < t->npairs; i++) {
			p = t->pairs[i];
			for (j = 0; j < 2; j++) {
				if (pfd[k + 2 * i + (size_t)j].revents &
				    (POLLIN | POLLHUP | POLLERR))
					tap_read(t, p, &p->d[j]);
			}
			for (j = 0; j < 2; j++)
				tap_write(&p->d[j], p);
		}
		/* new pairs last: the pollfd slots above stay in step */
		for (i = 0; i < k; i++) {
			if ((pfd[i].revents & POLLIN) == 0)
				continue;
			for (j = 0; j < GW_NPORTS; j++) {
				if (t->lfd[j] == pfd[i].fd)
					tap_accept(t, (enum gw_port)j);
			}
		}
		for (i = 0; i < t->npairs; ) {
			p = t->pairs[i];
			if (p->dead || (p->d[0].shut && p->d[1].shut)) {
				fprintf(t->o->out, "conn %llu %s: closed, "
				    "%llu bytes in, %llu bytes out\n",
				    (unsigned long long)p->conn,
				    gw_port_name(p->port), (unsigned long long)
				    p->d[p->d[0].dir == HISTORY_IN ? 0 :
				    1].bytes, (unsigned long long)
				    p->d[p->d[0].dir == HISTORY_IN ? 1 :
				    0].bytes);
				tap_pair_free(t, p);
				t->pairs[i] = t->pairs[--t->npairs];
				/* the pollfd slots no longer match: rescan */
				break;
			}
			i++;
		}
	}
	return 0;
}

/* Record until SIGINT or SIGTERM. */
int
record_run(const struct record_opts *o)
{
	struct tap		 t;
	struct sigaction	 sa;
	size_t			 i;
	int			 j, rc;

	memset(&t, 0, sizeof t);
	t.o = o;
	for (j = 0; j < GW_NPORTS; j++)
		t.lfd[j] = -1;
	if ((t.cap = fopen(o->output, "w")) == NULL) {
		fprintf(o->out, "mosreplay: %s: %s\n", o->output,
		    strerror(errno));
		return 1;
	}
	for (j = 0; j < GW_NPORTS; j++) {
		if (o->listen[j] == 0)
			continue;
		if (o->forward[j] == 0) {
			fprintf(o->out, "mosreplay: --listen has a %s port but "
			    "--forward does not\n", gw_port_name(
			    (enum gw_port)j));
			rc = 1;
			goto out;
		}
		if ((t.lfd[j] = net_listen(o->listen_host, o->listen[j])) ==
		    -1) {
			fprintf(o->out, "mosreplay: cannot listen on %s:%d: "
			    "%s\n", o->listen_host, o->listen[j],
			    strerror(errno));
			rc = 1;
			goto out;
		}
		fcntl(t.lfd[j], F_SETFL, fcntl(t.lfd[j], F_GETFL) |
		    O_NONBLOCK);
		fprintf(o->out, "listening on %s port %d (%s), forwarding to "
		    "%s:%d\n", o->listen_host, o->listen[j],
		    gw_port_name((enum gw_port)j), o->host, o->forward[j]);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tap_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = tap_loop(&t);
	for (i = 0; i < t.npairs; i++)
		tap_pair_free(&t, t.pairs[i]);
	t.npairs = 0;
out:
	for (j = 0; j < GW_NPORTS; j++) {
		if (t.lfd[j] != -1)
			close(t.lfd[j]);
	}
	if (fflush(t.cap) != 0 || fsync(fileno(t.cap)) != 0 ||
	    fclose(t.cap) != 0) {
		fprintf(o->out, "mosreplay: %s: %s\n", o->output,
		    strerror(errno));
		rc = 1;
	}
	sbuf_free(&t.line);
	fprintf(o->out, "recorded %llu frames on %llu connections to %s\n",
	    (unsigned long long)t.frames, (unsigned long long)t.conns,
	    o->output);
	return rc;
}
