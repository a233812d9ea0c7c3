/*
 * cdp: Debian's headless Chromium driven over the DevTools protocol on a
 * pipe (--remote-debugging-pipe: commands on the child's descriptor 3,
 * answers and events on 4, each a JSON text ending with a NUL byte), for
 * the tests of the status page. No WebSocket, no npm package: the test
 * speaks the protocol with jansson. One page, attached with a flat
 * session. Logins (401 with WWW-Authenticate: Basic) are answered with the
 * credentials given, as a person would type them into the browser's
 * prompt (Fetch.authRequired). Every wait has a deadline; the browser dies
 * with the test process.
 */
#ifndef CDP_H
#define CDP_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>

struct json_t;

struct cdp {
	pid_t	 pid;
	int	 wr;		/* its descriptor 3 */
	int	 rd;		/* its descriptor 4 */
	char	*buf;
	size_t	 len;
	size_t	 cap;
	int	 next_id;
	char	*session;	/* the page's session */
	char	*user;		/* the login, NULL: none */
	char	*password;
	char	 dir[256];	/* its profile */
};

/*
 * The browser's path: $MOSGW_CHROMIUM, else chromium or chromium-browser
 * on PATH. NULL when there is none.
 */
char		*cdp_find_browser(void);
/* Start it (window width x height) with a page; logs to errlog. 0 or -1. */
int		 cdp_start(struct cdp *, const char *browser, int width,
		    int height, const char *errlog);
/* Answer logins with this user name and password. */
void		 cdp_login(struct cdp *, const char *user, const char *password);
/*
 * A command on the page's session (browser = false) or the browser's. The
 * result object (json_decref it), or NULL on an error answer or timeout.
 */
struct json_t	*cdp_call(struct cdp *, bool browser, const char *method,
		    struct json_t *params, int timeout_ms);
/* Go to url. 0 or -1. */
int		 cdp_navigate(struct cdp *, const char *url, int timeout_ms);
/* Evaluate a JavaScript expression; its value as a string (malloc'd). */
char		*cdp_eval(struct cdp *, const char *expr, int timeout_ms);
/* Wait until expr evaluates to "true". 0, or -1 on timeout. */
int		 cdp_wait_true(struct cdp *, const char *expr, int timeout_ms);
/* A mouse click at the middle of the first element matching a selector. */
int		 cdp_click(struct cdp *, const char *selector, int timeout_ms);
/* A PNG screenshot of the whole page into file. 0 or -1. */
int		 cdp_screenshot(struct cdp *, const char *file, int timeout_ms);
/* Close the browser, reap it, remove its profile. */
void		 cdp_stop(struct cdp *);

#endif /* CDP_H */
