/*
 * The real bin/mosmsg ($MOSGW_BIN/mosmsg): every fixture and shared example
 * decodes, decode | encode | decode is stable in both encodings, broken
 * frames and framing errors give the error line and exit 2, validate,
 * encode errors with line numbers, convert, usage.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "mosxml/mosxml.h"
#include "mosxml/tests/util.h"

#define RUN_TIMEOUT_MS	30000

static char	dir[1024];		/* this suite's temporary directory */
static char	prog[PATH_MAX];		/* mosmsg */

/* A path inside the temporary directory (one of four rotating buffers). */
static const char *
tmp(const char *name)
{
	static char	buf[4][1100];
	static int	i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

/* Write a file whole. */
static void
write_file(const char *path, const void *p, size_t n)
{
	FILE	*f;

	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Read a file whole, NUL-terminated; *n (if not NULL) gets its length. */
static char *
read_file(const char *path, size_t *n)
{
	size_t	len;

	return mostest_slurp(path, n != NULL ? n : &len);
}

/* Append one file to another. */
static void
append_file(const char *to, const char *from)
{
	FILE	*f;
	char	*p;
	size_t	 n;

	p = read_file(from, &n);
	assert_non_null(f = fopen(to, "ab"));
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	free(p);
}

/*
 * Run mosmsg with stdin, stdout and stderr on files; returns its exit
 * status. A run past the timeout is killed and fails the test.
 */
static int
run_argv(const char *in, const char *out, const char *err,
    const char *const *args)
{
	char		*argv[16];
	struct timespec	 ts = { 0, 5000000 };
	pid_t		 pid, w;
	int		 n, status, waited;

	assert_true((pid = fork()) != -1);
	if (pid == 0) {
		argv[0] = prog;
		for (n = 1; n < 15 && args[n - 1] != NULL; n++)
			argv[n] = strdup(args[n - 1]);
		argv[n] = NULL;
		if (dup2(open(in, O_RDONLY), 0) == -1 ||
		    dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1) == -1 ||
		    dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2) == -1)
			_exit(126);
		execv(prog, argv);
		_exit(127);
	}
	for (waited = 0; (w = waitpid(pid, &status, WNOHANG)) == 0; waited += 5) {
		if (waited >= RUN_TIMEOUT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("mosmsg %s ran past %d ms", args[0], RUN_TIMEOUT_MS);
		}
		nanosleep(&ts, NULL);
	}
	assert_int_equal(w, pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* run(in, out, err, "decode", "--strict"): the arguments after err. */
#define run(in, out, err, ...)						\
	run_argv((in), (out), (err), (const char *const []){ __VA_ARGS__, NULL })

/* Remove one entry of the temporary tree. */
static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Make the temporary directory and find mosmsg. */
static int
setup(void **state)
{
	const char	*base = getenv("MOSGW_TMP"), *bin = getenv("MOSGW_BIN");

	(void)state;
	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(dir, sizeof dir, "%s/mosmsg.XXXXXX", base);
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(prog, sizeof prog, "%s/mosmsg", bin != NULL ? bin : "bin");
	if (access(prog, X_OK) == -1) {
		fprintf(stderr, "%s: %s (set MOSGW_BIN)\n", prog, strerror(errno));
		return -1;
	}
	return 0;
}

/* Remove the temporary directory. */
static int
teardown(void **state)
{
	(void)state;
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}


/* Check one JSON line: an object whose "type" is a string (or null). */
static json_t *
check_line(const char *line, bool want_ok)
{
	json_error_t	 je;
	json_t		*o, *t;

	if ((o = json_loads(line, 0, &je)) == NULL)
		fail_msg("not JSON (%s): %.200s", je.text, line);
	t = json_object_get(o, "type");
	if (want_ok && !json_is_string(t))
		fail_msg("frame failed: %.300s", line);
	return o;
}

/* Every line of a decode output; returns the number of lines. */
static size_t
check_lines(const char *path, bool want_ok)
{
	char	*p, *line, *save = NULL;
	size_t	 n = 0;

	p = read_file(path, NULL);
	for (line = strtok_r(p, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save), n++)
		json_decref(check_line(line, want_ok));
	free(p);
	return n;
}

/* Write a UTF-16BE copy of a UTF-8 file. */
static void
to_utf16(const char *from, const char *to)
{
	struct mos_buf	 b = { 0 };
	char		*p;
	size_t		 n;

	p = read_file(from, &n);
	mostest_utf16(p, n, &b);
	write_file(to, b.data, b.len);
	mos_buf_free(&b);
	free(p);
}

/* Every fixture decodes to one JSON line, the same from UTF-8 and UTF-16BE. */
static void
test_decode_fixtures(void **state)
{
	char	**v, *a, *b;
	size_t	  i, n;

	(void)state;
	if ((v = mostest_list(mostest_fixtures(), ".xml", &n)) == NULL)
		fail_msg("no %s/*.xml", mostest_fixtures());
	for (i = 0; i < n; i++) {
		if (run(v[i], tmp("d8"), tmp("e"), "decode") != 0)
			fail_msg("decode %s failed", v[i]);
		if (check_lines(tmp("d8"), true) != 1)
			fail_msg("%s: not one line", v[i]);
		to_utf16(v[i], tmp("in16"));
		assert_int_equal(run(tmp("in16"), tmp("d16"), tmp("e"), "decode",
		    "--encoding", "utf16be", "-"), 0);
		a = read_file(tmp("d8"), NULL);
		b = read_file(tmp("d16"), NULL);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	mostest_list_free(v, n);
}

/* Every shared example decodes leniently; the invalid one is "unknown". */
static void
test_decode_examples(void **state)
{
	const char	 *ex;
	json_t		 *o;
	char		**v, *line;
	size_t		  i, n, unknown = 0;

	(void)state;
	if ((ex = mostest_examples()) == NULL)
		skip();
	v = mostest_list(ex, ".xml", &n);
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		if (run(v[i], tmp("d"), tmp("e"), "decode") != 0)
			fail_msg("decode %s failed", v[i]);
		line = read_file(tmp("d"), NULL);
		o = check_line(line, true);
		if (strstr(v[i], "invalid") != NULL) {
			assert_string_equal(json_string_value(json_object_get(o,
			    "type")), "unknown");
			unknown++;
		}
		json_decref(o);
		free(line);
	}
	assert_int_equal(unknown, 1);
	mostest_list_free(v, n);
}

/* decode | encode | decode gives the same lines, for either wire encoding. */
static void
test_round_trip(void **state)
{
	static const char *encs[] = { "utf16be", "utf8" };
	const char	 *dirs[2];
	char		**v, *a, *b;
	size_t		  d, i, n, lines = 0;

	(void)state;
	write_file(tmp("all"), "", 0);
	dirs[0] = mostest_fixtures();
	dirs[1] = mostest_examples();	/* NULL when absent: fixtures only */
	for (d = 0; d < 2 && dirs[d] != NULL; d++) {
		v = mostest_list(dirs[d], ".xml", &n);
		for (i = 0; i < n; i++)
			append_file(tmp("all"), v[i]);
		lines += n;
		mostest_list_free(v, n);
	}
	assert_true(lines > 0);

	assert_int_equal(run(tmp("all"), tmp("d1"), tmp("e"), "decode"), 0);
	assert_int_equal(check_lines(tmp("d1"), true), lines);
	a = read_file(tmp("d1"), NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(run(tmp("d1"), tmp("wire"), tmp("e"), "encode",
		    "--encoding", encs[i]), 0);
		assert_int_equal(run(tmp("wire"), tmp("d2"), tmp("e"), "decode",
		    "--encoding", encs[i]), 0);
		b = read_file(tmp("d2"), NULL);
		assert_string_equal(a, b);
		free(b);
	}
	free(a);
}

#define HEARTBEAT(id)						\
    "<mos><mosID>a</mosID><ncsID>b</ncsID><messageID>" id "</messageID>"	\
    "<heartbeat><time>2024-01-02T03:04:05Z</time></heartbeat></mos>"

static const char msg_ok[] = HEARTBEAT("1");
static const char stream_bad[] = HEARTBEAT("1") "\n<mos><broken></mos>\n"
    HEARTBEAT("2") "<mos><mosID>";

/* A broken frame: error line, decoding goes on; truncation ends it. */
static void
test_broken_frame(void **state)
{
	json_t	*o;
	char	*p, *l[5], *save = NULL;
	size_t	 n;

	(void)state;
	write_file(tmp("bad"), stream_bad, strlen(stream_bad));
	assert_int_equal(run(tmp("bad"), tmp("d"), tmp("e"), "decode"), 2);
	p = read_file(tmp("d"), NULL);
	for (n = 0; n < 5 && (l[n] = strtok_r(n == 0 ? p : NULL, "\n",
	    &save)) != NULL; n++)
		;
	assert_int_equal(n, 4);
	json_decref(check_line(l[0], true));
	json_decref(check_line(l[2], true));
	o = check_line(l[1], false);
	assert_true(json_is_null(json_object_get(o, "type")));
	assert_int_equal(json_integer_value(json_object_get(o, "frame")), 2);
	assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
	    "xml"));
	json_decref(o);
	o = check_line(l[3], false);
	assert_true(json_is_null(json_object_get(o, "type")));
	assert_int_equal(json_integer_value(json_object_get(o, "frame")), 4);
	assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
	    "framing: stream ended inside the frame"));
	json_decref(o);
	free(p);
}

