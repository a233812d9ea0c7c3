/*
 * Interop: Sofie's @mos-connection/connector (an independent MOS
 * implementation, run by Node.js with the version pinned in
 * conformance/interop/package-lock.json) plays the NCS against the real
 * mosgw: it connects both ways, heartbeats, asks reqMachInfo, receives and
 * acknowledges the objects published with mosctl, and asks mosReqAll; then
 * it works a running order: roCreate (the roAck reports each item's object
 * status), every roElementAction it can send, roStorySend, roReq (the order
 * must be the one worked out by hand) and roReqAll; then it creates a
 * placeholder (mosObjCreate) and searches (mosReqSearchableSchema,
 * mosReqObjList on the query port).
 *
 * conformance/interop/node_modules is installed with `npm ci` when missing.
 * Without node, or when npm cannot reach its registry, the suite is skipped
 * with a SKIP line saying why; any other failure is a failure.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/tests/gwproc.h"

#define NOBJ		5

/* The running-order steps after roCreate, in the order ncs.js sends them. */
static const char *const ro_steps[] = {
	"insertStories", "insertItems", "replaceStories", "replaceItems",
	"moveStories", "moveItems", "swapStories", "swapItems", "deleteItems",
	"deleteStories", "storySend",
};
#define STEP_MS		30000

struct interop {
	struct gwproc	*gw;
	struct gwchild	 node;
	char		 dir[512];	/* conformance/interop */
	char		 errlog[512];	/* node's stderr */
};

/* Print node's output and the gateway's log after a failure. */
static void
interop_dump(struct interop *t, const char *what, int line)
{
	char	cmd[600];

	fprintf(stderr, "==== %s:%d: failed: %s\n---- node stdout\n%s\n",
	    __FILE__, line, what, t->node.buf != NULL ? t->node.buf : "");
	snprintf(cmd, sizeof cmd, "tail -n 40 '%s' >&2", t->errlog);
	if (system(cmd) != 0)
		fprintf(stderr, "(no node stderr)\n");
	if (t->gw != NULL)
		gwproc_log_dump(t->gw, what);
}

