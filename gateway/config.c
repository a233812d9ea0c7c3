/*
 * The configuration file: one INI file read with libinih, described by one
 * table of {section, key, type, offset, default, limits}. Defaults go through
 * the same parser as the file, every error names FILE:LINE, and the file is
 * checked as a whole (all errors, not just the first).
 *
 * Debian builds inih with INI_HANDLER_LINENO 0, so the line numbers come from
 * our own reader (ini_parse_stream), which also sees section headers first
 * and rejects over-long lines instead of letting inih split them.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/http.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"

enum cfg_type {
	CT_STR,		/* any text up to max characters (0 = no limit) */
	CT_ID,		/* a MOS identifier: 1..128 characters */
	CT_ADDR,	/* a numeric IPv4 or IPv6 address */
	CT_PORT,	/* 1..65535 */
	CT_PORT0,	/* 0..65535, 0 = off */
	CT_INT,		/* integer in [min, max] */
	CT_SIZE,	/* bytes, with an optional k/m/g suffix (KiB, MiB,
	    GiB) */
	CT_SECS,	/* a duration (util_parse_duration); stored as ms */
	CT_BOOL,
	CT_ENUM,	/* one of names[]; stored as its index */
	CT_ALLOW,	/* an allow-list (acl_parse); stored as text */
};

#define CF_REQUIRED	0x01
#define CF_PATH		0x02	/* a file: relative to the configuration's
				   directory; names[] are words kept as is */

enum cfg_sect {
	SECT_GATEWAY,
	SECT_DATABASE,
	SECT_LOG,
	SECT_API,
	SECT_EVENTS,
	SECT_NCS,
	SECT_WEBHOOK,
	SECT_NONE,
};

struct cfg_key {
	enum cfg_sect		 sect;
	const char		*key;
	enum cfg_type		 type;
	size_t			 off;
	const char		*def;
	int			 flags;
	int64_t			 min;
	int64_t			 max;
	const char *const	*names;
};

static const char *const enc_names[] = { "utf16be", "utf8", NULL };
static const char *const mode_names[] = { "lenient", "strict", NULL };
static const char *const level_names[] = { "debug", "info", "warn", "error",
    NULL };
static const char *const sync_names[] = { "full", "normal", NULL };
/* By enum store_driver. */
static const char *const driver_names[] = { "sqlite", "postgresql", NULL };
static const char *const unit_names[] = { "s", "ms", NULL };
static const char *const target_words[] = { "stderr", "syslog", NULL };
static const char *const format_names[] = { "logfmt", "json", NULL };
static const char *const sync_mode_names[] = { "all", "none", NULL };

#define G(f)	offsetof(struct gw_config, f)
#define N(f)	offsetof(struct ncs_conf, f)
#define W(f)	offsetof(struct webhook_conf, f)
#define DAY	86400000LL
#define MIB	(1LL << 20)

