/*
 * The scenario suite against Sofie's @mos-connection/connector playing a
 * MOS device (conformance/interop/device.js under Node.js, the version
 * pinned by the lockfile). The library differs from the spec in known
 * places, written down in conformance/README.md; this program checks that
 * every scenario comes out as that list says: a listed one fails, any other
 * passes. A library upgrade that changes behaviour shows up here.
 *
 * Skipped, saying why, without Node.js or when npm cannot reach its
 * registry to install the pinned library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance/tests/rtest.h"

/* The scenarios the library fails, and why (conformance/README.md). */
static const struct {
	const char	*name;
	const char	*why;
} differences[] = {
	{ "p0-answers-not-answered", "answers a stray mosAck with a NACK" },
	{ "p0-malformed-xml", "no reply at all to a malformed frame" },
	{ "p0-missing-messageid", "replies carry a messageID of its own" },
	{ "p0-split-frame", "decodes each TCP chunk alone: one-byte writes "
	    "are lost" },
	{ "p0-split-frame-upper", "decodes each TCP chunk alone: odd chunks "
	    "are lost" },
	{ "p0-unknown-message-upper", "answers with mosAck on the upper "
	    "port" },
	{ "p1-mosreqall-listall", "drops the mosListAll when its link to the "
	    "NCS is not confirmed by a heartbeat at that moment" },
	{ "p1-mosreqobj-split", "decodes each TCP chunk alone" },
	{ "p1-mosreqobj-utf8-entities", "NACKs an unknown object with objID "
	    "0" },
	{ "p2-roreq", "writes roEdStart back in UTC with a zone" },
	{ "p3-mosreqobjlist", "cannot read a mosReqObjList without "
	    "searchGroup" },
};

/* The listed reason for a scenario, or NULL. */
static const char *
difference(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof differences / sizeof differences[0]; i++) {
		if (strcmp(differences[i].name, name) == 0)
			return differences[i].why;
	}
	return NULL;
}

/* Judge mosreplay's scenario lines against the list. */
static void
judge(const char *out, int *pass, int *fail)
{
	const char	*l, *e;
	char		 verdict[16], prof[8], name[128];
	const char	*why;
	size_t		 i;
	int		 seen = 0;

	for (l = out; l != NULL && *l != '\0'; l = e != NULL ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (sscanf(l, "%15s %7s %127s", verdict, prof, name) != 3 ||
		    (strcmp(verdict, "PASS") != 0 &&
		    strcmp(verdict, "FAIL") != 0) || prof[0] != 'p')
			continue;
		seen++;
		why = difference(name);
		if ((strcmp(verdict, "FAIL") == 0) == (why != NULL)) {
			printf("ok   %s: %s\n", name, why != NULL ? why :
			    "as the spec says");
			(*pass)++;
		} else {
			printf("FAIL %s: %s\n", name, why != NULL ?
			    "passes now, but is listed as a difference" :
			    "fails, and is not a known difference");
			(*fail)++;
		}
	}
	for (i = 0; i < sizeof differences / sizeof differences[0]; i++) {
		if (strstr(out, differences[i].name) == NULL) {
			printf("FAIL %s: listed, but not in the suite\n",
			    differences[i].name);
			(*fail)++;
		}
	}
	if (seen == 0) {
		printf("FAIL no scenario was played\n");
		(*fail)++;
	}
}

int
main(void)
{
	struct gwchild	 node, rep;
	char		 dir[1024], errlog[512], scen[1024], dev[128], lst[64];
	char		 p[5][8];
	char		 n0[] = "node", n1[] = "device.js", k0[] = "--mos-id",
			 k1[] = "--ncs-id", k2[] = "--lower", k3[] = "--upper",
			 k4[] = "--query", k5[] = "--ncs-lower",
			 k6[] = "--ncs-upper", mos[] = RTEST_MOS_ID,
			 ncs[] = RTEST_NCS_ID;
	char		*argv[20], npmlog[520];
	int		 i, rc, pass = 0, fail = 0;

	snprintf(dir, sizeof dir, "%s/conformance/interop", rtest_top());
	snprintf(errlog, sizeof errlog, "%s/sofie-device.%d.log",
	    getenv("MOSGW_TMP") != NULL ? getenv("MOSGW_TMP") : "/tmp",
	    (int)getpid());
	snprintf(npmlog, sizeof npmlog, "%s.npm", errlog);
	rc = gwproc_node_ready(dir, errlog);
	unlink(npmlog);
	if (rc != 0) {
		printf(rc == 1 ? "0 passed, 0 failed, 1 skipped\n" :
		    "0 passed, 1 failed\n");
		return rc == 1 ? 0 : 1;
	}
	for (i = 0; i < 5; i++)
		snprintf(p[i], sizeof p[i], "%u", gwproc_free_port());
	i = 0;
	argv[i++] = n0;
	argv[i++] = n1;
	argv[i++] = k0;
	argv[i++] = mos;
	argv[i++] = k1;
	argv[i++] = ncs;
	argv[i++] = k2;
	argv[i++] = p[0];
	argv[i++] = k3;
	argv[i++] = p[1];
	argv[i++] = k4;
	argv[i++] = p[2];
	argv[i++] = k5;
	argv[i++] = p[3];
	argv[i++] = k6;
	argv[i++] = p[4];
	argv[i] = NULL;
	if (gwchild_start(&node, dir, argv, errlog) != 0 ||
	    gwchild_line(&node, "\"ready\"", 30000) == NULL) {
		printf("device.js did not start\n0 passed, 1 failed\n");
		gwchild_clear(&node);
		return 1;
	}
	snprintf(scen, sizeof scen, "%s/fixtures/scenarios", rtest_top());
	snprintf(dev, sizeof dev, "127.0.0.1:%s:%s:%s", p[0], p[1], p[2]);
	/* the library takes a few seconds to give up on what it never gets */
	snprintf(lst, sizeof lst, "%s:%s", p[3], p[4]);
	(void)rtest_mosreplay(&rep, "play", scen, "--device", dev,
	    "--listen", lst, "--fast", "--timeout", "3000", (char *)NULL);
	rtest_print(stdout, "mosreplay against @mos-connection/connector",
	    rep.buf);
	judge(rep.buf != NULL ? rep.buf : "", &pass, &fail);
	gwchild_clear(&rep);
	gwchild_clear(&node);
	unlink(errlog);
	printf("%d passed, %d failed\n", pass, fail);
	return fail == 0 ? 0 : 1;
}
