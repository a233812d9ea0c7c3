/*
 * systemd's service protocol (Type=notify) through libsystemd's sd_notify:
 * READY=1 once the listeners are open and the loop runs, RELOADING=1 and
 * READY=1 around a SIGHUP reload, STOPPING=1 at shutdown, and WATCHDOG=1
 * every half of WatchdogSec= when the service manager asks for it. The
 * watchdog is kicked from the event loop, so a loop that hangs stops it.
 * Without $NOTIFY_SOCKET every call does nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "gateway/gateway.h"

struct notify {
	struct event	*watchdog;
	int64_t		 every_ms;
};

/* Send one state change ("READY=1", ...); a failure is only logged. */
void
notify_state(const char *fmt, ...)
{
	va_list	 ap;
	char	 state[256];
	int	 rc;

	va_start(ap, fmt);
	vsnprintf(state, sizeof state, fmt, ap);
	va_end(ap);
	if ((rc = sd_notify(0, state)) < 0)
		log_event(LL_WARN, "notify.error", "state=%s error=%d",
		    log_q(state), -rc);
	else if (rc > 0 && log_enabled(LL_DEBUG))
		log_event(LL_DEBUG, "notify", "state=%s", log_q(state));
}

/* The watchdog timer: the loop is alive. */
static void
notify_watchdog_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

/* Start the watchdog if the service manager wants one. */
struct notify *
notify_new(struct event_base *base)
{
	struct notify	*nt = xcalloc(1, sizeof *nt);
	struct timeval	 tv;
	uint64_t	 usec = 0;

	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		nt->every_ms = (int64_t)(usec / 2000);
		if (nt->every_ms < 1)
			nt->every_ms = 1;
		tv.tv_sec = nt->every_ms / 1000;
		tv.tv_usec = (nt->every_ms % 1000) * 1000;
		nt->watchdog = event_new(base, -1, EV_PERSIST,
		    notify_watchdog_cb, nt);
		event_add(nt->watchdog, &tv);
		log_event(LL_INFO, "notify.watchdog", "every_ms=%lld",
		    (long long)nt->every_ms);
	}
	return nt;
}

/* Stop the watchdog. */
void
notify_free(struct notify *nt)
{
	if (nt == NULL)
		return;
	if (nt->watchdog != NULL)
		event_free(nt->watchdog);
	free(nt);
}