static const struct cfg_key cfg_keys[] = {
	{ SECT_GATEWAY, "mos_id", CT_ID, G(mos_id), "", CF_REQUIRED, 0, 0,
	    NULL },
	{ SECT_GATEWAY, "listen", CT_ADDR, G(listen), "127.0.0.1", 0, 0, 0,
	    NULL },
	{ SECT_GATEWAY, "lower_port", CT_PORT, G(lower_port), "10540", 0, 0, 0,
	    NULL },
	{ SECT_GATEWAY, "upper_port", CT_PORT, G(upper_port), "10541", 0, 0, 0,
	    NULL },
	{ SECT_GATEWAY, "query_port", CT_PORT0, G(query_port), "10542", 0, 0,
	    0, NULL },
	{ SECT_GATEWAY, "manufacturer", CT_STR, G(manufacturer), "mosgw", 0, 0,
	    128, NULL },
	{ SECT_GATEWAY, "model", CT_STR, G(model), "mosgw", 0, 0, 128, NULL },
	{ SECT_GATEWAY, "hw_rev", CT_STR, G(hw_rev), MOSGW_HW_REV, 0, 0, 128, NULL },
	{ SECT_GATEWAY, "sw_rev", CT_STR, G(sw_rev), MOSGW_VERSION, 0, 0, 128,
	    NULL },
	{ SECT_GATEWAY, "dom", CT_STR, G(dom), MOSGW_DOM, 0, 0, 128, NULL },
	{ SECT_GATEWAY, "sn", CT_STR, G(sn), "", 0, 0, 128, NULL },
	{ SECT_GATEWAY, "id", CT_STR, G(id), "", 0, 0, 128, NULL },
	{ SECT_GATEWAY, "max_frame", CT_SIZE, G(max_frame), "16777216", 0,
	    1024, 1024 * MIB, NULL },
	{ SECT_GATEWAY, "pre_handshake_frame", CT_SIZE,
	    G(pre_handshake_frame), "65536", 0, 256, 1024 * MIB, NULL },
	{ SECT_GATEWAY, "max_junk", CT_SIZE, G(max_junk), "65536", 0, 1,
	    1024 * MIB, NULL },
	{ SECT_GATEWAY, "frame_deadline", CT_SECS, G(frame_deadline_ms), "30",
	    0, 1, DAY, NULL },
	{ SECT_GATEWAY, "idle_timeout", CT_SECS, G(idle_timeout_ms), "0", 0, 0,
	    7 * DAY, NULL },
	{ SECT_GATEWAY, "handshake_timeout", CT_SECS, G(handshake_ms), "10", 0,
	    1, DAY, NULL },
	{ SECT_GATEWAY, "max_conn_per_port", CT_INT, G(max_conn_per_port), "8",
	    0, 1, 100000, NULL },
	{ SECT_GATEWAY, "max_conn_per_addr", CT_INT, G(max_conn_per_addr), "16",
	    0, 1, 100000, NULL },
	{ SECT_GATEWAY, "max_conn", CT_INT, G(max_conn), "64", 0, 1, 100000,
	    NULL },
	{ SECT_GATEWAY, "output_high_watermark", CT_SIZE,
	    G(output_high_watermark), "1048576", 0, 4096, 1024 * MIB, NULL },
	{ SECT_GATEWAY, "mos_req_all_pause_unit", CT_ENUM, G(pause_ms), "s", 0,
	    0, 0, unit_names },
	{ SECT_GATEWAY, "instance", CT_STR, G(instance), "", 0, 0, 64, NULL },
	{ SECT_GATEWAY, "takeover", CT_SECS, G(takeover_ms), "5", 0, 1000,
	    300000, NULL },

	{ SECT_DATABASE, "driver", CT_ENUM, G(db_driver), "sqlite", 0, 0, 0,
	    driver_names },
	{ SECT_DATABASE, "path", CT_STR, G(db_path), "var/mosgw.db", CF_PATH,
	    0, 4096, NULL },
	{ SECT_DATABASE, "dsn", CT_STR, G(db_dsn), "", 0, 0, 4096, NULL },
	{ SECT_DATABASE, "synchronous", CT_ENUM, G(sync_normal), "full", 0, 0,
	    0, sync_names },
	{ SECT_DATABASE, "history", CT_BOOL, G(history), "on", 0, 0, 0, NULL },
	{ SECT_DATABASE, "start_check", CT_BOOL, G(start_check), "on", 0, 0, 0,
	    NULL },
	{ SECT_DATABASE, "history_retention", CT_SECS,
	    G(history_retention_ms), "604800", 0, 1, 3650 * DAY, NULL },
	{ SECT_DATABASE, "history_max_bytes", CT_SIZE, G(history_max_bytes),
	    "1g", 0, 1024 * 1024, 1LL << 50, NULL },
	{ SECT_DATABASE, "done_retention", CT_SECS,
	    G(done_retention_ms), "86400", 0, 1, 3650 * DAY, NULL },
	{ SECT_DATABASE, "failed_retention", CT_SECS,
	    G(failed_retention_ms), "604800", 0, 1, 3650 * DAY, NULL },
	{ SECT_DATABASE, "backoff_base", CT_SECS, G(backoff_base_ms), "1", 0,
	    1, DAY, NULL },
	{ SECT_DATABASE, "backoff_max", CT_SECS, G(backoff_max_ms), "60", 0, 1,
	    DAY, NULL },
	{ SECT_DATABASE, "lease", CT_SECS, G(lease_ms), "30", 0, 1000, DAY,
	    NULL },
	{ SECT_DATABASE, "busy_timeout", CT_SECS, G(busy_ms), "0.1", 0, 1,
	    60000, NULL },
	{ SECT_DATABASE, "start_wait", CT_SECS, G(start_wait_ms), "30", 0, 0,
	    3600000, NULL },
	{ SECT_DATABASE, "notify_poll", CT_SECS, G(notify_poll_ms), "1", 0,
	    50, DAY, NULL },

	{ SECT_LOG, "level", CT_ENUM, G(log_level), "info", 0, 0, 0,
	    level_names },
	{ SECT_LOG, "target", CT_STR, G(log_target), "stderr", CF_PATH, 0,
	    4096, target_words },
	{ SECT_LOG, "rate_burst", CT_INT, G(log_rate_burst), "10", 0, 0,
	    1000000, NULL },
	{ SECT_LOG, "rate_interval", CT_SECS, G(log_rate_ms), "10", 0, 1, DAY,
	    NULL },
	{ SECT_LOG, "format", CT_ENUM, G(log_format), "logfmt", 0, 0, 0,
	    format_names },

	{ SECT_API, "listen", CT_ADDR, G(api_listen), "127.0.0.1", 0, 0, 0,
	    NULL },
	{ SECT_API, "port", CT_PORT0, G(api_port), "8540", 0, 0, 0, NULL },
	{ SECT_API, "tokens", CT_STR, G(api_tokens), "", CF_PATH, 0, 4096,
	    NULL },
	{ SECT_API, "max_header_size", CT_SIZE, G(api_max_header), "16384", 0,
	    1024, 16 * MIB, NULL },
	{ SECT_API, "max_body_size", CT_SIZE, G(api_max_body), "16777216", 0,
	    1024, 1024 * MIB, NULL },
	{ SECT_API, "request_deadline", CT_SECS, G(api_deadline_ms), "30", 0,
	    100, 3600000, NULL },
	{ SECT_API, "max_connections", CT_INT, G(api_max_conn), "256", 0, 1,
	    100000, NULL },
	/* HTTPS (api_tls.c) */
	{ SECT_API, "tls_cert", CT_STR, G(api_tls_cert), "", CF_PATH, 0, 4096,
	    NULL },
	{ SECT_API, "tls_key", CT_STR, G(api_tls_key), "", CF_PATH, 0, 4096,
	    NULL },
	{ SECT_API, "tls_handshake_timeout", CT_SECS, G(api_tls_handshake_ms),
	    "10", 0, 100, 3600000, NULL },

	{ SECT_EVENTS, "retention", CT_SECS, G(ev_retention_ms), "7d", 0, 1000,
	    3650 * DAY, NULL },
	{ SECT_EVENTS, "max_events", CT_INT, G(ev_max_events), "1000000", 0,
	    100, 1000000000, NULL },
	{ SECT_EVENTS, "sse_max_clients", CT_INT, G(ev_sse_max_clients), "32",
	    0, 1, 10000, NULL },
	{ SECT_EVENTS, "sse_max_buffer", CT_SIZE, G(ev_sse_max_buffer),
	    "1048576", 0, 4096, 1024 * MIB, NULL },
	{ SECT_EVENTS, "keepalive", CT_SECS, G(ev_keepalive_ms), "15", 0, 100,
	    DAY, NULL },

	{ SECT_NCS, "ncs_id", CT_ID, N(ncs_id), "", CF_REQUIRED, 0, 0, NULL },
	{ SECT_NCS, "buddy_ncs_id", CT_STR, N(buddy_ncs_id), "", 0, 0, 128,
	    NULL },
	{ SECT_NCS, "host", CT_STR, N(host), "", CF_REQUIRED, 0, 255, NULL },
	{ SECT_NCS, "lower_port", CT_PORT, N(lower_port), "10540", 0, 0, 0,
	    NULL },
	{ SECT_NCS, "upper_port", CT_PORT, N(upper_port), "10541", 0, 0, 0,
	    NULL },
	{ SECT_NCS, "query_port", CT_PORT0, N(query_port), "0", 0, 0, 0, NULL },
	{ SECT_NCS, "buddy_host", CT_STR, N(buddy_host), "", 0, 0, 255, NULL },
	{ SECT_NCS, "buddy_lower_port", CT_PORT, N(buddy_lower_port), "10540",
	    0, 0, 0, NULL },
	{ SECT_NCS, "buddy_upper_port", CT_PORT, N(buddy_upper_port), "10541",
	    0, 0, 0, NULL },
	{ SECT_NCS, "encoding", CT_ENUM, N(encoding), "utf16be", 0, 0, 0,
	    enc_names },
	{ SECT_NCS, "mode", CT_ENUM, N(mode), "lenient", 0, 0, 0, mode_names },
	{ SECT_NCS, "heartbeat_interval", CT_SECS, N(heartbeat_ms), "10", 0, 0,
	    DAY, NULL },
	{ SECT_NCS, "ack_timeout", CT_SECS, N(ack_timeout_ms), "5", 0, 1, DAY,
	    NULL },
	{ SECT_NCS, "retries", CT_INT, N(retries), "2", 0, 0, 100, NULL },
	{ SECT_NCS, "reconnect_min", CT_SECS, N(reconnect_min_ms), "1", 0, 1,
	    DAY, NULL },
	{ SECT_NCS, "reconnect_max", CT_SECS, N(reconnect_max_ms), "30", 0, 1,
	    DAY, NULL },
	{ SECT_NCS, "breaker_threshold", CT_INT, N(breaker_threshold), "5", 0,
	    1, 1000000, NULL },
	{ SECT_NCS, "hot_standby", CT_BOOL, N(hot_standby), "false", 0, 0, 0,
	    NULL },
	{ SECT_NCS, "publish", CT_BOOL, N(publish), "true", 0, 0, 0, NULL },
	{ SECT_NCS, "max_attempts", CT_INT, N(max_attempts), "10", 0, 1, 1000,
	    NULL },
	{ SECT_NCS, "initial_sync", CT_ENUM, N(initial_sync), "all", 0, 0, 0,
	    sync_mode_names },
	{ SECT_NCS, "ro_element_stat", CT_STR, N(ro_element_stat),
	    "READY,NOT READY", 0, 0, 128, NULL },
	{ SECT_NCS, "mos_item_replace", CT_BOOL, N(mos_item_replace), "false",
	    0, 0, 0, NULL },
	{ SECT_NCS, "allow", CT_ALLOW, N(allow), "hosts, loopback", 0, 0, 0,
	    NULL },

	{ SECT_WEBHOOK, "url", CT_STR, W(url), "", CF_REQUIRED, 0, 2048,
	    NULL },
	{ SECT_WEBHOOK, "events", CT_STR, W(events), "", CF_REQUIRED, 0, 512,
	    NULL },
	{ SECT_WEBHOOK, "secret", CT_STR, W(secret), "", 0, 0, 1024, NULL },
	{ SECT_WEBHOOK, "secret_file", CT_STR, W(secret_file), "", CF_PATH, 0,
	    4096, NULL },
	{ SECT_WEBHOOK, "timeout", CT_SECS, W(timeout_ms), "10", 0, 100,
	    3600000, NULL },
	{ SECT_WEBHOOK, "max_attempts", CT_INT, W(max_attempts), "10", 0, 1,
	    1000, NULL },
	{ SECT_WEBHOOK, "cacert", CT_STR, W(cacert), "", CF_PATH, 0, 4096,
	    NULL },
	{ SECT_WEBHOOK, "tls_verify", CT_BOOL, W(tls_verify), "true", 0, 0, 0,
	    NULL },
};

