/*
 * mosgw: the MOS gateway daemon. main() only sequences startup and shutdown:
 * config -> log -> codec -> daemon (database, listeners, links) -> loop.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"

/* How to call. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: mosgw [-dn] -c FILE\n"
	    "       mosgw -D | -V | -h\n"
	    "  -c, --config FILE  configuration file (INI); relative paths in "
	    "it are\n"
	    "                     taken from its directory\n"
	    "  -n, --check        check the configuration and exit (0 ok, 1 "
	    "errors)\n"
	    "  -d, --debug        level debug, log to stderr\n"
	    "  -D, --defaults     print a configuration template: every key "
	    "with its\n"
	    "                     default (mosgw -D > mosgw.ini)\n"
	    "  -V, --version      print the version\n"
	    "  -h, --help         this text\n"
	    "signals: TERM/INT stop, HUP reloads the configuration\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "debug", no_argument, NULL, 'd' },
		{ "defaults", no_argument, NULL, 'D' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gw_config	*cfg;
	struct gw		*gw;
	const char		*file = NULL;
	char			*errs = NULL, *cause = NULL;
	bool			 check = false, debug = false;
	int			 c, rc;

	while ((c = getopt_long(argc, argv, "c:dDnVh", longopts, NULL)) !=
	    -1) {
		switch (c) {
		case 'c':
			file = optarg;
			break;
		case 'd':
			debug = true;
			break;
		case 'D':
			config_print_defaults(stdout);
			return 0;
		case 'n':
			check = true;
			break;
		case 'V':
			printf("mosgw %s (MOS %s)\n", MOSGW_VERSION,
			    MOSGW_MOS_REV);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (file == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((cfg = config_load(file, &errs)) == NULL) {
		fputs(errs, stderr);
		free(errs);
		return 1;
	}
	if (check && api_tls_check(cfg, &cause) != 0) {
		fprintf(stderr, "%s: %s\n", file, cause);
		free(cause);
		config_free(cfg);
		return 1;
	}
	if (check) {
		printf("configuration OK\n");
		config_free(cfg);
		return 0;
	}
	if (debug) {
		cfg->log_level = LL_DEBUG;
		free(cfg->log_target);
		cfg->log_target = xstrdup("stderr");
	}
	if (log_open((enum log_level)cfg->log_level, cfg->log_target,
	    &cause) != 0) {
		fprintf(stderr, "mosgw: log target %s\n", cause);
		free(cause);
		config_free(cfg);
		return 1;
	}
	log_set_rate((unsigned)cfg->log_rate_burst, cfg->log_rate_ms);
	log_set_format((enum log_format)cfg->log_format);
	mos_init();
	if ((gw = gw_new(cfg, &cause)) == NULL) {
		log_event(LL_ERROR, "start.error", "msg=%s", log_q(cause));
		/* once on stderr: the log may be there already */
		if (strcmp(cfg->log_target, "stderr") != 0)
			fprintf(stderr, "mosgw: %s\n", cause);
		free(cause);
		config_free(cfg);
		log_close();
		return 1;
	}
	rc = gw_run(gw);
	gw_free(gw);
	log_close();
	return rc;
}
