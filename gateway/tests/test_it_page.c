/*
 * Integration: the status page in Debian's headless Chromium against the
 * real mosgw (cdp.c drives it). The browser logs in through the page's
 * Basic challenge with an admin token, shows the NCS link, its state and a
 * failed job whose NACK text holds markup (shown as text), fits a phone's
 * width, and leaves a screenshot in the build directory
 * (status-page.png); a click on Requeue puts the job back in the queue.
 * Without Chromium the suite is skipped, saying so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/tests/cdp.h"
#include "gateway/tests/httpc.h"
#include "gateway/tests/itutil.h"

#define TOK_WRITE	"write-token-0123456789"
#define TOK_ADMIN	"admin-token-0123456789"
#define STEP_MS		30000
#define NACK_TEXT	"<b>no & \"never\"</b>"
#define PHONE_W		412
#define PHONE_H		915

static const char tokens[] =
    "writer write " TOK_WRITE "\n"
    "ops admin " TOK_ADMIN "\n";

struct page_test {
	struct gwrig	*rig;
	struct cdp	 cdp;
	bool		 browser;
	char		 url[64];
};

/* A gateway whose NCS NACKs every mosObj, a job FAILED, a browser. */
static int
setup(void **state)
{
	struct page_test	*t;
	struct gwproc_opts	 o;
	struct ncspeer_policy	 pol;
	struct httpc_resp	 r;
	char			*browser, errlog[400];
	void			*rs;

	if ((browser = cdp_find_browser()) == NULL) {
		printf("SKIP: no chromium on PATH (Debian package chromium; "
		    "or set MOSGW_CHROMIUM): the status page is not tested "
		    "in a browser\n");
		*state = NULL;
		return 0;
	}
	t = calloc(1, sizeof *t);
	memset(&o, 0, sizeof o);
	o.api_tokens = tokens;
	o.log_level = "info";
	o.ncs[0].extra = "max_attempts = 1\n";
	o.nncs = 1;
	if (itutil_setup_opts(&rs, MOS_ENC_UTF16BE, &o) != 0) {
		free(browser);
		free(t);
		return -1;
	}
	t->rig = rs;
	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = NACK_TEXT;
	ncspeer_set_policy(t->rig->ncs, &pol);
	snprintf(t->url, sizeof t->url, "http://127.0.0.1:%u/",
	    (unsigned)t->rig->gw->api_port);
	*state = t;
	if (httpc_once(t->rig->gw->api_port, "PUT", "/v1/assets/CLIP-X",
	    TOK_WRITE, NULL, "{\"objSlug\":\"x\",\"objDur\":10,\"objTB\":25}",
	    &r) != 0 || r.status != 202) {
		httpc_resp_clear(&r);
		free(browser);
		return -1;
	}
	httpc_resp_clear(&r);
	if (gwproc_wait_jobs(t->rig->gw, t->rig->lane, QUEUE_FAILED, 1,
	    STEP_MS) != 1) {
		free(browser);
		return -1;
	}
	snprintf(errlog, sizeof errlog, "%s/chromium.log", t->rig->gw->dir);
	if (cdp_start(&t->cdp, browser, PHONE_W, PHONE_H, errlog) != 0) {
		printf("chromium did not start; its log:\n%s\n",
		    gwproc_read_file(errlog));
		free(browser);
		return -1;
	}
	t->browser = true;
	free(browser);
	cdp_login(&t->cdp, "ops", TOK_ADMIN);
	return 0;
}

static int
teardown(void **state)
{
	struct page_test	*t = *state;
	void			*rs;

	if (t == NULL)
		return 0;
	if (t->browser)
		cdp_stop(&t->cdp);
	rs = t->rig;
	free(t);
	return itutil_teardown(&rs);
}

/* Load the page and wait until its tables are there. */
static void
load(struct page_test *t)
{
	if (cdp_navigate(&t->cdp, t->url, STEP_MS) != 0 ||
	    cdp_wait_true(&t->cdp, "document.readyState === 'complete' && "
	    "!!document.getElementById('failed')", STEP_MS) != 0) {
		gwrig_dump(t->rig, "page not loaded", __FILE__, __LINE__);
		fail_msg("%s: the page did not load", t->url);
	}
}