/* Sections that come once per name: [ncs.NAME], [webhook.NAME]. */
#define CFG_MULTI(sect)	((sect) == SECT_NCS || (sect) == SECT_WEBHOOK)

static const char *const sect_names[] =
    { "gateway", "database", "log", "api", "events", "ncs.NAME",
    "webhook.NAME" };

struct cfg_parse {
	const char		*name;		/* file name for messages */
	char			*dir;		/* its directory (absolute), or
						   NULL for a string */
	FILE			*fp;
	const char		*str;		/* or a string */
	size_t			 off;
	int			 lineno;
	char			*line;
	size_t			 linecap;
	struct gw_config	*cfg;
	struct sbuf		 errs;
	int			 nerr;
	enum cfg_sect		 sect;		/* of the current section */
	struct ncs_conf		*ncs;		/* current [ncs.NAME] */
	struct webhook_conf	*wh;		/* current [webhook.NAME] */
	int			 sect_line[SECT_NONE];
};

/* Record one error "FILE:LINE: message" (line 0: "FILE: message"). */
static void __attribute__((format(printf, 3, 4)))
cfg_error(struct cfg_parse *p, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	/* the file may be binary garbage: only printable bytes go out */
	sbuf_escape(&p->errs, p->name, strlen(p->name));
	if (line > 0)
		sbuf_printf(&p->errs, ":%d", line);
	sbuf_puts(&p->errs, ": ");
	sbuf_escape(&p->errs, msg, strlen(msg));
	sbuf_puts(&p->errs, "\n");
	free(msg);
	p->nerr++;
}

/* Parse a byte size with an optional k/m/g suffix. */
static int
cfg_parse_size(const char *v, int64_t *out)
{
	char		*end;
	long long	 n;
	int64_t		 mul = 1;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		mul = 1LL << 10;
		end++;
		break;
	case 'm':
		mul = 1LL << 20;
		end++;
		break;
	case 'g':
		mul = 1LL << 30;
		end++;
		break;
	default:
		return -1;
	}
	if (*end != '\0' || n > INT64_MAX / mul)
		return -1;
	*out = n * mul;
	return 0;
}

