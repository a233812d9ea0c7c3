/*
 * mosctl: the operator's command line. Each noun (job, asset, ...) lives in
 * its own file and works directly on the database file given with --db, so
 * that jobs can be recovered while the gateway is down. With --url and
 * --token-file, commands speak to the gateway's HTTP API instead
 * (mosctl_api.c); the command functions only see struct mosctl and their own
 * arguments.
 */
#ifndef MOSCTL_H
#define MOSCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct mosctl_api;

struct mosctl {
	const char	*db;		/* --db FILE (or the config's, named) */
	const char	*config;	/* -c CONFIG: the daemon's configuration */
	int		 driver;	/* enum store_driver of the database */
	const char	*dsn;		/* postgresql: from the configuration */
	const char	*url;		/* --url URL: over the HTTP API */
	const char	*token_file;	/* --token-file FILE */
	const char	*cacert;	/* --cacert FILE (https) */
	struct mosctl_api *api;		/* mosctl_api.c, once used */
	bool		 json;		/* --json: machine-readable output */
	bool		 sync_normal;	/* --sync normal */
	FILE		*out;
	FILE		*err;
};

/* Exit statuses shared by every command. */
#define MOSCTL_EXIT_OK		0
#define MOSCTL_EXIT_FAIL	1	/* the operation failed (not found, wrong state) */
#define MOSCTL_EXIT_USAGE	64	/* EX_USAGE */
#define MOSCTL_EXIT_API		69	/* EX_UNAVAILABLE: the API could not be reached or failed */
#define MOSCTL_EXIT_DB		74	/* EX_IOERR: database could not be opened/written */

/* A noun's verbs: argv[0] is the verb, its options follow. */
struct mosctl_verb {
	const char	*name;
	int		(*run)(struct mosctl *, int argc, char **argv);
};

/* tools/mosctl.c: run the verb named by argv[0] from a NULL-terminated table. */
int	mosctl_dispatch(struct mosctl *, const char *noun,
	    const struct mosctl_verb *, void (*usage)(FILE *), int argc,
	    char **argv);

/* tools/mosctl.c: "mosctl NOUN: WHAT (mosctl --help)"; MOSCTL_EXIT_USAGE */
int	mosctl_usage_error(struct mosctl *, const char *noun, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));

/* tools/mosctl_job.c */
struct queue_job;
struct queue_event;
int	mosctl_job(struct mosctl *, int argc, char **argv);
void	mosctl_job_usage(FILE *);
/* "mosctl job: WHAT (mosctl --help)"; MOSCTL_EXIT_USAGE */
#define job_usage_error(ctl, ...) mosctl_usage_error((ctl), "job", __VA_ARGS__)
struct option;
#define JOB_GETOPT_ERR	(-2)
int	job_getopt(struct mosctl *, int argc, char **argv,
	    const struct option *);	/* the next option of a verb */
/* job_getopt taking only allowed (option letters) and --json */
int	job_getopt_only(struct mosctl *, int argc, char **argv,
	    const struct option *, const char *allowed);
bool	mosctl_token_ok(const char *, size_t max);	/* printable ASCII */
int64_t	mosctl_job_id(const char *);	/* "12" or "#12"; -1 if not */
int	mosctl_job_number(const char *, int *);	/* 0..1000000; -1 if not */
/* The printers shared by --db and --url: the ls table, show, an action. */
void	mosctl_job_head(FILE *);
void	mosctl_job_row(FILE *, const struct queue_job *, int64_t now);
void	mosctl_job_show_text(FILE *, const struct queue_job *,
	    const struct queue_event *, size_t, int64_t now);
void	mosctl_job_action(FILE *, const char *action, int64_t id,
	    const struct queue_job *);
void	mosctl_job_counted(FILE *, const char *action, size_t);
#define MOSCTL_JOB_ERR_LEN	52	/* a last error in a table, cut */
const char *mosctl_job_err(const char *, char[MOSCTL_JOB_ERR_LEN]);
/* tools/mosctl_jobapi.c: job ls|show|requeue|cancel|rerun|submit (--url) */
int	mosctl_job_api(struct mosctl *, int argc, char **argv);
/* tools/mosctl_worker.c: job claim|heartbeat|complete|fail (--url) */
int	mosctl_job_worker(struct mosctl *, int argc, char **argv);
/* tools/mosctl_asset.c */
struct gwdb;
struct gwdb *mosctl_gwdb_open(struct mosctl *);	/* asset and history nouns */
void	mosctl_no_db(struct mosctl *);	/* "no database at PATH ..." */
int	mosctl_init(struct mosctl *, int argc, char **argv);	/* a new file */
int	mosctl_asset(struct mosctl *, int argc, char **argv);
void	mosctl_asset_usage(FILE *);
/* tools/mosctl_history.c */
int	mosctl_history(struct mosctl *, int argc, char **argv);
void	mosctl_history_usage(FILE *);

/* tools/mosctl_ro.c */
int	mosctl_ro(struct mosctl *, int argc, char **argv);
void	mosctl_ro_usage(FILE *);
int	mosctl_ro_asset_usage(struct mosctl *, int argc, char **argv);

/* tools/mosctl_db.c: db migrate --from FILE.db --to DSN */
int	mosctl_db(struct mosctl *, int argc, char **argv);
void	mosctl_db_usage(FILE *);

/* tools/mosctl_status.c: over the API (--url) */
int	mosctl_links(struct mosctl *, int argc, char **argv);
int	mosctl_queue(struct mosctl *, int argc, char **argv);
int	mosctl_status(struct mosctl *, int argc, char **argv);
void	mosctl_status_usage(FILE *);

/* tools/mosctl_events.c: the event log over the API (--url) */
int	mosctl_events(struct mosctl *, int argc, char **argv);
void	mosctl_events_usage(FILE *);

#endif /* MOSCTL_H */
