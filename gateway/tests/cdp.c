/*
 * cdp: headless Chromium over the DevTools protocol on a pipe (see cdp.h).
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "gateway/tests/cdp.h"

#define CDP_STOP_MS	5000

static long long
cdp_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *
cdp_find_browser(void)
{
	static const char *const names[] = { "chromium", "chromium-browser" };
	const char	*env = getenv("MOSGW_CHROMIUM"), *path;
	char		*copy, *dir, *save, buf[1024];
	size_t		 i;

	if (env != NULL && *env != '\0')
		return access(env, X_OK) == 0 ? strdup(env) : NULL;
	if ((path = getenv("PATH")) == NULL)
		path = "/usr/bin:/bin";
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		copy = strdup(path);
		for (dir = strtok_r(copy, ":", &save); dir != NULL;
		    dir = strtok_r(NULL, ":", &save)) {
			snprintf(buf, sizeof buf, "%s/%s", dir, names[i]);
			if (access(buf, X_OK) == 0) {
				free(copy);
				return strdup(buf);
			}
		}
		free(copy);
	}
	return NULL;
}

/* Send one message. 0 or -1. */
static int
cdp_send(struct cdp *c, json_t *msg)
{
	char	*s = json_dumps(msg, JSON_COMPACT);
	size_t	 len = strlen(s) + 1, off = 0;	/* with its NUL */
	ssize_t	 w;

	while (off < len) {
		if ((w = write(c->wr, s + off, len - off)) < 0) {
			if (errno == EINTR)
				continue;
			free(s);
			return -1;
		}
		off += (size_t)w;
	}
	free(s);
	return 0;
}

/* The next message (json_decref it), or NULL at the deadline or the end. */
static json_t *
cdp_read(struct cdp *c, long long deadline)
{
	struct pollfd	 pfd = { c->rd, POLLIN, 0 };
	char		*nul;
	json_t		*m;
	ssize_t		 r;
	size_t		 n;
	long long	 left;

	for (;;) {
		if (c->len > 0 && (nul = memchr(c->buf, '\0', c->len)) !=
		    NULL) {
			n = (size_t)(nul - c->buf) + 1;
			m = json_loads(c->buf, 0, NULL);
			memmove(c->buf, c->buf + n, c->len - n);
			c->len -= n;
			if (m != NULL)
				return m;
			continue;
		}
		if ((left = deadline - cdp_now_ms()) <= 0)
			return NULL;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if (c->cap - c->len < 65536) {
			c->cap = c->cap * 2 + 65536;
			c->buf = realloc(c->buf, c->cap);
		}
		if ((r = read(c->rd, c->buf + c->len, c->cap - c->len)) <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return NULL;
		}
		c->len += (size_t)r;
	}
}

/* A command; its id. */
static int
cdp_command(struct cdp *c, bool browser, const char *method, json_t *params)
{
	json_t	*m;
	int	 id = ++c->next_id, rc;

	m = json_pack("{s:i, s:s, s:o}", "id", id, "method", method,
	    "params", params != NULL ? params : json_object());
	if (!browser && c->session != NULL)
		json_object_set_new(m, "sessionId", json_string(c->session));
	rc = cdp_send(c, m);
	json_decref(m);
	return rc == 0 ? id : -1;
}

/* Events that need an answer: paused requests, logins. */
static void
cdp_event(struct cdp *c, json_t *m)
{
	const char	*ev = json_string_value(json_object_get(m, "method"));
	json_t		*p = json_object_get(m, "params"), *rid;

	if (ev == NULL || p == NULL)
		return;
	rid = json_object_get(p, "requestId");
	if (strcmp(ev, "Fetch.requestPaused") == 0)
		cdp_command(c, false, "Fetch.continueRequest", json_pack(
		    "{s:O}", "requestId", rid));
	else if (strcmp(ev, "Fetch.authRequired") == 0)
		cdp_command(c, false, "Fetch.continueWithAuth", json_pack(
		    "{s:O, s:{s:s, s:s, s:s}}", "requestId", rid,
		    "authChallengeResponse", "response", c->user != NULL ?
		    "ProvideCredentials" : "CancelAuth", "username",
		    c->user != NULL ? c->user : "", "password",
		    c->password != NULL ? c->password : ""));
}