/* Parse a boolean. */
static int
cfg_parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	size_t	i;

	for (i = 0; i < nitems(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* Parse a plain decimal integer. */
static int
cfg_parse_int(const char *v, int64_t *out)
{
	char		*end;
	long long	 n;

	if (*v == '\0' || (!isdigit((unsigned char)*v) && *v != '-'))
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = n;
	return 0;
}

/* Parse one value for key k into base; on error *why says what is wrong. */
static int
cfg_set(const struct cfg_key *k, void *base, const char *v, char *why,
    size_t whylen)
{
	char		*field = (char *)base + k->off;
	int64_t		 n = 0;
	unsigned char	 a[16];
	struct acl	 acl;
	char		*err;
	bool		 b;
	size_t		 i, len, step;

	switch (k->type) {
	case CT_STR:
	case CT_ID:
		for (i = 0, len = strlen(v); i < len; i += step) {
			if ((step = util_printable(v + i, len - i)) == 0) {
				snprintf(why, whylen, "a control character or "
				    "invalid UTF-8 at byte %zu", i);
				return -1;
			}
		}
		if (k->type == CT_ID && (*v == '\0' || strlen(v) > 128)) {
			snprintf(why, whylen, "must be 1 to 128 characters");
			return -1;
		}
		if (k->max > 0 && strlen(v) > (size_t)k->max) {
			snprintf(why, whylen, "longer than %lld characters",
			    (long long)k->max);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(v);
		return 0;
	case CT_ADDR:
		if (inet_pton(AF_INET, v, a) != 1 && inet_pton(AF_INET6, v,
		    a) != 1) {
			snprintf(why, whylen, "not a numeric IPv4 or IPv6 "
			    "address");
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(v);
		return 0;
	case CT_PORT:
	case CT_PORT0:
		if (cfg_parse_int(v, &n) != 0 || n < (k->type == CT_PORT ? 1 :
		    0) || n > 65535) {
			snprintf(why, whylen, "not a port number (%s..65535)",
			    k->type == CT_PORT ? "1" : "0");
			return -1;
		}
		*(int *)field = (int)n;
		return 0;
	case CT_INT:
		if (cfg_parse_int(v, &n) != 0 || n < k->min || n > k->max) {
			snprintf(why, whylen, "not an integer in %lld..%lld",
			    (long long)k->min, (long long)k->max);
			return -1;
		}
		*(int *)field = (int)n;
		return 0;
	case CT_SIZE:
		if (cfg_parse_size(v, &n) != 0 || n < k->min || n > k->max) {
			snprintf(why, whylen, "not a size in bytes in "
			    "%lld..%lld "
			    "(suffix k, m or g allowed)", (long long)k->min,
			    (long long)k->max);
			return -1;
		}
		*(int64_t *)field = n;
		return 0;
	case CT_SECS:
		if (util_parse_duration(v, &n) != 0 || n < k->min ||
		    n > k->max) {
			snprintf(why, whylen, "not a duration in %g..%g "
			    "seconds (500ms, 10s, 5m, 24h, 7d or seconds)",
			    (double)k->min / 1000, (double)k->max / 1000);
			return -1;
		}
		*(int64_t *)field = n;
		return 0;
	case CT_BOOL:
		if (cfg_parse_bool(v, &b) != 0) {
			snprintf(why, whylen, "not a boolean (true/false, "
			    "yes/no, on/off, 1/0)");
			return -1;
		}
		*(bool *)field = b;
		return 0;
	case CT_ALLOW:
		if (acl_parse(&acl, v, &err) != 0) {
			snprintf(why, whylen, "%s", err);
			free(err);
			return -1;
		}
		acl_clear(&acl);
		free(*(char **)field);
		*(char **)field = xstrdup(v);
		return 0;
	case CT_ENUM:
		for (i = 0; k->names[i] != NULL; i++) {
			if (strcmp(v, k->names[i]) == 0) {
				*(int *)field = (int)i;
				return 0;
			}
		}
		snprintf(why, whylen, "must be one of:");
		for (i = 0; k->names[i] != NULL; i++) {
			strncat(why, i == 0 ? " " : " | ",
			    whylen - strlen(why) - 1);
			strncat(why, k->names[i], whylen - strlen(why) - 1);
		}
		return -1;
	}
	return -1;
}

/*
 * Is key k one of base's: multi is SECT_NCS or SECT_WEBHOOK for such a
 * section, SECT_NONE for the global ones?
 */
static bool
cfg_key_of(const struct cfg_key *k, enum cfg_sect multi)
{
	return multi == SECT_NONE ? !CFG_MULTI(k->sect) : k->sect == multi;
}

/* Apply the defaults of one section kind to base. */
static void
cfg_defaults(enum cfg_sect sect, void *base, enum cfg_sect multi)
{
	const struct cfg_key	*k;
	char			 why[128];

	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		if (!cfg_key_of(k, multi))
			continue;
		if (sect != SECT_NONE && k->sect != sect)
			continue;
		if (cfg_set(k, base, k->def, why, sizeof why) != 0 &&
		    (k->flags & CF_REQUIRED) == 0)
			fatalx("default of %s is invalid: %s", k->key, why);
	}
}

/* Is this a valid NCS section name (used in lanes and log lines)? */
static bool
cfg_valid_ncs_name(const char *s)
{
	size_t	n = strlen(s);

	return n > 0 && n <= 63 &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.-") == n;
}

/* A [webhook.NAME] header: make it current (a new one, or the same). */
static void
cfg_webhook_section(struct cfg_parse *p, const char *name)
{
	struct gw_config	*cfg = p->cfg;
	struct webhook_conf	*w;
	size_t			 i;

	if (!cfg_valid_ncs_name(name + 8)) {
		cfg_error(p, p->lineno, "bad webhook name in [%s]: use 1 to 63 "
		    "of A-Z a-z 0-9 _ . -", name);
		return;
	}
	p->sect = SECT_WEBHOOK;
	for (i = 0; i < cfg->nwebhooks; i++) {
		if (strcmp(cfg->webhooks[i].name, name + 8) == 0) {
			p->wh = &cfg->webhooks[i];
			return;
		}
	}
	cfg->webhooks = xreallocarray(cfg->webhooks, cfg->nwebhooks + 1,
	    sizeof *cfg->webhooks);
	w = &cfg->webhooks[cfg->nwebhooks++];
	memset(w, 0, sizeof *w);
	w->name = xstrdup(name + 8);
	w->line = p->lineno;
	w->lines = xcalloc(nitems(cfg_keys), sizeof *w->lines);
	cfg_defaults(SECT_NONE, w, SECT_WEBHOOK);
	p->wh = w;
}

/* A section header seen by the reader: check it and make it current. */
static void
cfg_section(struct cfg_parse *p, const char *name)
{
	struct gw_config	*cfg = p->cfg;
	struct ncs_conf		*n;
	size_t			 i;

	p->ncs = NULL;
	p->wh = NULL;
	p->sect = SECT_NONE;
	for (i = 0; i < SECT_NCS; i++) {
		if (strcmp(name, sect_names[i]) == 0) {
			p->sect = (enum cfg_sect)i;
			if (p->sect_line[i] == 0)
				p->sect_line[i] = p->lineno;
			return;
		}
	}
	if (strncmp(name, "webhook.", 8) == 0) {
		cfg_webhook_section(p, name);
		return;
	}
	if (strncmp(name, "ncs.", 4) != 0) {
		cfg_error(p, p->lineno, "unknown section [%s] (expected "
		    "[gateway], [database], [log], [api], [events], [ncs.NAME] "
		    "or [webhook.NAME])", name);
		return;
	}
	if (!cfg_valid_ncs_name(name + 4)) {
		cfg_error(p, p->lineno, "bad NCS name in [%s]: use 1 to 63 of "
		    "A-Z a-z 0-9 _ . -", name);
		return;
	}
	p->sect = SECT_NCS;
	for (i = 0; i < cfg->nncs; i++) {
		if (strcmp(cfg->ncs[i].name, name + 4) == 0) {
			p->ncs = &cfg->ncs[i];
			return;
		}
	}
	cfg->ncs = xreallocarray(cfg->ncs, cfg->nncs + 1, sizeof *cfg->ncs);
	n = &cfg->ncs[cfg->nncs++];
	memset(n, 0, sizeof *n);
	n->name = xstrdup(name + 4);
	n->line = p->lineno;
	n->lines = xcalloc(nitems(cfg_keys), sizeof *n->lines);
	cfg_defaults(SECT_NONE, n, SECT_NCS);
	p->ncs = n;
	/* The array may have moved: nothing else keeps pointers into it. */
}

/* Is this line (without the newline) a syntax error for INI? */
static const char *
cfg_line_syntax(char *s)
{
	char	*end;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '\0' || *s == ';' || *s == '#')
		return NULL;
	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL)
			return "section header without ']'";
		return NULL;
	}
	if (strchr(s, '=') == NULL && strchr(s, ':') == NULL)
		return "expected 'key = value' or '[section]'";
	if (*s == '=' || *s == ':')
		return "missing key name before '='";
	return NULL;
}

/* Read the next raw line into p->line; NULL at the end. */
static char *
cfg_getline(struct cfg_parse *p)
{
	const char	*s, *nl;
	size_t		 n;
	ssize_t		 r;

	if (p->fp != NULL) {
		r = getline(&p->line, &p->linecap, p->fp);
		return r < 0 ? NULL : p->line;
	}
	s = p->str + p->off;
	if (*s == '\0')
		return NULL;
	nl = strchr(s, '\n');
	n = nl != NULL ? (size_t)(nl - s) + 1 : strlen(s);
	if (n + 1 > p->linecap) {
		p->line = xreallocarray(p->line, n + 1, 1);
		p->linecap = n + 1;
	}
	memcpy(p->line, s, n);
	p->line[n] = '\0';
	p->off += n;
	return p->line;
}

