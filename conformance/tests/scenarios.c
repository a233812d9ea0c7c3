/*
 * The scenario suite against a fresh mosgw (make conformance, make check):
 * start the real daemon on loopback with the identities the scenarios use,
 * give it the object they ask for, and play fixtures/scenarios/ with
 * mosreplay, listening where mosgw's own links to its NCS arrive. mosreplay's output is passed through: one line per scenario,
 * the table by profile, and "N passed, N failed, N skipped" (scenarios of
 * profiles mosgw does not offer are the skipped ones, listed as such).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/tests/rtest.h"

int
main(void)
{
	struct gwproc	*gp;
	struct gwchild	 ch;
	char		 dir[1024], dev[128], ncs[64];
	int		 st;

	if ((gp = rtest_gateway(NULL)) == NULL) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/fixtures/scenarios", rtest_top());
	snprintf(dev, sizeof dev, "127.0.0.1:%u:%u:%u", gp->lower_port,
	    gp->upper_port, gp->query_port);
	snprintf(ncs, sizeof ncs, "%u:%u", gp->opts.ncs[0].lower_port,
	    gp->opts.ncs[0].upper_port);
	st = rtest_mosreplay(&ch, "play", dir, "--device", dev, "--listen",
	    ncs, "--fast", (char *)NULL);
	fputs(ch.buf != NULL ? ch.buf : "", stdout);
	if (st != 0 && (ch.buf == NULL || strstr(ch.buf, " passed, ") ==
	    NULL))
		printf("mosreplay exit status %d\n0 passed, 1 failed\n", st);
	gwchild_clear(&ch);
	if (gwproc_stop(gp) != 0) {
		gwproc_log_dump(gp, "mosgw did not stop cleanly");
		st = 1;
	}
	gwproc_free(gp);
	return st == 0 ? 0 : 1;
}
