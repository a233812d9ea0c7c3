/*
 * itutil: what the integration suites share: a rig (mosgw and a scripted
 * NCS peer) started as a cmocka setup, and stopped as a teardown that wants
 * mosgw to exit 0 on SIGTERM.
 */
#ifndef ITUTIL_H
#define ITUTIL_H

#include <stdint.h>

#include "gateway/tests/gwproc.h"

/* *state = a rig from these options, the peer writing enc. 0, or -1. */
int	itutil_setup_opts(void **state, enum mos_enc,
	    const struct gwproc_opts *);
/* *state = the usual rig with these lines in its NCS section. 0, or -1. */
int	itutil_setup_ncs(void **state, enum mos_enc, const char *ncs_extra);
/* *state = the usual rig, UTF-16BE, with these [gateway] lines. 0, or -1. */
int	itutil_setup_gateway(void **state, const char *gateway_extra);
/* *state = the usual rig, UTF-16BE, nothing extra. 0, or -1. */
int	itutil_setup(void **state);
/*
 * Whether f is a mosAck with that status ("ACK", "NACK") whose
 * statusDescription holds text (NULL: any).
 */
bool	itutil_is_ack(const struct ncspeer_frame *, const char *status,
	    const char *text);
/* Stop the gateway (it must exit 0 on SIGTERM) and the peer. 0, or -1. */
int	itutil_teardown(void **state);

/* "<mos>" with that pair and messageID around body (UTF-8, malloc'd). */
char	*itutil_frame_text(const char *mos_id, const char *ncs_id, int id,
	    const char *body);
/*
 * Send UTF-8 text on conn and wait (timeout_ms) for the frame with that
 * messageID. NULL on timeout.
 */
const struct ncspeer_frame *itutil_send_text(struct gwrig *, int conn,
	    int id, const char *text, int timeout_ms);
/*
 * A raw TCP connection to 127.0.0.1:port from src (an address of
 * 127.0.0.0/8; NULL = the kernel's choice), non-blocking once connected;
 * rcvbuf > 0 sets its receive buffer first. The descriptor, or -1.
 */
int	itutil_dial(const char *src, uint16_t port, int rcvbuf);
/* Write all of a buffer on a non-blocking descriptor. 0, or -1. */
int	itutil_write(int fd, const void *, size_t, int timeout_ms);
/*
 * Write m (UTF-16BE) on fd and read until a frame with its messageID comes
 * back. The reply (mos_msg_free), or NULL on timeout, close or error.
 */
struct mos_msg *itutil_exchange(int fd, const struct mos_msg *m,
	    int timeout_ms);
/* Read (and drop) until the other side closes fd. 0, or -1 on timeout. */
int	itutil_wait_eof(int fd, int timeout_ms);

/*
 * The ids of the gateway's event log after an id, of one type (NULL: any),
 * in order, read from its database: how many (at most max), or -1.
 */
long	itutil_event_ids(struct gwrig *, const char *type, int64_t after,
	    int64_t *ids, size_t max);

/*
 * mosctl --url http://127.0.0.1:API-PORT --token-file tok ARGS (at most
 * 20, NULL-terminated): its stdout (malloc'd) when it exits want and
 * needle is in its stdout (want 0) or stderr; else NULL, having printed
 * the command, its status and output.
 */
char	*itutil_mosctl_url(struct gwrig *, const char *tok, int want,
	    const char *needle, ...) __attribute__((sentinel));
#ifdef fail_msg
/* In a cmocka suite (included before): a failure if out is NULL. */
static inline char *
itutil_must(char *out)
{
	if (out == NULL)
		fail_msg("mosctl did not do what was expected (above)");
	return out;
}
#endif

/* How often needle occurs in s. */
int	itutil_count(const char *s, const char *needle);
/* Write text to a file of the gateway's directory, its path in buf; 0/-1. */
int	itutil_write_file(struct gwrig *, const char *name, const char *text,
	    char *buf, size_t len);

/*
 * Heartbeats on conn, one at a time, until done(arg) is true (checked
 * before each one) or timeout_ms: how many were answered (-1 if one was
 * not, within timeout_ms), and in *max_ms the longest wait for an answer.
 */
int	itutil_heartbeats_until(struct gwrig *, int conn,
	    bool (*done)(void *), void *arg, int timeout_ms, int64_t *max_ms);
/*
 * Whether heartbeats answered during work of took ms, the slowest in
 * slowest ms, show the loop held up: the slowest waited a quarter of the
 * work or more, and at least ITUTIL_STALL_MIN_MS (below that a busy
 * machine's scheduling alone can do it).
 */
#define ITUTIL_STALL_MIN_MS	250
bool	itutil_loop_stalled(int64_t slowest, int64_t took);

#endif /* ITUTIL_H */