/*
 * inih's reader: one line per call, counted; section headers are handled
 * here (so empty sections count), bad lines are reported here with their
 * number and replaced by an empty line.
 */
static char *
cfg_reader(char *str, int num, void *stream)
{
	struct cfg_parse	*p = stream;
	const char		*why;
	char			*line, *s, *end;
	size_t			 len;

	if ((line = cfg_getline(p)) == NULL)
		return NULL;
	p->lineno++;
	len = strcspn(line, "\r\n");
	line[len] = '\0';
	if (len + 3 > (size_t)num) {
		cfg_error(p, p->lineno, "line too long (at most %d characters)",
		    num - 3);
		goto empty;
	}
	if ((why = cfg_line_syntax(line)) != NULL) {
		cfg_error(p, p->lineno, "%s", why);
		goto empty;
	}
	s = line + strspn(line, " \t");
	if (*s == '[') {
		end = strchr(s, ']');
		*end = '\0';
		cfg_section(p, s + 1);
		*end = ']';
	}
	snprintf(str, (size_t)num, "%s\n", line);
	return str;
empty:
	snprintf(str, (size_t)num, "\n");
	return str;
}

/* inih's handler: one key = value in the current section. */
static int
cfg_handler(void *user, const char *section, const char *name,
    const char *value)
{
	struct cfg_parse	*p = user;
	const struct cfg_key	*k;
	void			*base;
	int			*lines;
	char			 why[160];
	size_t			 i;

	(void)section;
	if (p->sect == SECT_NONE) {
		if (p->lineno > 0 && *section == '\0')
			cfg_error(p, p->lineno, "key '%s' outside of any "
			    "section", name);
		return 1;	/* reported once, at the section header */
	}
	if ((p->sect == SECT_NCS && p->ncs == NULL) ||
	    (p->sect == SECT_WEBHOOK && p->wh == NULL))
		return 1;	/* a bad [ncs.NAME]: reported at its header */
	for (i = 0; i < nitems(cfg_keys); i++) {
		k = &cfg_keys[i];
		if (k->sect == p->sect && strcmp(k->key, name) == 0)
			break;
	}
	if (i == nitems(cfg_keys)) {
		cfg_error(p, p->lineno, "unknown key '%s' in [%s]", name,
		    CFG_MULTI(p->sect) ? section : sect_names[p->sect]);
		return 1;
	}
	base = p->sect == SECT_NCS ? (void *)p->ncs : p->sect == SECT_WEBHOOK ?
	    (void *)p->wh : (void *)p->cfg;
	lines = p->sect == SECT_NCS ? p->ncs->lines : p->sect == SECT_WEBHOOK ?
	    p->wh->lines : p->cfg->lines;
	if (lines[i] != 0) {
		cfg_error(p, p->lineno, "duplicate key '%s' (first set on line "
		    "%d)", name, lines[i]);
		return 1;
	}
	lines[i] = p->lineno;
	if (cfg_set(k, base, value, why, sizeof why) != 0)
		cfg_error(p, p->lineno, "%s = '%s': %s", name, value, why);
	return 1;
}

/* Index of a key in the table. */
static size_t
cfg_key_index(enum cfg_sect sect, const char *key)
{
	size_t	i;

	for (i = 0; i < nitems(cfg_keys); i++) {
		if (cfg_keys[i].sect == sect && strcmp(cfg_keys[i].key,
		    key) == 0)
			return i;
	}
	fatalx("no config key %s", key);
}

/* The line to blame for a key of an NCS: where it was set, else the header. */
static int
cfg_ncs_line(const struct ncs_conf *n, const char *key)
{
	int	line = n->lines[cfg_key_index(SECT_NCS, key)];

	return line != 0 ? line : n->line;
}

/* The line to blame for a global key. */
static int
cfg_global_line(struct cfg_parse *p, enum cfg_sect sect, const char *key)
{
	int	line = p->cfg->lines[cfg_key_index(sect, key)];

	return line != 0 ? line : p->sect_line[sect];
}

/*
 * Walk a ro_element_stat list ("READY,NOT READY"): 0 when every entry is a
 * status we send; *found (may be NULL) says whether want is one of them.
 */
static int
cfg_ro_statuses(const char *list, const char *want, bool *found)
{
	static const char *const known[] = { "READY", "NOT READY" };
	const char	*p = list, *e;
	size_t		 len, i;

	if (found != NULL)
		*found = false;
	while (*p != '\0') {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, ',');
		len = e != NULL ? (size_t)(e - p) : strlen(p);
		while (len > 0 && p[len - 1] == ' ')
			len--;
		for (i = 0; i < nitems(known); i++)
			if (strlen(known[i]) == len &&
			    strncmp(known[i], p, len) == 0)
				break;
		if (i == nitems(known))
			return -1;
		if (found != NULL && want != NULL && strcmp(known[i], want) == 0)
			*found = true;
		p += len;
	}
	return 0;
}

/* Does the NCS accept roElementStat with this status? */
bool
config_ro_status_on(const struct ncs_conf *n, const char *status)
{
	bool	found;

	return cfg_ro_statuses(n->ro_element_stat, status, &found) == 0 &&
	    found;
}

/*
 * The database: driver = postgresql needs a dsn without a password (libpq
 * reads it from its password file), and a driver built into this program.
 */
static void
cfg_check_database(struct cfg_parse *p)
{
	struct gw_config	*cfg = p->cfg;
	enum store_driver	 d = (enum store_driver)cfg->db_driver;
	const char		*why;

	if (d == STORE_SQLITE) {
		if (*cfg->db_dsn != '\0')
			cfg_error(p, cfg_global_line(p, SECT_DATABASE, "dsn"),
			    "[database]: dsn is for driver = postgresql (the "
			    "sqlite driver uses path)");
		return;
	}
	if (*cfg->db_dsn == '\0')
		cfg_error(p, cfg_global_line(p, SECT_DATABASE, "driver"),
		    "[database]: driver = %s needs a dsn (a libpq connection "
		    "string)", store_driver_name(d));
	else if ((why = store_dsn_check(cfg->db_dsn)) != NULL)
		cfg_error(p, cfg_global_line(p, SECT_DATABASE, "dsn"),
		    "[database]: dsn: %s", why);
	if (!store_driver_available(d))
		cfg_error(p, cfg_global_line(p, SECT_DATABASE, "driver"),
		    "[database]: driver = %s is not built into this mosgw "
		    "(it has: sqlite)", store_driver_name(d));
}

/*
 * [gateway] instance: 1..64 of A-Z a-z 0-9 . _ -, the host name when not
 * set (a host name that is not such a name must be replaced by one).
 */
