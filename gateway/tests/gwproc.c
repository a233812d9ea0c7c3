/* gwproc: run the real mosgw as a child of a test (gwproc.h). */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "store/store.h"
#include "gateway/gateway.h"
#include "gateway/tests/gwproc.h"

#define GWPROC_MOSCTL_MS	30000	/* one mosctl run */
#define GWPROC_LINK_MS		10000	/* gwrig: until both links are up */
#define GWPROC_MAX_ARGS		64
#define GWPROC_BIND_TRIES	3
#define GWPROC_NPM_MS		300000	/* npm ci */

/* Print a diagnostic line. */
static void __attribute__((format(printf, 1, 2)))
gwproc_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	fputs("gwproc: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Sleep ms milliseconds. */
static void
gwproc_msleep(int ms)
{
	struct timespec	ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* realloc that aborts: a test rig has no use for half-built state. */
static void *
gwproc_grow(void *p, size_t n)
{
	void	*q;

	if ((q = realloc(p, n)) == NULL)
		abort();
	return q;
}

/* The programs' directory. */
const char *
gwproc_bindir(void)
{
	const char	*b = getenv("MOSGW_BIN");

	return b != NULL && *b != '\0' ? b : "bin";
}

/* Bind port 0 on loopback and keep the socket in *fd: the port, or 0. */
static uint16_t
gwproc_hold_port(int *fd)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	uint16_t		port = 0;

	if ((*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(*fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
	    getsockname(*fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	return port;
}

/* Bind port 0 on loopback, read the port, close. */
uint16_t
gwproc_free_port(void)
{
	int		fd;
	uint16_t	port = gwproc_hold_port(&fd);

	if (fd != -1)
		close(fd);
	return port;
}

/*
 * Choose the gateway's listening ports, all bound at once while they are
 * chosen so that they differ (a port closed may come back at once).
 */
static int
gwproc_pick_ports(struct gwproc *gp)
{
	uint16_t	*want[4];
	int		 fds[4], rc = 0;
	size_t		 i;

	gp->query_port = 0;
	gp->api_port = 0;
	want[0] = &gp->lower_port;
	want[1] = &gp->upper_port;
	want[2] = gp->opts.no_query ? NULL : &gp->query_port;
	want[3] = gp->opts.api_tokens == NULL ? NULL : &gp->api_port;
	for (i = 0; i < 4; i++) {
		fds[i] = -1;
		if (want[i] != NULL && (*want[i] = gwproc_hold_port(&fds[i])) ==
		    0)
			rc = -1;
	}
	for (i = 0; i < 4; i++)
		if (fds[i] != -1)
			close(fds[i]);
	return rc;
}

/* Remove dir and everything in it (one level of files is all we make). */
static void
gwproc_rmdir(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[PATH_MAX];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (unlink(path) == -1 && errno == EISDIR)
			gwproc_rmdir(path);
	}
	closedir(d);
	rmdir(dir);
}

/* Make the directory and pick ports. */
struct gwproc *
gwproc_new(const struct gwproc_opts *o)
{
	struct gwproc	*gp;
	const char	*tmp = getenv("MOSGW_TMP");
	char		 why[512];

	if ((gp = calloc(1, sizeof *gp)) == NULL)
		abort();
	gp->opts = *o;
	gp->pid = -1;
	gp->last_status = -1;
	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	mkdir(tmp, 0755);
	snprintf(gp->dir, sizeof gp->dir, "%s/mosgw-it.XXXXXX", tmp);
	if (mkdtemp(gp->dir) == NULL) {
		gwproc_warn("mkdtemp %s: %s", gp->dir, strerror(errno));
		free(gp);
		return NULL;
	}
	snprintf(gp->conf, sizeof gp->conf, "%s/mosgw.ini", gp->dir);
	snprintf(gp->db, sizeof gp->db, "%s/mosgw.db", gp->dir);
	gp->driver = o->pg_dsn != NULL ? STORE_POSTGRESQL : o->sqlite ?
	    STORE_SQLITE : pgdb_driver();
	if (o->pg_dsn != NULL)
		snprintf(gp->pg.dsn, sizeof gp->pg.dsn, "%s", o->pg_dsn);
	else if (gp->driver == STORE_POSTGRESQL &&
	    pgdb_create(&gp->pg, why, sizeof why) != 0) {
		gwproc_warn("PostgreSQL: %s", why);
		gwproc_rmdir(gp->dir);
		free(gp);
		return NULL;
	}
	snprintf(gp->tokens, sizeof gp->tokens, "%s/api-tokens", gp->dir);
	if (gwproc_pick_ports(gp) != 0) {
		gwproc_warn("no free ports");
		gwproc_free(gp);
		return NULL;
	}
	return gp;
}

/* Kill, then remove the directory unless $MOSGW_KEEP is set. */
void
gwproc_free(struct gwproc *gp)
{
	if (gp == NULL)
		return;
	gwproc_kill(gp);
	if (getenv("MOSGW_KEEP") != NULL)
		gwproc_warn("kept %s%s%s", gp->dir, gp->pg.name[0] != '\0' ?
		    " and database " : "", gp->pg.name);
	else {
		gwproc_rmdir(gp->dir);
		pgdb_drop(&gp->pg);
	}
	free(gp);
}

/* Whether an extra block sets key (a line "key =" or "key="). */
static bool
gwproc_has_key(const char *extra, const char *key)
{
	const char	*l = extra;
	size_t		 n = strlen(key);

	while (l != NULL && *l != '\0') {
		l += strspn(l, " \t");
		if (strncmp(l, key, n) == 0 && (l[n] == '=' || l[n] == ' ' ||
		    l[n] == '\t'))
			return true;
		if ((l = strchr(l, '\n')) != NULL)
			l++;
	}
	return false;
}

/* Write "key = value" unless extra sets key itself. */
static void __attribute__((format(printf, 4, 5)))
gwproc_kv(FILE *f, const char *extra, const char *key, const char *fmt, ...)
{
	va_list	ap;

	if (gwproc_has_key(extra, key))
		return;
	fprintf(f, "%s = ", key);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

/* The extra lines of a section, verbatim. */
static void
gwproc_extra(FILE *f, const char *extra)
{
	size_t	n;

	if (extra == NULL || (n = strlen(extra)) == 0)
		return;
	fputs(extra, f);
	if (extra[n - 1] != '\n')
		fputc('\n', f);
}

/* One [ncs.NAME] section with the rig's fast defaults. */
static void
gwproc_write_ncs(FILE *f, const struct gwproc_ncs *n, size_t i)
{
	const char	*x = n->extra;

	if (n->name != NULL)
		fprintf(f, "\n[ncs.%s]\n", n->name);
	else
		fprintf(f, "\n[ncs.n%zu]\n", i + 1);
	gwproc_kv(f, x, "ncs_id", "%s", n->ncs_id != NULL ? n->ncs_id : "NCSPEER");
	gwproc_kv(f, x, "host", "127.0.0.1");
	gwproc_kv(f, x, "lower_port", "%u", n->lower_port);
	gwproc_kv(f, x, "upper_port", "%u", n->upper_port);
	if (n->query_port != 0)
		gwproc_kv(f, x, "query_port", "%u", n->query_port);
	if (n->buddy_lower_port != 0) {
		gwproc_kv(f, x, "buddy_host", "127.0.0.1");
		gwproc_kv(f, x, "buddy_lower_port", "%u", n->buddy_lower_port);
		gwproc_kv(f, x, "buddy_upper_port", "%u", n->buddy_upper_port);
	}
	gwproc_kv(f, x, "heartbeat_interval", "1");
	gwproc_kv(f, x, "ack_timeout", "1");
	gwproc_kv(f, x, "retries", "1");
	gwproc_kv(f, x, "reconnect_min", "0.1");
	gwproc_kv(f, x, "reconnect_max", "0.5");
	gwproc_kv(f, x, "max_attempts", "3");
	gwproc_extra(f, x);
}

/* The [api] section (port 0 without tokens) and the tokens file. */
static int
gwproc_write_api(struct gwproc *gp, FILE *f)
{
	const struct gwproc_opts	*o = &gp->opts;
	FILE				*t;

	fprintf(f, "\n[api]\n");
	if (o->api_tokens == NULL) {
		fprintf(f, "port = 0\n");
		return 0;
	}
	if ((t = fopen(gp->tokens, "w")) == NULL) {
		gwproc_warn("%s: %s", gp->tokens, strerror(errno));
		return -1;
	}
	fputs(o->api_tokens, t);
	if (fclose(t) != 0) {
		gwproc_warn("%s: %s", gp->tokens, strerror(errno));
		return -1;
	}
	gwproc_kv(f, o->api_extra, "listen", "127.0.0.1");
	gwproc_kv(f, o->api_extra, "port", "%u", gp->api_port);
	gwproc_kv(f, o->api_extra, "tokens", "%s", gp->tokens);
	gwproc_extra(f, o->api_extra);
	return 0;
}

/* Write the configuration file (the log target is this run's log). */
int
gwproc_write_config(struct gwproc *gp)
{
	const struct gwproc_opts	*o = &gp->opts;
	const char			*x;
	FILE				*f;
	size_t				 i;

	if ((f = fopen(gp->conf, "w")) == NULL) {
		gwproc_warn("%s: %s", gp->conf, strerror(errno));
		return -1;
	}
	x = o->gateway_extra;
	fprintf(f, "; written by the integration test rig (gwproc.c)\n[gateway]\n");
	gwproc_kv(f, x, "mos_id", "%s",
	    o->mos_id != NULL ? o->mos_id : "mosgw.test");
	gwproc_kv(f, x, "listen", "127.0.0.1");
	gwproc_kv(f, x, "lower_port", "%u", gp->lower_port);
	gwproc_kv(f, x, "upper_port", "%u", gp->upper_port);
	gwproc_kv(f, x, "query_port", "%u", gp->query_port);
	gwproc_extra(f, x);
	x = o->database_extra;
	fprintf(f, "\n[database]\n");
	if (gp->driver == STORE_POSTGRESQL) {
		gwproc_kv(f, x, "driver", "postgresql");
		gwproc_kv(f, x, "dsn", "%s", gp->pg.dsn);
	} else
		gwproc_kv(f, x, "path", "%s", gp->db);
	gwproc_kv(f, x, "synchronous", "full");
	gwproc_extra(f, x);
	x = o->log_extra;
	fprintf(f, "\n[log]\nlevel = %s\ntarget = %s\n",
	    o->log_level != NULL ? o->log_level : "debug", gp->log);
	/* suites wait for particular lines: no rate limit unless asked */
	gwproc_kv(f, x, "rate_burst", "0");
	gwproc_extra(f, x);
	if (gwproc_write_api(gp, f) != 0) {
		fclose(f);
		return -1;
	}
	if (o->sections_extra != NULL) {
		fputc('\n', f);
		gwproc_extra(f, o->sections_extra);
	}
	for (i = 0; i < o->nncs; i++)
		gwproc_write_ncs(f, &o->ncs[i], i);
	if (fclose(f) != 0) {
		gwproc_warn("%s: %s", gp->conf, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Fork and exec path (searched in PATH when it has no slash) with argv, in
 * directory dir (NULL = here); stdout to outfd, or else to errlog; stderr to
 * errlog. The child gets SIGKILL when the test process dies.
 */
static pid_t
gwproc_spawn(const char *dir, const char *path, char *const argv[], int outfd,
    const char *errlog)
{
	pid_t	parent = getpid(), pid;
	int	fd;

	if ((pid = fork()) == -1) {
		gwproc_warn("fork: %s", strerror(errno));
		return -1;
	}
	if (pid != 0)
		return pid;
	/* Child: only async-signal-safe calls until exec. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	if ((fd = open("/dev/null", O_RDONLY)) != -1)
		dup2(fd, 0);
	if (errlog != NULL &&
	    (fd = open(errlog, O_WRONLY | O_CREAT | O_APPEND, 0644)) != -1) {
		dup2(fd, 2);
		if (outfd == -1)
			dup2(fd, 1);
	}
	if (outfd != -1)
		dup2(outfd, 1);
	if (dir != NULL && chdir(dir) == -1)
		_exit(126);
	/* Nothing the test process holds leaks into the child's descriptors. */
	close_range(3, ~0U, 0);
	execvp(path, argv);
	_exit(127);
}

/* Reap the child if it has exited; true if it has. */
static bool
gwproc_reaped(struct gwproc *gp, int options)
{
	int	st;

	if (gp->pid == -1)
		return true;
	if (waitpid(gp->pid, &st, options) != gp->pid)
		return false;
	gp->last_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	gp->pid = -1;
	return true;
}

/* Listeners the configuration asks for. */
static int
gwproc_nlisteners(struct gwproc *gp)
{
	return (gp->query_port != 0 ? 3 : 2) + (gp->api_port != 0 ? 1 : 0);
}

/* One attempt to start: 0 ready, -1 failed, 1 failed on a taken port. */
static int
gwproc_try_start(struct gwproc *gp)
{
	char	 path[PATH_MAX], *text, a0[] = "mosgw", a1[] = "-c";
	char	*argv[] = { a0, a1, gp->conf, NULL };
	int64_t	 deadline = ncspeer_now_ms() + GWPROC_START_MS;
	int	 busy;

	snprintf(gp->log, sizeof gp->log, "%s/mosgw.%d.log", gp->dir, gp->runs);
	snprintf(gp->errlog, sizeof gp->errlog, "%s/stderr.%d.log", gp->dir,
	    gp->runs);
	if (gwproc_write_config(gp) != 0)
		return -1;
	gp->runs++;
	snprintf(path, sizeof path, "%s/mosgw", gwproc_bindir());
	if ((gp->pid = gwproc_spawn(NULL, path, argv, -1, gp->errlog)) == -1)
		return -1;
	while (ncspeer_now_ms() < deadline) {
		if (gwproc_reaped(gp, WNOHANG)) {
			text = gwproc_log_text(gp);
			busy = strstr(text, "in use") != NULL;
			free(text);
			gwproc_warn("mosgw exited with status %d during start",
			    gp->last_status);
			return busy ? 1 : -1;
		}
		if (gwproc_log_count(gp, 0, "event=listen", (char *)NULL) +
		    gwproc_log_count(gp, 0, "\"event\":\"listen\"",
		    (char *)NULL) >= gwproc_nlisteners(gp))
			return 0;
		gwproc_msleep(10);
	}
	gwproc_warn("mosgw did not log event=listen %d times in %d ms",
	    gwproc_nlisteners(gp), GWPROC_START_MS);
	gwproc_kill(gp);
	return -1;
}

/* Start, retrying on other ports when ours were taken meanwhile. */
int
gwproc_start(struct gwproc *gp)
{
	int	i, rc = -1;

	if (gp->pid != -1) {
		gwproc_warn("already running");
		return -1;
	}
	for (i = 0; i < GWPROC_BIND_TRIES; i++) {
		if ((rc = gwproc_try_start(gp)) != 1)
			break;
		if (gwproc_pick_ports(gp) != 0)
			break;
	}
	if (rc != 0)
		gwproc_log_dump(gp, "start failed");
	return rc == 0 ? 0 : -1;
}

/* SIGTERM and wait for the exit status. */
int
gwproc_stop(struct gwproc *gp)
{
	int64_t	deadline = ncspeer_now_ms() + GWPROC_STOP_MS;

	if (gp->pid == -1)
		return gp->last_status;
	kill(gp->pid, SIGTERM);
	while (ncspeer_now_ms() < deadline) {
		if (gwproc_reaped(gp, WNOHANG))
			return gp->last_status;
		gwproc_msleep(10);
	}
	gwproc_warn("mosgw ignored SIGTERM for %d ms", GWPROC_STOP_MS);
	gwproc_kill(gp);
	return -1;
}

/* SIGKILL and reap. */
void
gwproc_kill(struct gwproc *gp)
{
	if (gp->pid == -1)
		return;
	kill(gp->pid, SIGKILL);
	gwproc_reaped(gp, 0);
}

/* Send a signal to the running gateway. */
int
gwproc_signal(struct gwproc *gp, int sig)
{
	if (gp->pid == -1)
		return -1;
	return kill(gp->pid, sig);
}

/* Whether the gateway is still running. */
bool
gwproc_running(struct gwproc *gp)
{
	return !gwproc_reaped(gp, WNOHANG);
}

/* utime + stime of the gateway in seconds, from /proc/PID/stat; -1. */
double
gwproc_cpu(struct gwproc *gp)
{
	char			 path[64], buf[1024], *p;
	unsigned long long	 ut = 0, st = 0;
	FILE			*f;
	size_t			 n;

	if (gp->pid == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)gp->pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces: fields count from the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	    &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Open file descriptors of the gateway, from /proc/PID/fd; -1. */
int
gwproc_fd_count(struct gwproc *gp)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[64];
	int		 n = 0;

	if (gp->pid == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/fd", (int)gp->pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

/* A whole file, malloc'd; "" when missing. */
char *
gwproc_read_file(const char *path)
{
	FILE	*f;
	char	*s;
	long	 n;

	if ((f = fopen(path, "r")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) < 0) {
		if (f != NULL)
			fclose(f);
		return strdup("");
	}
	rewind(f);
	if ((s = malloc((size_t)n + 1)) == NULL)
		abort();
	n = (long)fread(s, 1, (size_t)n, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* The current run's log. */
char *
gwproc_log_text(struct gwproc *gp)
{
	return gwproc_read_file(gp->log);
}

/* Bytes in the current run's log. */
size_t
gwproc_log_size(struct gwproc *gp)
{
	struct stat	sb;

	return stat(gp->log, &sb) == 0 ? (size_t)sb.st_size : 0;
}

/* Whether the line [l, e) holds every word. */
static bool
gwproc_line_has(const char *l, const char *e, const char **words, size_t n)
{
	size_t	 i, wl;
	const char *s;

	for (i = 0; i < n; i++) {
		wl = strlen(words[i]);
		for (s = l; s + wl <= e; s++) {
			if (memcmp(s, words[i], wl) == 0)
				break;
		}
		if (s + wl > e)
			return false;
	}
	return true;
}

/* Scan text from `from`: count matching lines, *end = past the first one. */
static int
gwproc_scan(const char *text, long from, const char **words, size_t n,
    long *end)
{
	const char	*l, *e;
	size_t		 len = strlen(text);
	int		 count = 0;

	if (from < 0 || (size_t)from > len)
		from = 0;
	for (l = text + from; *l != '\0'; l = *e == '\n' ? e + 1 : e) {
		if ((e = strchr(l, '\n')) == NULL)
			break;	/* a line still being written */
		if (gwproc_line_has(l, e, words, n)) {
			if (count++ == 0 && end != NULL)
				*end = (long)(e + 1 - text);
		}
	}
	return count;
}

/* Collect NULL-terminated variadic words. */
static size_t
gwproc_words(va_list ap, const char **words, size_t max)
{
	size_t	n = 0;

	while (n < max && (words[n] = va_arg(ap, const char *)) != NULL)
		n++;
	return n;
}

/* Wait for a log line holding every word. */
long
gwproc_log_wait(struct gwproc *gp, long from, int timeout_ms, ...)
{
	const char	*words[16];
	char		*text;
	va_list		 ap;
	size_t		 n;
	long		 end = -1;
	int64_t		 deadline = ncspeer_now_ms() + timeout_ms;

	va_start(ap, timeout_ms);
	n = gwproc_words(ap, words, 16);
	va_end(ap);
	for (;;) {
		text = gwproc_log_text(gp);
		gwproc_scan(text, from, words, n, &end);
		free(text);
		if (end != -1 || ncspeer_now_ms() >= deadline)
			return end;
		gwproc_msleep(10);
	}
}

/* Count log lines holding every word. */
int
gwproc_log_count(struct gwproc *gp, long from, ...)
{
	const char	*words[16];
	char		*text;
	va_list		 ap;
	size_t		 n;
	int		 count;

	va_start(ap, from);
	n = gwproc_words(ap, words, 16);
	va_end(ap);
	text = gwproc_log_text(gp);
	count = gwproc_scan(text, from, words, n, NULL);
	free(text);
	return count;
}

/* Print the last bytes of a file with a heading. */
static void
gwproc_tail(const char *heading, const char *path, size_t max)
{
	char	*text = gwproc_read_file(path);
	size_t	 len = strlen(text);

	fprintf(stderr, "---- %s (%s, last %zu of %zu bytes)\n", heading, path,
	    len < max ? len : max, len);
	fputs(len > max ? text + len - max : text, stderr);
	free(text);
}

/* Print the tails of the log and of the child's stderr. */
void
gwproc_log_dump(struct gwproc *gp, const char *label)
{
	fprintf(stderr, "==== gwproc %s: %s\n", gp->dir, label);
	gwproc_tail("mosgw log", gp->log, 6000);
	gwproc_tail("mosgw stderr", gp->errlog, 2000);
}

/* Read fd to EOF within the deadline into a malloc'd string. */
static char *
gwproc_read_all(int fd, int64_t deadline)
{
	struct pollfd	 pfd = { fd, POLLIN, 0 };
	char		*s = NULL;
	size_t		 len = 0, cap = 0;
	ssize_t		 r;
	int64_t		 left;

	for (;;) {
		if ((left = deadline - ncspeer_now_ms()) <= 0 ||
		    poll(&pfd, 1, (int)left) <= 0)
			break;
		if (cap - len < 4096) {
			cap = cap * 2 + 8192;
			s = gwproc_grow(s, cap);
		}
		if ((r = read(fd, s + len, cap - len - 1)) <= 0)
			break;
		len += (size_t)r;
	}
	if (s == NULL && (s = malloc(1)) == NULL)
		abort();
	s[len] = '\0';
	return s;
}

/*
 * Run mosctl with --db DB first (db; on PostgreSQL -c with the gateway's
 * configuration) or not; stderr to errf if set.
 */
static int
gwproc_mosctl_v(struct gwproc *gp, char **out, bool db, const char *errf,
    va_list ap)
{
	char		*argv[GWPROC_MAX_ARGS], path[PATH_MAX], *text;
	char		 a0[] = "mosctl", a1[] = "--db", a2[] = "-c";
	int		 pfd[2], st, argc = 0;
	int64_t		 deadline = ncspeer_now_ms() + GWPROC_MOSCTL_MS;
	pid_t		 pid;

	argv[argc++] = a0;
	if (db && gp->driver == STORE_POSTGRESQL) {
		/* the database of the gateway's configuration */
		argv[argc++] = a2;
		argv[argc++] = gp->conf;
	} else if (db) {
		argv[argc++] = a1;
		argv[argc++] = gp->db;
	}
	while (argc < GWPROC_MAX_ARGS - 1 &&
	    (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	argv[argc] = NULL;
	snprintf(path, sizeof path, "%s/mosctl", gwproc_bindir());
	if (pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	pid = gwproc_spawn(NULL, path, argv, pfd[1], errf);
	close(pfd[1]);
	if (pid == -1) {
		close(pfd[0]);
		return -1;
	}
	text = gwproc_read_all(pfd[0], deadline);
	close(pfd[0]);
	if (ncspeer_now_ms() >= deadline) {
		gwproc_warn("mosctl timed out");
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &st, 0) != pid)
		st = -1;
	if (out != NULL)
		*out = text;
	else
		free(text);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int
gwproc_mosctl(struct gwproc *gp, char **out, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, out);
	rc = gwproc_mosctl_v(gp, out, true, NULL, ap);
	va_end(ap);
	return rc;
}

int
gwproc_mosctl_cmd(struct gwproc *gp, char **out, char **err, ...)
{
	char	 errf[320];
	va_list	 ap;
	int	 rc;

	snprintf(errf, sizeof errf, "%s/mosctl.stderr", gp->dir);
	unlink(errf);
	va_start(ap, err);
	rc = gwproc_mosctl_v(gp, out, false, errf, ap);
	va_end(ap);
	if (err != NULL)
		*err = gwproc_read_file(errf);
	return rc;
}

/* mosctl asset put OBJID --slug SLUG. */
int
gwproc_asset_put(struct gwproc *gp, const char *obj_id, const char *slug)
{
	return gwproc_mosctl(gp, NULL, "asset", "put", obj_id, "--slug", slug,
	    (char *)NULL);
}

/* mosctl asset delete OBJID. */
int
gwproc_asset_delete(struct gwproc *gp, const char *obj_id)
{
	return gwproc_mosctl(gp, NULL, "asset", "delete", obj_id, (char *)NULL);
}

/* The gateway's database, for gwdb_open. */
void
gwproc_db_opts(struct gwproc *gp, struct gwdb_opts *o)
{
	memset(o, 0, sizeof *o);
	o->driver = gp->driver;
	o->path = gp->db;
	o->dsn = gp->driver == STORE_POSTGRESQL ? gp->pg.dsn : NULL;
	o->busy_ms = 5000;
}

/* A queue handle on the gateway's database. */
struct queue *
gwproc_queue(struct gwproc *gp)
{
	struct queue_opts	 qo;
	struct queue		*q = NULL;
	char			*err = NULL;

	memset(&qo, 0, sizeof qo);
	qo.driver = gp->driver;
	qo.path = gp->db;
	qo.dsn = gp->driver == STORE_POSTGRESQL ? gp->pg.dsn : NULL;
	qo.busy_ms = 5000;
	if (queue_open(&q, &qo, &err) != QUEUE_OK) {
		gwproc_warn("queue_open %s: %s", gp->db, err != NULL ? err : "?");
		free(err);
		return NULL;
	}
	return q;
}

/* A store connection to the gateway's database. */
struct store *
gwproc_store(struct gwproc *gp, int flags)
{
	struct store_conf	 c;
	struct store		*db;
	char			*err = NULL;

	memset(&c, 0, sizeof c);
	c.driver = gp->driver;
	c.path = gp->db;
	c.dsn = gp->driver == STORE_POSTGRESQL ? gp->pg.dsn : NULL;
	if (store_open(&db, &c, flags, &err) != STORE_OK) {
		gwproc_warn("open %s: %s", gp->driver == STORE_POSTGRESQL ?
		    gp->pg.name : gp->db, err != NULL ? err : "?");
		free(err);
		return NULL;
	}
	store_busy_timeout(db, 5000);
	return db;
}

/* Count jobs of a lane in a state, page by page. */
long
gwproc_job_count(struct gwproc *gp, const char *lane, int state)
{
	struct queue		*q;
	struct queue_filter	 flt;
	struct queue_job	*jobs;
	size_t			 n;
	long			 total = 0;

	if ((q = gwproc_queue(gp)) == NULL)
		return -1;
	memset(&flt, 0, sizeof flt);
	flt.state = state;
	flt.lane = lane;
	flt.limit = 1000;
	for (;;) {
		if (queue_list(q, &flt, &jobs, &n) != QUEUE_OK) {
			total = -1;
			break;
		}
		total += (long)n;
		if (n > 0)
			flt.after_id = jobs[n - 1].id;
		queue_jobs_free(jobs, n);
		if (n < (size_t)flt.limit)
			break;
	}
	queue_close(q);
	return total;
}

/*
 * Jobs of a lane (NULL = any) QUEUED or RUNNING, in ONE statement: two
 * counts taken one after the other would miss a job that moves from
 * RUNNING back to QUEUED in between (a reaped lease, a release). -1 on error.
 */
long
gwproc_jobs_pending(struct gwproc *gp, const char *lane)
{
	struct queue	*q;
	struct store_stmt	*st = NULL;
	long		 n = -1;

	if ((q = gwproc_queue(gp)) == NULL)
		return -1;
	if (store_prepare(queue_db(q), "SELECT count(*) FROM jobs WHERE "
	    "state IN (0, 1) AND (CAST(?1 AS TEXT) IS NULL OR lane = ?1)",
	    0, &st) == STORE_OK) {
		if (lane != NULL)
			store_bind_text(st, 1, lane, -1);
		if (store_step(st) == STORE_ROW)
			n = (long)store_column_int64(st, 0);
	}
	store_finalize(st);
	queue_close(q);
	return n;
}

/* Wait until n jobs of a lane are in a state. */
long
gwproc_wait_jobs(struct gwproc *gp, const char *lane, int state, long n,
    int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;
	long	got;

	for (;;) {
		got = gwproc_job_count(gp, lane, state);
		if (got >= n || ncspeer_now_ms() >= deadline)
			return got;
		gwproc_msleep(25);
	}
}

/* Wait until nothing of the lane is QUEUED or RUNNING. */
int
gwproc_wait_idle(struct gwproc *gp, const char *lane, int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;

	for (;;) {
		if (gwproc_jobs_pending(gp, lane) == 0)
			return 0;
		if (ncspeer_now_ms() >= deadline)
			return -1;
		gwproc_msleep(25);
	}
}

/* Start peer and gateway from prepared options. */
struct gwrig *
gwrig_new_opts(enum mos_enc enc, const struct gwproc_opts *o)
{
	struct gwrig		*r;
	struct ncspeer_opts	 po;

	if ((r = calloc(1, sizeof *r)) == NULL)
		abort();
	r->opts = *o;
	if (r->opts.nncs == 0)
		r->opts.nncs = 1;
	memset(&po, 0, sizeof po);
	po.mos_id = o->mos_id != NULL ? o->mos_id : "mosgw.test";
	po.ncs_id = o->ncs[0].ncs_id != NULL ? o->ncs[0].ncs_id : "NCSPEER";
	po.enc = enc;
	if ((r->ncs = ncspeer_new(&po)) == NULL)
		goto fail;
	if (enc == MOS_ENC_UTF8 && !gwproc_has_key(o->ncs[0].extra, "encoding")) {
		snprintf(r->extra, sizeof r->extra, "encoding = utf8\n%s",
		    o->ncs[0].extra != NULL ? o->ncs[0].extra : "");
		r->opts.ncs[0].extra = r->extra;
	}
	r->opts.ncs[0].lower_port = ncspeer_port(r->ncs, NCSPEER_LOWER);
	r->opts.ncs[0].upper_port = ncspeer_port(r->ncs, NCSPEER_UPPER);
	if (o->ncs[0].query)
		r->opts.ncs[0].query_port = ncspeer_port(r->ncs, NCSPEER_QUERY);
	snprintf(r->lane, sizeof r->lane, "ncs:%s",
	    o->ncs[0].name != NULL ? o->ncs[0].name : "n1");
	if ((r->gw = gwproc_new(&r->opts)) == NULL || gwproc_start(r->gw) != 0)
		goto fail;
	if (ncspeer_wait_open(r->ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    GWPROC_LINK_MS) != 0 ||
	    ncspeer_wait_open(r->ncs, NCSPEER_UPPER, NCSPEER_ACCEPTED, 1,
	    GWPROC_LINK_MS) != 0) {
		gwproc_warn("the gateway did not connect to the NCS peer");
		gwproc_log_dump(r->gw, "no link");
		goto fail;
	}
	return r;
fail:
	gwrig_free(r);
	return NULL;
}

/* The usual rig with one NCS section. */
struct gwrig *
gwrig_new(enum mos_enc enc, const char *ncs_extra)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.nncs = 1;
	o.ncs[0].extra = ncs_extra;
	return gwrig_new_opts(enc, &o);
}

/* Stop everything the rig started. */
void
gwrig_free(struct gwrig *r)
{
	if (r == NULL)
		return;
	gwproc_free(r->gw);
	ncspeer_free(r->ncs);
	free(r);
}

/* Dial one of the gateway's listeners. */
int
gwrig_dial(struct gwrig *r, enum ncspeer_port port)
{
	uint16_t	p;

	switch (port) {
	case NCSPEER_LOWER:
		p = r->gw->lower_port;
		break;
	case NCSPEER_UPPER:
		p = r->gw->upper_port;
		break;
	default:
		p = r->gw->query_port;
		break;
	}
	return ncspeer_dial(r->ncs, port, p);
}

/* A request with our envelope; wait for its reply. */
const struct ncspeer_frame *
gwrig_request(struct gwrig *r, int conn, enum mos_type type, int timeout_ms)
{
	struct mos_msg	*m = ncspeer_msg(r->ncs, type);

	if (type == MOS_T_HEARTBEAT)
		mos_time_now(&m->u.heartbeat.time);
	return ncspeer_request(r->ncs, conn, m, timeout_ms);
}

/* Everything a failing test needs to see. */
void
gwrig_dump(struct gwrig *r, const char *what, const char *file, int line)
{
	fprintf(stderr, "==== %s:%d: failed: %s\n", file, line, what);
	if (r == NULL)
		return;
	if (r->ncs != NULL)
		ncspeer_dump(r->ncs, "frames received");
	if (r->gw != NULL)
		gwproc_log_dump(r->gw, what);
}

/* Start a child whose stdout we read line by line. */
int
gwchild_start(struct gwchild *ch, const char *dir, char *const argv[],
    const char *errlog)
{
	int	pfd[2];

	memset(ch, 0, sizeof *ch);
	ch->pid = -1;
	ch->out = -1;
	ch->status = -1;
	if (pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	ch->pid = gwproc_spawn(dir, argv[0], argv, pfd[1], errlog);
	close(pfd[1]);
	if (ch->pid == -1) {
		close(pfd[0]);
		return -1;
	}
	ch->out = pfd[0];
	fcntl(ch->out, F_SETFL, fcntl(ch->out, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* Read what the child has written; false at end of file. */
static bool
gwchild_fill(struct gwchild *ch, int timeout_ms)
{
	struct pollfd	pfd = { ch->out, POLLIN, 0 };
	ssize_t		r;

	if (ch->out == -1 || poll(&pfd, 1, timeout_ms) < 0)
		return ch->out != -1;
	if (ch->cap - ch->len < 4096) {
		ch->cap = ch->cap * 2 + 8192;
		ch->buf = gwproc_grow(ch->buf, ch->cap);
		/* a string even before any read */
		ch->buf[ch->len] = '\0';
	}
	r = read(ch->out, ch->buf + ch->len, ch->cap - ch->len - 1);
	if (r > 0) {
		ch->len += (size_t)r;
		ch->buf[ch->len] = '\0';
	} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(ch->out);
		ch->out = -1;
		return false;
	}
	return true;
}

/* The next complete line (from ch->scan on) that holds needle, or NULL. */
const char *
gwchild_line(struct gwchild *ch, const char *needle, int timeout_ms)
{
	int64_t	 deadline = ncspeer_now_ms() + timeout_ms;
	char	*l, *e;
	bool	 more = true;

	for (;;) {
		for (l = ch->buf != NULL ? ch->buf + ch->scan : NULL;
		    l != NULL && (e = strchr(l, '\n')) != NULL; l = e + 1) {
			ch->scan = (size_t)(e + 1 - ch->buf);
			free(ch->line);
			if ((ch->line = strndup(l, (size_t)(e - l))) == NULL)
				abort();
			if (strstr(ch->line, needle) != NULL)
				return ch->line;
		}
		if (!more || ncspeer_now_ms() >= deadline)
			return NULL;
		more = gwchild_fill(ch, 50);
	}
}

/* Wait for the child to exit: its status (128+N for a signal), -1 on timeout. */
int
gwchild_wait(struct gwchild *ch, int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;
	int	st;

	while (ch->pid != -1) {
		if (waitpid(ch->pid, &st, WNOHANG) == ch->pid) {
			ch->status = WIFEXITED(st) ? WEXITSTATUS(st) :
			    128 + WTERMSIG(st);
			ch->pid = -1;
			break;
		}
		if (ncspeer_now_ms() >= deadline)
			return -1;
		if (!gwchild_fill(ch, 20))
			gwproc_msleep(20);
	}
	return ch->status;
}

/* Kill the child if it still runs, reap it and free what we kept. */
void
gwchild_clear(struct gwchild *ch)
{
	if (ch->pid != -1) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
		ch->pid = -1;
	}
	if (ch->out != -1)
		close(ch->out);
	ch->out = -1;
	free(ch->buf);
	free(ch->line);
	ch->buf = ch->line = NULL;
	ch->len = ch->cap = ch->scan = 0;
}

/* Run a command to the end within timeout_ms; its stdout+stderr in *out. */
static int
gwproc_run(const char *dir, char *const argv[], const char *log, int timeout_ms,
    char **out)
{
	struct gwchild	ch;
	int		st;

	unlink(log);
	if (gwchild_start(&ch, dir, argv, log) != 0)
		return -1;
	st = gwchild_wait(&ch, timeout_ms);
	gwchild_clear(&ch);
	if (out != NULL)
		*out = gwproc_read_file(log);
	return st;
}

/* Whether npm's output says it could not reach the registry. */
static bool
gwproc_network_error(const char *text)
{
	static const char *const words[] = { "ENOTFOUND", "EAI_AGAIN",
	    "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH", "ECONNRESET",
	    "network", "getaddrinfo" };
	size_t	i;

	for (i = 0; text != NULL && i < sizeof words / sizeof words[0]; i++) {
		if (strstr(text, words[i]) != NULL)
			return true;
	}
	return false;
}

/* node present, and the pinned library installed (npm ci when missing). */
int
gwproc_node_ready(const char *dir, const char *errlog)
{
	char		 a0[] = "node", a1[] = "--version";
	char		 b0[] = "npm", b1[] = "ci";
	char		 b2[] = "--no-audit", b3[] = "--no-fund";
	char		*nv[] = { a0, a1, NULL }, *ci[] = { b0, b1, b2, b3, NULL };
	char		 probe[700], log[600], *out = NULL;
	struct stat	 sb;
	int		 st;

	snprintf(log, sizeof log, "%s.npm", errlog);
	if (gwproc_run(NULL, nv, log, 10000, NULL) != 0) {
		printf("SKIP: node not found "
		    "(Node.js 18+ runs the interop peer)\n");
		return 1;
	}
	snprintf(probe, sizeof probe,
	    "%s/node_modules/@mos-connection/connector/package.json", dir);
	if (stat(probe, &sb) == 0)
		return 0;
	fprintf(stderr, "npm ci in %s\n", dir);
	st = gwproc_run(dir, ci, log, GWPROC_NPM_MS, &out);
	if (st == 0 && stat(probe, &sb) == 0) {
		free(out);
		return 0;
	}
	if (st != 0 && gwproc_network_error(out)) {
		printf("SKIP: npm registry unreachable (npm ci exit %d)\n", st);
		free(out);
		return 1;
	}
	fprintf(stderr, "npm ci failed (exit %d):\n%s\n", st,
	    out != NULL ? out : "");
	free(out);
	return -1;
}
