/*
 * The programs as a new user meets them: mosgw's options, its template, its
 * paths taken from the configuration file's directory, the database
 * directory made at start, one error line when the start fails; mosctl's
 * durations, --json after the verb and the count of an empty export; the
 * README's request piped through nc; the example configurations; the log
 * in both formats, with one info line per delivered asset; systemd's
 * notifications against a fake $NOTIFY_SOCKET.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <poll.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "gateway/tests/itutil.h"

#define CLI_TIMEOUT_S	60	/* any one command */
#define CLI_WAIT_MS	15000	/* the daemon reaching a state */

/* A scratch directory and the output of the last command. */
struct cli {
	char	 dir[PATH_MAX];
	char	*out;		/* stdout of the last run */
	char	*err;		/* its stderr */
	int	 rc;		/* its exit status, -1 if it did not exit */
};

/* The top of the source tree ($MOSGW_TOP, else here). */
static const char *
cli_top(void)
{
	const char	*t = getenv("MOSGW_TOP");

	return t != NULL && *t != '\0' ? t : ".";
}

static int
cli_setup(void **state)
{
	struct cli	*c = calloc(1, sizeof *c);
	const char	*tmp = getenv("MOSGW_TMP");

	if (c == NULL)
		return -1;
	snprintf(c->dir, sizeof c->dir, "%s/cli.XXXXXX", tmp != NULL &&
	    *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(c->dir) == NULL) {
		free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static int
cli_teardown(void **state)
{
	struct cli	*c = *state;
	char		 cmd[PATH_MAX + 32];

	if (getenv("MOSGW_KEEP") == NULL) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", c->dir);
	}
	free(c->out);
	free(c->err);
	free(c);
	return 0;
}

/*
 * Run a shell command (bounded by timeout(1)) in the scratch directory,
 * with $BIN, $TOP and $D set; keep its stdout, stderr and exit status.
 */
static int __attribute__((format(printf, 2, 3)))
cli_sh(struct cli *c, const char *fmt, ...)
{
	va_list	 ap;
	char	*body, *cmd, path[PATH_MAX + 16];
	int	 st;

	va_start(ap, fmt);
	assert_true(vasprintf(&body, fmt, ap) >= 0);
	va_end(ap);
	assert_true(asprintf(&cmd, "cd '%s' && BIN='%s' TOP='%s' D='%s' "
	    "timeout -k 5 %d sh -c '%s' >out.txt 2>err.txt", c->dir,
	    gwproc_bindir(), cli_top(), c->dir, CLI_TIMEOUT_S, body) >= 0);
	st = system(cmd);
	c->rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	free(c->out);
	free(c->err);
	snprintf(path, sizeof path, "%s/out.txt", c->dir);
	c->out = gwproc_read_file(path);
	snprintf(path, sizeof path, "%s/err.txt", c->dir);
	c->err = gwproc_read_file(path);
	if (getenv("MOSGW_VERBOSE") != NULL)
		fprintf(stderr, "$ %s\n[%d]\n%s%s", body, c->rc, c->out,
		    c->err);
	free(body);
	free(cmd);
	return c->rc;
}

/* Write a file in the scratch directory. */
static void
cli_write(struct cli *c, const char *name, const char *text)
{
	char	 path[PATH_MAX + 64];
	FILE	*f;

	snprintf(path, sizeof path, "%s/%s", c->dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* n distinct ports that were free a moment ago. */
static void
cli_ports(uint16_t *p, size_t n)
{
	size_t	i, j;

	for (i = 0; i < n; i++) {
		do {
			assert_int_not_equal(p[i] = gwproc_free_port(), 0);
			for (j = 0; j < i && p[j] != p[i]; j++)
				;
		} while (j < i);
	}
}

/* A configuration with free listener ports and the given extra lines. */
static void
cli_config(struct cli *c, const char *name, const char *db,
    const char *log_extra)
{
	char		text[2048];
	uint16_t	p[4];

	cli_ports(p, nitems(p));
	snprintf(text, sizeof text,
	    "[gateway]\nmos_id = mosgw.cli\nlower_port = %u\nupper_port = %u\n"
	    "query_port = 0\n[database]\npath = %s\n[log]\n%s\n"
	    "[ncs.n1]\nncs_id = NCS1\nhost = 127.0.0.1\nlower_port = %u\n"
	    "upper_port = %u\nheartbeat_interval = 500ms\n"
	    "reconnect_min = 100ms\nreconnect_max = 5m\n",
	    p[0], p[1], db, log_extra, p[2], p[3]);
	cli_write(c, name, text);
}

/* mosgw -D prints a template that mosgw -n accepts as it is. */
static void
test_template(void **state)
{
	struct cli	*c = *state;

	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -D > x.ini && "
	    "\"$BIN/mosgw\" -n -c x.ini"), 0);
	assert_string_equal(c->out, "configuration OK\n");
	assert_string_equal(c->err, "");
	/* every section is there, the NCS one with an example name */
	assert_int_equal(cli_sh(c, "grep -c \"^\\[\" x.ini"), 0);
	assert_true(atoi(c->out) >= 4);
	assert_int_equal(cli_sh(c, "grep -x \"\\[ncs.example\\]\" x.ini"), 0);
}

/* --help and -h print the same complete text; a bad option is refused. */
static void
test_help(void **state)
{
	struct cli	*c = *state;
	char		*help;

	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" --help"), 0);
	help = strdup(c->out);
	assert_non_null(strstr(help, "-D"));
	assert_non_null(strstr(help, "-n"));
	assert_non_null(strstr(help, "-c"));
	assert_non_null(strstr(help, "-V"));
	assert_non_null(strstr(help, "--help"));
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -h"), 0);
	assert_string_equal(c->out, help);
	free(help);
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" --bogus"), 2);
	assert_non_null(strstr(c->err, "usage:"));
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" --version"), 0);
	assert_non_null(strstr(c->out, "mosgw "));
}