static void
cfg_check_instance(struct cfg_parse *p)
{
	struct gw_config	*cfg = p->cfg;
	char			 host[256];
	int			 line;

	line = cfg->lines[cfg_key_index(SECT_GATEWAY, "instance")];
	if (line == 0) {
		if (gethostname(host, sizeof host) != 0)
			host[0] = '\0';
		host[sizeof host - 1] = '\0';
		free(cfg->instance);
		cfg->instance = xstrdup(host);
	}
	if (!config_instance_ok(cfg->instance))
		cfg_error(p, line != 0 ? line : p->sect_line[SECT_GATEWAY],
		    "[gateway]: instance %s%s%s is not a name "
		    "(1 to 64 of A-Z a-z 0-9 . _ -)%s",
		    line == 0 ? "(the host name " : "\"",
		    cfg->instance, line == 0 ? ")" : "\"",
		    line == 0 ? ": set instance" : "");
}

/* Cross-checks of one NCS section. */
static void
cfg_check_ncs(struct cfg_parse *p, struct ncs_conf *n)
{
	struct gw_config	*cfg = p->cfg;
	size_t			 i;

	if (n->lines[cfg_key_index(SECT_NCS, "ncs_id")] == 0)
		cfg_error(p, n->line, "[ncs.%s]: ncs_id is required", n->name);
	if (n->lines[cfg_key_index(SECT_NCS, "host")] == 0 || *n->host == '\0')
		cfg_error(p, n->line, "[ncs.%s]: host is required", n->name);
	if (n->reconnect_min_ms > n->reconnect_max_ms)
		cfg_error(p, cfg_ncs_line(n, "reconnect_max"), "[ncs.%s]: "
		    "reconnect_max is less than reconnect_min", n->name);
	if (n->lower_port == n->upper_port)
		cfg_error(p, cfg_ncs_line(n, "upper_port"), "[ncs.%s]: "
		    "lower_port "
		    "and upper_port are the same (%d)", n->name, n->lower_port);
	if (n->query_port != 0 && (n->query_port == n->lower_port ||
	    n->query_port == n->upper_port))
		cfg_error(p, cfg_ncs_line(n, "query_port"), "[ncs.%s]: "
		    "query_port is the same as lower_port or upper_port (%d)",
		    n->name, n->query_port);
	if (*n->buddy_host != '\0' &&
	    n->buddy_lower_port == n->buddy_upper_port)
		cfg_error(p, cfg_ncs_line(n, "buddy_upper_port"), "[ncs.%s]: "
		    "buddy_lower_port and buddy_upper_port are the same (%d)",
		    n->name, n->buddy_lower_port);
	if (*n->buddy_host == '\0' && (n->hot_standby ||
	    *n->buddy_ncs_id != '\0'))
		cfg_error(p, cfg_ncs_line(n, n->hot_standby ? "hot_standby" :
		    "buddy_ncs_id"), "[ncs.%s]: %s needs buddy_host", n->name,
		    n->hot_standby ? "hot_standby" : "buddy_ncs_id");
	if (cfg_ro_statuses(n->ro_element_stat, NULL, NULL) != 0)
		cfg_error(p, cfg_ncs_line(n, "ro_element_stat"), "[ncs.%s]: "
		    "ro_element_stat takes READY and NOT READY separated by "
		    "commas, or nothing", n->name);
	for (i = 0; &cfg->ncs[i] != n; i++) {
		if (strcmp(cfg->ncs[i].ncs_id, n->ncs_id) == 0 ||
		    strcmp(cfg->ncs[i].ncs_id, n->buddy_ncs_id) == 0 ||
		    (*n->buddy_ncs_id != '\0' &&
		    strcmp(cfg->ncs[i].buddy_ncs_id, n->ncs_id) == 0))
			cfg_error(p, cfg_ncs_line(n, "ncs_id"), "[ncs.%s]: "
			    "ncs_id '%s' is already used by [ncs.%s]", n->name,
			    n->ncs_id, cfg->ncs[i].name);
	}
}

/* The line to blame for a key of a webhook. */
static int
cfg_webhook_line(const struct webhook_conf *w, const char *key)
{
	int	line = w->lines[cfg_key_index(SECT_WEBHOOK, key)];

	return line != 0 ? line : w->line;
}

/* Make a relative file of a webhook relative to the file's directory. */
static void
cfg_webhook_path(struct cfg_parse *p, char **file)
{
	char	*path;

	if (**file == '\0' || **file == '/' || p->dir == NULL)
		return;
	xasprintf(&path, "%s/%s", p->dir, *file);
	free(*file);
	*file = path;
}

/*
 * The URL of a webhook: http:// or https:// with a host. For https, the
 * client context (its cacert loaded now); cacert and tls_verify only
 * with https, and tls_verify = false without a cacert.
 */
static void
cfg_check_webhook_url(struct cfg_parse *p, struct webhook_conf *w)
{
	struct evhttp_uri	*u;
	const char		*scheme = NULL;
	char			*err = NULL;
	bool			 https = false;

	if ((u = evhttp_uri_parse_with_flags(w->url, 0)) != NULL)
		scheme = evhttp_uri_get_scheme(u);
	if (scheme != NULL)
		https = strcasecmp(scheme, "https") == 0;
	if (u == NULL || scheme == NULL || evhttp_uri_get_host(u) == NULL ||
	    *evhttp_uri_get_host(u) == '\0' || (!https &&
	    strcasecmp(scheme, "http") != 0)) {
		cfg_error(p, cfg_webhook_line(w, "url"), "[webhook.%s]: url "
		    "'%s' is not an http:// or https://HOST[:PORT]/PATH URL",
		    w->name, w->url);
		if (u != NULL)
			evhttp_uri_free(u);
		return;
	}
	evhttp_uri_free(u);
	if (!https) {
		if (*w->cacert != '\0' || !w->tls_verify)
			cfg_error(p, cfg_webhook_line(w, *w->cacert != '\0' ?
			    "cacert" : "tls_verify"), "[webhook.%s]: %s is for "
			    "https:// URLs only", w->name, *w->cacert != '\0' ?
			    "cacert" : "tls_verify");
		return;
	}
	if (*w->cacert != '\0' && !w->tls_verify) {
		cfg_error(p, cfg_webhook_line(w, "tls_verify"), "[webhook.%s]: "
		    "tls_verify = false ignores the cacert: set one of them",
		    w->name);
		return;
	}
	cfg_webhook_path(p, &w->cacert);
	if ((w->tls = webhook_tls_ctx(w, &err)) == NULL) {
		cfg_error(p, cfg_webhook_line(w, "cacert"), "[webhook.%s]: "
		    "cacert: %s", w->name, err);
		free(err);
	}
}

/*
 * Cross-checks of one webhook: an http:// or https:// URL, known event
 * types, one secret (read from secret_file, relative to the file's
 * directory).
 */