/* validate: silent and 0 when good; one line per problem and 2 when not. */
static void
test_validate(void **state)
{
	char	*p;

	(void)state;
	write_file(tmp("bad"), stream_bad, strlen(stream_bad));
	assert_int_equal(run(tmp("bad"), tmp("o"), tmp("e"), "validate"),
	    2);
	p = read_file(tmp("o"), NULL);
	assert_non_null(strstr(p, "frame 2: xml: "));
	assert_non_null(strstr(p, "\nframe 4: framing: "));
	assert_null(strstr(p, "frame 1:"));
	assert_null(strstr(p, "frame 3:"));
	free(p);

	/* Good, but missing messageID: fine lenient, a problem when strict. */
	static const char nomid[] = "<mos><mosID>a</mosID><ncsID>b</ncsID>"
	    "<heartbeat><time>2024-01-02T03:04:05Z</time></heartbeat></mos>";

	write_file(tmp("ok"), msg_ok, strlen(msg_ok));
	write_file(tmp("nomid"), nomid, strlen(nomid));
	assert_int_equal(run(tmp("ok"), tmp("o"), tmp("e"), "validate"), 0);
	p = read_file(tmp("o"), NULL);
	assert_string_equal(p, "");
	free(p);
	assert_int_equal(run(tmp("nomid"), tmp("o"), tmp("e"), "validate"),
	    0);
	assert_int_equal(run(tmp("nomid"), tmp("o"), tmp("e"), "validate",
	    "--strict"), 2);
	p = read_file(tmp("o"), NULL);
	assert_non_null(strstr(p, "frame 1: envelope: "));
	free(p);

	/* No frame at all is a problem too. */
	assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), "validate"),
	    2);
	p = read_file(tmp("o"), NULL);
	assert_non_null(strstr(p, "no <mos> frame"));
	free(p);
}

