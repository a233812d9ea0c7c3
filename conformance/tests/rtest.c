/* rtest: shared set-up of the conformance tests (rtest.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/tests/rtest.h"

#define RTEST_MAX_ARGS	32

/* Where the sources are. */
const char *
rtest_top(void)
{
	const char	*t = getenv("MOSGW_TOP");

	return t != NULL && *t != '\0' ? t : ".";
}

/* A mosgw for the scenarios. */
struct gwproc *
rtest_gateway(const char *gateway_extra)
{
	struct gwproc_opts	 o;
	struct gwproc		*gp;

	memset(&o, 0, sizeof o);
	o.mos_id = RTEST_MOS_ID;
	o.gateway_extra = gateway_extra;
	o.log_level = "info";
	o.nncs = 1;
	o.ncs[0].name = "conformance";
	o.ncs[0].ncs_id = RTEST_NCS_ID;
	o.ncs[0].lower_port = gwproc_free_port();
	o.ncs[0].upper_port = gwproc_free_port();
	/*
	 * mosreplay --listen takes these ports once it runs: the links come
	 * up within a second, and a heartbeat waits long for its answer.
	 * The recorded exchanges hold no initial sync of CONF-1 (put before
	 * the first start): none is sent.
	 */
	o.ncs[0].extra = "reconnect_min = 1\nreconnect_max = 1\n"
	    "breaker_threshold = 1000\nack_timeout = 60\n"
	    "initial_sync = none\n";
	if ((gp = gwproc_new(&o)) == NULL)
		return NULL;
	/* the database is made first: mosctl never creates one */
	if (gwproc_mosctl(gp, NULL, "init", (char *)NULL) != 0 ||
	    gwproc_mosctl(gp, NULL, "asset", "put", "CONF-1", "--slug",
	    "Conformance clip", "--dur", "1500", "--path",
	    "http://media.example/conf-1.mp4", "--tech", "H.264",
	    "--description", "Clip used by the conformance suite", "--by",
	    "conformance", (char *)NULL) != 0 || gwproc_start(gp) != 0) {
		printf("could not start mosgw with object CONF-1\n");
		gwproc_free(gp);
		return NULL;
	}
	return gp;
}

/* Where mosreplay's stderr goes (removed once it has exited). */
static void
rtest_errlog(char *buf, size_t len)
{
	snprintf(buf, len, "%s/mosreplay.%d.err", getenv("MOSGW_TMP") !=
	    NULL ? getenv("MOSGW_TMP") : "/tmp", (int)getpid());
}

/* Start mosreplay with the arguments in ap. 0 or -1. */
static int
rtest_start(struct gwchild *ch, char *errlog, size_t elen, va_list ap)
{
	char		*argv[RTEST_MAX_ARGS], path[1024];
	int		 n = 1;

	snprintf(path, sizeof path, "%s/mosreplay", gwproc_bindir());
	rtest_errlog(errlog, elen);
	argv[0] = path;
	while (n < RTEST_MAX_ARGS - 1 && (argv[n] = va_arg(ap, char *)) !=
	    NULL)
		n++;
	argv[n] = NULL;
	return gwchild_start(ch, NULL, argv, errlog);
}

/* Start mosreplay in the background. */
int
rtest_mosreplay_start(struct gwchild *ch, ...)
{
	char		errlog[400];
	va_list		ap;
	int		rc;

	va_start(ap, ch);
	rc = rtest_start(ch, errlog, sizeof errlog, ap);
	va_end(ap);
	return rc;
}

/* Wait for a mosreplay started in the background; its exit status. */
int
rtest_mosreplay_wait(struct gwchild *ch)
{
	char	errlog[400];
	int	st;

	st = gwchild_wait(ch, RTEST_RUN_MS);
	/* read what is still in the pipe, up to its end */
	(void)gwchild_line(ch, "\001no such line", 5000);
	rtest_errlog(errlog, sizeof errlog);
	unlink(errlog);
	return st;
}

/* Run mosreplay and wait for it. */
int
rtest_mosreplay(struct gwchild *ch, ...)
{
	char		 errlog[400];
	va_list		 ap;
	int		 rc, st;

	va_start(ap, ch);
	rc = rtest_start(ch, errlog, sizeof errlog, ap);
	va_end(ap);
	if (rc != 0)
		return -1;
	st = gwchild_wait(ch, RTEST_RUN_MS);
	/* read what is still in the pipe, up to its end */
	(void)gwchild_line(ch, "\001no such line", 5000);
	if (st != 0) {
		char *e = gwproc_read_file(errlog);

		fprintf(stderr, "mosreplay stderr:\n%s", e);
		free(e);
	}
	unlink(errlog);
	return st;
}

/* A file under $MOSGW_TMP with this text. */
void
rtest_write_file(char *buf, size_t len, const char *name, const char *text)
{
	FILE	*f;

	snprintf(buf, len, "%s/%s.%d", getenv("MOSGW_TMP") != NULL ?
	    getenv("MOSGW_TMP") : "/tmp", name, (int)getpid());
	if ((f = fopen(buf, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) != 0) {
		fprintf(stderr, "%s: cannot write\n", buf);
		abort();
	}
}

/* Print a child's output with every line indented (no line of it can be
 * taken for a test count by tools/run-tests.sh). */
void
rtest_print(FILE *f, const char *title, const char *text)
{
	const char	*l, *e;

	fprintf(f, "---- %s\n", title);
	for (l = text; l != NULL && *l != '\0'; l = e != NULL ? e + 1 : NULL) {
		e = strchr(l, '\n');
		fprintf(f, "  | %.*s\n", e != NULL ? (int)(e - l) : (int)strlen(l),
		    l);
	}
}