static void
cfg_check_webhook(struct cfg_parse *p, struct webhook_conf *w)
{
	char			*err = NULL;
	unsigned		 mask;

	if (w->lines[cfg_key_index(SECT_WEBHOOK, "url")] == 0)
		cfg_error(p, w->line, "[webhook.%s]: url is required", w->name);
	else
		cfg_check_webhook_url(p, w);
	if (w->lines[cfg_key_index(SECT_WEBHOOK, "events")] == 0)
		cfg_error(p, w->line, "[webhook.%s]: events is required",
		    w->name);
	else if (events_type_mask(w->events, false, &mask, &err) != 0) {
		cfg_error(p, cfg_webhook_line(w, "events"), "[webhook.%s]: "
		    "events: %s", w->name, err);
		free(err);
	}
	if ((*w->secret != '\0') == (*w->secret_file != '\0')) {
		cfg_error(p, w->line, "[webhook.%s]: set one of secret and "
		    "secret_file", w->name);
		return;
	}
	if (*w->secret_file == '\0')
		return;
	cfg_webhook_path(p, &w->secret_file);
	free(w->secret);
	if ((w->secret = webhook_secret_load(w->secret_file, &err)) == NULL) {
		w->secret = xstrdup("");
		cfg_error(p, cfg_webhook_line(w, "secret_file"), "[webhook.%s]: "
		    "secret_file: %s", w->name, err);
		free(err);
	}
}

/* Cross-checks of the whole file after parsing. */
static void
cfg_check(struct cfg_parse *p)
{
	struct gw_config	*cfg = p->cfg;
	size_t			 i;

	if (cfg->lines[cfg_key_index(SECT_GATEWAY, "mos_id")] == 0)
		cfg_error(p, p->sect_line[SECT_GATEWAY], "[gateway]: mos_id is "
		    "required");
	if (cfg->lower_port == cfg->upper_port ||
	    cfg->query_port == cfg->lower_port ||
	    cfg->query_port == cfg->upper_port)
		cfg_error(p, cfg_global_line(p, SECT_GATEWAY, "upper_port"),
		    "[gateway]: lower_port, upper_port and query_port must "
		    "differ");
	if (cfg->pre_handshake_frame > cfg->max_frame)
		cfg_error(p, cfg_global_line(p, SECT_GATEWAY,
		    "pre_handshake_frame"), "[gateway]: pre_handshake_frame is "
		    "larger than max_frame");
	if (cfg->api_port != 0 && (cfg->api_port == cfg->lower_port ||
	    cfg->api_port == cfg->upper_port ||
	    cfg->api_port == cfg->query_port))
		cfg_error(p, cfg_global_line(p, SECT_API, "port"), "[api]: "
		    "port %d is also a MOS port of [gateway]", cfg->api_port);
	if ((*cfg->api_tls_cert == '\0') != (*cfg->api_tls_key == '\0'))
		cfg_error(p, cfg_global_line(p, SECT_API, *cfg->api_tls_cert ==
		    '\0' ? "tls_key" : "tls_cert"), "[api]: tls_cert and "
		    "tls_key go together (both set: HTTPS; neither: HTTP)");
	cfg_check_database(p);
	cfg_check_instance(p);
	if (cfg->backoff_base_ms > cfg->backoff_max_ms)
		cfg_error(p, cfg_global_line(p, SECT_DATABASE, "backoff_max"),
		    "[database]: backoff_max is less than backoff_base");
	if (cfg->nncs == 0)
		cfg_error(p, 0, "no [ncs.NAME] section: at least one NCS is "
		    "required");
	for (i = 0; i < cfg->nncs; i++)
		cfg_check_ncs(p, &cfg->ncs[i]);
	for (i = 0; i < cfg->nwebhooks; i++)
		cfg_check_webhook(p, &cfg->webhooks[i]);
}

/* Is this an existing directory? */
static bool
cfg_is_dir(const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The file keys (CF_PATH): a relative path is made relative to the
 * configuration file's directory, so that the daemon does not depend on
 * where it is started. The database's directory may be missing if its
 * parent exists (the daemon creates it at start); a log file's directory
 * must exist.
 */
static void
cfg_paths(struct cfg_parse *p)
{
	const struct cfg_key	*k;
	char			**field, *path, *dir, *parent, *copy;
	size_t			 i;

	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		if ((k->flags & CF_PATH) == 0 || CFG_MULTI(k->sect))
			continue;
		field = (char **)((char *)p->cfg + k->off);
		for (i = 0; k->names != NULL && k->names[i] != NULL; i++)
			if (strcmp(*field, k->names[i]) == 0)
				break;
		if ((k->names != NULL && k->names[i] != NULL) ||
		    **field == '\0')
			continue;
		if (**field != '/') {
			xasprintf(&path, "%s/%s", p->dir, *field);
			free(*field);
			*field = path;
		}
		copy = xstrdup(*field);
		dir = xstrdup(dirname(copy));
		free(copy);
		if (!cfg_is_dir(dir)) {
			copy = xstrdup(dir);
			parent = xstrdup(dirname(copy));
			free(copy);
			if (k->off != offsetof(struct gw_config, db_path))
				cfg_error(p, cfg_global_line(p, k->sect,
				    k->key), "[%s]: %s: directory %s does not "
				    "exist", sect_names[k->sect], k->key, dir);
			else if (!cfg_is_dir(parent))
				cfg_error(p, cfg_global_line(p, k->sect,
				    k->key), "[%s]: %s: directory %s does not "
				    "exist, nor its parent %s (only the last "
				    "one is created at start)",
				    sect_names[k->sect], k->key, dir, parent);
			free(parent);
		}
		free(dir);
	}
}

/* Parse from p (file or string) into a new config. */
static struct gw_config *
cfg_parse_all(struct cfg_parse *p, char **errors)
{
	struct gw_config	*cfg;
	int			 rc;

	cfg = xcalloc(1, sizeof *cfg);
	cfg->lines = xcalloc(nitems(cfg_keys), sizeof *cfg->lines);
	cfg_defaults(SECT_NONE, cfg, SECT_NONE);
	p->cfg = cfg;
	p->sect = SECT_NONE;
	ini_allow_multiline = false;
	ini_allow_no_value = false;
	rc = ini_parse_stream(cfg_reader, p, cfg_handler, p);
	if (rc == -2)
		cfg_error(p, 0, "out of memory while parsing");
	else if (rc > 0 && p->nerr == 0)
		cfg_error(p, rc, "syntax error");
	cfg_check(p);
	if (p->dir != NULL)
		cfg_paths(p);
	free(p->line);
	if (p->nerr != 0) {
		*errors = p->errs.s;
		config_free(cfg);
		return NULL;
	}
	sbuf_free(&p->errs);
	*errors = NULL;
	return cfg;
}

/* Load and validate a configuration file. */
struct gw_config *
config_load(const char *file, char **errors)
{
	struct cfg_parse	 p;
	struct gw_config	*cfg;
	char			 real[PATH_MAX];

	memset(&p, 0, sizeof p);
	p.name = file;
	if ((p.fp = fopen(file, "r")) == NULL) {
		xasprintf(errors, "%s: %s\n", file, strerror(errno));
		return NULL;
	}
	if (realpath(file, real) == NULL)
		util_strlcpy(real, file, sizeof real);
	p.dir = xstrdup(dirname(real));
	cfg = cfg_parse_all(&p, errors);
	fclose(p.fp);
	free(p.dir);
	if (cfg != NULL)
		cfg->file = xstrdup(file);
	return cfg;
}