/*
 * Run from another directory, a configuration's relative paths (database,
 * log file) are taken from the file's own directory; the database's
 * directory is made at start.
 */
static void
test_relative_paths(void **state)
{
	struct cli	*c = *state;
	struct gwchild	 ch;
	char		 conf[PATH_MAX + 32], log[PATH_MAX + 32];
	char		 db[PATH_MAX + 32], errlog[PATH_MAX + 32], bin[PATH_MAX];
	char		 a1[] = "-c", *text = NULL;
	char		*argv[] = { bin, a1, conf, NULL };
	struct stat	 st;
	int64_t		 deadline;

	assert_int_equal(cli_sh(c, "mkdir etc"), 0);
	cli_config(c, "etc/gw.ini", "var/gw.db", "target = gw.log");
	snprintf(conf, sizeof conf, "%s/etc/gw.ini", c->dir);
	snprintf(log, sizeof log, "%s/etc/gw.log", c->dir);
	snprintf(db, sizeof db, "%s/etc/var/gw.db", c->dir);
	snprintf(errlog, sizeof errlog, "%s/stderr.log", c->dir);
	snprintf(bin, sizeof bin, "%s/mosgw", gwproc_bindir());
	/* -n agrees: var/ is missing but its parent is there */
	assert_int_equal(cli_sh(c, "cd / && \"$BIN/mosgw\" -n -c "
	    "\"$D/etc/gw.ini\""), 0);
	assert_int_equal(gwchild_start(&ch, "/", argv, errlog), 0);
	deadline = ncspeer_now_ms() + CLI_WAIT_MS;
	while (ncspeer_now_ms() < deadline) {
		free(text);
		text = gwproc_read_file(log);
		if (strstr(text, "event=start ") != NULL)
			break;
		usleep(20000);
	}
	assert_non_null(strstr(text, "event=start "));
	assert_non_null(strstr(text, "event=db.mkdir"));
	assert_non_null(strstr(text, db));
	free(text);
	assert_int_equal(stat(db, &st), 0);
	assert_int_equal(kill(ch.pid, SIGTERM), 0);
	assert_int_equal(gwchild_wait(&ch, CLI_WAIT_MS), 0);
	gwchild_clear(&ch);
	/* nothing was written where it was started */
	assert_int_not_equal(stat("/var/gw.db", &st), 0);
	assert_int_not_equal(stat("/gw.log", &st), 0);
}

