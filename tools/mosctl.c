/* mosctl: dispatch to the command nouns (see mosctl.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: mosctl [--db FILE | -c CONFIG] [--json] [--sync full|normal] NOUN VERB [ARGS]\n"
	    "       mosctl --url URL --token-file FILE [--cacert FILE] [--json] "
	    "NOUN VERB [ARGS]\n"
	    "  --db FILE (or MOSGW_DB): work on the database file (also while "
	    "the daemon is down)\n"
	    "  -c CONFIG (--config): the database of the daemon's configuration "
	    "(its [database], SQLite or PostgreSQL)\n"
	    "  --url URL (or MOSGW_URL), --token-file FILE (or "
	    "MOSGW_TOKEN_FILE): the daemon's HTTP API\n"
	    "  --json (before the noun or after the verb, for every noun): one "
	    "JSON object a line\n"
	    "  DUR: 500ms, 10s, 5m, 24h, 7d (also 1h30m), or bare seconds\n\n");
	fprintf(f, "  init                     create a new database at FILE\n");
	mosctl_job_usage(f);
	mosctl_asset_usage(f);
	mosctl_history_usage(f);
	mosctl_ro_usage(f);
	mosctl_status_usage(f);
	mosctl_events_usage(f);
	mosctl_db_usage(f);
	fprintf(f, "\nexit status: 0 ok, 1 operation failed (status: a link not "
	    "up), 64 usage, 69 API unreachable or failing, 74 database error\n");
}

static int db_main(struct mosctl *, int, char **);

/* events without --url: refused, whatever names a database. */
static int
events_need_daemon(void)
{
	fprintf(stderr, "mosctl events reads the running daemon's event "
	    "stream: give --url URL and --token-file FILE (or MOSGW_URL and "
	    "MOSGW_TOKEN_FILE); --db and -c do not apply, the events need "
	    "the daemon\n");
	return MOSCTL_EXIT_USAGE;
}

/*
 * -c CONFIG: the database of the daemon's configuration, whichever its
 * driver; for PostgreSQL the messages name the dsn without a password.
 */
static int
config_main(struct mosctl *ctl, int argc, char **argv)
{
	struct gw_config	*cfg;
	char			*errs = NULL, *where = NULL;
	int			 rc;

	if (ctl->db != NULL || ctl->url != NULL) {
		fprintf(stderr, "mosctl: -c CONFIG names the database; --db "
		    "and --url cannot come with it\n");
		return MOSCTL_EXIT_USAGE;
	}
	if ((cfg = config_load(ctl->config, &errs)) == NULL) {
		fprintf(stderr, "mosctl: %s", errs != NULL ? errs :
		    "cannot read the configuration\n");
		free(errs);
		return MOSCTL_EXIT_USAGE;
	}
	free(errs);
	ctl->driver = cfg->db_driver;
	if (cfg->db_driver == STORE_POSTGRESQL) {
		ctl->dsn = cfg->db_dsn;
		ctl->db = where = store_dsn_redact(cfg->db_dsn);
		if (where == NULL) {
			fprintf(stderr, "mosctl: out of memory\n");
			config_free(cfg);
			return MOSCTL_EXIT_FAIL;
		}
	} else
		ctl->db = cfg->db_path;
	rc = db_main(ctl, argc, argv);
	free(where);
	config_free(cfg);
	return rc;
}

int
mosctl_usage_error(struct mosctl *ctl, const char *noun, const char *fmt, ...)
{
	va_list	ap;

	fprintf(ctl->err, "mosctl %s: ", noun);
	va_start(ap, fmt);
	vfprintf(ctl->err, fmt, ap);
	va_end(ap);
	fprintf(ctl->err, " (mosctl --help)\n");
	return MOSCTL_EXIT_USAGE;
}

/* Run the verb named by argv[0] from a NULL-terminated table. */
int
mosctl_dispatch(struct mosctl *ctl, const char *noun,
    const struct mosctl_verb *verbs, void (*usage_fn)(FILE *), int argc,
    char **argv)
{
	const struct mosctl_verb	*v;
	int				 i, j;

	if (argc < 1) {
		usage_fn(ctl->err);
		return MOSCTL_EXIT_USAGE;
	}
	/* --json may follow the verb, anywhere before a "--". */
	for (i = j = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < argc)
				argv[j++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			ctl->json = true;
		else
			argv[j++] = argv[i];
	}
	argc = j;
	argv[argc] = NULL;
	for (v = verbs; v->name != NULL; v++) {
		if (strcmp(argv[0], v->name) == 0)
			return v->run(ctl, argc, argv);
	}
	fprintf(ctl->err, "mosctl: unknown %s command '%s'\n", noun, argv[0]);
	usage_fn(ctl->err);
	return MOSCTL_EXIT_USAGE;
}

/*
 * The nouns over the HTTP API (--url). Nouns that only work on the
 * database file say so.
 */