/* What a person sees, on a phone; the screenshot. */
static void
test_page_shows(void **state)
{
	struct page_test	*t = *state;
	struct stat		 sb;
	char			*text, *v, png[400], *tmp, *dir;
	unsigned char		 sig[8];
	FILE			*f;

	if (t == NULL)
		skip();
	load(t);
	text = cdp_eval(&t->cdp, "document.body.innerText", STEP_MS);
	assert_non_null(text);
	if (strstr(text, "NCS links") == NULL || strstr(text, "n1") == NULL ||
	    strstr(text, "CLIP-X") == NULL || strstr(text, NACK_TEXT) == NULL ||
	    strstr(text, "Requeue") == NULL || strstr(text, "FAILED") == NULL)
		fail_msg("the page lacks something:\n%s", text);
	free(text);
	/* the NCS's state, as shown in the links table */
	v = cdp_eval(&t->cdp, "document.querySelector('#links td.st')."
	    "textContent", STEP_MS);
	assert_non_null(v);
	assert_true(strncmp(v, "up", 2) == 0);
	free(v);
	/* the markup in the NACK text is text, not elements */
	v = cdp_eval(&t->cdp, "String(document.querySelectorAll('#failed b')."
	    "length)", STEP_MS);
	assert_string_equal(v, "0");
	free(v);
	/* a phone: nothing wider than the screen */
	v = cdp_eval(&t->cdp, "String(document.documentElement.scrollWidth <= "
	    "window.innerWidth)", STEP_MS);
	assert_string_equal(v, "true");
	free(v);
	/* ... and the Requeue button within it, without scrolling sideways */
	v = cdp_eval(&t->cdp, "String(document.querySelector('button.requeue')"
	    ".getBoundingClientRect().right <= window.innerWidth)", STEP_MS);
	assert_string_equal(v, "true");
	free(v);

	tmp = strdup(getenv("MOSGW_TMP") != NULL ? getenv("MOSGW_TMP") :
	    "/tmp");
	dir = dirname(tmp);
	snprintf(png, sizeof png, "%s/status-page.png", dir);
	free(tmp);
	assert_int_equal(cdp_screenshot(&t->cdp, png, STEP_MS), 0);
	assert_int_equal(stat(png, &sb), 0);
	assert_true(sb.st_size > 1000);
	f = fopen(png, "rb");
	assert_non_null(f);
	assert_int_equal(fread(sig, 1, 8, f), 8);
	fclose(f);
	assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
	printf("# screenshot: %s\n", png);
}

/* Is POST /v1/jobs/{id}/requeue among the routes this build serves? */
static bool
requeue_served(void)
{
	const struct api_route	*rt;

	for (rt = api_routes; rt->method != NULL; rt++)
		if (strcmp(rt->method, "POST") == 0 &&
		    strncmp(rt->path, "/v1/jobs/", 9) == 0 &&
		    strlen(rt->path) > 8 &&
		    strcmp(rt->path + strlen(rt->path) - 8, "/requeue") == 0)
			return true;
	return false;
}

/* Requeue: the NCS is away first, so that the job stays QUEUED. */
static void
test_page_requeue(void **state)
{
	struct page_test	*t = *state;
	struct gwrig		*rig;
	char			*v;
	int64_t			 t0;

	if (t == NULL)
		skip();
	if (!requeue_served()) {
		printf("SKIP: this build serves no POST /v1/jobs/{id}/requeue; "
		    "the Requeue button is not clicked\n");
		skip();
	}
	rig = t->rig;
	ncspeer_down(rig->ncs, false);
	GWRIG_CHECK(rig, gwproc_log_wait(rig->gw, 0, STEP_MS, "event=link.down",
	    "port=lower", (char *)NULL) >= 0);
	load(t);
	if (cdp_click(&t->cdp, "button.requeue", STEP_MS) != 0)
		fail_msg("no Requeue button to click");
	if (cdp_wait_true(&t->cdp, "document.getElementById('msg')."
	    "textContent.indexOf('requeued') >= 0", STEP_MS) != 0) {
		v = cdp_eval(&t->cdp, "document.getElementById('msg')."
		    "textContent", STEP_MS);
		gwrig_dump(rig, "requeue", __FILE__, __LINE__);
		fail_msg("no confirmation; the page says: %s", v);
	}
	t0 = ncspeer_now_ms();
	while (gwproc_job_count(rig->gw, rig->lane, QUEUE_QUEUED) != 1) {
		GWRIG_CHECK(rig, ncspeer_now_ms() - t0 < STEP_MS);
		usleep(50000);
	}
	GWRIG_CHECK(rig, gwproc_job_count(rig->gw, rig->lane, QUEUE_FAILED) ==
	    0);
	/* the page reloads itself: no failed job left */
	GWRIG_CHECK(rig, cdp_wait_true(&t->cdp, "!document.querySelector("
	    "'button.requeue') && document.readyState === 'complete'",
	    STEP_MS) == 0);
	assert_int_equal(ncspeer_up(rig->ncs), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_page_shows, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_page_requeue, setup,
		    teardown),
	};

	return cmocka_run_group_tests_name("gateway_it_page", tests, NULL,
	    NULL);
}