/* encode: a bad line is named on stderr, good lines still come out. */
static void
test_encode_errors(void **state)
{
	static const char lines[] =
	    "{\"type\":\"heartbeat\",\"mosID\":\"a\",\"ncsID\":\"b\","
	    "\"messageID\":1,\"body\":{}}\n"
	    "{not json\n"
	    "\n"
	    "{\"type\":\"mosObj\",\"mosID\":\"a\",\"ncsID\":\"b\",\"body\":{}}\n"
	    "{\"type\":\"heartbeat\",\"mosID\":\"a\",\"ncsID\":\"b\","
	    "\"messageID\":2,\"body\":{}}\n";
	char	*p;

	(void)state;
	write_file(tmp("j"), lines, strlen(lines));
	assert_int_equal(run(tmp("j"), tmp("w"), tmp("e"), "encode",
	    "--encoding", "utf8"), 2);
	p = read_file(tmp("e"), NULL);
	assert_non_null(strstr(p, "line 2: "));
	assert_non_null(strstr(p, "line 4: "));
	assert_null(strstr(p, "line 1:"));
	assert_null(strstr(p, "line 5:"));
	free(p);
	assert_int_equal(run(tmp("w"), tmp("d"), tmp("e"), "decode"), 0);
	assert_int_equal(check_lines(tmp("d"), true), 2);
	assert_int_equal(run(tmp("j"), tmp("w"), tmp("e"), "encode",
	    "--encoding", "auto"), 64);
}

/*
 * encode checks every verbatim-XML field on its own: a fragment that
 * closes its element is refused with the element and offset named, and
 * nothing of that line is written; the line with a harmless fragment is.
 */
