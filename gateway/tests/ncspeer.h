/*
 * ncspeer: a scripted NCS for the gateway's integration tests and benchmark.
 *
 * It plays the newsroom system on 127.0.0.1. It listens on its own lower and
 * upper ports (the gateway connects out to them to send mosObj and
 * heartbeats) and dials the gateway's lower, upper and query listeners to
 * send requests. A thread of its own runs a poll() loop: it answers the
 * gateway's messages as the test's policy says and records every frame it
 * receives (type, messageID, parsed message), so that a test can wait for a
 * frame with a deadline and assert on it. Built on the codec (mosxml.h).
 *
 * Every wait takes a timeout in milliseconds; nothing blocks for longer.
 * Connections are numbered from 1 and never reused; a closed connection keeps
 * its number and its frames.
 */
#ifndef NCSPEER_H
#define NCSPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mosxml/mosxml.h"

/* Which MOS port a connection belongs to (0 in a match means any). */
enum ncspeer_port {
	NCSPEER_LOWER = 1,
	NCSPEER_UPPER = 2,
	NCSPEER_QUERY = 3,
};

/* Who opened a connection (0 in a match means any). */
enum ncspeer_side {
	NCSPEER_ACCEPTED = 1,	/* the gateway dialed us: its own messages */
	/* we dialed the gateway: our requests, its replies */
	NCSPEER_DIALED = 2,
};

/* How the peer answers a mosObj (or mosListAll) on an accepted connection. */
enum ncspeer_obj_reply {
	NCSPEER_OBJ_ACK = 0,	/* mosAck ACK with the same messageID */
	NCSPEER_OBJ_NACK,	/* mosAck NACK with nack_text */
	NCSPEER_OBJ_IGNORE,	/* no answer at all */
	NCSPEER_OBJ_WRONG_ID,	/* mosAck ACK with messageID + 1 */
};

struct ncspeer_policy {
	/* default: answer heartbeats at once */
	bool		 no_heartbeat_reply;
	/* default: answer reqMachInfo */
	bool		 no_mach_info_reply;
	enum ncspeer_obj_reply obj;
	/* copied; NULL = "rejected by ncspeer" */
	const char	*nack_text;
	/* NACK the first N mosObj, then `obj` */
	int		 nack_first;
	/*
	 * answer mosObj this much later; -1: hold the answers until the next
	 * ncspeer_set_policy() (which sends every held answer)
	 */
	int		 ack_delay_ms;
	/* answer the first N mosObj as above, hold the answers of the rest */
	int		 hold_after;
	bool		 ack_no_message_id;	/* mosAck without <messageID> */
	/* mosAck with an empty <mosID> */
	bool		 ack_empty_mos_id;
	/* bytes per send(); 0 = whole frame */
	size_t		 write_chunk;
	/* roAck instead of roListAll to roReqAll */
	bool		 ro_req_all_nack;
	int		 chunk_pause_us;	/* sleep between chunks */
};

struct ncspeer_opts {
	/* the gateway's mosID, for what we send */
	const char	*mos_id;
	const char	*ncs_id;	/* our ncsID */
	/* what we write (reading auto-detects) */
	enum mos_enc	 enc;
	uint16_t	 lower_port;	/* our listeners; 0 = a free port */
	uint16_t	 upper_port;
	uint16_t	 query_port;
	bool		 no_listen;	/* only dial the gateway */
	/* keep counters only, no frames (benchmark) */
	bool		 quiet;
};

/* One frame received. Never changes once recorded; lives until ncspeer_free. */
struct ncspeer_frame {
	size_t		 seq;		/* index in the record, from 0 */
	int		 conn;
	enum ncspeer_port port;
	enum ncspeer_side side;
	int64_t		 t_ms;		/* ncspeer_now_ms() at receipt */
	int64_t		 t_us;		/* the same in microseconds, taken
					   before the frame is parsed */
	char		 type_name[64];	/* message element; "" if unknown */
	bool		 has_message_id;
	int32_t		 message_id;
	struct mos_msg	*msg;		/* NULL when the frame did not parse */
	char		 error[320];	/* why it failed; "" when msg is set */
	uint8_t		*raw;		/* the frame as received */
	size_t		 raw_len;
	enum mos_enc	 enc;
};

/* A filter over recorded frames: zero fields match anything. */
struct ncspeer_match {
	const char	*type;		/* message element, e.g. "mosObj" */
	int		 port;		/* enum ncspeer_port */
	int		 side;		/* enum ncspeer_side */
	int		 conn;
	int32_t		 message_id;
	const char	*obj_id;	/* objID of a mosObj or mosAck */
	size_t		 from;		/* first seq to look at */
};

/* Counters, kept in quiet mode too. */
struct ncspeer_stats {
	uint64_t	frames;		/* frames received */
	/* mosObj received on accepted connections */
	uint64_t	objs;
	uint64_t	acks_sent;	/* mosAck ACK sent for them */
	/* heartbeats received on accepted connections */
	uint64_t	heartbeats;
	/* frames that did not parse, framing errors */
	uint64_t	errors;
	uint64_t	accepted;	/* connections accepted */
	/*
	 * connections accepted on a port while another one the gateway
	 * opened to that port was still open from its side (two gateway
	 * connections to one port at the same time)
	 */
	uint64_t	overlaps;
};