/* -n refuses what the start would refuse, naming the directory. */
static void
test_path_checks(void **state)
{
	struct cli	*c = *state;

	cli_config(c, "a.ini", "no/such/dir/gw.db", "");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -n -c a.ini"), 1);
	assert_non_null(strstr(c->err, "a.ini:7: [database]: path: "
	    "directory "));
	assert_non_null(strstr(c->err, "/no/such/dir does not exist, nor its "
	    "parent "));
	assert_int_equal(itutil_count(c->err, "\n"), 1);
	/* the start says the same */
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -c a.ini"), 1);
	assert_non_null(strstr(c->err, "/no/such/dir does not exist"));

	cli_config(c, "b.ini", "gw.db", "target = logs/gw.log");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -n -c b.ini"), 1);
	assert_non_null(strstr(c->err, "[log]: target: directory "));
	assert_non_null(strstr(c->err, "/logs does not exist"));

	/* absolute paths are kept, stderr and syslog are not files */
	cli_config(c, "c.ini", "/tmp", "target = syslog");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -n -c c.ini"), 0);
}

/* A start that fails says so once, naming the file once. */
static void
test_start_error_once(void **state)
{
	struct cli	*c = *state;

	cli_config(c, "d.ini", "bad.db", "");
	cli_write(c, "bad.db", "this is not an SQLite database, but it is "
	    "long enough to be read as a header of one: "
	    "................................................\n");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -c d.ini"), 1);
	assert_int_equal(itutil_count(c->err, "event=start.error"), 1);
	assert_int_equal(itutil_count(c->err, "bad.db"), 1);
	assert_int_equal(itutil_count(c->err, "\n"), 1);
}

/* One duration syntax in the file and in mosctl; bad ones are named. */
static void
test_durations(void **state)
{
	struct cli	*c = *state;

	cli_write(c, "e.ini", "[gateway]\nmos_id = m\nframe_deadline = 500ms\n"
	    "idle_timeout = 5m\n[database]\npath = e.db\n"
	    "history_retention = 7d\ndone_retention = 24h\nbusy_timeout = 0.2\n"
	    "backoff_max = 1h30m\n[ncs.n]\nncs_id = N\nhost = 127.0.0.1\n"
	    "heartbeat_interval = 10s\nack_timeout = 5\n");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -n -c e.ini"), 0);
	cli_write(c, "f.ini", "[gateway]\nmos_id = m\n[database]\n"
	    "path = f.db\n[ncs.n]\nncs_id = N\nhost = 127.0.0.1\n"
	    "heartbeat_interval = 10x\n");
	assert_int_equal(cli_sh(c, "\"$BIN/mosgw\" -n -c f.ini"), 1);
	assert_non_null(strstr(c->err, "f.ini:8: heartbeat_interval = '10x': "
	    "not a duration"));
	assert_non_null(strstr(c->err, "500ms, 10s, 5m, 24h, 7d"));

	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db init"), 0);
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db history prune "
	    "--older-than 1d"), 0);
	assert_non_null(strstr(c->out, "0 history rows deleted"));
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db history prune "
	    "--older-than 604800"), 0);
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db history prune "
	    "--older-than 1x"), 64);
	assert_non_null(strstr(c->err, "'1x' is not a duration"));
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db job prune "
	    "--done-age 24h --failed-age 7d"), 0);
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db job ls "
	    "--older-than 500ms"), 0);
}