static void
test_encode_fragments(void **state)
{
	static const char lines[] =
	    "{\"type\":\"mosObj\",\"mosID\":\"a\",\"ncsID\":\"b\","
	    "\"messageID\":1,\"body\":{\"objID\":\"RIGHT\",\"mosAbstract\":"
	    "\"</mosAbstract><objID>EVIL2</objID><mosAbstract>\"}}\n"
	    "{\"type\":\"roStorySend\",\"mosID\":\"a\",\"ncsID\":\"b\","
	    "\"messageID\":2,\"body\":{\"roID\":\"R\",\"storyID\":\"S\","
	    "\"storyBody\":{\"#content\":[{\"p\":\"x</p><storyItem><itemID>9"
	    "</itemID></storyItem><p>\"}]}}}\n"
	    "{\"type\":\"unknown\",\"name\":\"roItemStat\",\"mosID\":\"a\","
	    "\"ncsID\":\"b\",\"messageID\":3,\"body\":{\"#xml\":"
	    "\"</roItemStat><mosObj><objID>E</objID></mosObj><roItemStat>\"}}\n"
	    "{\"type\":\"mosObj\",\"mosID\":\"a\",\"ncsID\":\"b\","
	    "\"messageID\":4,\"body\":{\"objID\":\"RIGHT\",\"mosAbstract\":"
	    "\"<![CDATA[</mosAbstract><objID>EVIL2</objID>]]>\"}}\n";
	char	*p;

	(void)state;
	write_file(tmp("j"), lines, strlen(lines));
	assert_int_equal(run(tmp("j"), tmp("w"), tmp("e"), "encode",
	    "--encoding", "utf8"), 2);
	p = read_file(tmp("e"), NULL);
	assert_non_null(strstr(p, "line 1: body/mosAbstract: mosAbstract: "
	    "closes its element at offset 0"));
	assert_non_null(strstr(p, "line 2: body/storyBody/#content[0]: p: closes "
	    "its element at offset 1"));
	assert_non_null(strstr(p, "line 3: body: roItemStat: closes its "
	    "element at offset 0"));
	assert_null(strstr(p, "line 4:"));
	free(p);
	assert_int_equal(run(tmp("w"), tmp("d"), tmp("e"), "decode"), 0);
	assert_int_equal(check_lines(tmp("d"), true), 1);
	p = read_file(tmp("d"), NULL);
	assert_non_null(strstr(p, "\"objID\":\"RIGHT\""));
	assert_null(strstr(p, "\"objID\":\"EVIL2\""));
	free(p);
}

/* convert: UTF-8 -> UTF-16BE -> UTF-8 keeps every frame. */
static void
test_convert(void **state)
{
	char	*a, *b;
	size_t	 n;

	(void)state;
	static const char head[] = "\xef\xbb\xbf<?xml version=\"1.0\"?>\n";
	size_t	len = strlen(msg_ok);

	write_file(tmp("c8"), head, strlen(head));
	write_file(tmp("ok"), msg_ok, len);
	append_file(tmp("c8"), tmp("ok"));
	append_file(tmp("c8"), tmp("ok"));
	assert_int_equal(run(tmp("c8"), tmp("c16"), tmp("e"), "convert", "--to",
	    "utf16be"), 0);
	a = read_file(tmp("c16"), &n);
	assert_int_equal(n, 2 * 2 * len);
	assert_memory_equal(a, "\0<\0m\0o\0s\0>", 10);
	free(a);
	assert_int_equal(run(tmp("c16"), tmp("back"), tmp("e"), "convert",
	    "--to", "utf8", "--encoding", "utf16be"), 0);
	a = read_file(tmp("back"), &n);
	assert_int_equal(n, 2 * len);
	assert_memory_equal(a, msg_ok, len);
	assert_memory_equal(a + len, msg_ok, len);
	free(a);
	/* A lone surrogate cannot be converted: named, exit 2. */
	write_file(tmp("sur"), "\0<\0m\0o\0s\0>\xd8\x3d\0<\0/\0m\0o\0s\0>", 24);
	assert_int_equal(run(tmp("sur"), tmp("o"), tmp("e"), "convert", "--to",
	    "utf8"), 2);
	b = read_file(tmp("e"), NULL);
	assert_non_null(strstr(b, "frame 1: invalid UTF-16BE"));
	free(b);
	assert_int_equal(run(tmp("sur"), tmp("o"), tmp("e"), "convert"),
	    64);
}

/* Usage: --help for each command, bad commands and options. */
static void
test_usage(void **state)
{
	static const char *cmds[] = { "decode", "encode", "validate", "convert" };
	char	*p;
	size_t	 i;

	(void)state;
	for (i = 0; i < 4; i++) {
		assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), cmds[i],
		    "--help"), 0);
		p = read_file(tmp("o"), NULL);
		assert_non_null(strstr(p, "usage: mosmsg "));
		assert_non_null(strstr(p, cmds[i]));
		free(p);
	}
	assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), "--help"), 0);
	assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), "frobnicate"),
	    64);
	assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), "decode",
	    "--encoding", "latin1"), 64);
	assert_int_equal(run("/dev/null", tmp("o"), tmp("e"), "decode",
	    "/nonexistent/x"), 1);
	p = read_file(tmp("e"), NULL);
	assert_non_null(strstr(p, "/nonexistent/x"));
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_fixtures),
		cmocka_unit_test(test_decode_examples),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_broken_frame),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_encode_fragments),
		cmocka_unit_test(test_convert),
		cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests_name("mosmsg", tests, setup, teardown);
}