static int
api_main(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb nouns[] = {
		{ "status", mosctl_status },
		{ "links", mosctl_links },
		{ "queue", mosctl_queue },
		{ "history", mosctl_history },	/* ls, export */
		{ "asset", mosctl_asset },	/* put, delete, ls, show, import */
		{ "job", mosctl_job_api },	/* ls show ... submit claim ... */
		{ "events", mosctl_events },	/* no verb: its options */
		{ NULL, NULL },
	};
	const struct mosctl_verb	*v;
	int				 rc;

	for (v = nouns; v->name != NULL; v++) {
		if (strcmp(argv[0], v->name) == 0)
			break;
	}
	if (v->name == NULL) {
		fprintf(stderr, "mosctl: '%s' works on the database file only "
		    "(--db FILE); over the API (--url) mosctl has: status, "
		    "links, queue stats, history ls|export, asset "
		    "put|delete|ls|show|import, job "
		    "ls|show|requeue|cancel|rerun|submit|claim|heartbeat|"
		    "complete|fail, events\n", argv[0]);
		return MOSCTL_EXIT_USAGE;
	}
	rc = v->run(ctl, argc - 1, argv + 1);
	mosctl_api_close(ctl);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "sync", required_argument, NULL, 's' },
		{ "url", required_argument, NULL, 'U' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mosctl	 ctl = { .out = stdout, .err = stderr };
	const char	*env;
	int		 c;

	if ((env = getenv("MOSGW_TOKEN_FILE")) != NULL && *env != '\0')
		ctl.token_file = env;
	/* "+": stop at the first non-option so nouns keep their own options. */
	while ((c = getopt_long(argc, argv, "+c:d:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			ctl.config = optarg;
			break;
		case 'd':
			ctl.db = optarg;
			break;
		case 'U':
			ctl.url = optarg;
			break;
		case 'T':
			ctl.token_file = optarg;
			break;
		case 'C':
			ctl.cacert = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 's':
			if (strcmp(optarg, "normal") == 0)
				ctl.sync_normal = true;
			else if (strcmp(optarg, "full") != 0) {
				fprintf(stderr, "mosctl: --sync takes full or normal\n");
				return MOSCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return MOSCTL_EXIT_OK;
		default:
			usage(stderr);
			return MOSCTL_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	/* db migrate names both of its databases itself */
	if (argc >= 1 && strcmp(argv[0], "db") == 0) {
		if (ctl.config != NULL || ctl.db != NULL || ctl.url != NULL) {
			fprintf(stderr, "mosctl db: the databases are named by "
			    "--from and --to; --db, -c and --url do not "
			    "apply\n");
			return MOSCTL_EXIT_USAGE;
		}
		return mosctl_db(&ctl, argc - 1, argv + 1);
	}
	/* defaults from the environment, unless -c names the database */
	if (ctl.config == NULL && ctl.db == NULL &&
	    (env = getenv("MOSGW_DB")) != NULL && *env != '\0')
		ctl.db = env;
	if (ctl.config == NULL && ctl.url == NULL &&
	    (env = getenv("MOSGW_URL")) != NULL && *env != '\0')
		ctl.url = env;
	if (argc < 1) {
		usage(stderr);
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl.db != NULL && ctl.url != NULL) {
		fprintf(stderr, "mosctl: both a database (--db or MOSGW_DB) "
		    "and an API (--url or MOSGW_URL) are given: choose one\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl.config != NULL)
		return config_main(&ctl, argc, argv);
	if (ctl.url != NULL)
		return api_main(&ctl, argc, argv);
	if (strcmp(argv[0], "events") == 0)
		return events_need_daemon();
	if (strcmp(argv[0], "status") == 0 || strcmp(argv[0], "links") == 0 ||
	    strcmp(argv[0], "queue") == 0) {
		fprintf(stderr, "mosctl %s speaks to the running daemon: give "
		    "--url URL and --token-file FILE (or MOSGW_URL and "
		    "MOSGW_TOKEN_FILE)\n", argv[0]);
		return MOSCTL_EXIT_USAGE;
	}
	return db_main(&ctl, argc, argv);
}

/* The commands on the database named by ctl->db (and driver, dsn). */
static int
db_main(struct mosctl *ctl, int argc, char **argv)
{
	if (ctl->db == NULL) {
		fprintf(stderr, "mosctl: no database: give --db FILE (or set "
		    "MOSGW_DB), or --url URL and --token-file FILE for the "
		    "daemon's API\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (strcmp(argv[0], "events") == 0)
		return events_need_daemon();
	if (strcmp(argv[0], "init") == 0)
		return mosctl_init(ctl, argc - 1, argv + 1);
	if (strcmp(argv[0], "job") == 0)
		return mosctl_job(ctl, argc - 1, argv + 1);
	if (strcmp(argv[0], "asset") == 0)
		return mosctl_asset(ctl, argc - 1, argv + 1);
	if (strcmp(argv[0], "history") == 0)
		return mosctl_history(ctl, argc - 1, argv + 1);
	if (strcmp(argv[0], "ro") == 0)
		return mosctl_ro(ctl, argc - 1, argv + 1);
	fprintf(stderr, "mosctl: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return MOSCTL_EXIT_USAGE;
}