/* Load and validate a configuration held in a string. */
struct gw_config *
config_load_string(const char *name, const char *text, char **errors)
{
	struct cfg_parse	 p;
	struct gw_config	*cfg;

	memset(&p, 0, sizeof p);
	p.name = name;
	p.str = text;
	cfg = cfg_parse_all(&p, errors);
	if (cfg != NULL)
		cfg->file = xstrdup(name);
	return cfg;
}

/* Free the string fields of a section. */
static void
cfg_free_strings(enum cfg_sect sect, void *base, enum cfg_sect multi)
{
	const struct cfg_key	*k;

	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		if (!cfg_key_of(k, multi))
			continue;
		if (sect != SECT_NONE && k->sect != sect)
			continue;
		if (k->type == CT_STR || k->type == CT_ID ||
		    k->type == CT_ADDR || k->type == CT_ALLOW)
			free(*(char **)((char *)base + k->off));
	}
}

/* Free a configuration. */
void
config_free(struct gw_config *cfg)
{
	size_t	i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nncs; i++) {
		cfg_free_strings(SECT_NONE, &cfg->ncs[i], SECT_NCS);
		free(cfg->ncs[i].name);
		free(cfg->ncs[i].lines);
	}
	free(cfg->ncs);
	for (i = 0; i < cfg->nwebhooks; i++) {
		cfg_free_strings(SECT_NONE, &cfg->webhooks[i], SECT_WEBHOOK);
		SSL_CTX_free(cfg->webhooks[i].tls);
		free(cfg->webhooks[i].name);
		free(cfg->webhooks[i].lines);
	}
	free(cfg->webhooks);
	cfg_free_strings(SECT_NONE, cfg, SECT_NONE);
	free(cfg->lines);
	free(cfg->file);
	free(cfg);
}

/* Is s an instance name: 1 to 64 of A-Z a-z 0-9 . _ -? */
bool
config_instance_ok(const char *s)
{
	size_t	n;

	for (n = 0; s[n] != '\0'; n++) {
		if (!isalnum((unsigned char)s[n]) && s[n] != '.' &&
		    s[n] != '_' && s[n] != '-')
			return false;
	}
	return n >= 1 && n <= 64;
}

/* The NCS section with that name, or NULL. */
const struct ncs_conf *
config_find_ncs(const struct gw_config *cfg, const char *name)
{
	size_t	i;

	for (i = 0; i < cfg->nncs; i++) {
		if (strcmp(cfg->ncs[i].name, name) == 0)
			return &cfg->ncs[i];
	}
	return NULL;
}

/* Do two NCS sections say the same (line numbers aside)? */
bool
config_ncs_equal(const struct ncs_conf *a, const struct ncs_conf *b)
{
	const struct cfg_key	*k;
	const char		*pa, *pb;

	if (strcmp(a->name, b->name) != 0)
		return false;
	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		if (k->sect != SECT_NCS)
			continue;
		pa = (const char *)a + k->off;
		pb = (const char *)b + k->off;
		switch (k->type) {
		case CT_STR:
		case CT_ID:
		case CT_ADDR:
		case CT_ALLOW:
			if (strcmp(*(char *const *)pa, *(char *const *)pb) != 0)
				return false;
			break;
		case CT_SIZE:
		case CT_SECS:
			if (*(const int64_t *)pa != *(const int64_t *)pb)
				return false;
			break;
		case CT_BOOL:
			if (*(const bool *)pa != *(const bool *)pb)
				return false;
			break;
		default:
			if (*(const int *)pa != *(const int *)pb)
				return false;
		}
	}
	return true;
}

/*
 * Print every section and key with its default: a template that passes
 * mosgw -n as it is, the required keys holding an example value.
 */
void
config_print_defaults(FILE *f)
{
	static const struct {
		const char	*key;
		const char	*value;
	} examples[] = {
		{ "mos_id", "mosgw.example" },
		{ "ncs_id", "NCS1" },
		{ "host", "127.0.0.1" },
		{ "url", "http://127.0.0.1:8080/mosgw" },
		{ "events", "asset.delivered, asset.failed" },
	};
	const struct cfg_key	*k;
	const char		*v, *pre;
	size_t			 i;
	int			 sect = -1;

	fprintf(f, "; mosgw configuration: every key with its default "
	    "(mosgw -D).\n"
	    "; Keys marked \"required\" hold an example: set your own. "
	    "Relative paths\n"
	    "; are taken from this file's directory. One [ncs.NAME] section "
	    "per NCS.\n");
	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		/* a webhook only as a commented example: it would POST */
		pre = k->sect == SECT_WEBHOOK ? "; " : "";
		if ((int)k->sect != sect) {
			sect = (int)k->sect;
			fprintf(f, "\n%s[%s]\n", pre, k->sect == SECT_NCS ?
			    "ncs.example" : k->sect == SECT_WEBHOOK ?
			    "webhook.example" : sect_names[sect]);
		}
		v = k->def;
		for (i = 0; (k->flags & CF_REQUIRED) && i < nitems(examples);
		    i++)
			if (strcmp(k->key, examples[i].key) == 0)
				v = examples[i].value;
		/* the host name unless set */
		if (k->sect == SECT_GATEWAY && strcmp(k->key, "instance") == 0)
			pre = "; ";
		fprintf(f, "%s%s = %s%s\n", pre, k->key, v,
		    (k->flags & CF_REQUIRED) ? "\t; required" : "");
	}
}

/* A deep copy of an NCS section (the daemon keeps it across reloads). */
struct ncs_conf *
config_ncs_dup(const struct ncs_conf *src)
{
	const struct cfg_key	*k;
	struct ncs_conf		*n;
	char			**f;

	n = xmalloc(sizeof *n);
	*n = *src;
	n->name = xstrdup(src->name);
	n->lines = xcalloc(nitems(cfg_keys), sizeof *n->lines);
	memcpy(n->lines, src->lines, nitems(cfg_keys) * sizeof *n->lines);
	for (k = cfg_keys; k < cfg_keys + nitems(cfg_keys); k++) {
		if (k->sect != SECT_NCS || (k->type != CT_STR &&
		    k->type != CT_ID && k->type != CT_ADDR &&
		    k->type != CT_ALLOW))
			continue;
		f = (char **)((char *)n + k->off);
		*f = xstrdup(*f);
	}
	return n;
}

/* Free a copy made by config_ncs_dup. */
void
config_ncs_free(struct ncs_conf *n)
{
	if (n == NULL)
		return;
	cfg_free_strings(SECT_NONE, n, SECT_NCS);
	free(n->name);
	free(n->lines);
	free(n);
}
