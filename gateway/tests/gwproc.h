/*
 * gwproc: the real mosgw as a child process, for the integration tests and
 * the benchmark.
 *
 * gwproc_new makes a mkdtemp directory under $MOSGW_TMP (or /tmp) holding the
 * configuration, the database and the logs, and picks free loopback ports for
 * the gateway's listeners. gwproc_start writes the configuration, starts
 * $MOSGW_BIN/mosgw -c FILE and waits until it logs event=listen for each
 * listener. The child dies with the test process (PR_SET_PDEATHSIG), so a
 * crashed or timed-out test leaves nothing behind. Every wait has a deadline.
 *
 * With MOSGW_DB_DRIVER=postgresql the gateway's database is a private one
 * on the server of $MOSGW_PG_DSN (store/tests/pgdb.h), made by gwproc_new
 * and dropped by gwproc_free; the configuration names it by driver and dsn.
 *
 * gwrig is the usual set-up on top: one scripted NCS (ncspeer) and a gateway
 * whose one NCS section points at it, with both links up.
 */
#ifndef GWPROC_H
#define GWPROC_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/tests/ncspeer.h"
#include "queue/queue.h"
#include "store/tests/pgdb.h"

#define GWPROC_MAX_NCS		4
#define GWPROC_START_MS		10000	/* start until every listener is up */
#define GWPROC_STOP_MS		10000	/* SIGTERM until exit */

/* One [ncs.NAME] section. Lines in extra override gwproc's defaults by key. */
struct gwproc_ncs {
	const char	*name;		/* NULL = "n1", "n2", ... */
	const char	*ncs_id;	/* NULL = "NCSPEER" */
	uint16_t	 lower_port;
	uint16_t	 upper_port;
	uint16_t	 query_port;	/* 0 = none */
	bool		 query;		/* gwrig: dial the peer's query port */
	uint16_t	 buddy_lower_port;	/* 0 = no buddy */
	uint16_t	 buddy_upper_port;
	const char	*extra;		/* "key = value\n" lines */
};

struct gwproc_opts {
	const char	*mos_id;	/* NULL = "mosgw.test" */
	bool		 no_query;	/* no query listener */
	/* lines for [gateway], override by key */
	const char	*gateway_extra;
	const char	*database_extra;	/* lines for [database] */
	const char	*log_level;	/* NULL = "debug" */
	const char	*log_extra;	/* lines for [log]; rate_burst = 0 */
	/*
	 * The HTTP API: off (port 0) unless api_tokens is set, the lines of
	 * its tokens file (NAME ROLE TOKEN); api_extra adds lines to [api].
	 */
	const char	*api_tokens;
	const char	*api_extra;
	/* whole sections ("[events]\n...") written after [api] */
	const char	*sections_extra;
	struct gwproc_ncs ncs[GWPROC_MAX_NCS];
	size_t		 nncs;
	/*
	 * PostgreSQL whatever MOSGW_DB_DRIVER says, on this database (a
	 * pgdb's dsn), which several gateways may share: not made or
	 * dropped by gwproc.
	 */
	const char	*pg_dsn;
	/* SQLite whatever MOSGW_DB_DRIVER says (without pg_dsn) */
	bool		 sqlite;
};

struct gwproc {
	/* strings point into the caller's storage */
	struct gwproc_opts opts;
	char		 dir[256];	/* the mkdtemp directory */
	char		 conf[300];
	char		 db[300];	/* sqlite */
	enum store_driver driver;
	struct pgdb	 pg;		/* postgresql */
	char		 log[300];	/* this run's log file */
	char		 errlog[300];	/* this run's stdout and stderr */
	uint16_t	 lower_port;	/* the gateway's listeners */
	uint16_t	 upper_port;
	uint16_t	 query_port;	/* 0 with no_query */
	uint16_t	 api_port;	/* 0 without api_tokens */
	char		 tokens[300];	/* the API's tokens file */
	pid_t		 pid;		/* -1 when not running */
	int		 runs;		/* starts so far */
	/* exit status of the last run, -1 unknown */
	int		 last_status;
};

/* The directory with the programs: $MOSGW_BIN, else "bin". */
const char	*gwproc_bindir(void);
/* A port on 127.0.0.1 that was free a moment ago. 0 on failure. */
uint16_t	 gwproc_free_port(void);

/* Make the directory and pick ports; the gateway is not started. */
struct gwproc	*gwproc_new(const struct gwproc_opts *);
/* Kill the gateway if running, remove the directory ($MOSGW_KEEP keeps it). */
void		 gwproc_free(struct gwproc *);
/* Write the configuration and start; 0 once listening, -1 (logs printed). */
int		 gwproc_start(struct gwproc *);
/* SIGTERM and wait: the exit status, 128+N for signal N, -1 on timeout. */
int		 gwproc_stop(struct gwproc *);
/* SIGKILL and reap. */
void		 gwproc_kill(struct gwproc *);
int		 gwproc_signal(struct gwproc *, int);
bool		 gwproc_running(struct gwproc *);
/* CPU seconds (user + system) the gateway has used; -1 if not running. */
double		 gwproc_cpu(struct gwproc *);
/* Its open file descriptors; -1 if not running. */
int		 gwproc_fd_count(struct gwproc *);
/* Write the configuration file only (e.g. before a SIGHUP); same log. */
int		 gwproc_write_config(struct gwproc *);

/* A whole file, malloc'd; "" when it cannot be read. */
char		*gwproc_read_file(const char *);
/* The current run's log (malloc'd, "" when none). */
char		*gwproc_log_text(struct gwproc *);
size_t		 gwproc_log_size(struct gwproc *);
/*
 * Wait for a log line at or after byte `from` that holds every word given
 * (NULL-terminated). Returns the offset just past that line, or -1.
 */
