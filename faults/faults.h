/*
 * faults: the reliability matrix as tests against the real mosgw.
 *
 * Each row of the matrix is a function that builds its own rig (the real
 * mosgw, the scripted NCS of gateway/tests, the chaos proxy mosproxy, the
 * SQLite shim faultvfs), injects its fault, and fills in what it observed,
 * its figures and pass/fail/skip. faults.c runs them and prints the table;
 * soak.c is the long mixed run.
 */
#ifndef FAULTS_H
#define FAULTS_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/tests/gwproc.h"

#define F_WAIT_MS	10000	/* generous: a busy 2-core machine */
#define F_DRAIN_MS	60000

enum row_result {
	ROW_PASS = 0,
	ROW_FAIL,
	ROW_SKIP,	/* needs something this machine lacks */
	ROW_NA,		/* the feature does not exist in mosgw */
};

struct row {
	int		 num;
	const char	*fault;
	const char	*expected;
	bool		 full;		/* make faults, not the check subset */
	enum row_result	 result;
	char		 observed[512];
	char		 figures[512];
	double		 secs;
};

typedef void	(*row_fn)(struct row *);

/* Fill observed (printf) and mark the row; fail keeps the first reason. */
void	row_note(struct row *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	row_fig(struct row *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	row_fail(struct row *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	row_skip(struct row *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* Check cond; on failure mark the row with the text and goto out. */
#define ROW_CHECK(row, cond, ...) do {					\
	if (!(cond)) {							\
		row_fail((row), __VA_ARGS__);				\
		goto out;						\
	}								\
} while (0)

/* The chaos proxy as a child process, driven over its control port. */
struct proxy {
	struct gwchild	 ch;
	uint16_t	 port;		/* where to connect */
	uint16_t	 ctl_port;
	int		 ctl;		/* control connection */
	char		 reply[256];	/* the last answer */
	char		 errlog[256];	/* its stderr; removed when empty */
};

int	proxy_start(struct proxy *, uint16_t target, unsigned seed);
/* One command; 0 when it answered "ok" (answer in p->reply). */
int	proxy_cmd(struct proxy *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* A counter from "stats" ("conns", "open", "up", "down", "cuts"); -1. */
long long proxy_stat(struct proxy *, const char *key);
void	proxy_stop(struct proxy *);

/*
 * A rig: the scripted NCS and mosgw, with (proxied) the gateway's outbound
 * lower and upper links going through a chaos proxy each.
 */
struct frig {
	struct gwrig	*r;
	struct proxy	 px[2];		/* lower, upper */
	bool		 proxied;
	char		 extra[1024];
};

/* database_extra/ncs_extra may be NULL. NULL on failure (printed). */
struct frig	*frig_new(bool proxied, const char *gateway_extra,
		    const char *database_extra, const char *ncs_extra);
/* With the HTTP API: its tokens file's lines and [api] lines (may be NULL). */
struct frig	*frig_new_api(bool proxied, const char *gateway_extra,
		    const char *database_extra, const char *ncs_extra,
		    const char *api_tokens, const char *api_extra);
/* Start (again) with the shim's mode in the environment (NULL: none). */
int		 frig_start(struct frig *, const char *vfs_mode);
/* Wait until both outbound links of the gateway are open at the NCS. */
int		 frig_links(struct frig *, int timeout_ms);
/* frig_new, frig_start and frig_links; NULL and the row failed on error. */
struct frig	*frig_up(struct row *, bool proxied, const char *gateway_extra,
		    const char *database_extra, const char *ncs_extra);
void		 frig_free(struct frig *);

/* The faultvfs shared object; NULL if it was not built. */
const char	*fault_vfs_path(void);
/* Put LD_PRELOAD and MOSGW_FAULTVFS* in the environment, or take them out. */
void		 fault_vfs_env(const char *mode, const char *clear,
		    const char *arm);
long long	 faultvfs_power_loss(const char *db_path);

/* kB of a /proc/PID/status field ("VmRSS", "VmHWM"); -1. */
long		 proc_kb(pid_t, const char *field);
/* Whether RSS figures mean anything in this build (not under ASan). */
bool		 rss_meaningful(void);
/* Open descriptors of a process; -1. */
int		 proc_fds(pid_t);
/* A non-blocking connect to 127.0.0.1:port; the descriptor or -1. */
int		 dial_raw(uint16_t port);
/* The gateway's descriptor count once at most want, or after 10 s. */
int		 fds_settle(struct gwproc *, int want);

/* A frame in UTF-8 with our test envelope around body (malloc'd). */
char		*frame_xml(int32_t message_id, const char *body);
/* Send a heartbeat on conn and wait for its answer; true if answered. */
bool		 heartbeat_ok(struct gwrig *, int conn);
/* Whether a reply with that messageID arrived on conn from `from` on. */
const struct ncspeer_frame *reply_on(struct gwrig *, int conn, int32_t id,
		    int timeout_ms);

/*
 * Delivery bookkeeping for the crash rows: assets put with mosctl (each
 * "stored" only when mosctl exited 0), and what the NCS received.
 */
struct ledger {
	int		 n;
	char		 (*id)[16];
	int		*rev;		/* newest revision mosctl reported */
	bool		*deleted;
	bool		 sync_normal;	/* mosctl --sync normal */
};

void	ledger_init(struct ledger *, int n, const char *prefix);
void	ledger_free(struct ledger *);
/* mosctl asset put / delete of entry i; true when mosctl said stored. */
bool	ledger_put(struct ledger *, struct gwproc *, int i);
bool	ledger_del(struct ledger *, struct gwproc *, int i);
/*
 * Compare with the NCS's record: *lost = entries whose newest acknowledged
 * revision never reached it, *dups = mosObj frames beyond one per
 * (objID, objRev), *back = revisions going backwards.
 */
void	ledger_check(struct ledger *, struct ncspeer *, long *lost,
	    long *dups, long *back);
/* mosObj frames with a revision newer than any mosctl reported stored. */
long	ledger_unreported(struct ledger *, struct ncspeer *);
/* messageIDs the NCS saw on our lower links for two different changes. */
long	msgid_reused(struct ncspeer *);
/* Entries whose newest reported revision is missing from the database. */
long	ledger_missing_in_db(struct ledger *, struct gwproc *);
/* PRAGMA integrity_check of the gateway's database: true when "ok". */
bool	db_integrity_ok(struct gwproc *);

/* Rows, by file. */
void	row01_split(struct row *);
void	row02_coalesced(struct row *);
void	row03_inner_mos(struct row *);
void	row04_truncated(struct row *);
void	row05_bad_chars(struct row *);
void	row06_bom_decl(struct row *);
void	row07_junk(struct row *);
void	row08_big(struct row *);
void	row09_slowloris(struct row *);
void	row10_doctype(struct row *);
void	row11_depth(struct row *);
void	row12_names(struct row *);
void	row13_never_acks(struct row *);
void	row14_wrong_id(struct row *);
void	row15_quirk_acks(struct row *);
void	row16_dup_inbound(struct row *);
void	row17_early(struct row *);
void	row18_blackhole(struct row *);
void	row19_refused(struct row *);
void	row20_conn_flood(struct row *);
void	row21_rst_mid_frame(struct row *);
void	row22_kill9(struct row *);
void	row23_power_loss(struct row *);
void	row24_disk_full(struct row *);
void	row25_busy(struct row *);
void	row26_io_error(struct row *);
void	row27_rest(struct row *);
void	row28_tls_certs(struct row *);
void	row29_tls_stall(struct row *);
void	row30_sigterm(struct row *);

/* soak.c */
int	soak_run(int seconds, unsigned seed);

#endif /* FAULTS_H */
