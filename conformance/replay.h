/*
 * mosreplay: captures (conformance/capture.md) turned into conformance tests.
 *
 *   capture.c  read a capture (with the scenario keys), write capture lines
 *   compare.c  one reply against the expected one, through the typed model
 *   net.c      blocking loopback sockets with deadlines, framed reads
 *   play.c     play a capture (or a folder of scenarios) against a peer
 *   record.c   the transparent tap: listen, forward, write a capture
 *   import.c   a pcap/pcapng file to a capture (libpcap, TCP reassembly)
 *   mosreplay.c the command line
 *
 * Built on the codec (mosxml/), its JSON mapping (mosxml/json.c) and the
 * gateway's helpers (sbuf, UTF-16BE conversion, history capture lines).
 */
#ifndef REPLAY_H
#define REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "gateway/gateway.h"

/* ------------------------------------------------------------------------ */
/* capture.c */

/* One line of a capture, with the optional scenario keys. */
struct cap_frame {
	int		 line;		/* in the file, from 1 */
	int64_t		 t_ms;
	char		*ncs;
	enum gw_port	 port;
	enum history_dir dir;		/* in: the NCS sent it */
	uint64_t	 conn;
	int32_t		 message_id;	/* 0 = none */
	char		*type;
	char		*xml;		/* UTF-8 */
	/* scenario keys */
	size_t		 chunk;		/* "chunk": bytes per write, 0 whole */
	bool		 coalesce;	/* "coalesce": one write with the next */
	int		 silence_ms;	/* "silence_ms": no reply may come */
	json_t		*any;		/* "any": fields compared for presence */
	json_t		*differ;	/* "not": {field: value it must not be} */
};

struct capture {
	char		*path;
	char		*title;		/* "title" of the first line, or NULL */
	int		 profile;	/* "profile", or from the types; -1 */
	struct cap_frame *f;
	size_t		 n;
};

/* Load and check a capture. 0, or -1 with *err (malloc'd, "FILE:LINE: ..."). */
int	 capture_load(const char *path, struct capture *, char **err);
void	 capture_free(struct capture *);
/* Who opened the frame's connection: true when the NCS spoke first. */
bool	 capture_ncs_opened(const struct capture *, uint64_t conn);
/*
 * Append one capture line (with newline) for a frame in its wire encoding;
 * messageID and type are read from it (type "unknown" when it does not
 * parse).
 */
void	 capture_line(struct sbuf *, int64_t t_ms, const char *ncs,
	    enum gw_port, enum history_dir, uint64_t conn, const void *data,
	    size_t len, enum mos_enc);

/* Frame bytes in enc as UTF-8 text, appended; and back to the wire. */
void	 capture_utf8(struct sbuf *, const void *, size_t, enum mos_enc);
void	 capture_wire(struct sbuf *, const char *, size_t, enum mos_enc);

/* ------------------------------------------------------------------------ */
/* compare.c */

/* What a scenario relaxes on one expected frame. */
struct cmp_rules {
	const json_t	*any;		/* array of field names or paths */
	const json_t	*differ;	/* "not": field -> value it must not be */
	const char	*mos_id;	/* expected mosID instead of the capture's */
	const char	*ncs_id;
};

/*
 * Compare the reply that arrived (frame bytes) with the expected one (the
 * capture's UTF-8 XML), field by field in the typed model. Times (time,
 * opTime, created, changed, roEventTime) and the messageID are compared for
 * presence only; the caller checks the messageID through its map. Returns 0
 * when equal, else 1 with the differences appended to diff, one per line.
 */
int	 cmp_frames(const char *expected_xml, const void *got, size_t got_len,
	    enum mos_enc, const struct cmp_rules *, struct sbuf *diff);
/* The messageID of a frame, 0 if none or if it does not parse. */
int32_t	 cmp_message_id(const void *, size_t, enum mos_enc);

/* ------------------------------------------------------------------------ */
/* net.c */

/* A connected socket with a framer. */
struct rconn {
	int			 fd;
	struct mos_framer	*fr;
	bool			 eof;
	char			 err[256];
};

/* "HOST:LOWER:UPPER[:QUERY]" (or without HOST): 0, or -1 with a message. */
int	 net_parse_ports(const char *, bool with_host, char *host, size_t,
	    int ports[GW_NPORTS], char *err, size_t);
/* Connect to host:port within timeout_ms: fd or -1 (errno). */
int	 net_connect(const char *host, int port, int timeout_ms);
/* Listen on host:port (port 0: any, see net_local_port). fd or -1. */
int	 net_listen(const char *host, int port);
int	 net_local_port(int fd);
/* Accept within timeout_ms: fd or -1. */
int	 net_accept(int lfd, int timeout_ms);
/* Write everything (chunk bytes at a time if not 0). 0 or -1. */
int	 net_write(int fd, const void *, size_t, size_t chunk);
void	 rconn_init(struct rconn *, int fd);
void	 rconn_close(struct rconn *);
/*
 * The next frame within timeout_ms: 1 (out filled, valid until the next
 * call), 0 on timeout, -1 at end of stream or on an error (r->err says).
 */
int	 rconn_next(struct rconn *, struct mos_frame *out, int timeout_ms);

/* ------------------------------------------------------------------------ */
/* play.c */

struct play_opts {
	bool		 device;	/* --device (else --ncs) */
	char		 host[256];
	int		 ports[GW_NPORTS];	/* 0: not given */
	int		 listen[GW_NPORTS];	/* --device --listen: as the NCS */
	bool		 fast;		/* --fast: no original pacing */
	enum mos_enc	 enc;		/* what we write */
	int		 timeout_ms;	/* per expected reply */
	const char	*mos_id;	/* --mos-id: rewrite the envelope */
	const char	*ncs_id;	/* --ncs-id */
	bool		 verbose;
	FILE		*out;
};

/*
 * Play the captures (files, or folders of *.jsonl scenarios) against the
 * peer. One capture: one line per exchange and "N passed, N failed". More:
 * one line per scenario, a table by profile, and "N passed, N failed,
 * N skipped" counting scenarios (skipped = of a profile the peer does not
 * offer). Returns the exit status: 0 only when nothing failed.
 */
int	 play_run(const struct play_opts *, char **paths, int npaths);

/* ------------------------------------------------------------------------ */
/* record.c */

struct record_opts {
	int		 listen[GW_NPORTS];	/* 0: port not tapped */
	char		 listen_host[256];
	char		 host[256];		/* forward to */
	int		 forward[GW_NPORTS];
	bool		 forward_ncs;	/* the NCS is behind --forward */
	const char	*output;
	int		 max_conns;		/* 0: no limit */
	FILE		*out;
};

/* Tap until SIGINT or SIGTERM; the capture is complete on return. */
int	 record_run(const struct record_opts *);

/* ------------------------------------------------------------------------ */
/* import.c */

/* pcap or pcapng to a capture; ports lower, upper, query. Exit status. */
int	 import_run(const char *in, const char *out, const int ports[GW_NPORTS],
	    FILE *msgs);

#endif /* REPLAY_H */