#define CHECK(t, cond) do {						\
	if (!(cond)) {							\
		interop_dump((t), #cond, __LINE__);			\
		fail_msg("%s:%d: %s", __FILE__, __LINE__, #cond);	\
	}								\
} while (0)

/* Paths only: node and the gateway start inside the test. */
static int
setup(void **state)
{
	struct interop	*t;
	const char	*top = getenv("MOSGW_TOP");
	const char	*tmp = getenv("MOSGW_TMP");

	if ((t = calloc(1, sizeof *t)) == NULL)
		return -1;
	t->node.pid = -1;
	t->node.out = -1;
	snprintf(t->dir, sizeof t->dir, "%s/conformance/interop",
	    top != NULL && *top != '\0' ? top : ".");
	snprintf(t->errlog, sizeof t->errlog, "%s/interop-node.%d.log",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp", (int)getpid());
	*state = t;
	return 0;
}

/* Kill node, stop the gateway (exit 0 expected), clean up. */
static int
teardown(void **state)
{
	struct interop	*t = *state;
	char		 log[600];
	int		 st = 0;

	gwchild_clear(&t->node);
	if (t->gw != NULL && (st = gwproc_stop(t->gw)) != 0)
		interop_dump(t, "SIGTERM exit status", __LINE__);
	gwproc_free(t->gw);
	unlink(t->errlog);
	snprintf(log, sizeof log, "%s.npm", t->errlog);
	unlink(log);
	free(t);
	return st == 0 ? 0 : -1;
}

/* The gateway with one NCS section for the library's listeners. */
static void
start_gateway(struct interop *t, uint16_t lower, uint16_t upper)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.log_level = "debug";
	/*
	 * The library heartbeats every max(heartbeatInterval, timeout) = 3 s
	 * here and never on the query port: the default inbound idle timeout
	 * (none on query, at least 12.5 s on lower and upper) lets it be.
	 */
	o.nncs = 1;
	o.ncs[0].ncs_id = "NODENCS";
	o.ncs[0].lower_port = lower;
	o.ncs[0].upper_port = upper;
	o.ncs[0].extra = "heartbeat_interval = 1\nack_timeout = 3\n";
	CHECK(t, (t->gw = gwproc_new(&o)) != NULL);
	CHECK(t, gwproc_start(t->gw) == 0);
}

/* Start ncs.js against the gateway. */
static void
start_node(struct interop *t, uint16_t lower, uint16_t upper, uint16_t query)
{
	char	 p[6][8], n[8];
	char	*argv[32];
	int	 i = 0, k;

	snprintf(p[0], sizeof p[0], "%u", t->gw->lower_port);
	snprintf(p[1], sizeof p[1], "%u", t->gw->upper_port);
	snprintf(p[2], sizeof p[2], "%u", t->gw->query_port);
	snprintf(p[3], sizeof p[3], "%u", lower);
	snprintf(p[4], sizeof p[4], "%u", upper);
	snprintf(p[5], sizeof p[5], "%u", query);
	snprintf(n, sizeof n, "%d", NOBJ);
	{
		static char s[][16] = { "node", "ncs.js", "--mos-id",
		    "mosgw.test", "--ncs-id", "NODENCS", "--gw-lower",
		    "--gw-upper", "--gw-query", "--lower", "--upper", "--query",
		    "--expect", "--timeout", "60", "--ro", "1" };

		argv[i++] = s[0];
		argv[i++] = s[1];
		argv[i++] = s[2];
		argv[i++] = s[3];
		argv[i++] = s[4];
		argv[i++] = s[5];
		for (k = 0; k < 6; k++) {
			argv[i++] = s[6 + k];
			argv[i++] = p[k];
		}
		argv[i++] = s[12];
		argv[i++] = n;
		argv[i++] = s[13];
		argv[i++] = s[14];
		argv[i++] = s[15];
		argv[i++] = s[16];
	}
	argv[i] = NULL;
	CHECK(t, gwchild_start(&t->node, t->dir, argv, t->errlog) == 0);
}

/* The library connects, heartbeats, asks, and takes what we publish. */
static void
test_interop_sofie(void **state)
{
	struct interop	*t = *state;
	const char	*l;
	char		 id[32], want[64];
	uint16_t	 lower, upper, query;
	int		 rc, i;

	if ((rc = gwproc_node_ready(t->dir, t->errlog)) == 1)
		skip();
	assert_int_equal(rc, 0);
	lower = gwproc_free_port();
	upper = gwproc_free_port();
	query = gwproc_free_port();
	CHECK(t, lower != 0 && upper != 0 && query != 0);
	start_gateway(t, lower, upper);
	start_node(t, lower, upper, query);

	/* Both ways up, heartbeats answered, reqMachInfo answered truthfully. */
	CHECK(t, gwchild_line(&t->node, "\"event\":\"connected\"", STEP_MS)
	    != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"machInfo\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"profile0\":true") != NULL);
	CHECK(t, strstr(l, "\"profile1\":true") != NULL);
	CHECK(t, strstr(l, "\"profile3\":true") != NULL);
	CHECK(t, strstr(l, "\"deviceType\":\"MOS\"") != NULL);
	CHECK(t, gwchild_line(&t->node, "\"event\":\"ready\"", STEP_MS) != NULL);

	for (i = 1; i <= NOBJ; i++) {
		snprintf(id, sizeof id, "SOFIE-%d", i);
		CHECK(t, gwproc_asset_put(t->gw, id, "Published to Sofie") == 0);
	}
	/* Each object acknowledged by the library finishes its job. */
	CHECK(t, gwproc_wait_jobs(t->gw, "ncs:n1", QUEUE_DONE, NOBJ, STEP_MS) ==
	    NOBJ);
	CHECK(t, gwchild_line(&t->node, "\"event\":\"objects\"", STEP_MS) != NULL);
	t->node.scan = 0;
	for (i = 1; i <= NOBJ; i++) {
		snprintf(want, sizeof want, "\"objID\":\"SOFIE-%d\"", i);
		CHECK(t, (l = gwchild_line(&t->node, want, 1000)) != NULL);
		CHECK(t, strstr(l, "\"objRev\":1") != NULL);
		CHECK(t, strstr(l, "\"status\":\"NEW\"") != NULL);
		CHECK(t, strstr(l, "\"slug\":\"Published to Sofie\"") != NULL);
	}
	/* mosReqAll: ACK, then the mosListAll with every object. */
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"reqAllAck\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"status\":\"ACK\"") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"listAll\"", STEP_MS))
	    != NULL);
	for (i = 1; i <= NOBJ; i++) {
		snprintf(want, sizeof want, "\"objID\":\"SOFIE-%d\"", i);
		CHECK(t, strstr(l, want) != NULL);
	}
	/* A running order, every roElementAction, roStorySend, roReq/roList. */
	CHECK(t, (l = gwchild_line(&t->node, "\"step\":\"roCreate\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"roID\":\"SOFIE-RO\"") != NULL &&
	    strstr(l, "\"status\":\"OK\"") != NULL);
	CHECK(t, strstr(l, "S1/SOFIE-1=READY") != NULL);
	CHECK(t, strstr(l, "S1/NOPE=UNKNOWN OBJECT") != NULL);
	CHECK(t, strstr(l, "S2/SOFIE-2=READY") != NULL);
	for (i = 0; i < (int)(sizeof ro_steps / sizeof ro_steps[0]); i++) {
		snprintf(want, sizeof want, "\"step\":\"%s\"", ro_steps[i]);
		CHECK(t, (l = gwchild_line(&t->node, want, STEP_MS)) != NULL);
		CHECK(t, strstr(l, "\"status\":\"OK\"") != NULL);
	}
	/*
	 * By hand: S1[I1,I2] S2[I4]; S3 inserted before S2; I3 before I2;
	 * S3 replaced by S5[I9]; I3 by I6; S2 moved before S1; I2 before I1;
	 * S5 and S1 swapped; I2 and I6 swapped; I1 deleted; S5 deleted.
	 */
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"roList\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"order\":\"S2[I4] S1[I6,I2]\"") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"roListAll\"",
	    STEP_MS)) != NULL);
	CHECK(t, strstr(l, "\"roIDs\":[\"SOFIE-RO\"]") != NULL);
	/* Profile 3: a placeholder, the schema, searches on the query port. */
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"objCreate\"",
	    STEP_MS)) != NULL);
	CHECK(t, strstr(l, "\"status\":\"ACK\"") != NULL &&
	    strstr(l, "\"objID\":\"PH-") != NULL &&
	    strstr(l, "\"objRev\":1") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"schema\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "urn:mosgw:search:1") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"search\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"queryID\":\"search\"") != NULL &&
	    strstr(l, "\"total\":5,\"start\":1,\"end\":3") != NULL);
	for (i = 1; i <= 3; i++) {
		snprintf(want, sizeof want, "\"objID\":\"SOFIE-%d\"", i);
		CHECK(t, strstr(l, want) != NULL);
	}
	CHECK(t, strstr(l, "SOFIE-4") == NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"searchPast\"",
	    STEP_MS)) != NULL);
	CHECK(t, strstr(l, "\"total\":5") != NULL &&
	    strstr(l, "past the last") != NULL &&
	    strstr(l, "\"objects\":[]") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"searchField\"",
	    STEP_MS)) != NULL);
	CHECK(t, strstr(l, "\"total\":1") != NULL &&
	    strstr(l, "\"objID\":\"PH-") != NULL &&
	    strstr(l, "\"slug\":\"Interop placeholder\"") != NULL);
	CHECK(t, gwproc_log_count(t->gw, 0, "type=mosReqObjList", "port=query",
	    (char *)NULL) >= 3);
	CHECK(t, gwproc_job_count(t->gw, "mam", QUEUE_QUEUED) == 1);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"status\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"PrimaryConnected\":true") != NULL);
	CHECK(t, (l = gwchild_line(&t->node, "\"event\":\"done\"", STEP_MS))
	    != NULL);
	CHECK(t, strstr(l, "\"ok\":true") != NULL);
	CHECK(t, gwchild_wait(&t->node, STEP_MS) == 0);
	CHECK(t, gwproc_job_count(t->gw, NULL, QUEUE_FAILED) == 0);
}

/* The it_interop suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_interop_sofie, setup,
		    teardown),
	};

	return cmocka_run_group_tests_name("it_interop", tests, NULL, NULL);
}