json_t *
cdp_call(struct cdp *c, bool browser, const char *method, json_t *params,
    int timeout_ms)
{
	long long	 deadline = cdp_now_ms() + timeout_ms;
	json_t		*m, *res;
	char		*err;
	int		 id;

	if ((id = cdp_command(c, browser, method, params)) < 0)
		return NULL;
	while ((m = cdp_read(c, deadline)) != NULL) {
		if (json_integer_value(json_object_get(m, "id")) != id) {
			cdp_event(c, m);
			json_decref(m);
			continue;
		}
		if ((res = json_object_get(m, "result")) != NULL)
			json_incref(res);
		else if ((err = json_dumps(json_object_get(m, "error"),
		    JSON_COMPACT)) != NULL) {
			fprintf(stderr, "cdp: %s: %s\n", method, err);
			free(err);
		}
		json_decref(m);
		return res;
	}
	fprintf(stderr, "cdp: %s: no answer within %d ms\n", method,
	    timeout_ms);
	return NULL;
}

/* Move a descriptor to fd (in the child). */
static void
cdp_move(int from, int to)
{
	if (from != to && dup2(from, to) == -1)
		_exit(127);
}

int
cdp_start(struct cdp *c, const char *browser, int width, int height,
    const char *errlog)
{
	const char	*tmp = getenv("MOSGW_TMP");
	char		 size[64], profile[300];
	const char	*sid;
	int		 to_child[2], from_child[2], fd, hi_r, hi_w;
	json_t		*res, *target;

	memset(c, 0, sizeof *c);
	c->pid = -1;
	snprintf(c->dir, sizeof c->dir, "%s/cdp.XXXXXX", tmp != NULL ? tmp :
	    "/tmp");
	if (mkdtemp(c->dir) == NULL)
		return -1;
	if (pipe2(to_child, O_CLOEXEC) == -1 ||
	    pipe2(from_child, O_CLOEXEC) == -1)
		return -1;
	snprintf(size, sizeof size, "--window-size=%d,%d", width, height);
	snprintf(profile, sizeof profile, "--user-data-dir=%s", c->dir);
	if ((c->pid = fork()) == -1)
		return -1;
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* above 3 and 4 first, so that neither clobbers the other */
		if ((hi_r = fcntl(to_child[0], F_DUPFD, 10)) == -1 ||
		    (hi_w = fcntl(from_child[1], F_DUPFD, 10)) == -1)
			_exit(127);
		cdp_move(hi_r, 3);
		cdp_move(hi_w, 4);
		if ((fd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644)) !=
		    -1) {
			cdp_move(fd, 1);
			cdp_move(fd, 2);
		}
		execl(browser, browser, "--headless", "--no-sandbox",
		    "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		    "--no-default-browser-check", "--disable-extensions",
		    "--disable-background-networking", "--disable-sync",
		    "--remote-debugging-pipe", size, profile, "about:blank",
		    (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	c->wr = to_child[1];
	c->rd = from_child[0];
	signal(SIGPIPE, SIG_IGN);
	/* the page: attach with a flat session, answer logins */
	if ((target = cdp_call(c, true, "Target.createTarget", json_pack(
	    "{s:s}", "url", "about:blank"), 30000)) == NULL)
		return -1;
	res = cdp_call(c, true, "Target.attachToTarget", json_pack("{s:O, "
	    "s:b}", "targetId", json_object_get(target, "targetId"),
	    "flatten", 1), 10000);
	json_decref(target);
	if (res == NULL || (sid = json_string_value(json_object_get(res,
	    "sessionId"))) == NULL) {
		json_decref(res);
		return -1;
	}
	c->session = strdup(sid);
	json_decref(res);
	if ((res = cdp_call(c, false, "Page.enable", NULL, 10000)) == NULL)
		return -1;
	json_decref(res);
	if ((res = cdp_call(c, false, "Fetch.enable", json_pack("{s:b}",
	    "handleAuthRequests", 1), 10000)) == NULL)
		return -1;
	json_decref(res);
	return 0;
}

void
cdp_login(struct cdp *c, const char *user, const char *password)
{
	free(c->user);
	free(c->password);
	c->user = user != NULL ? strdup(user) : NULL;
	c->password = password != NULL ? strdup(password) : NULL;
}

int
cdp_navigate(struct cdp *c, const char *url, int timeout_ms)
{
	json_t	*res;
	int	 rc;

	res = cdp_call(c, false, "Page.navigate", json_pack("{s:s}", "url",
	    url), timeout_ms);
	rc = res != NULL && json_object_get(res, "errorText") == NULL ? 0 : -1;
	json_decref(res);
	return rc;
}

char *
cdp_eval(struct cdp *c, const char *expr, int timeout_ms)
{
	json_t		*res, *v;
	char		*out = NULL;
	const char	*s;

	if ((res = cdp_call(c, false, "Runtime.evaluate", json_pack("{s:s, "
	    "s:b}", "expression", expr, "returnByValue", 1), timeout_ms)) ==
	    NULL)
		return NULL;
	v = json_object_get(json_object_get(res, "result"), "value");
	if ((s = json_string_value(v)) != NULL)
		out = strdup(s);
	else if (json_is_boolean(v))
		out = strdup(json_is_true(v) ? "true" : "false");
	else if (json_is_number(v) && asprintf(&out, "%g",
	    json_number_value(v)) < 0)
		out = NULL;
	json_decref(res);
	return out;
}

int
cdp_wait_true(struct cdp *c, const char *expr, int timeout_ms)
{
	long long	 deadline = cdp_now_ms() + timeout_ms;
	char		*v;
	bool		 ok;

	while (cdp_now_ms() < deadline) {
		v = cdp_eval(c, expr, (int)(deadline - cdp_now_ms()) + 1);
		ok = v != NULL && strcmp(v, "true") == 0;
		free(v);
		if (ok)
			return 0;
		usleep(100000);
	}
	return -1;
}

/* A mouse event at (x, y). 0 or -1. */
static int
cdp_mouse(struct cdp *c, const char *type, double x, double y, int timeout_ms)
{
	json_t	*res;

	res = cdp_call(c, false, "Input.dispatchMouseEvent", json_pack("{s:s, "
	    "s:f, s:f, s:s, s:i}", "type", type, "x", x, "y", y, "button",
	    "left", "clickCount", 1), timeout_ms);
	json_decref(res);
	return res != NULL ? 0 : -1;
}

int
cdp_click(struct cdp *c, const char *selector, int timeout_ms)
{
	char	*expr, *v;
	double	 x, y;
	int	 n;

	if (asprintf(&expr, "(function () { var e = document.querySelector("
	    "'%s'); if (!e) return ''; e.scrollIntoView({block: 'center'}); "
	    "var r = e.getBoundingClientRect(); return (r.left + r.width / 2) "
	    "+ ' ' + (r.top + r.height / 2); })()", selector) < 0)
		return -1;
	v = cdp_eval(c, expr, timeout_ms);
	free(expr);
	n = v != NULL ? sscanf(v, "%lf %lf", &x, &y) : 0;
	free(v);
	if (n != 2)
		return -1;
	if (cdp_mouse(c, "mouseMoved", x, y, timeout_ms) != 0 ||
	    cdp_mouse(c, "mousePressed", x, y, timeout_ms) != 0 ||
	    cdp_mouse(c, "mouseReleased", x, y, timeout_ms) != 0)
		return -1;
	return 0;
}

int
cdp_screenshot(struct cdp *c, const char *file, int timeout_ms)
{
	json_t		*res;
	const char	*b64;
	unsigned char	*png;
	size_t		 len;
	int		 n, rc = -1;
	FILE		*f;

	if ((res = cdp_call(c, false, "Page.captureScreenshot", json_pack(
	    "{s:s, s:b}", "format", "png", "captureBeyondViewport", 1),
	    timeout_ms)) == NULL)
		return -1;
	if ((b64 = json_string_value(json_object_get(res, "data"))) != NULL &&
	    (len = strlen(b64)) > 0 && len % 4 == 0) {
		png = malloc(len / 4 * 3 + 1);
		n = EVP_DecodeBlock(png, (const unsigned char *)b64, (int)len);
		if (n > 0) {
			n -= b64[len - 1] == '=' ? (b64[len - 2] == '=' ? 2 :
			    1) : 0;
			if ((f = fopen(file, "wb")) != NULL) {
				if (fwrite(png, 1, (size_t)n, f) == (size_t)n)
					rc = 0;
				if (fclose(f) != 0)
					rc = -1;
			}
		}
		free(png);
	}
	json_decref(res);
	return rc;
}

static int
cdp_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void
cdp_stop(struct cdp *c)
{
	json_t		*res;
	long long	 deadline;
	int		 st;

	if (c->pid > 0) {
		res = cdp_call(c, true, "Browser.close", NULL, CDP_STOP_MS);
		json_decref(res);
		deadline = cdp_now_ms() + CDP_STOP_MS;
		while (waitpid(c->pid, &st, WNOHANG) == 0) {
			if (cdp_now_ms() > deadline) {
				kill(c->pid, SIGKILL);
				waitpid(c->pid, &st, 0);
				break;
			}
			usleep(20000);
		}
		c->pid = -1;
	}
	if (c->wr > 0)
		close(c->wr);
	if (c->rd > 0)
		close(c->rd);
	c->wr = c->rd = -1;
	if (c->dir[0] != '\0' && getenv("MOSGW_KEEP") == NULL)
		nftw(c->dir, cdp_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(c->buf);
	free(c->session);
	free(c->user);
	free(c->password);
	c->buf = c->session = c->user = c->password = NULL;
}