long		 gwproc_log_wait(struct gwproc *, long from, int timeout_ms,
		    ...) __attribute__((sentinel));
/* Lines at or after `from` holding every word. */
int		 gwproc_log_count(struct gwproc *, long from, ...)
		    __attribute__((sentinel));
/* Print the tail of the current log and of the child's stderr. */
void		 gwproc_log_dump(struct gwproc *, const char *label);

/*
 * Run $MOSGW_BIN/mosctl --db DB ARGS... (NULL-terminated). Returns its exit
 * status (-1 if it could not run or timed out); *out (if not NULL) gets its
 * stdout, malloc'd.
 */
int		 gwproc_mosctl(struct gwproc *, char **out, ...)
		    __attribute__((sentinel));
/*
 * The same without --db (e.g. --url ... for the API); *err (if not NULL)
 * gets its stderr, malloc'd.
 */
int		 gwproc_mosctl_cmd(struct gwproc *, char **out, char **err, ...)
		    __attribute__((sentinel));
/* mosctl asset put OBJID --slug SLUG; the exit status. */
int		 gwproc_asset_put(struct gwproc *, const char *obj_id,
		    const char *slug);
int		 gwproc_asset_delete(struct gwproc *, const char *obj_id);

/* Open the gateway's database with the queue API (a second connection). */
struct queue	*gwproc_queue(struct gwproc *);
/*
 * A store connection to the gateway's database, SQLite file or PostgreSQL
 * (STORE_OPEN_* flags; busy 5 s), or NULL with a warning.
 */
struct store	*gwproc_store(struct gwproc *, int flags);
/* The gateway's database, for gwdb_open (driver, path or dsn; busy 5 s). */
struct gwdb_opts;
void		 gwproc_db_opts(struct gwproc *, struct gwdb_opts *);
/* Jobs of a lane (NULL any) in a state (-1 any); -1 if unreadable. */
long		 gwproc_job_count(struct gwproc *, const char *lane, int state);
/* Wait until at least n such jobs exist. Returns the count reached. */
long		 gwproc_wait_jobs(struct gwproc *, const char *lane, int state,
		    long n, int timeout_ms);

/* Jobs of the lane (NULL = any) QUEUED or RUNNING, in one read; -1 on error. */
long		 gwproc_jobs_pending(struct gwproc *, const char *lane);
/* Wait until no job of the lane is QUEUED or RUNNING. 0, or -1 on timeout. */
int		 gwproc_wait_idle(struct gwproc *, const char *lane,
		    int timeout_ms);

/* A child program whose stdout a test reads line by line (node, npm). */
struct gwchild {
	pid_t		 pid;		/* -1 once reaped */
	int		 out;		/* its stdout; -1 at end of file */
	char		*buf;		/* all of its stdout so far */
	size_t		 len;
	size_t		 cap;
	size_t		 scan;		/* lines before this were looked at */
	char		*line;		/* the last line returned */
	int		 status;	/* exit status once reaped, else -1 */
};

/* Start argv[0] (PATH searched) in dir; stderr to errlog. 0 or -1. */
int		 gwchild_start(struct gwchild *, const char *dir,
		    char *const argv[], const char *errlog);
/* The next stdout line holding needle; NULL on timeout or end of output. */
const char	*gwchild_line(struct gwchild *, const char *needle,
		    int timeout_ms);
/* Wait for exit: the status (128+N for signal N), or -1 on timeout. */
int		 gwchild_wait(struct gwchild *, int timeout_ms);
/* Kill if running, reap, free. */
void		 gwchild_clear(struct gwchild *);

/*
 * Node.js present and the pinned interop library installed in dir
 * (conformance/interop; `npm ci` when missing, its output in errlog.npm):
 * 0; 1 after printing a SKIP line (no node, npm registry unreachable);
 * -1 on any other failure (printed).
 */
int		 gwproc_node_ready(const char *dir, const char *errlog);

/* The usual rig: one scripted NCS and a gateway with one NCS section for it. */
struct gwrig {
	struct ncspeer	*ncs;
	struct gwproc	*gw;
	struct gwproc_opts opts;
	char		 lane[64];	/* "ncs:n1" */
	/* ncs[0].extra with the encoding added */
	char		 extra[2048];
};

/*
 * Start an NCS peer (encoding enc) and a gateway whose section [ncs.n1]
 * points at it, with ncs_extra added to that section; wait until the
 * gateway's lower and upper links have connected. NULL on failure.
 */
struct gwrig	*gwrig_new(enum mos_enc enc, const char *ncs_extra);
/* As gwrig_new, from a prepared options struct (ncs[0] gets the ports). */
struct gwrig	*gwrig_new_opts(enum mos_enc enc, const struct gwproc_opts *);
void		 gwrig_free(struct gwrig *);
/* Dial the gateway's port; the connection number or -1. */
int		 gwrig_dial(struct gwrig *, enum ncspeer_port);
/*
 * Send a request of that type with our envelope (a heartbeat gets the time)
 * on conn and wait for the reply with its messageID. NULL on timeout.
 */
const struct ncspeer_frame *gwrig_request(struct gwrig *, int conn,
		    enum mos_type, int timeout_ms);
/* Print what the peer received and the gateway's log (after a failure). */
void		 gwrig_dump(struct gwrig *, const char *what, const char *file,
		    int line);

/*
 * In cmocka tests: assert cond, and on failure print the rig's state first,
 * so that a failing integration test says what the gateway did.
 */
#define GWRIG_CHECK(r, cond) do {					\
	if (!(cond)) {							\
		gwrig_dump((r), #cond, __FILE__, __LINE__);		\
		fail_msg("%s:%d: %s", __FILE__, __LINE__, #cond);	\
	}								\
} while (0)

#endif /* GWPROC_H */
