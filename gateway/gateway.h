/*
 * mosgw: the MOS gateway daemon.
 *
 * One event loop (libevent) holds the listeners for the NCSs' connections
 * (session.c; who may connect: addr.c), the outbound links to each NCS
 * (link.c, ncs.c), the publisher that turns queued asset changes into
 * mosObj messages (publisher.c) and the profile handlers (profile0.c,
 * profile1.c). Everything durable lives in one SQLite file shared with
 * the job queue (gwdb.c, catalog.c, msgid.c, history.c). The HTTP API
 * (api.c, api_*.c) serves the MAM on the same loop; what happens is logged
 * as events (events.c), streamed to API clients (api_events.c) and POSTed
 * to webhooks (webhook.c); metrics.c counts what happens for GET /metrics.
 * With several instances on one PostgreSQL database, owner.c decides which
 * one opens each NCS's outbound links, and wake.c wakes the publishers
 * when the database notifies new jobs. main.c only sequences startup and
 * shutdown (gw.c).
 */
#ifndef GATEWAY_H
#define GATEWAY_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mosxml/mosxml.h"
#include "queue/queue.h"
#include "store/store.h"

#define MOSGW_VERSION	"0.1.0"
#define MOSGW_MOS_REV	"2.8.5"
#define MOSGW_HW_REV	"1.0"		/* listMachInfo hwRev: software only */
#define MOSGW_DOM	"2026-12-01"	/* listMachInfo DOM: this release */

#ifndef nitems
#define nitems(a)	(sizeof (a) / sizeof (a)[0])
#endif

struct event_base;
struct evdns_base;
struct event;
struct bufferevent;
struct evbuffer;
struct evconnlistener;

struct gw;
struct ncs;
struct link;
struct conn;
struct history;
struct listener;
struct publisher;
struct pub_work;
struct reqall;
struct p3_recent;
struct dbw;
struct sockaddr;
struct srclim;
struct api;
struct json_t;
struct evhttp_request;
struct evkeyvalq;
struct event_row;
struct events;
struct webhook_list;
struct ssl_ctx_st;

/* The three MOS ports. */
enum gw_port {
	GW_PORT_LOWER = 0,
	GW_PORT_UPPER = 1,
	GW_PORT_QUERY = 2,
};
#define GW_NPORTS	3

/* ------------------------------------------------------------------------ */
/* util.c */

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
__attribute__((noreturn)) void fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2)));
void	 util_strlcpy(char *, const char *, size_t);
int64_t	 util_now_ms(void);		/* wall clock, ms since 1970 */
int64_t	 util_mono_ms(void);		/* monotonic clock */
int64_t	 util_mono_us(void);		/* the same in microseconds */
/* A thread that takes no signals; 0 or the error number. */
int	 util_thread_start(pthread_t *, void *(*)(void *), void *);
void	 util_iso_ms(int64_t, char *, size_t);	/* "2026-11-29T10:00:00.123Z" */
int	 util_parse_iso_ms(const char *,
    int64_t *);	/* ISO 8601 or ms; 0/-1 */
/* "500ms", "10s", "5m", "24h", "7d", "1h30m" or bare seconds into ms; 0/-1. */
int	 util_parse_duration(const char *, int64_t *);
const char *gw_port_name(enum gw_port);	/* "lower", "upper", "query" */
int	 gw_port_parse(const char *, enum gw_port *);