/* --json after the verb for every noun; an empty export counts 0. */
static void
test_mosctl_json(void **state)
{
	struct cli	*c = *state;
	static const char *const cmds[] = {
		"asset ls --json", "asset ls --query one --json",
		"asset show CLIP-1 --json",
		"asset usage CLIP-1 --json", "history ls --json",
		"ro ls --json", "job ls --json", "job stats --json",
		"history prune --json",
	};
	json_error_t	 e;
	json_t		*j;
	size_t		 i;

	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db init"), 0);
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db history "
	    "export"), 0);
	assert_string_equal(c->out, "");
	assert_non_null(strstr(c->err, "0 messages"));
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db history export "
	    "-o cap.jsonl"), 0);
	assert_non_null(strstr(c->err, "0 messages written to cap.jsonl"));

	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db asset put CLIP-1 "
	    "--slug One --json"), 0);
	for (i = 0; i < nitems(cmds); i++) {
		assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db %s",
		    cmds[i]), 0);
		if (*c->out == '\0')
			continue;	/* nothing to list */
		j = json_loadb(c->out, strcspn(c->out, "\n"), 0, &e);
		if (j == NULL)
			fail_msg("mosctl %s: not JSON: %s (%s)", cmds[i],
			    c->out, e.text);
		json_decref(j);
	}
	/* what --json removes is only the option itself */
	assert_int_equal(cli_sh(c, "\"$BIN/mosctl\" --db m.db asset ls --bogus "
	    "--json"), 64);
}

/* The README's request through nc -N gets its answers, and nc ends. */
static void
test_readme_request(void **state)
{
	struct cli		*c = *state;
	struct gwproc_opts	 o;
	struct gwproc		*gp;
	uint16_t		 p[2];

	if (cli_sh(c, "command -v nc >/dev/null && nc -h 2>&1 | "
	    "grep -q \"OpenBSD netcat\"") != 0) {
		printf("SKIP: nc from netcat-openbsd is not installed "
		    "(tools/deps.sh installs it)\n");
		skip();
	}
	memset(&o, 0, sizeof o);
	o.mos_id = "mosgw.local";
	o.log_level = "info";
	o.nncs = 1;
	o.ncs[0].ncs_id = "NCS.LOCAL";
	cli_ports(p, nitems(p));
	o.ncs[0].lower_port = p[0];
	o.ncs[0].upper_port = p[1];
	assert_non_null(gp = gwproc_new(&o));
	assert_int_equal(gwproc_start(gp), 0);
	assert_int_equal(cli_sh(c, "\"$BIN/mosmsg\" encode < "
	    "\"$TOP/fixtures/request.jsonl\" | nc -N 127.0.0.1 %u | "
	    "\"$BIN/mosmsg\" decode", gp->lower_port), 0);
	assert_non_null(strstr(c->out, "\"type\":\"listMachInfo\""));
	assert_non_null(strstr(c->out, "\"type\":\"heartbeat\""));
	assert_int_equal(itutil_count(c->out, "\n"), 2);
	assert_int_equal(gwproc_stop(gp), 0);
	gwproc_free(gp);
}

/* Every example configuration passes mosgw -n. */
static void
test_examples(void **state)
{
	struct cli	*c = *state;
	static const char *const names[] = { "enps", "inews", "openmedia",
	    "octopus" };
	size_t		 i;

	for (i = 0; i < nitems(names); i++) {
		if (cli_sh(c, "\"$BIN/mosgw\" -n -c \"$TOP/examples/%s.ini\"",
		    names[i]) != 0)
			fail_msg("examples/%s.ini: %s", names[i], c->err);
		assert_string_equal(c->out, "configuration OK\n");
	}
}