struct ncspeer;

int64_t		 ncspeer_now_ms(void);
int64_t		 ncspeer_now_us(void);	/* the same clock in microseconds */

/* Start the peer and its thread. NULL on error (printed to stderr). */
struct ncspeer	*ncspeer_new(const struct ncspeer_opts *);
/* Stop the thread, close everything, free the record. Accepts NULL. */
void		 ncspeer_free(struct ncspeer *);
/* Our listening port (the one chosen when 0 was asked). */
uint16_t	 ncspeer_port(struct ncspeer *, enum ncspeer_port);
void		 ncspeer_set_policy(struct ncspeer *,
		    const struct ncspeer_policy *);
/*
 * The NCS goes away: listeners and connections closed (reset if rst). The
 * ports stay bound, not listening (connections are refused), so that no
 * other socket takes them meanwhile.
 */
void		 ncspeer_down(struct ncspeer *, bool rst);
/* The NCS comes back on the same ports (listening on the held sockets). */
int		 ncspeer_up(struct ncspeer *);
void		 ncspeer_stats(struct ncspeer *, struct ncspeer_stats *);

/*
 * Hold a running order (a roCreate model, taken; freed with the peer):
 * roReq answers it with roList, roReqAll lists it. Without it roReq gets
 * roAck "RO not found" and roReqAll an empty roListAll.
 */
void		 ncspeer_hold_ro(struct ncspeer *, struct mos_msg *);

/* Dial the gateway's port on 127.0.0.1. Returns the connection number or -1. */
int		 ncspeer_dial(struct ncspeer *, enum ncspeer_port,
		    uint16_t gwport);
/* Close a connection; rst: SO_LINGER {1, 0} so the gateway sees a reset. */
void		 ncspeer_close(struct ncspeer *, int conn, bool rst);
bool		 ncspeer_conn_open(struct ncspeer *, int conn);
/* A connection as the peer sees it. */
struct ncspeer_conn_info {
	enum ncspeer_port port;
	enum ncspeer_side side;
	bool		 open;		/* not closed by us or the gateway */
	int64_t		 opened_us;	/* ncspeer_now_us() at accept or dial */
};
/* Connections so far: they are numbered 1 to this. */
int		 ncspeer_nconns(struct ncspeer *);
/* What is known of conn. 0, or -1 if there is no such connection. */
int		 ncspeer_conn_info(struct ncspeer *, int conn,
		    struct ncspeer_conn_info *);
/* Wait until the other side has closed conn. 0, or -1 on timeout. */
int		 ncspeer_wait_closed(struct ncspeer *, int conn,
		    int timeout_ms);
/* Wait until at least n connections of that port and side are open. 0 or -1. */
int		 ncspeer_wait_open(struct ncspeer *, enum ncspeer_port,
		    enum ncspeer_side, int n, int timeout_ms);
/* The newest open connection of that port and side; -1 if none. */
int		 ncspeer_conn_of(struct ncspeer *, enum ncspeer_port,
		    enum ncspeer_side);
/* Open connections of that port and side right now. */
int		 ncspeer_count_open(struct ncspeer *, enum ncspeer_port,
		    enum ncspeer_side);

/* A new message with our envelope (mosID, ncsID, a fresh messageID). */
struct mos_msg	*ncspeer_msg(struct ncspeer *, enum mos_type);
/* Write m on conn with the policy's chunking. Returns 0 or -1. */
int		 ncspeer_send(struct ncspeer *, int conn,
		    const struct mos_msg *);
int		 ncspeer_send_raw(struct ncspeer *, int conn, const void *,
		    size_t);
/* Write raw bytes in pieces of chunk bytes with pause_us between them. */
int		 ncspeer_send_chunked(struct ncspeer *, int conn, const void *,
		    size_t, size_t chunk, int pause_us);
/* UTF-8 XML text, converted to the peer's encoding, written on conn. */
int		 ncspeer_send_xml(struct ncspeer *, int conn, const char *);
/*
 * Send m (freed here) on conn and wait for the frame on that connection with
 * the same messageID. Returns it, or NULL on timeout or write failure.
 */
const struct ncspeer_frame *ncspeer_request(struct ncspeer *, int conn,
		    struct mos_msg *, int timeout_ms);

/* Frames recorded so far; frame i; frames that match; wait for one. */
size_t		 ncspeer_nframes(struct ncspeer *);
const struct ncspeer_frame *ncspeer_frame_at(struct ncspeer *, size_t);
size_t		 ncspeer_count(struct ncspeer *, const struct ncspeer_match *);
const struct ncspeer_frame *ncspeer_find(struct ncspeer *,
		    const struct ncspeer_match *);
const struct ncspeer_frame *ncspeer_wait(struct ncspeer *,
		    const struct ncspeer_match *, int timeout_ms);
/* Wait until at least n frames match. Returns the count reached. */
size_t		 ncspeer_wait_count(struct ncspeer *,
		    const struct ncspeer_match *, size_t n, int timeout_ms);

/* UTF-8 text in the given encoding (malloc'd, *len set); NULL on bad UTF-8. */
uint8_t		*ncspeer_encode(const char *, enum mos_enc, size_t *len);
/* Print the record to stderr (on test failure). */
void		 ncspeer_dump(struct ncspeer *, const char *label);

#endif /* NCSPEER_H */