/* A growing NUL-terminated string. */
struct sbuf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};
void	 sbuf_add(struct sbuf *, const char *, size_t);
void	 sbuf_puts(struct sbuf *, const char *);
void	 sbuf_printf(struct sbuf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 sbuf_json_str(struct sbuf *,
    const char *);	/* a quoted JSON string */
void	 sbuf_xml_text(struct sbuf *, const char *);	/* escaped XML text */
/*
 * Bytes of the printable character at s (1-4; n bytes left), or 0 for a
 * control character (C0, DEL, C1) or a byte that is not valid UTF-8.
 */
size_t	 util_printable(const char *, size_t n);
/* Append n bytes of s, every byte util_printable refuses as \xNN. */
void	 sbuf_escape(struct sbuf *, const char *, size_t n);
void	 sbuf_free(struct sbuf *);
/* UTF-16BE to UTF-8 (bad sequences become U+FFFD), appended to sb. */
void	 util_utf16be_to_utf8(struct sbuf *, const uint8_t *, size_t);
/* UTF-8 to UTF-16BE (bad sequences become U+FFFD), appended to sb. */
void	 util_utf8_to_utf16be(struct sbuf *, const char *, size_t);
/*
 * Where ASCII text p occurs in data encoded as enc: the offset of the first
 * occurrence, or with last the end of the last one; -1 if none.
 */
ssize_t	 util_find_enc(const uint8_t *, size_t, const char *p, enum mos_enc,
	    bool last);

/* ------------------------------------------------------------------------ */
/* log.c */

enum log_level {
	LL_DEBUG = 0,
	LL_INFO = 1,
	LL_WARN = 2,
	LL_ERROR = 3,
};

enum log_format {
	LOG_FMT_LOGFMT = 0,	/* time, then key=value pairs */
	LOG_FMT_JSON = 1,	/* one JSON object a line, string values */
};

int	 log_open(enum log_level, const char *target, char **cause);
void	 log_set_format(enum log_format);
void	 log_close(void);
void	 log_set_level(enum log_level);
bool	 log_enabled(enum log_level);
const char *log_level_name(enum log_level);
/* One line: "<time> level=L event=E " then fmt. */
void	 log_event(enum log_level, const char *event, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* A value safe for key=value: quoted and escaped when it needs to be. */
const char *log_q(const char *);

/*
 * Rate limits for events that can repeat at a peer's pace: at most burst
 * lines per interval for one (event, key), and 10 times that for the
 * event over all its keys. The next line that passes after some were
 * refused ends with suppressed=N. burst 0: no limit.
 */
#define LOG_RL_BURST		10
#define LOG_RL_INTERVAL_MS	10000
struct log_limiter;
struct log_limiter *log_limiter_new(unsigned burst, int64_t interval_ms);
void	 log_limiter_free(struct log_limiter *);
void	 log_limiter_set(struct log_limiter *, unsigned burst,
	    int64_t interval_ms);
/*
 * May a line of (event, key) be written at now (ms)? If so, *suppressed
 * counts those refused since the last one. event must be a literal.
 */
bool	 log_limiter_pass(struct log_limiter *, const char *event,
	    const char *key, int64_t now, uint64_t *suppressed);
/* The limits of log_event_rl ([log] rate_burst, rate_interval). */
void	 log_set_rate(unsigned burst, int64_t interval_ms);
/* log_event, limited per (event, key) by the process's limiter. */
void	 log_event_rl(enum log_level, const char *event, const char *key,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The host of a "host:port" peer as a rate-limit key, in buf. */
const char *log_host_key(const char *peer, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* addr.c: peer addresses, allow-lists, token buckets. */

struct addr {
	int		 af;		/* AF_INET, AF_INET6; 0 = none */
	uint8_t		 a[16];		/* network order; IPv4: the first 4 */
};

struct acl_net {
	struct addr	 addr;
	int		 bits;		/* prefix length */
};

/* An allow-list ([ncs.NAME] allow). */
struct acl {
	bool		 any;
	bool		 hosts;		/* the NCS's host and buddy_host */
	bool		 loopback;	/* 127.0.0.0/8, ::1 */
	struct acl_net	*v;
	size_t		 n;
};

/* A token bucket: rate tokens a second, at most burst. */
struct bucket {
	double		 rate;
	double		 burst;
	double		 tokens;
	int64_t		 last_ms;
};

/* IPv4-mapped IPv6 becomes IPv4. 0, or -1 for a non-IP family. */
int	 addr_from_sockaddr(struct addr *, const struct sockaddr *);
int	 addr_parse(struct addr *, const char *);	/* numeric; 0/-1 */
void	 addr_format(const struct addr *, char *, size_t);
bool	 addr_equal(const struct addr *, const struct addr *);
/* One source for caps and rate limits: an IPv4 address, an IPv6 /64. */
bool	 addr_same_source(const struct addr *, const struct addr *);
bool	 addr_is_loopback(const struct addr *);
/* "any", "hosts", "loopback", addresses, CIDRs; 0, or -1 and *err. */
int	 acl_parse(struct acl *, const char *, char **err);
void	 acl_clear(struct acl *);
/* Allowed? hosts: the addresses `hosts` stands for. */
bool	 acl_match(const struct acl *, const struct addr *,
	    const struct addr *hosts, size_t nhosts);
void	 bucket_init(struct bucket *, double rate, double burst);
bool	 bucket_take(struct bucket *, int64_t now_ms);
/* A bucket per source (addr_same_source), in a fixed table of slots. */
struct srclim	*srclim_new(size_t slots, double rate, double burst);
void		 srclim_free(struct srclim *);
bool		 srclim_take(struct srclim *, const struct addr *,
		    int64_t now_ms);

/* ------------------------------------------------------------------------ */
/* notify.c: systemd readiness, reload, stop and watchdog (sd_notify). */

struct event_base;
struct notify;
/* Arm the watchdog (WATCHDOG=1 every half of WatchdogSec=) if asked for. */
struct notify	*notify_new(struct event_base *);
void		 notify_free(struct notify *);
/* "READY=1", "RELOADING=1", "STOPPING=1", "STATUS=..."; no-op outside systemd. */
void		 notify_state(const char *, ...)
		    __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------------ */
/* config.c */

/* [ncs.NAME] initial_sync: what an NCS new to the database gets. */
enum ncs_initial_sync {
	NCS_SYNC_ALL = 0,	/* every asset of the catalog, as mosObj */
	NCS_SYNC_NONE = 1,	/* only the changes from then on */
};

struct ncs_conf {
	char		*name;		/* from [ncs.NAME] */
	char		*ncs_id;
	char		*buddy_ncs_id;	/* "" = same as ncs_id */
	char		*host;
	int		 lower_port;
	int		 upper_port;
	int		 query_port;
	char		*buddy_host;	/* "" = no buddy */
	int		 buddy_lower_port;
	int		 buddy_upper_port;
	int		 encoding;	/* enum mos_enc */
	int		 mode;		/* enum mos_mode */
	int64_t		 heartbeat_ms;
	int64_t		 ack_timeout_ms;
	int		 retries;
	int64_t		 reconnect_min_ms;
	int64_t		 reconnect_max_ms;
	int		 breaker_threshold;
	bool		 hot_standby;
	bool		 publish;
	int		 max_attempts;
	int		 initial_sync;	/* enum ncs_initial_sync */
	char		*ro_element_stat;	/* statuses it accepts */
	bool		 mos_item_replace;	/* on duration, paths */
	char		*allow;		/* allow-list text, see acl_parse */
	int		 line;		/* of the section header */
	int		*lines;		/* per key: where it was set, 0 =
	    default */
};

/* [webhook.NAME]: where events of some types are POSTed. */
struct webhook_conf {
	char		*name;
	char		*url;		/* http[s]://HOST[:PORT]/PATH */
	char		*events;	/* types, comma-separated, or "*" */
	char		*secret;	/* the HMAC key (from secret_file) */
	char		*secret_file;
	char		*cacert;	/* https: trusted CAs ("": system's) */
	bool		 tls_verify;	/* https: check certificate and name */
	struct ssl_ctx_st *tls;		/* https: client context, else NULL */
	int64_t		 timeout_ms;
	int		 max_attempts;
	int		 line;
	int		*lines;
};

struct gw_config {
	char		*file;
	/* [gateway] */
	char		*mos_id;
	char		*listen;
	int		 lower_port;
	int		 upper_port;
	int		 query_port;
	char		*manufacturer;
	char		*model;
	char		*hw_rev;
	char		*sw_rev;
	char		*dom;
	char		*sn;
	char		*id;
	int64_t		 max_frame;
	int64_t		 pre_handshake_frame;
	int64_t		 max_junk;
	int64_t		 frame_deadline_ms;
	int64_t		 idle_timeout_ms;
	int64_t		 handshake_ms;	/* accept to first valid frame */
	int		 max_conn_per_port;
	int		 max_conn_per_addr;
	int		 max_conn;
	int64_t		 output_high_watermark;
	int		 pause_ms;	/* mos_req_all_pause_unit: 0 = s, 1 =
	    ms */
	char		*instance;	/* this instance's name (owner.c) */
	int64_t		 takeover_ms;	/* an NCS's links change owner */
	/* [database] */
	int		 db_driver;	/* driver: enum store_driver */
	char		*db_path;	/* the SQLite file */
	char		*db_dsn;	/* postgresql: libpq conninfo, or "" */
	int		 sync_normal;	/* synchronous: 0 = full, 1 = normal */
	bool		 history;
	bool		 start_check;	/* PRAGMA quick_check at start */
	int64_t		 history_retention_ms;
	int64_t		 history_max_bytes;
	int64_t		 done_retention_ms;
	int64_t		 failed_retention_ms;
	int64_t		 backoff_base_ms;
	int64_t		 backoff_max_ms;
	int64_t		 lease_ms;
	int64_t		 busy_ms;
	int64_t		 start_wait_ms;	/* start-up: another's writes */
	int64_t		 notify_poll_ms;	/* postgresql: poll, notified */
	/* [log] */
	int		 log_level;	/* enum log_level */
	char		*log_target;
	int		 log_rate_burst;	/* lines per (event, key); 0 = all */
	int64_t		 log_rate_ms;	/* per this interval */
	/* [api] */
	char		*api_listen;
	int		 api_port;	/* 0 = off */
	char		*api_tokens;	/* file of NAME ROLE TOKEN, "" = none */
	int64_t		 api_max_header;
	int64_t		 api_max_body;
	int64_t		 api_deadline_ms;
	int		 api_max_conn;
	char		*api_tls_cert;	/* PEM chain, "" = plain HTTP */
	char		*api_tls_key;	/* PEM private key */
	int64_t		 api_tls_handshake_ms;
	int		 log_format;	/* enum log_format */
	/* [events] */
	int64_t		 ev_retention_ms;
	int		 ev_max_events;
	int		 ev_sse_max_clients;
	int64_t		 ev_sse_max_buffer;
	int64_t		 ev_keepalive_ms;
	/* [ncs.NAME] */
	struct ncs_conf	*ncs;
	size_t		 nncs;
	/* [webhook.NAME] */
	struct webhook_conf *webhooks;
	size_t		 nwebhooks;
	int		*lines;		/* per global key */
};

/* Load and validate. On error returns NULL and *errors ("FILE:LINE: ...\n"). */
struct gw_config *config_load(const char *file, char **errors);
/* The same from a string (tests); name is used in the messages. */
struct gw_config *config_load_string(const char *name, const char *text,
	    char **errors);
void	 config_free(struct gw_config *);
const struct ncs_conf *config_find_ncs(const struct gw_config *,
    const char *name);
bool	 config_ncs_equal(const struct ncs_conf *, const struct ncs_conf *);
struct ncs_conf *config_ncs_dup(const struct ncs_conf *);
void	 config_ncs_free(struct ncs_conf *);
/* Is s an instance name: 1 to 64 of A-Z a-z 0-9 . _ -? */
bool	 config_instance_ok(const char *);
/* Does the NCS accept roElementStat with this status (ro_element_stat)? */
bool	 config_ro_status_on(const struct ncs_conf *, const char *status);
/* Print every key with its default, as documentation (mosgw -D). */
void	 config_print_defaults(FILE *);

/* ------------------------------------------------------------------------ */
/* gwdb.c: the gateway's tables beside the queue's, in the same file. */

#define GWDB_SCHEMA_VERSION	8
/*
 * Schema version 8 on both databases: fill delivery_failed with the newest
 * FAILED publish job of each NCS and object not followed by an
 * acknowledged delivery; PAYLOAD is the dialect's text of j.payload.
 */
#define GWDB_FAILED_SET \
	" ON CONFLICT(ncs, obj_id) DO UPDATE SET job_id = excluded.job_id," \
	" rev = excluded.rev, error = excluded.error, t_ms = excluded.t_ms"
#define GWDB_FAILED_FILL(PAYLOAD) \
	"INSERT INTO delivery_failed(ncs, obj_id, job_id, rev, error, t_ms)" \
	" SELECT f.ncs, f.obj_id, f.id, a.rev, e.note, e.t FROM" \
	" (SELECT substr(j.lane, 5) AS ncs, " PAYLOAD " AS obj_id, j.id," \
	"  row_number() OVER (PARTITION BY j.lane, j.payload" \
	"  ORDER BY j.id DESC) AS n FROM jobs j" \
	"  WHERE j.state = 3 AND j.kind = '" CATALOG_KIND_PUBLISH "') f" \
	" JOIN job_events e ON e.id = (SELECT max(id) FROM job_events" \
	"  WHERE job_id = f.id AND to_state = 3)" \
	" LEFT JOIN assets a ON a.obj_id = f.obj_id" \
	" LEFT JOIN delivery d ON d.ncs = f.ncs AND d.obj_id = f.obj_id" \
	" WHERE f.n = 1 AND (d.t_ms IS NULL OR d.t_ms < e.t)" \
	GWDB_FAILED_SET ";"
#define GWDB_APPLICATION_ID	0x4d4f5347	/* "MOSG": PRAGMA application_id */

enum gwdb_stmt {
	ST_ASSET_GET,
	ST_ASSET_PATHS,
	ST_ASSET_META,
	ST_ASSET_UPSERT,
	ST_ASSET_PATHS_DEL,
	ST_ASSET_META_DEL,
	ST_ASSET_PATH_ADD,
	ST_ASSET_META_ADD,
	ST_ASSET_DELETE,
	ST_ASSET_LIST,
	ST_NCS_PUBLISH,
	ST_DELIVERY_GET,
	ST_DELIVERY_PUT,
	ST_MSGID_TAKE,
	ST_HISTORY_ADD,
	ST_FTS_KEY,		/* the search index (schema 3) */
	ST_FTS_DEL,
	ST_FTS_ADD,
	ST_FTS_KEYS,		/* ... of a batch: ?1 a JSON array of objIDs */
	ST_FTS_DEL_MANY,
	ST_FTS_ADD_MANY,
	ST_SEARCH_COUNT,	/* a general search alone (search.c) */
	ST_SEARCH_PAGE,
	ST_META_GET,
	ST_META_PUT,
	/* rostore.c */
	ST_RO_FIND,
	ST_RO_INSERT,
	ST_RO_HEAD,
	ST_RO_AIR,
	ST_RO_TOUCH,
	ST_RO_DELETE,
	ST_RO_STORIES_DEL,
	ST_RO_ITEMS_DEL,
	ST_RO_STORY_HAS,
	ST_RO_STORY_IDS,
	ST_RO_STORY_ADD,
	ST_RO_STORY_DEL,
	ST_RO_STORY_ITEMS_DEL,
	ST_RO_STORY_POS,
	ST_RO_STORY_BODY,
	ST_RO_ITEM_IDS,
	ST_RO_ITEM_ADD,
	ST_RO_ITEM_DEL,
	ST_RO_ITEM_POS,
	ST_RO_ASSET_AIR,
	ST_RO_GET,
	ST_RO_STORIES,
	ST_RO_STORY_ITEMS,
	ST_RO_LIST,
	ST_RO_CONFIRM,
	ST_RO_USAGE,
	ST_RO_STAT_NCS,
	ST_RO_STAT_ITEMS,
	ST_RO_ITEM_ANY,		/* does any running order hold an item? */
	/* api_assets.c: the QUEUED deliveries of an object */
	ST_ASSET_JOBS,
	/* isync.c: initial sync (schema 4) */
	ST_SYNC_NEW,
	ST_SYNC_RUNNING,
	ST_SYNC_WAITING,
	ST_SYNC_NEXT,
	ST_SYNC_SKIP,
	ST_SYNC_MOVE,
	/* events.c (schema 5) */
	ST_EVENTS_ADD,
	ST_EVENTS_READ,
	ST_EVENTS_HEAD,
	ST_RO_ANSWER_GET,	/* answers kept for resends (schema 6) */
	ST_RO_ANSWER_PUT,
	ST_RO_ANSWER_TRIM,
	ST_RO_ANSWER_FORGET,
	ST__COUNT
};

struct gwdb {
	struct queue		*q;
	struct store		*db;
	struct store_stmt	*st[ST__COUNT];
	bool			 relaxed;	/* bookkeeping without fsync */
	bool			 hist_counted;	/* hist_bytes is known */
	int64_t			 hist_bytes;	/* history size (history.c) */
};

struct gwdb_opts {
	enum store_driver driver;	/* STORE_SQLITE (0): path; else dsn */
	const char	*path;
	const char	*dsn;
	int		 idle_tx_ms;	/* PostgreSQL, see struct store_conf */
	bool		 sync_normal;
	int		 busy_ms;
	bool		 must_exist;	/* never create the file (mosctl) */
	bool		 check;		/* integrity check first (the daemon) */
	queue_clock_fn	 clock;		/* tests */
	void		*clock_arg;
	void		(*ckpt_fn)(void *, int);	/* queue_set_checkpointer */
	void		*ckpt_arg;
};

/*
 * Open (a missing file is created 0640 unless must_exist). A file without
 * our mark (GWDB_APPLICATION_ID) is refused before anything in it changes,
 * unless it is empty or a mosgw file of a version before marks.
 */
int	 gwdb_open(struct gwdb **, const struct gwdb_opts *, char **err);
void	 gwdb_close(struct gwdb *);

/*
 * The daemon's hold on its database file: an exclusive lock (one daemon
 * per file, so jobs of an earlier worker name are a dead life's) and the
 * identity (device, inode) of the file it opened.
 */
struct gwdb_hold {
	int	 fd;
	dev_t	 dev;
	ino_t	 ino;
};
/* Take the hold (before gwdb_open); -1 and *err if another daemon has it. */
int	 gwdb_hold(struct gwdb_hold *, const char *path, char **err);
/* NULL while path still names the held file, else why not. */
const char *gwdb_hold_lost(const struct gwdb_hold *, const char *path);
/* Let go (after every connection to the file is closed). */
void	 gwdb_hold_release(struct gwdb_hold *);
/* A cached prepared statement, reset and with bindings cleared. */
struct store_stmt *gwdb_stmt(struct gwdb *, enum gwdb_stmt);
/* Bind text (static for the statement's use), or NULL for NULL. */
void	 gwdb_bind_text(struct store_stmt *, int, const char *);
/* A store result code (STORE_*) as a queue_rc (QUEUE_EBUSY, ...). */
int	 gwdb_rc(int store_rc);
/* Run one statement to completion (no rows expected). Returns a queue_rc. */
int	 gwdb_exec_stmt(struct gwdb *, struct store_stmt *);
const char *gwdb_errmsg(struct gwdb *);
/* Is the database PostgreSQL (its dialect, gwdb_pg.c)? */
bool	 gwdb_is_pg(struct gwdb *);
/* Record the configured NCSs (one transaction): ncs table, enabled flags. */
int	 gwdb_sync_ncs(struct gwdb *, const struct gw_config *);
/*
 * The daemon's own bookkeeping (completions, claims, history) need not
 * survive a power loss: a lost completion means a resend with the same
 * objRev. With relaxed on, this connection commits with synchronous=NORMAL
 * (PostgreSQL: synchronous_commit off) and gwdb_durable() brackets the
 * commits that must be FULL (messageID blocks). Call outside a transaction.
 */
int	 gwdb_relax(struct gwdb *, bool);
int	 gwdb_durable(struct gwdb *, bool on);
int	 gwdb_meta_get(struct gwdb *, const char *key, int64_t *val);
int	 gwdb_meta_put(struct gwdb *, const char *key, int64_t val);

/* The columns of the assets table, in the order catalog_row reads them. */
#define GWDB_ASSET_COLS \
	"obj_id, slug, type, tb, dur, rev, air, status, abstract," \
	" description, obj_group, created_by, created, changed_by, changed," \
	" deleted"

/* gwdb_pg.c: the same tables and statements in the PostgreSQL dialect. */
/* Entry i takes the schema from version i to i + 1 (as gwdb.c's). */
extern const char *const gwdb_pg_migrations[GWDB_SCHEMA_VERSION];
/* The statements whose SQLite text does not run there (NULL: it does). */
extern const char *const gwdb_pg_sql[ST__COUNT];
/* Fill the empty search index from assets and asset_key (mosctl db). */
extern const char gwdb_pg_fts_fill[];

/* ------------------------------------------------------------------------ */
/* catalog.c: the asset catalog, and the mosObj built from a row. */

enum catalog_path_kind {
	CATALOG_PATH = 0,	/* objPath */
	CATALOG_PROXY = 1,	/* objProxyPath */
	CATALOG_METADATA = 2,	/* objMetadataPath */
};

struct catalog_path {
	int	 kind;		/* enum catalog_path_kind */
	char	*tech;		/* techDescription */
	char	*url;
};

struct catalog_meta {
	char	*scope;		/* mosScope, may be NULL */
	char	*schema;	/* mosSchema */
	char	*payload;	/* mosPayload inner XML */
};

struct catalog_asset {
	char			*obj_id;
	char			*slug;
	char			*type;		/* STILL AUDIO VIDEO OTHER */
	char			*tb;		/* decimal text,
	    exact: "50", "59.94" */
	int64_t			 dur;		/* samples */
	int			 rev;		/* 1..999, then 1 again */
	char			*air;		/* READY | NOT READY */
	char			*status;	/* NEW | UPDATED | DELETED */
	char			*abstract;	/* mosAbstract, XML text,
	    may be NULL */
	char			*description;	/* XML text (<p>, <em>,
	    <tab>) */
	char			*group;		/* objGroup, may be NULL */
	char			*created_by;
	int64_t			 created_ms;
	char			*changed_by;
	int64_t			 changed_ms;
	bool			 deleted;
	struct catalog_path	*paths;
	size_t			 npaths;
	struct catalog_meta	*meta;
	size_t			 nmeta;
};

#define CATALOG_REV_MAX		999
#define CATALOG_LANE_PREFIX	"ncs:"
#define CATALOG_KIND_PUBLISH	"publish"

/* The search rank: bm25 with the slug weighing most (lower ranks first). */
#define GWDB_RANK	"bm25(asset_fts, 10.0, 4.0, 2.0, 1.0)"
/*
 * The same on PostgreSQL (asset_fts.tsv matched against the tsquery q):
 * ts_rank with the weights of the slug, abstract, description and metadata
 * in the same proportions, negated so that lower ranks first too.
 */
#define GWDB_PG_RANK	"-ts_rank('{0.1, 0.2, 0.4, 1.0}', tsv, q)"

/* The columns catalog_row reads, from the assets table as "a". */
#define CATALOG_COLS \
	"a.obj_id, a.slug, a.type, a.tb, a.dur, a.rev, a.air, a.status," \
	" a.abstract, a.description, a.obj_group, a.created_by, a.created," \
	" a.changed_by, a.changed, a.deleted"

/* Check an asset as given to put (lengths, values, XML of the text fields). */
int	 catalog_validate(const struct catalog_asset *, char **err);
/*
 * Check abstract, description and payloads each as the content of its own
 * element (mos_fragment_check, strict). 0, or -1 with *err (if not NULL)
 * naming the field.
 */
int	 catalog_check_xml(const struct catalog_asset *, char **err);
/*
 * Upsert the row and enqueue one publish job per enabled NCS with publish
 * on, in ONE transaction; returns only after the commit. *rev (may be NULL)
 * gets the new objRev, *njobs (may be NULL) how many jobs were enqueued.
 */
int	 catalog_put(struct gwdb *, const struct catalog_asset *, int *rev,
	    int *njobs, char **err);
/* catalog_put of an asset catalog_validate has accepted already. */
int	 catalog_store(struct gwdb *, const struct catalog_asset *, int *rev,
	    int *njobs, char **err);
/*
 * catalog_store of n checked assets, in order, in one transaction (a
 * savepoint inside the caller's): the same rows, jobs and events, with
 * fewer statements (the jobs through queue_enqueue_many, the search index
 * in three statements at the end). All or nothing.
 */
int	 catalog_store_many(struct gwdb *, const struct catalog_asset *const *,
	    size_t n, char **err);
/* Tombstone the row (objRev+1) and enqueue the DELETED deliveries. */
int	 catalog_delete(struct gwdb *, const char *obj_id, const char *by,
	    int *rev, int *njobs, char **err);
/* QUEUE_OK, QUEUE_ENOTFOUND or an error. Free with catalog_asset_clear. */
int	 catalog_get(struct gwdb *, const char *obj_id, struct catalog_asset *);
/*
 * Up to max rows with obj_id > after (NULL = from the start), in objID order.
 */
int	 catalog_list(struct gwdb *, const char *after, bool deleted_too,
	    struct catalog_asset *out, size_t max, size_t *n);
void	 catalog_asset_clear(struct catalog_asset *);
/* The scalar fields from a row of CATALOG_COLS; then its child rows. */
void	 catalog_row(struct store_stmt *, struct catalog_asset *);
int	 catalog_load_children(struct gwdb *, struct catalog_asset *);
/*
 * The plain text of verbatim XML text (markup dropped, entities decoded),
 * appended to sb: what the search index holds (SQL mosgw_text()).
 */
void	 catalog_plain_text(struct sbuf *, const char *);
void	 catalog_add_path(struct catalog_asset *, int kind, const char *tech,
	    const char *url);
void	 catalog_add_meta(struct catalog_asset *, const char *scope,
	    const char *schema, const char *payload);
/* The body of a mosObj for this row with the given status (NEW, ...). */
int	 catalog_fill_obj(struct mos_msg *, struct mos_obj *,
	    const struct catalog_asset *, const char *status);
/*
 * A whole mosObj message (envelope left empty); NULL and *err (if not
 * NULL) when the row cannot make one (catalog_check_xml refuses it, bad
 * objTB, OOM). Every mosObj sent from the catalog is built here.
 */
struct mos_msg *catalog_mos_obj(const struct catalog_asset *,
    const char *status, char **err);
/* Per NCS: what was last acknowledged for an object (NULL status = never). */
#define CATALOG_SENDING	"SENDING"	/* a NEW sent, its ACK not yet recorded */
int	 catalog_delivery_get(struct gwdb *, const char *ncs,
    const char *obj_id,
	    char *status, size_t len);
int	 catalog_delivery_put(struct gwdb *, const char *ncs,
    const char *obj_id,
	    int rev, const char *status);
/*
 * Inside a transaction: one job in lane of kind with payload obj_id,
 * coalesced by key (a QUEUED job with that key takes the place of a new
 * one). *added (may be NULL): whether a new job was made.
 */
int	 catalog_enqueue_one(struct gwdb *, const char *lane, const char *kind,
	    const char *key, const char *obj_id, int priority,
	    int max_attempts, bool *added);
/*
 * Inside a transaction: one job per row (NCS name, max_attempts) of the
 * bound statement st, in lane lane_prefix+NAME, of kind, payload obj_id,
 * coalesce key "key_tag:obj_id@NAME". *njobs (may be NULL): how many.
 */
int	 catalog_enqueue_rows(struct gwdb *, struct store_stmt *st,
	    const char *lane_prefix, const char *kind, const char *key_tag,
	    const char *obj_id, int *njobs);
/* The status a delivery of this row to this NCS carries; NULL = skip it. */
const char *catalog_delivery_status(const struct catalog_asset *,
	    const char *last_acked);

/* ------------------------------------------------------------------------ */
/* isync.c: initial sync, every asset of the catalog to an NCS new to it. */

struct isync;
/* Inside gwdb_sync_ncs: an NCS seen for the first time gets its sync row. */
int		 isync_record(struct gwdb *, const struct ncs_conf *);
struct isync	*isync_new(struct gw *);
void		 isync_free(struct isync *);
/* Run the syncs not finished yet, a batch at a time as the queue drains. */
void		 isync_kick(struct isync *);

/* ------------------------------------------------------------------------ */
/* rostore.c: running orders -> stories -> items, in play order. */

enum ro_err {
	RO_OK = 0,
	RO_UNKNOWN_RO,		/* roID not held: error, then resync */
	RO_UNKNOWN_STORY,	/* storyID not in the running order: idem */
	RO_UNKNOWN_ITEM,	/* itemID not in the story: idem */
	RO_DUPLICATE,		/* an ID given twice, or already there */
	RO_BAD,			/* a message that cannot be applied */
};

/* The roAck status of an item whose object the catalog does not know. */
#define RO_STAT_UNKNOWN	"UNKNOWN OBJECT"

/* Per item of ours the message added: its object's status for the roAck. */
struct ro_item_stat {
	char		*story_id;
	char		*item_id;
	char		*obj_id;
	char		*channel;	/* may be NULL */
	const char	*status;	/* READY, NOT READY, RO_STAT_UNKNOWN */
};

struct ro_result {
	int			 err;		/* enum ro_err */
	bool			 resync;	/* roReq the running order */
	char			 text[200];	/* roStatus when err or rc */
	struct ro_item_stat	*items;
	size_t			 nitems;
	bool			 replayed;	/* a resend: the kept answer */
	bool			 reused;	/* its messageID kept for another */
};

struct rostore_info {
	char		 air[16];	/* roReadyToAir, "" = never said */
	bool		 confirmed;	/* in the NCS's last roListAll */
	int64_t		 changed_ms;
	size_t		 nstories;
};

struct rostore_row {
	char		*ncs;
	char		*ro_id;
	char		*slug;
	char		*head;		/* the fields as XML */
	char		 air[16];
	bool		 confirmed;
	int64_t		 changed_ms;
	int64_t		 nstories;
	int64_t		 nitems;
};

struct rostore_use {
	char		*ncs;
	char		*ro_id;
	char		*story_id;
	char		*item_id;
	char		*slug;
	char		*channel;
};

/* The roID of a running-order message, or NULL. */
const char *rostore_ro_id(const struct mos_msg *);
/*
 * Apply a running-order change (roCreate, roReplace, roList, roDelete,
 * roMetadataReplace, roReadyToAir, roElementAction, the deprecated roStory*
 * and roItem*, mosItemReplace, roStorySend) for an NCS in one durable
 * transaction. QUEUE_OK with res->err set when the message was refused (and
 * nothing changed); another queue_rc (res->text says it) on a database
 * failure. mos_id: ours, to report only our items in res->items.
 */
int	 rostore_apply(struct gwdb *, const char *ncs, const char *mos_id,
	    const struct mos_msg *, struct ro_result *res);

/*
 * A change kept for resends: the NCS resends a message with the same
 * messageID when our roAck was lost. Its answer is kept in the change's
 * transaction, keyed by (NCS, port, messageID) with the message's digest,
 * for the last RO_ONCE_KEEP changes and at most RO_ONCE_MS; a resend (the
 * NCS's last change: it has one message outstanding on its upper port)
 * gets the same answer and changes nothing. Refusals are not kept (they
 * changed nothing); a change kept without one (no messageID, roCreate or
 * roReplace, a rebuild from our roReq) forgets the NCS's kept answers. The same messageID with another
 * digest, or an older one repeated after others, is a new message.
 */
#define RO_DIGEST_LEN	32		/* SHA-256 */
#define RO_ONCE_KEEP	4096
#define RO_ONCE_MS	(24 * 3600 * 1000LL)

struct ro_once {
	enum gw_port	 port;
	int32_t		 message_id;	/* 0: nothing kept */
	uint8_t		 digest[RO_DIGEST_LEN];
};

/* The digest of a message (UTF-8 form, so any encoding gives the same). */
void	 rostore_digest(const struct mos_msg *, uint8_t[RO_DIGEST_LEN]);
/*
 * The answer kept for once: QUEUE_OK with res->items, QUEUE_ENOTFOUND, or
 * QUEUE_EXISTS when the messageID was kept for another message.
 */
int	 rostore_once_get(struct gwdb *, const char *ncs,
	    const struct ro_once *, struct ro_result *res);
/*
 * rostore_apply, keeping the answer of a change that commits. A resend of
 * the change kept for once (looked up inside the transaction, after the
 * writer lock, so that a resend reaching another instance at the same time
 * is not applied twice) is answered again (res->replayed) and not applied.
 */
int	 rostore_apply_once(struct gwdb *, const char *ncs,
	    const char *mos_id, const struct mos_msg *,
	    const struct ro_once *, struct ro_result *res);
void	 rostore_result_clear(struct ro_result *, bool items_only);
/* A running order as a roList (envelope empty); QUEUE_ENOTFOUND. */
int	 rostore_get(struct gwdb *, const char *ncs, const char *ro_id,
	    struct mos_msg **, struct rostore_info *);
/* The running orders of an NCS (NULL: all), by NCS and roID. */
int	 rostore_list(struct gwdb *, const char *ncs, struct rostore_row **,
	    size_t *);
void	 rostore_rows_free(struct rostore_row *, size_t);
/* A roListAll of the running orders of an NCS (envelope empty). */
int	 rostore_list_all(struct gwdb *, const char *ncs, struct mos_msg **);
/* Mark the NCS's running orders confirmed if in ids, else unconfirmed. */
int	 rostore_confirm(struct gwdb *, const char *ncs,
	    const char *const *ids, size_t n);
/* Every item that references an object. */
int	 rostore_usage(struct gwdb *, const char *obj_id,
	    struct rostore_use **, size_t *);
void	 rostore_uses_free(struct rostore_use *, size_t);

/* ------------------------------------------------------------------------ */
/* rostat.c: roElementStat to the NCS when an asset's readiness changes. */

#define ROSTAT_LANE_PREFIX	"rostat:"
#define ROSTAT_KIND		"rostat"		/* readiness */
#define ROSTAT_KIND_REPLACE	"itemreplace"	/* duration, paths */

struct rostat;

/*
 * In the catalog's transaction: one job of that kind per enabled NCS whose
 * running orders reference obj_id (coalesced per kind, object and NCS).
 */
int		 rostat_enqueue(struct gwdb *, const char *obj_id,
		    const char *kind);
struct rostat	*rostat_new(struct ncs *);
void		 rostat_free(struct rostat *);
/* Claim and deliver the next job when the upper link is up. */
void		 rostat_pump(struct rostat *);

/* ------------------------------------------------------------------------ */
/* search.c: search over the catalog (mosReqObjList) on the FTS5 index. */

enum search_op {
	SEARCH_EQ = 0,
	SEARCH_NE,
	SEARCH_LT,
	SEARCH_LE,
	SEARCH_GT,
	SEARCH_GE,
	SEARCH_CONTAINS,
};

/* Conditions of one group are ANDed, the groups ORed (searchGroup). */
struct search_cond {
	int		 group;
	int		 col;		/* in search.c's column table */
	enum search_op	 op;
	char		*value;
};

struct search_sort {
	int		 col;
	int		 order;		/* sortByOrder: lower sorts first */
	bool		 desc;
};

struct search_query {
	const char		*text;		/* generalSearch, may be NULL */
	struct search_cond	*cond;
	size_t			 ncond;
	struct search_sort	*sort;
	size_t			 nsort;
	int64_t			 offset;	/* results to skip */
	const char		*xpath_seen;	/* for error messages */
};

/* The searchable element names, for messages and docs. */
const char *search_field_names(void);
/* One searchField (XPath, sortByOrder, sortType) into q. 0, or -1 and err. */
int	 search_add_field(struct search_query *, int group, const char *xpath,
	    const char *sort_order, const char *sort_type, char **err);
void	 search_query_clear(struct search_query *);
/* generalSearch as an FTS5 query (every word, quoted); false if no word. */
bool	 search_fts_query(struct sbuf *, const char *text);
/* Has text a word to search for (what search_fts_query would keep)? */
bool	 search_has_word(const char *text);
/*
 * Up to max matching assets from q->offset on, ranked (sort keys, then
 * bm25 when there is a general search, then slug), and the total count.
 */
int	 search_run(struct gwdb *, const struct search_query *,
	    struct catalog_asset *out, size_t max, size_t *n, int64_t *total,
	    char **err);

/* ------------------------------------------------------------------------ */
/* msgid.c: our messageIDs per NCS and port, reserved in blocks. */

#define MSGID_MAX	2147483647	/* 2^31 - 1, then 1 again */
#define MSGID_BLOCK	1000

struct msgid_ahead;
typedef void (*msgid_ready_fn)(void *arg, enum gw_port);

struct msgid {
	struct gwdb		*db;
	char			*ncs;
	enum gw_port		 port;
	int32_t			 next;
	int32_t			 remaining;	/* ids reserved from next on */
	int32_t			 then;		/* a block not after next's: */
	int32_t			 then_n;	/* its first id, its count */
	int32_t			 block;
	struct dbw		*dbw;		/* reserves ahead, if set */
	struct msgid_ahead	*ahead;		/* the block being stored */
	msgid_ready_fn		 ready;		/* ids again, after none */
	void			*ready_arg;
};

struct msgid	*msgid_new(struct gwdb *, const char *ncs, enum gw_port,
		    int32_t block);
void		 msgid_free(struct msgid *);
/*
 * Reserve the next block on the bookkeeping thread while half of the
 * current one is left; ready is called if msgid_next ran out meanwhile.
 */
void		 msgid_set_worker(struct msgid *, struct dbw *, msgid_ready_fn,
		    void *);
/*
 * The next messageID, reserving a new block when needed. 0 on a database
 * error, or while the block reserved ahead is not stored yet.
 */
int32_t		 msgid_next(struct msgid *);
int32_t		 msgid_advance(int32_t id, int32_t n);

/* ------------------------------------------------------------------------ */
/* history.c: every frame in or out, batched into the flush transaction. */

enum history_dir {
	HISTORY_IN = 0,
	HISTORY_OUT = 1,
};

struct history_rec {
	int64_t		 id;
	int64_t		 t_ms;
	char		*ncs;		/* NCS name, "" if not known */
	enum gw_port	 port;
	enum history_dir dir;
	uint64_t	 conn;
	int32_t		 message_id;	/* 0 = none */
	char		*type;
	char		*outcome;
	char		*xml;		/* UTF-8 (pending: the wire bytes) */
	size_t		 raw_len;	/* pending: bytes in xml */
	enum mos_enc	 enc;		/* pending: encoding of xml */
};

struct history_filter {
	const char	*ncs;		/* NULL = any */
	int64_t		 since_ms;	/* 0 = any */
	int64_t		 until_ms;	/* 0 = any */
	const char	*type;		/* message element; NULL = any */
	int64_t		 after_id;	/* paging */
	int		 limit;		/* 0 = 100 */
	bool		 newest_first;
};

struct history	*history_new(struct gwdb *, bool enabled);
void		 history_free(struct history *);
void		 history_set_enabled(struct history *, bool);
/* Record one frame (data in its wire encoding). Cheap: memory only. */
void		 history_add(struct history *, const char *ncs, enum gw_port,
		    enum history_dir, uint64_t conn, int32_t message_id,
		    const char *type, const char *outcome, const void *data,
		    size_t len, enum mos_enc);
size_t		 history_pending(struct history *);
/* Move the pending rows out (to store them on the bookkeeping thread). */
void		 history_take(struct history *, struct history_rec **,
		    size_t *);
/* Insert rows taken (inside the caller's transaction). Returns a queue_rc. */
int		 history_store(struct gwdb *, struct history_rec *, size_t);
/* Give rows back, ahead of the newer ones, after a failed transaction. */
void		 history_put_back(struct history *, struct history_rec *,
		    size_t);
/* Write what is pending; call inside a transaction. Returns a queue_rc. */
int		 history_flush(struct history *);
/* Forget pending rows after a failed transaction (they were not stored). */
void		 history_unflush(struct history *);
/* Drop rows that were flushed once the transaction committed. */
void		 history_committed(struct history *);
int		 history_list(struct gwdb *, const struct history_filter *,
		    struct history_rec **, size_t *);
void		 history_recs_free(struct history_rec *, size_t);
/*
 * Delete rows older than now - retention in batches, for at most budget_ms
 * (0 = no limit). *n = how many. QUEUE_EXISTS: more left (budget used up).
 */
int		 history_prune(struct gwdb *, int64_t retention_ms,
		    int64_t budget_ms, size_t *n);
/*
 * Over max_bytes: delete the oldest rows down to 90 % of it, for at most
 * budget_ms (0 = no limit). *n = how many. QUEUE_EXISTS: more left.
 */
int		 history_prune_size(struct gwdb *, int64_t max_bytes,
		    int64_t budget_ms, size_t *n);
/* The bytes history counts (rows' text plus an overhead); -1 on error. */
int64_t		 history_bytes(struct gwdb *);
/* The bytes a row counts once stored (UTF-8). */
int64_t		 history_rec_bytes(const struct history_rec *);
/* Rows of these many bytes were committed (or deleted, < 0). */
void		 history_account(struct gwdb *, int64_t delta);
/* One capture line (JSON, no newline) for a record. */
void		 history_capture_line(struct sbuf *,
    const struct history_rec *);
/* Export as capture (JSON Lines) to f. *n = lines written. */
int		 history_export(struct gwdb *, const struct history_filter *,
		    FILE *, size_t *n);

/* ------------------------------------------------------------------------ */
/* reply.c: the messages we build. */

/* A new message with our envelope: mosID, ncsID, messageID (0 = none). */
struct mos_msg	*reply_new(enum mos_type, const char *mos_id,
    const char *ncs_id,
		    int32_t message_id);
/* The description of a NACK, cut to 128 characters at a UTF-8 boundary. */
void		 reply_bound(char *dst, size_t len, const char *text);
/* mosAck NACK (objID "0" unless given) with a bounded description. */
struct mos_msg	*reply_mos_ack(const char *mos_id, const char *ncs_id,
		    int32_t message_id, const char *obj_id, bool ack,
		    const char *text);
/* roAck whose roStatus is the (bounded) text. */
struct mos_msg	*reply_ro_ack(const char *mos_id, const char *ncs_id,
		    int32_t message_id, const char *ro_id, const char *text);
/*
 * The negative answer a port uses: mosAck NACK on lower/query, roAck on upper.
 */
struct mos_msg	*reply_nack(enum gw_port, const char *mos_id,
    const char *ncs_id,
		    int32_t message_id, const char *text);
struct mos_msg	*reply_heartbeat(const char *mos_id, const char *ncs_id,
		    int32_t message_id);
struct mos_msg	*reply_list_mach_info(const struct gw_config *,
    const char *ncs_id,
		    int32_t message_id, int64_t started_ms);
/* True for the types that answer something (never NACK those). */
bool		 reply_is_answer_type(const char *type_name);

/* ------------------------------------------------------------------------ */
/* wire.c: a message encoded ahead, its messageID left open. */

struct wire {
	uint8_t		*data;		/* NULL = none */
	size_t		 len;
	size_t		 id_off;	/* the placeholder's digits */
	size_t		 id_len;
	enum mos_enc	 enc;
};

/* Encode m (envelope set but for the messageID). 0, or -1 and err. */
int	 wire_encode(struct wire *, struct mos_msg *, enum mos_enc, char *err,
	    size_t errlen);
/* The frame with its messageID, in sb (emptied first). */
void	 wire_splice(const struct wire *, int32_t message_id, struct sbuf *);
void	 wire_clear(struct wire *);

/* ------------------------------------------------------------------------ */
/* conn.c: one framed MOS connection (inbound or outbound). */

struct conn_ops {
	/* One complete frame. */
	void	(*frame)(void *arg, struct conn *, const struct mos_frame *);
	/* The connection failed or ended; the owner must conn_free() it. */
	void	(*error)(void *arg, struct conn *, const char *reason);
	/* The output buffer drained below the low watermark (may be NULL). */
	void	(*drained)(void *arg, struct conn *);
	/* Connected (outbound only, may be NULL). */
	void	(*connected)(void *arg, struct conn *);
	/*
	 * May bytes be written now (may be NULL: always)? When not, conn_write
	 * writes nothing and says so.
	 */
	bool	(*may_write)(void *arg, struct conn *);
};

struct conn {
	struct gw		*gw;
	uint64_t		 id;		/* history "conn" number */
	enum gw_port		 port;
	struct bufferevent	*bev;
	struct mos_framer	*fr;
	enum mos_enc		 enc;		/* AUTO until decided */
	char			 peer[64];	/* "127.0.0.1:11540" */
	struct addr		 src;		/* inbound: peer address */
	char			 ncs[64];	/* NCS name once known,
	    for history */
	char			 logkey[64];	/* see conn_log_key */
	const struct conn_ops	*ops;
	void			*arg;
	struct event		*rd;		/* reading, once connected */
	struct event		*deadline;
	struct event		*idle;		/* no complete frame */
	struct event		*more;
	int64_t			 idle_ms;
	bool			 idle_fresh;	/* restart the idle timer */
	bool			 paused;	/* output over the watermark */
	bool			 held;		/* a frame is being parsed
	    elsewhere: no more frames, no reading */
	bool			 connecting;
	bool			 closing;	/* EOF: close when written */
	bool			 dead;
	int			 busy;
};

struct conn	*conn_new(struct gw *, struct bufferevent *, enum gw_port,
		    enum mos_enc, size_t max_frame, const struct conn_ops *,
		    void *arg);
void		 conn_free(struct conn *);
/* Start an outbound connection to host:port (ops->connected on success). */
int		 conn_connect(struct conn *, const char *host, int port,
		    int64_t timeout_ms);
void		 conn_set_max_frame(struct conn *, size_t);
/* Close after ms without a complete frame; 0 = never. */
void		 conn_set_idle(struct conn *, int64_t ms);
/* Encode m in the connection's encoding, record history, write. 0 or -1. */
int		 conn_send(struct conn *, const struct mos_msg *,
    const char *outcome);
/* As conn_send; history only if record. */
int		 conn_send_rec(struct conn *, const struct mos_msg *,
		    const char *outcome, bool record);
/* A frame encoded ahead with its messageID spliced in; as conn_send. */
void		 conn_send_wire(struct conn *, const struct wire *,
		    int32_t message_id, enum mos_type, const char *outcome);
/* The encoding of what we write on this connection. */
enum mos_enc	 conn_encoding(const struct conn *);
/*
 * Raw bytes already encoded (history recorded by the caller). 0, or -1
 * when the owner's may_write refused them (nothing written).
 */
int		 conn_write(struct conn *, const void *, size_t);
size_t		 conn_output_len(struct conn *);
void		 conn_set_ncs(struct conn *, const char *);
/* The rate-limit key of its log lines: the NCS name, else the peer host. */
const char	*conn_log_key(struct conn *);
/* Process frames that are already framed (after a pause). */
void		 conn_resume(struct conn *);
/* Hold (no frames handed out, no reading) or release the connection. */
void		 conn_hold(struct conn *, bool);
/* End it from the owner's side: ops->error follows at once. */
void		 conn_abort(struct conn *, const char *reason);
/* Read and handle what the peer already sent (callbacks may free it). */
void		 conn_poll(struct conn *);
/* Bytes from the peer, and its end, on a bufferevent without a socket. */
void		 conn_input(struct conn *, const void *, size_t);
void		 conn_input_end(struct conn *);

/* ------------------------------------------------------------------------ */
/* listener.c */

struct listener	*listener_new(struct gw *, enum gw_port, const char *addr,
		    int portnum, char **cause);
void		 listener_free(struct listener *);
void		 listener_set_enabled(struct listener *, bool);
int		 listener_port(const struct listener *);

/* ------------------------------------------------------------------------ */
/* session.c: a connection the NCS opened to us. */

struct session {
	struct gw		*gw;
	struct conn		*conn;
	enum gw_port		 port;
	struct addr		 src;		/* the peer's address */
	struct ncs		*ncs;		/* after a valid frame */
	bool			 trusted;	/* a valid frame was seen */
	int			 untrusted;	/* other frames before one */
	struct event		*handshake;	/* handshake_timeout */
	TAILQ_ENTRY(session)	 entry;
};
TAILQ_HEAD(session_list, session);

/*
 * A new connection: refused (one log line a second at most) unless some
 * NCS allows its address and there is room; a full cap makes room by
 * closing the oldest connection that has not sent a valid frame yet.
 */
void	 session_accept(struct gw *, enum gw_port, int fd,
	    const struct sockaddr *, const char *peer);
/* A session on a bufferevent (accepted socket, or a pair without one). */
struct session *session_open(struct gw *, enum gw_port, struct bufferevent *,
	    const struct addr *, const char *peer);
void	 session_close(struct session *, const char *reason);
/* Log a refused connection or frame: at most one line a second. */
void	 session_log_refusal(enum gw_port, const char *peer,
	    const char *reason, const char *ncs, const char *key);
void	 session_close_all(struct gw *, const char *reason);
void	 session_forget_ncs(struct gw *, struct ncs *);

/* ------------------------------------------------------------------------ */
/* dispatch.c: what to do with a frame from an NCS, on any connection. */

/*
 * Parse a frame, check its (mosID, ncsID) pair and record it in history.
 * *ncs is the NCS the connection is known to belong to (or NULL) and gets the
 * one the frame belongs to. Returns the message, or NULL when the frame was
 * already answered (NACK) or dropped here.
 */
struct mos_msg	*dispatch_frame(struct gw *, struct conn *, struct ncs **,
		    const struct mos_frame *);
/*
 * The parse dispatch_frame makes: in the mode of hint (the connection's
 * NCS), lenient without one, strictly again for a strict NCS it names.
 */
struct mos_msg	*dispatch_parse(struct gw *, struct ncs *hint,
		    const struct mos_frame *, struct mos_error *);
/* The NCS a parsed message's (mosID, ncsID) pair names, or NULL. */
struct ncs	*dispatch_pair(struct gw *, struct ncs *hint,
		    const struct mos_msg *);
/* The same for a frame parsed elsewhere: m (taken), or NULL and err. */
struct mos_msg	*dispatch_parsed(struct gw *, struct conn *, struct ncs **,
		    const struct mos_frame *, struct mos_msg *m,
		    const struct mos_error *err);
/* A request from an NCS: answer it on conn. Takes m (frees it). */
void		 dispatch_request(struct gw *, struct conn *, struct ncs *,
		    struct mos_msg *m);
/* The open connection (session or link) with that number, or NULL. */
struct conn	*dispatch_conn_find(struct gw *, uint64_t id);
/* Frames from a known NCS this large are parsed off the event loop. */
#define GW_ASYNC_BYTES	(256 * 1024)
/* The frame parsed (m, or NULL and err), on the loop thread; m is taken. */
typedef void	(*dispatch_parsed_fn)(struct conn *, const struct mos_frame *,
		    struct mos_msg *m, const struct mos_error *err);
/*
 * Parse f on the bookkeeping thread, the connection held meanwhile; done
 * follows if the connection is still open (then pass m to dispatch_parsed).
 */
void		 dispatch_parse_async(struct gw *, struct conn *,
		    const struct mos_frame *, enum mos_mode,
		    dispatch_parsed_fn done);
/* Reply on conn to a request (records history). 0 or -1. */
int		 dispatch_reply(struct conn *, struct mos_msg *,
    const char *outcome);

/* ------------------------------------------------------------------------ */
/* profile0.c, profile1.c, profile3.c */

void	 profile0_heartbeat(struct gw *, struct conn *, struct ncs *,
	    const struct mos_msg *);
void	 profile0_req_mach_info(struct gw *, struct conn *, struct ncs *,
	    const struct mos_msg *);
void	 profile1_req_obj(struct gw *, struct conn *, struct ncs *,
	    const struct mos_msg *);
void	 profile1_req_all(struct gw *, struct conn *, struct ncs *,
	    const struct mos_msg *);
/* Stop a running mosReqAll answer for that NCS. */
void	 profile1_req_all_stop(struct ncs *);

/* profile3.c: placeholders and search (see the file's head comment). */
#define PROFILE3_LANE		"mam"		/* jobs for the MAM's worker */
#define PROFILE3_KIND_CREATE	"obj-create"
#define PROFILE3_KIND_UPDATE	"obj-update"
#define PROFILE3_KIND_DELETE	"obj-delete"
#define PROFILE3_ID_PREFIX	"PH-"		/* placeholder objIDs: PH-000001 */
#define PROFILE3_SCHEMA		"urn:mosgw:search:1"	/* mosSchema */
#define PROFILE3_PAGE_DEFAULT	20	/* without listReturnEnd */
#define PROFILE3_PAGE_MAX	100	/* objects in one mosObjList */

/* These three take m; their database work runs on the bookkeeping thread. */
void	 profile3_obj_create(struct gw *, struct conn *, struct ncs *,
	    struct mos_msg *);
void	 profile3_req_obj_action(struct gw *, struct conn *, struct ncs *,
	    struct mos_msg *);
void	 profile3_req_obj_list(struct gw *, struct conn *, struct ncs *,
	    struct mos_msg *);
void	 profile3_req_searchable_schema(struct gw *, struct conn *,
	    struct ncs *, const struct mos_msg *);
/* Forget the answers kept for retries (the NCS goes away). */
void	 profile3_forget(struct ncs *);

/* ------------------------------------------------------------------------ */
/* profile2.c: running orders from the NCS (Profiles 2, 4, mosItemReplace). */

struct ro_pending;
TAILQ_HEAD(ro_pending_list, ro_pending);

/* The types profile2_request answers. */
bool	 profile2_handles(enum mos_type);
/* Store or read on the bookkeeping thread, then answer. Takes m. */
void	 profile2_request(struct gw *, struct conn *, struct ncs *,
	    struct mos_msg *m);
/* roReq a running order on our upper link and rebuild it from roList. */
void	 profile2_resync(struct ncs *, const char *ro_id);

/* ------------------------------------------------------------------------ */
/* profile4.c: roReqAll on our upper link when it comes up. */

void	 profile4_link_up(struct ncs *);

/* ------------------------------------------------------------------------ */
/* link.c: our own outbound connection to one NCS target and port. */
/*
 * link.c: our own outbound connection to one NCS target and port. The query
 * link (an NCS with query_port) carries nothing of ours and no heartbeats:
 * it is kept open for the NCS's Profile 3 requests, answered on it.
 */

enum link_state {
	LINK_DOWN = 0,
	LINK_CONNECTING,
	LINK_UP,
	LINK_DEGRADED,
	LINK_SLEEPING,		/* hot standby: deliberately not connected */
};

enum link_result {
	LINK_REPLY = 0,		/* reply is the answer (check ACK/NACK) */
	LINK_CANCELLED = 1,	/* the NCS was removed or the gateway stops */
	LINK_TIMEOUT = 2,	/* no answer after retries resends (give_up) */
};

struct link_msg;
typedef void (*link_msg_cb)(void *arg, struct link_msg *, enum link_result,
	    const struct mos_msg *reply);

/*
 * A streamed message (mosListAll): fill appends the next piece of the frame
 * (UTF-16BE or UTF-8) to out; restart = from the beginning. Returns 1 when
 * more follows, 0 when the frame is complete, -1 on error.
 */
typedef int (*link_gen_fn)(void *arg, struct evbuffer *out, bool restart,
	    enum mos_enc, const char *mos_id, const char *ncs_id,
	    int32_t message_id);

struct link_msg {
	enum mos_type		 type;
	struct mos_msg		*msg;		/* owned; envelope per send */
	struct wire		 wire;		/* or: encoded ahead, for */
	int			 wire_target;	/* this target (0 primary) */
	link_gen_fn		 gen;		/* or: streamed */
	void			*gen_arg;
	void			(*gen_free)(void *);	/* frees gen_arg */
	int32_t			 message_id;	/* 0 until first sent */
	int			 tries;		/* sends on this connection */
	int			 sends;		/* sends in all */
	/*
	 * After `retries` resends without an answer the link reconnects;
	 * the message then goes back to cb (LINK_TIMEOUT) instead of being
	 * sent again with the same messageID on the next connection.
	 */
	bool			 give_up;
	struct mos_msg		*reply;		/* in cb: see link_take_reply */
	link_msg_cb		 cb;
	void			*arg;
	TAILQ_ENTRY(link_msg)	 entry;
};
TAILQ_HEAD(link_msg_list, link_msg);

struct link {
	struct ncs		*ncs;
	enum gw_port		 port;
	int			 target;	/* 0 primary, 1 buddy */
	enum link_state		 state;
	char			 reason[128];
	struct conn		*conn;
	struct event		*reconnect_ev;
	struct event		*tick_ev;
	struct event		*ack_ev;
	struct event		*gen_ev;
	int			 failures;	/* failed connects in a row */
	bool			 breaker;
	bool			 enabled;	/* false: sleeping */
	struct link_msg		*inflight;	/* message or heartbeat */
	bool			 inflight_hb;
	bool			 streaming;	/* gen has more to write */
	int64_t			 sent_mono;
	int64_t			 hb_last_mono;	/* last heartbeat sent */
	int64_t			 hb_ok_ms;	/* last one answered (wall) */
	int64_t			 up_mono;	/* when it came up */
	int64_t			 rx_mono;	/* last frame received */
	uint64_t		 hb_ok;		/* heartbeats answered */
	/* for GET /v1/links (api_links.c) */
	int64_t			 since_mono;	/* state last changed */
	int64_t			 hb_rx_mono;	/* last heartbeat answer */
	char			 last_error[128];	/* kept once up */
	uint64_t		 ups;		/* connections made */
	uint64_t		 msgs_sent;	/* sends, not heartbeats */
	uint64_t		 acks;		/* positive answers */
	uint64_t		 nacks;
	uint64_t		 timeouts;	/* ack timeouts */
	struct sbuf		 copy;		/* a streamed message,
	    for history */
	const char		*ev_state;	/* in the last link.state */
};

struct link	*link_new(struct ncs *, int target, enum gw_port);
void		 link_free(struct link *);
void		 link_enable(struct link *, bool);
/* Up and nothing in flight. */
bool		 link_ready(const struct link *);
bool		 link_is_up(const struct link *);
const char	*link_state_name(enum link_state);
const char	*link_host(const struct link *);
int		 link_port_number(const struct link *);
/* Take the next message of the NCS queue for this port if idle. */
void		 link_kick(struct link *);
/* Shut down (reload/stop): the in-flight message goes back to the queue. */
void		 link_close(struct link *, const char *reason);
/* Give the message in flight back to the NCS queue (target switch). */
void		 link_release(struct link *);
/* In a link_msg_cb with LINK_REPLY: keep the reply (the caller frees it). */
struct mos_msg	*link_take_reply(struct link_msg *);
struct link_msg	*link_msg_new(struct mos_msg *, link_msg_cb, void *);
void		 link_msg_free(struct link_msg *);

/* ------------------------------------------------------------------------ */
/* ncs.c: one configured NCS at run time. */

struct ncs {
	struct gw		*gw;
	struct ncs_conf		*conf;		/* owned copy */
	struct link		*link[2][2];	/* [target][lower, upper] */
	struct link		*qlink;		/* to the primary's query_port */
	int			 active;	/* 0 primary, 1 buddy */
	bool			 hold_buddy;	/* main "not yet updated" */
	struct msgid		*mid[2];	/* lower, upper */
	struct link_msg_list	 q[2];		/* for the active link */
	struct publisher	*pub;
	struct reqall		*reqall;
	struct ro_pending_list	 ro_pending;	/* our roReqs in flight */
	struct rostat		*rostat;	/* roElementStat deliveries */
	struct p3_recent	*p3recent;	/* profile3.c: for retries */
	struct event		*tick_ev;
	struct acl		 allow;		/* conf->allow, parsed */
	struct addr		 hosts[8];	/* host, buddy_host (`hosts`) */
	size_t			 nhosts;
	size_t			 nhosts_next;	/* replaced next when full */
	bool			 owned;		/* its links are ours (owner.c) */
	int64_t			 epoch;		/* owned since: 0 on SQLite */
	struct owner_ncs	*own;		/* owner.c's record of it */
	TAILQ_ENTRY(ncs)	 entry;
};
TAILQ_HEAD(ncs_list, ncs);

struct ncs	*ncs_new(struct gw *, const struct ncs_conf *);
void		 ncs_free(struct ncs *);
void		 ncs_start(struct ncs *);
bool		 ncs_has_buddy(const struct ncs *);
struct link	*ncs_active_link(struct ncs *, enum gw_port);
const char	*ncs_wire_id(const struct ncs *, int target);
/* Queue an outgoing message on the lower or upper port. */
void		 ncs_send(struct ncs *, enum gw_port, struct link_msg *);
/* Cancel every queued message (callbacks get LINK_CANCELLED). */
void		 ncs_cancel_all(struct ncs *);
/* A link changed state: failover decisions, publisher wake-up. */
void		 ncs_link_changed(struct ncs *, struct link *);
/*
 * This instance owns the NCS's outbound links from now on, at epoch (open
 * them), or no longer (close them at once, cancel what is queued, give
 * the claimed jobs back); reason goes to the links' state.
 */
void		 ncs_set_owned(struct ncs *, bool, int64_t epoch,
		    const char *reason);
/* An ENPS buddy sentence in a NACK: the target to switch to, or -1. */
int		 ncs_buddy_target(struct ncs *, struct link *,
    const char *text);
/* Make `to` (0 primary, 1 buddy) the active target. */
void		 ncs_switch(struct ncs *, int to, const char *reason);
/* Periodic: return to the primary when it has been healthy long enough. */
void		 ncs_tick(struct ncs *);
/* Nothing in flight or queued. */
bool		 ncs_idle(const struct ncs *);
struct ncs	*ncs_find_by_wire_id(struct gw *, const char *ncs_id);
struct ncs	*ncs_find_by_name(struct gw *, const char *name);
/* Our link connected: its peer address is one of host/buddy_host. */
void		 ncs_learn_host(struct ncs *, struct conn *);
/* Is a peer at this address allowed to speak for the NCS? */
bool		 ncs_allows(const struct ncs *, const struct addr *);

/* ------------------------------------------------------------------------ */
/* publisher.c */

/*
 * The daemon's worker names in the queue: a start on SQLite takes back at
 * once what such workers held. The workers of an NCS's deliveries are
 * GW_NCS_WORKER_PREFIX "NCS/INSTANCE/PID" (publisher.c, rostat.c adds
 * "/rostat"): a new owner of the NCS takes back what they held (owner.c).
 * A webhook's is GW_HOOK_WORKER_PREFIX "INSTANCE/PID/NAME" (webhook.c). On
 * PostgreSQL a restarted instance takes back what its previous life's
 * workers held (owner.c).
 */
#define GW_WORKER_PREFIX	"mosgw:"
#define GW_NCS_WORKER_PREFIX	GW_WORKER_PREFIX "ncs="
#define GW_HOOK_WORKER_PREFIX	GW_WORKER_PREFIX "hook="

struct publisher *publisher_new(struct ncs *);
void		 publisher_free(struct publisher *);
TAILQ_HEAD(pub_work_list, pub_work);

/* Link up/idle, a flush done, new work: send what can be sent. */
void		 publisher_pump(struct publisher *);
/* The lower link went down: give back claimed jobs not yet sent. */
void		 publisher_link_down(struct publisher *);
/* A mosObj of ours is in flight. */
bool		 publisher_busy(const struct publisher *);
/* Jobs may have arrived (wake.c): claim now, or soon after an empty claim. */
void		 publisher_woken(struct publisher *);
/* Stop: release every claimed job that is not in flight. */
void		 publisher_release_all(struct publisher *);
/*
 * The flush transaction, in three steps. collect (loop thread): what every
 * publisher has for the database (completions, failures, releases, lease
 * renewals, a claim of the next jobs), with what a failed transaction left.
 * run (bookkeeping thread, inside the transaction): do it; claimed jobs get
 * their mosObj built and encoded. settle (loop thread, after it): results
 * back to the publishers, or, if it did not commit, kept for the next one.
 */
void		 publisher_collect(struct gw *, struct pub_work_list *);
int		 publisher_run(struct gwdb *, struct pub_work_list *);
void		 publisher_settle(struct gw *, struct pub_work_list *,
		    bool committed);
void		 publisher_works_free(struct pub_work_list *);
/*
 * Claims that ride along in another transaction (an asset change), so
 * that its mosObj goes out once that one commit is durable: tickets (loop
 * thread, when the change is queued) for up to want jobs of every NCS that
 * can send now; claims_run (bookkeeping thread, inside the transaction,
 * after the change; on failure roll back what it did; undo: forget the
 * claims of a transaction rolled back later; merge: one claim per NCS for
 * changes committed together); offer (loop thread,
 * after the commit): the jobs join the windows and leave, or go back.
 */
void		 publisher_tickets(struct gw *, size_t want,
		    struct pub_work_list *);
int		 publisher_claims_run(struct gwdb *, struct pub_work_list *);
void		 publisher_claims_undo(struct pub_work_list *);
void		 publisher_claims_merge(struct pub_work_list *into,
		    struct pub_work_list *from);
bool		 publisher_offer(struct gw *, struct pub_work_list *,
		    bool committed);

/* ------------------------------------------------------------------------ */
/* wake.c: one listener per process for job notifications (PostgreSQL). */

struct wake;
/* NULL on SQLite; on PostgreSQL it listens (or retries) from now on. */
struct wake	*wake_new(struct gw *);
void		 wake_free(struct wake *);
/* Notifications work now: the publishers poll only every notify_poll. */
bool		 wake_listening(const struct wake *);

/* ------------------------------------------------------------------------ */
/* ckpt.c: the checkpointer thread, with its own connection (SQLite WAL). */

struct ckpt;
struct ckpt_stats {
	int64_t	done;		/* checkpoints that ran */
	int64_t	busy;		/* found another checkpoint running */
	int64_t	failed;		/* errors (disk full, I/O) */
	int64_t	us;		/* time spent checkpointing */
};
/* Start it on a database that is open in WAL mode; NULL and *err if not. */
struct ckpt	*ckpt_new(const char *path, bool sync_normal, char **err);
/* Stop it (after the checkpoint running) and close its connection. */
void		 ckpt_free(struct ckpt *);
/* queue_set_checkpointer's callback (any thread): checkpoint soon. */
void		 ckpt_poke(void *ckpt, int wal_frames);
void		 ckpt_stats(struct ckpt *, struct ckpt_stats *);
/* On the loop: log the checkpoints that failed since the last call. */
void		 ckpt_report(struct ckpt *);

/* ------------------------------------------------------------------------ */
/*
 * owner.c: which instance opens each NCS's outbound links (PostgreSQL: an
 * advisory lock per NCS on a session of its own, an epoch per new owner in
 * the table mosgw_owner; SQLite: always this one, epoch 0).
 */

struct owner;
struct owner_ncs;
struct owner	*owner_new(struct gw *, char **cause);
/* Stop competing; the session ends, so every lock goes (after the links). */
void		 owner_free(struct owner *);
/* An NCS started: owned at once (SQLite), or competed for. */
void		 owner_ncs_start(struct owner *, struct ncs *);
/* The configured NCSs changed: those gone are let go. */
void		 owner_ncs_changed(struct owner *);
/* The NCS's owner as far as known ("" unknown) and its epoch. */
void		 owner_info(struct owner *, const struct ncs *, char *holder,
		    size_t len, int64_t *epoch);
const char	*owner_instance(const struct owner *);
/*
 * May this instance talk on the NCS's outbound links now (a frame, a
 * connect)? Its hold is current: at the epoch the links were opened
 * under, renewed less than 0.6 x takeover ago by the monotonic clock (no
 * query). When not, the links are dropped from the loop at once and every
 * later call says no until then. Always true on SQLite.
 */
bool		 owner_may_talk(struct owner *, struct ncs *);
/*
 * In the caller's transaction: is epoch still the NCS's (*cur gets the
 * current one)? QUEUE_OK, QUEUE_ELOST, or an error; epoch 0 always OK.
 */
int		 owner_fence(struct gwdb *, const char *ncs, int64_t epoch,
		    int64_t *cur);
/* PostgreSQL, a store code: a new owner's epoch (table of gwdb_pg.c). */
int		 owner_bump(struct store *, const char *ncs,
		    const char *instance, int64_t *epoch);

/* ------------------------------------------------------------------------ */
/* dbw.c: the bookkeeping thread, with its own database connection. */

typedef int	(*dbw_run_fn)(struct gwdb *, void *arg);	/* the thread */
typedef void	(*dbw_done_fn)(void *arg, int rc);	/* the loop thread */

/* Open its connection (relax: see gwdb_relax) and start the thread. */
struct dbw	*dbw_new(struct event_base *, const struct gwdb_opts *,
		    bool relax, char **err);
/* Wait for every task (their done callbacks run), stop, close. */
void		 dbw_free(struct dbw *);
/* Run a task on the thread, in order; done follows on the loop thread. */
void		 dbw_submit(struct dbw *, dbw_run_fn, dbw_done_fn, void *arg);
/*
 * Group commit: fn(args, rcs, n) runs this task together with the tasks
 * of the same fn queued right behind it (rcs[i] preset to QUEUE_OK, each
 * task's done gets its rcs[i]); tasks still run in submission order.
 */
typedef void	(*dbw_batch_fn)(struct gwdb *, void **args, int *rcs,
		    size_t n);
void		 dbw_submit_batch(struct dbw *, dbw_batch_fn, dbw_done_fn,
		    void *arg);
/* Call after(arg, run) on the loop thread once each task's done has run. */
void		 dbw_set_after(struct dbw *, void (*after)(void *, dbw_run_fn),
		    void *arg);
/* Tasks submitted whose done callback has not run yet. */
size_t		 dbw_pending(const struct dbw *);
/* Block until no task is pending, running the done callbacks. */
void		 dbw_wait(struct dbw *);

/* ------------------------------------------------------------------------ */
/* api.c: the HTTP API on the loop (server, limits, tokens, routes, errors). */

enum api_role {
	API_PUBLIC = -1,	/* no token needed (GET /healthz) */
	API_READ = 0,		/* GET only */
	API_WRITE = 1,		/* also change assets, submit jobs */
	API_WORKER = 2,		/* also claim and settle jobs */
	API_ADMIN = 3,		/* everything */
};

/* One request being answered; freed by the reply. */
struct api_req {
	struct api		*api;
	struct evhttp_request	*req;
	const char		*method;	/* "GET", ... */
	char			*who;		/* the token's NAME */
	enum api_role		 role;
	char			*param[2];	/* path parameters, decoded */
	struct evkeyvalq	*query;		/* query string */
	/* a streamed reply (api_stream_*) */
	struct event		*stream_ev;
	void			(*more)(void *, bool gone);
	void			*more_arg;
	const char		*route;		/* the matched pattern, or NULL */
};

struct api_route {
	const char	*method;
	const char	*path;		/* "/v1/assets/{objID}" */
	enum api_role	 role;		/* the least role that may */
	void		(*fn)(struct api_req *);
};
extern const struct api_route api_routes[];	/* ends with method NULL */

struct api_token;
/* Listen as [api] says (call only with api_port != 0). NULL and *cause. */
struct api	*api_new(struct gw *, char **cause);
void		 api_stop(struct api *);	/* no new connections */
void		 api_free(struct api *);
/* SIGHUP: re-read the tokens file (the old tokens stay if it is bad). */
void		 api_reload(struct api *, const struct gw_config *);
/* A tokens file: NAME ROLE TOKEN lines. 0, or -1 and *err (FILE:LINE). */
int		 api_tokens_load(const char *file, struct api_token **,
		    size_t *, char **err);
const char	*api_role_name(enum api_role);
/* Answer with this body of that Content-Type and free r. */
void		 api_reply_body(struct api_req *, int status,
		    const char *ctype, const char *body, size_t len);
/* Answer with this JSON (reference taken) and free r. */
void		 api_reply_json(struct api_req *, int status, struct json_t *);
/*
 * Answer application/problem+json: type is the stable slug after
 * "urn:mosgw:problem:", field (may be NULL) the input that is wrong.
 */
void		 api_problem(struct api_req *, int status, const char *type,
		    const char *title, const char *field, const char *fmt, ...)
		    __attribute__((format(printf, 6, 7)));
/*
 * A streamed 200 (chunked) of that type: start, then write pieces; after
 * each, more(arg, gone) runs once the client has taken most of what was
 * sent, or with gone = true when it went away. End with api_stream_end
 * (gone or not), which frees r.
 */
void		 api_stream_start(struct api_req *, const char *ctype);
void		 api_stream_write(struct api_req *, struct evbuffer *,
		    void (*more)(void *arg, bool gone), void *arg);
void		 api_stream_end(struct api_req *);
/*
 * An open-ended stream (SSE): started, r freed, the request returned;
 * pieces pushed at once; how much the client has not taken yet.
 */
struct evhttp_request *api_sse_start(struct api_req *, const char *ctype);
void		 api_sse_chunk(struct evhttp_request *, struct evbuffer *);
size_t		 api_sse_backlog(struct evhttp_request *);	/* unsent */
/* A database failure: 503 with Retry-After. */
void		 api_problem_db(struct api_req *, int rc, const char *err);
/* The body as a JSON object; NULL once a 400 or 415 has been sent. */
struct json_t	*api_body_json(struct api_req *);
const char	*api_query(struct api_req *, const char *key);
/* Only the parameters of known (NULL-ended)? false once a 422 is sent. */
bool		 api_query_known(struct api_req *, const char *const *known);
struct gw	*api_gw(struct api_req *);
struct api_jobs	*api_jobs_of(struct api_req *);
/* Has the client of a request (kept waiting) closed its connection? */
bool		 api_client_gone(struct api_req *);
/* Is s a name: 1 to 63 of A-Z a-z 0-9 _ . - (tokens, job kinds, workers)? */
bool		 api_name_ok(const char *);

/* api_assets.c: /v1/assets */
void	 api_assets_list(struct api_req *);
void	 api_asset_put(struct api_req *);
void	 api_asset_get(struct api_req *);
void	 api_asset_delete(struct api_req *);
void	 api_assets_import(struct api_req *);	/* NDJSON */

/*
 * The fields of a PUT body as a catalog asset (the body is read by the
 * codec as a mosObj body): 0, or -1 with *detail (malloc'd) and the field
 * it is about in field ("" if none).
 */
int	 api_asset_read(struct json_t *body, const char *obj_id,
	    const char *who, struct catalog_asset *, char *field, size_t flen,
	    char **detail);
/*
 * Inside the caller's transaction: put the asset (obj_id NULL in it:
 * delete obj_id, by whom) if its objRev is if_match (-1: any) and list
 * the delivery jobs: *out = {"objID","objRev","jobs"}. *cur_rev gets the
 * objRev it had; QUEUE_ESTATE when that is not if_match.
 */
int	 api_asset_apply(struct gwdb *, const char *obj_id,
	    const struct catalog_asset *, const char *by, int if_match,
	    int *cur_rev, struct json_t **out, char **err);
/* New deliveries were committed: the publishers claim them now. */
void	 api_asset_wake(struct gw *);

/* api_queue.c: /v1/queue */
void	 api_queue_stats(struct api_req *);

/* api_tls.c: HTTPS for the API ([api] tls_cert, tls_key) */
/* A server context from the configured pair. NULL and *cause. */
struct ssl_ctx_st *api_tls_ctx(const struct gw_config *, char **cause);
/* Days until the certificate's notAfter (negative: expired). */
int	 api_tls_days_left(struct ssl_ctx_st *);
/* mosgw -n: is the pair usable (0 when TLS is off)? 0, or -1 and *cause. */
int	 api_tls_check(const struct gw_config *, char **cause);
/* The reason of the last OpenSSL error in buf (the error queue cleared). */
const char *tls_err(char *buf, size_t len);

/* api_links.c: /v1/links, our links to every NCS (loop state, no DB) */
void	 api_links(struct api_req *);

/* api_history.c: /v1/history, JSON pages or a streamed capture download */
void	 api_history(struct api_req *);
/* api_events.c: GET /v1/events as Server-Sent Events. */
struct sse_hub;
void	 api_events_get(struct api_req *);
/* The smallest id a client still needs after (-1: none needs rows). */
int64_t	 api_events_after(struct gw *);
bool	 api_events_listening(struct gw *);	/* any client connected */
/*
 * New rows (see struct event_rows). True if a client took them all (the
 * next page, if any, is wanted); a client without room gets the rest when
 * it drains. A client reaching the head gets ": caught-up ID" once.
 */
struct event_rows;
bool	 api_events_deliver(struct gw *, const struct event_rows *);
/* Close every stream (shutdown). */
void	 api_events_close_all(struct gw *);

/* ------------------------------------------------------------------------ */
/* events.c: the durable event log and what reads it. */

/*
 * Event types, as bits of a filter. job.state and asset.* are written by
 * a trigger on the queue's job_events (gwdb.c, schema 4), link.state and
 * ro.changed by events_add.
 */
enum event_type {
	EVT_ASSET_DELIVERED = 0x01,
	EVT_ASSET_FAILED = 0x02,
	EVT_JOB_STATE = 0x04,
	EVT_LINK_STATE = 0x08,
	EVT_RO_CHANGED = 0x10,
};
#define EVT_ALL		0x1f
#define EVENTS_PAGE	500	/* rows read at a time */

struct event_row {
	int64_t		 id;
	int64_t		 t_ms;
	char		*type;
	char		*data;		/* a JSON object */
	bool		 hook;		/* may go to webhooks */
};

/*
 * What the events pump read for the streams: head and pruned first (the
 * largest id given, the largest pruned), then the rows after `after` in
 * order (-1: none read); full: the page was full, more rows may follow.
 */
struct event_rows {
	struct event_row *rows;
	size_t		 n;
	int64_t		 after;
	int64_t		 head;
	int64_t		 pruned;
	bool		 full;
};

/* "a,b" (or "*" unless strict): the types as a mask. 0, or -1 and *err. */
int	 events_type_mask(const char *, bool strict, unsigned *, char **err);
unsigned events_type_bit(const char *type);	/* 0 if unknown */
/* Insert an event in the caller's transaction (data: a JSON object). */
int	 events_add(struct gwdb *, const char *type, const char *data);
/* Rows after an id (at most max); free with events_rows_free. */
int	 events_read(struct gwdb *, int64_t after, size_t max,
	    struct event_row **, size_t *n);
void	 events_rows_free(struct event_row *, size_t);
/* The largest id, and the largest pruned (0: none). */
int	 events_head(struct gwdb *, int64_t *head, int64_t *pruned);
/* Delete events older than age_ms and beyond the newest max. */
int	 events_prune(struct gwdb *, int64_t age_ms, int64_t max, size_t *n);
/*
 * The loop side: something may have committed (a bookkeeping task ended):
 * read what is new for the SSE clients and turn it into webhook jobs.
 */
struct events	*events_new(struct gw *);
void		 events_free(struct events *);
void		 events_wake(struct events *);
/* The bookkeeping task that events_wake runs (dbw.c skips it). */
int		 events_pump_run(struct gwdb *, void *);
/* A link changed state: a link.state event (when it differs). */
void		 events_link(struct gw *, struct link *);

/* ------------------------------------------------------------------------ */
/* webhook.c: events POSTed to [webhook.NAME] URLs through the queue. */

#define WEBHOOK_KIND_PREFIX	"webhook:"	/* kind and lane: + NAME */
#define WEBHOOK_SIG_HEADER	"X-Mosgw-Signature"
#define WEBHOOK_TS_HEADER	"X-Mosgw-Timestamp"
#define WEBHOOK_ID_HEADER	"X-Mosgw-Event-Id"

struct webhook;
struct webhook_fan;
/* The secret of a secret_file (one line). NULL and *err on failure. */
char	*webhook_secret_load(const char *file, char **err);
/*
 * The client context of an https webhook: TLS 1.2 at least, trusting its
 * cacert (else the system's store). NULL and *err if cacert is unusable.
 */
struct ssl_ctx_st *webhook_tls_ctx(const struct webhook_conf *, char **err);
/* hex(HMAC-SHA256(secret, ts "." body)) into out (65 bytes). */
void	 webhook_sign(const char *secret, const char *ts, const char *body,
	    size_t len, char out[65]);
/* Start or reconcile with the configuration (start, SIGHUP). */
void	 webhooks_configure(struct gw *);
void	 webhooks_free(struct gw *);
/* Jobs were added: claim and POST what is due. */
void	 webhooks_kick(struct gw *);
/* For the pump: the webhooks' names and filters (NULL: none). */
struct webhook_fan *webhooks_fan(struct gw *);
/* Bookkeeping thread: one job per matching webhook for new events. */
int	 webhooks_fan_run(struct gwdb *, struct webhook_fan *, size_t *jobs);
void	 webhooks_fan_free(struct webhook_fan *);
bool	 webhooks_fan_more(const struct webhook_fan *);	/* a full page */

/*
 * api_jobs.c: jobs for the MAM's workers (lane "mam"): submit, claim with
 * long-polling, lease tokens (HMAC under a key kept in gw_meta), settle,
 * read, requeue, cancel, rerun.
 */
struct api_jobs;
struct api_jobs	*api_jobs_new(struct gw *, char **cause);
void		 api_jobs_stop(struct api_jobs *);	/* answer parked claims */
void		 api_jobs_free(struct api_jobs *);
void	 api_job_submit(struct api_req *);	/* POST /v1/assets/{objID}/jobs */
void	 api_jobs_claim(struct api_req *);
void	 api_jobs_list(struct api_req *);
void	 api_job_get(struct api_req *);
void	 api_job_heartbeat(struct api_req *);
void	 api_job_complete(struct api_req *);
void	 api_job_fail(struct api_req *);
void	 api_job_requeue(struct api_req *);
void	 api_job_cancel(struct api_req *);
void	 api_job_rerun(struct api_req *);

/* ------------------------------------------------------------------------ */
/* metrics.c: counters on the loop, GET /metrics (Prometheus text 0.0.4). */

/* Labeled counter families; the labels of each are in metrics.c. */
enum metric {
	MET_HEARTBEATS_LATE = 0,	/* ncs, port, target */
	MET_ACKS,			/* ncs, type, result: ack | nack */
	MET_ACK_TIMEOUTS,		/* ncs, port, type */
	MET_ACK_LATENCY,		/* histogram (seconds): ncs */
	MET_LINK_DOWN,			/* ncs, port, reason */
	MET_FRAME_ERRORS,		/* port, stage */
	MET_CONN_REFUSED,		/* port, reason */
	MET_PUBLISH,			/* ncs, outcome */
	MET_HTTP,			/* route, method, status */
};

/* Add 1 to the series with these label values (unused ones NULL). */
void	 metrics_count(enum metric, const char *, const char *, const char *);
/* Observe a value (seconds) in a histogram family with one label. */
void	 metrics_observe(enum metric, const char *, double);
/* A MOS message in or out, by its type name (history_add calls it). */
void	 metrics_message(const char *type, enum history_dir);
void	 metrics_reset(void);
/* A label value with \, \" and \n escaped, appended to sb. */
void	 metrics_label_value(struct sbuf *, const char *);
/* The whole exposition: the loop's counters, links, the cached DB part. */
void	 metrics_render(struct gw *, struct sbuf *);
/*
 * Refresh the database part on the bookkeeping thread when older than a
 * second; fn(arg) runs at once when cached values exist, else after the
 * first refresh.
 */
void	 metrics_refresh(struct gw *, void (*fn)(void *), void *arg);

/* api_status.c: GET /metrics, GET /readyz, the status page GET /. */
void	 api_metrics(struct api_req *);
void	 api_readyz(struct api_req *);
void	 api_status_page(struct api_req *);
/* Why the gateway is not ready (listeners, database file), or NULL. */
const char *api_not_ready(struct gw *);

/* ------------------------------------------------------------------------ */
/* gw.c: the daemon. */

struct gw {
	struct event_base	*base;
	struct evdns_base	*dns;
	struct gw_config	*cfg;
	struct gwdb		*db;
	struct gwdb_hold	 hold;		/* the file: lock, identity */
	bool			 db_lost;	/* unlinked or replaced */
	struct dbw		*dbw;		/* bookkeeping thread */
	struct ckpt		*ckpt;		/* checkpointer thread */
	struct owner		*owner;		/* who opens the NCS links */
	struct wake		*wake;		/* job notifications */
	struct api		*api;		/* NULL: [api] port = 0 */
	struct isync		*isync;		/* initial syncs */
	struct sse_hub		*sse;		/* api_events.c */
	struct events		*events;	/* events.c */
	struct webhook_list	*hooks;		/* webhook.c */
	bool			 hooks_reset;	/* webhooks from none */
	bool			 started_hooks;	/* configured once */
	struct history		*hist;
	struct pub_work_list	 pub_retry;	/* for the next flush */
	struct sbuf		 scratch;	/* a frame being written */
	uint8_t			 rbuf[64 * 1024];	/* conn.c reads here */
	struct listener		*listeners[GW_NPORTS];
	struct ncs_list		 ncs;
	struct session_list	 sessions;
	int			 nsessions;
	int			 nsess_port[GW_NPORTS];
	uint64_t		 sess_closed;	/* sessions closed so far */
	struct srclim		*hist_src;	/* summaries per source */
	struct bucket		 hist_all;	/* summaries in all */
	uint64_t		 hist_skipped;	/* not recorded since last */
	struct event		*sig[3];
	struct event		*housekeeping;
	struct event		*flush_ev;
	struct event		*stop_ev;
	struct event		*ncs_ev;	/* recording the NCSs again */
	struct notify		*notify;	/* systemd watchdog */
	bool			 flush_armed;
	bool			 flushing;	/* a flush on the thread */
	bool			 flush_again;	/* wanted while flushing */
	bool			 flush_hold;	/* a flush failed: wait */
	int			 flush_rc;	/* of the last flush */
	bool			 house_busy;	/* housekeeping on the thread */
	bool			 stopping;
	int64_t			 stop_deadline;
	uint64_t		 conn_seq;
	uint64_t		 conn_saved;
	int64_t			 started_ms;
	int64_t			 last_prune_mono;
	bool			 prune_more;	/* history left to prune */
	int			 exit_code;
};

struct gw	*gw_new(struct gw_config *, char **cause);
void		 gw_free(struct gw *);
int		 gw_run(struct gw *);	/* until stopped; exit status */
void		 gw_reload(struct gw *);
void		 gw_stop(struct gw *);
/* Arm the flush timer (history and completions). */
void		 gw_flush_soon(struct gw *);
/* Start a flush at once (or right after the one running). */
void		 gw_flush_now(struct gw *);
/* Flush and wait for it (shutdown); returns a queue_rc. */
int		 gw_flush(struct gw *);
uint64_t	 gw_conn_id(struct gw *);
/* Idle timeout of an inbound connection (0 = none), see gw.c. */
int64_t		 gw_idle_ms(struct gw *, const struct ncs *, enum gw_port);

#endif /* GATEWAY_H */