/* Delivered assets leave one info line each; heartbeats leave none. */
static void
test_log_info(void **state)
{
	struct gwrig	*r = *state;
	char		*text;
	long		 at;

	assert_int_equal(gwproc_asset_put(r->gw, "CLIP-INFO", "Info"), 0);
	at = gwproc_log_wait(r->gw, 0, CLI_WAIT_MS, "level=info",
	    "event=publish.acked", "obj=CLIP-INFO", (char *)NULL);
	GWRIG_CHECK(r, at > 0);
	/* heartbeats every 100 ms, a dozen of them */
	GWRIG_CHECK(r, ncspeer_wait_count(r->ncs, &(struct ncspeer_match){
	    .type = "heartbeat" }, 12, CLI_WAIT_MS) >= 12);
	text = gwproc_log_text(r->gw);
	GWRIG_CHECK(r, itutil_count(text, "heartbeat") == 0);
	GWRIG_CHECK(r, itutil_count(text, "level=debug") == 0);
	free(text);
}

static int
setup_log_info(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.ncs[0].extra = "heartbeat_interval = 100ms\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* format = json: every line is one JSON object; the asset line is there. */
static void
test_log_json(void **state)
{
	struct gwrig	*r = *state;
	json_error_t	 e;
	json_t		*j;
	char		*text, *line, *save = NULL;
	int		 n = 0, acked = 0;

	assert_int_equal(gwproc_asset_put(r->gw, "CLIP-J", "Say \"hi\""), 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, CLI_WAIT_MS,
	    "\"event\":\"publish.acked\"", "\"obj\":\"CLIP-J\"",
	    (char *)NULL) > 0);
	text = gwproc_log_text(r->gw);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((j = json_loads(line, JSON_REJECT_DUPLICATES, &e)) == NULL)
			fail_msg("not JSON (%s): %s", e.text, line);
		assert_true(json_is_object(j));
		assert_true(json_is_string(json_object_get(j, "time")));
		assert_true(json_is_string(json_object_get(j, "level")));
		assert_true(json_is_string(json_object_get(j, "event")));
		if (strcmp(json_string_value(json_object_get(j, "event")),
		    "publish.acked") == 0) {
			assert_string_equal(json_string_value(
			    json_object_get(j, "obj")), "CLIP-J");
			acked++;
		}
		json_decref(j);
		n++;
	}
	free(text);
	GWRIG_CHECK(r, n > 5);
	GWRIG_CHECK(r, acked == 1);
}

/* The JSON form keeps every value exactly, whatever it holds. */
static void
test_log_json_values(void **state)
{
	struct cli	*c = *state;
	static const char *const values[] = {
		"plain", "two words", "say \"hi\"", "back\\slash",
		"line\nbreak", "a=b", "", "tab\there", "\xc3\xa9t\xc3\xa9",
	};
	json_error_t	 e;
	json_t		*j;
	char		 path[PATH_MAX + 16], *text, *line, *save = NULL, *cause;
	size_t		 i;

	snprintf(path, sizeof path, "%s/json.log", c->dir);
	assert_int_equal(log_open(LL_INFO, path, &cause), 0);
	log_set_format(LOG_FMT_JSON);
	for (i = 0; i < nitems(values); i++)
		log_event(LL_INFO, "test.value", "i=%zu v=%s", i,
		    log_q(values[i]));
	log_event(LL_DEBUG, "test.hidden", "i=x");
	log_set_format(LOG_FMT_LOGFMT);
	log_close();
	text = gwproc_read_file(path);
	for (i = 0, line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save), i++) {
		if ((j = json_loads(line, JSON_REJECT_DUPLICATES, &e)) == NULL)
			fail_msg("not JSON (%s): %s", e.text, line);
		assert_true(i < nitems(values));
		assert_string_equal(json_string_value(json_object_get(j,
		    "event")), "test.value");
		assert_string_equal(json_string_value(json_object_get(j,
		    "level")), "info");
		/* control characters other than newline become '?' */
		if (strchr(values[i], '\t') == NULL)
			assert_string_equal(json_string_value(
			    json_object_get(j, "v")), values[i]);
		json_decref(j);
	}
	assert_int_equal(i, nitems(values));
	free(text);
}

static int
setup_log_json(void **state)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.log_extra = "format = json\n";
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* The next datagram on the fake notify socket, or "" after timeout_ms. */
static const char *
notify_next(int fd, int timeout_ms, char *buf, size_t len)
{
	struct pollfd	pfd = { fd, POLLIN, 0 };
	ssize_t		n;

	*buf = '\0';
	if (poll(&pfd, 1, timeout_ms) == 1 && (n = recv(fd, buf, len - 1,
	    0)) > 0)
		buf[n] = '\0';
	return buf;
}

/* Wait for a datagram holding want; false on timeout. */
static bool
notify_wait(int fd, const char *want, int timeout_ms)
{
	int64_t	deadline = ncspeer_now_ms() + timeout_ms;
	char	buf[512];

	while (ncspeer_now_ms() < deadline) {
		notify_next(fd, (int)(deadline - ncspeer_now_ms()), buf,
		    sizeof buf);
		if (strstr(buf, want) != NULL)
			return true;
	}
	return false;
}

/*
 * systemd's protocol against a fake $NOTIFY_SOCKET: READY=1 once listening,
 * WATCHDOG=1 at half of WATCHDOG_USEC, RELOADING=1 then READY=1 on SIGHUP,
 * STOPPING=1 on SIGTERM.
 */
static void
test_notify(void **state)
{
	struct cli		*c = *state;
	struct sockaddr_un	 sun;
	struct gwproc_opts	 o;
	struct gwproc		*gp;
	char			 buf[512];
	uint16_t		 p[2];
	int			 fd, i;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	assert_true((size_t)snprintf(sun.sun_path, sizeof sun.sun_path,
	    "%s/notify", c->dir) < sizeof sun.sun_path);
	assert_true((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	memset(&o, 0, sizeof o);
	o.log_level = "info";
	o.nncs = 1;
	cli_ports(p, nitems(p));
	o.ncs[0].lower_port = p[0];
	o.ncs[0].upper_port = p[1];
	assert_non_null(gp = gwproc_new(&o));
	/* the child inherits them; the test process itself never notifies */
	setenv("NOTIFY_SOCKET", sun.sun_path, 1);
	setenv("WATCHDOG_USEC", "200000", 1);
	assert_int_equal(gwproc_start(gp), 0);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	/* READY=1 comes first, after the listeners are open */
	notify_next(fd, CLI_WAIT_MS, buf, sizeof buf);
	if (strstr(buf, "READY=1") == NULL)
		fail_msg("first notification: '%s'", buf);
	assert_non_null(strstr(buf, "STATUS="));
	assert_true(gwproc_log_wait(gp, 0, CLI_WAIT_MS, "event=notify.watchdog",
	    "every_ms=100", (char *)NULL) > 0);
	for (i = 0; i < 3; i++)
		assert_true(notify_wait(fd, "WATCHDOG=1", CLI_WAIT_MS));
	assert_int_equal(gwproc_signal(gp, SIGHUP), 0);
	assert_true(notify_wait(fd, "RELOADING=1", CLI_WAIT_MS));
	assert_true(notify_wait(fd, "READY=1", CLI_WAIT_MS));
	assert_int_equal(gwproc_signal(gp, SIGTERM), 0);
	assert_true(notify_wait(fd, "STOPPING=1", CLI_WAIT_MS));
	assert_int_equal(gwproc_stop(gp), 0);
	gwproc_free(gp);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_template, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_help, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_relative_paths, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_path_checks, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_start_error_once,
		    cli_setup, cli_teardown),
		cmocka_unit_test_setup_teardown(test_durations, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_mosctl_json, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_readme_request, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_examples, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_log_info, setup_log_info,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_log_json, setup_log_json,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_notify, cli_setup,
		    cli_teardown),
		cmocka_unit_test_setup_teardown(test_log_json_values, cli_setup,
		    cli_teardown),
	};

	return cmocka_run_group_tests_name("it_cli", tests, NULL, NULL);
}
