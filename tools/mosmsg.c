/*
 * mosmsg: the MOS codec on the command line.
 *
 *   decode    byte stream -> one JSON line per frame (schema: docs/mosmsg.md)
 *   encode    JSON lines -> wire bytes
 *   validate  byte stream -> one line per problem, exit status
 *   convert   byte stream -> the same frames in another encoding
 *
 * Input is read in chunks and framed as it arrives, so a stream of any length
 * runs in memory bounded by the largest frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "mosxml/mosjson.h"
#include "mosxml/mosxml.h"

#define EXIT_BAD	2	/* a frame or line failed */
#define EXIT_USAGE	64
#define READ_CHUNK	(64u << 10)
#define LINE_MAX_BYTES	(64u << 20)	/* one JSON line of encode */

struct opts {
	enum mos_enc	 enc;	/* input (decode, validate, convert) or output */
	enum mos_enc	 to;	/* convert */
	enum mos_mode	 mode;
	const char	*path;	/* NULL or "-" = stdin */
};

/* Per-frame work; returns 0, or -1 when the frame failed. */
typedef int	(*frame_fn)(const struct opts *, const struct mos_frame *,
		    unsigned long);
/* A framing error that ends the stream. */
typedef void	(*stop_fn)(unsigned long, const char *);

#define CMD_STRICT	0x1	/* takes --strict */
#define CMD_TO		0x2	/* takes --to */
#define CMD_OUTPUT	0x4	/* --encoding is the output's: utf16be default */
#define CMD_NEED_FRAME	0x8	/* a stream without frames is a problem */

struct cmd {
	const char	*name;
	const char	*args;
	const char	*help;
	int		 flags;
	int		 (*run)(const struct cmd *, const struct opts *);
	frame_fn	 frame;
	stop_fn		 stop;
};

/* Print one command's usage. */
static void
usage_cmd(FILE *f, const struct cmd *c)
{
	fprintf(f, "usage: mosmsg %s %s\n%s", c->name, c->args, c->help);
}

/* Open the input: a file, or stdin for NULL and "-". */
static int
input_open(const char *path)
{
	int	fd;

	if (path == NULL || strcmp(path, "-") == 0)
		return STDIN_FILENO;
	if ((fd = open(path, O_RDONLY)) == -1)
		fprintf(stderr, "mosmsg: %s: %s\n", path, strerror(errno));
	return fd;
}

/* Write all of a buffer to stdout; -1 on error (reported). */
static int
output(const void *p, size_t n)
{
	if (n != 0 && fwrite(p, 1, n, stdout) != n) {
		fprintf(stderr, "mosmsg: write: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Text as valid UTF-8 for JSON: invalid bytes become '?'. */
static char *
utf8_clean(const char *s)
{
	struct mos_buf	 b = { 0 };
	char		 err[64], *c;
	size_t		 i;

	if ((c = strdup(s)) == NULL)
		return NULL;
	if (mos_recode(s, strlen(s), MOS_ENC_UTF8, MOS_ENC_UTF8, &b, err,
	    sizeof err) == -1)
		for (i = 0; c[i] != '\0'; i++)
			if ((unsigned char)c[i] >= 0x80)
				c[i] = '?';
	mos_buf_free(&b);
	return c;
}

/* Print {"type":null,"error":"...","frame":N} on its own line. */
static void
print_error_line(unsigned long n, const char *error)
{
	json_t	*o;
	char	*clean, *s = NULL;

	if ((clean = utf8_clean(error)) != NULL &&
	    (o = json_pack("{s:n,s:s,s:I}", "type", "error", clean, "frame",
	    (json_int_t)n)) != NULL) {
		s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	if (s != NULL)
		printf("%s\n", s);
	else
		printf("{\"type\":null,\"error\":\"out of memory\",\"frame\":%lu}\n",
		    n);
	free(s);
	free(clean);
}

/* Parse a frame; on failure fill text with "<kind>: <message>". */
static struct mos_msg *
parse_frame(const struct opts *o, const struct mos_frame *fm, char *text,
    size_t len)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err;

	memset(&err, 0, sizeof err);
	if (mos_parse(fm->data, fm->len, fm->enc, o->mode, &m, &err) == MOS_OK)
		return m;
	if (err.line > 0 && strstr(err.msg, "line") == NULL)
		snprintf(text, len, "%s: line %d: %s", mos_err_name(err.code),
		    err.line, err.msg);
	else
		snprintf(text, len, "%s: %s", mos_err_name(err.code), err.msg);
	return NULL;
}

/* decode: one JSON line per frame. */
static int
decode_frame(const struct opts *o, const struct mos_frame *fm,
    unsigned long n)
{
	struct mos_msg	*m;
	char		 text[512], *json;

	if ((m = parse_frame(o, fm, text, sizeof text)) == NULL) {
		print_error_line(n, text);
		return -1;
	}
	json = mos_msg_to_json(m);
	mos_msg_free(m);
	if (json == NULL) {
		print_error_line(n, "json: the message cannot be represented");
		return -1;
	}
	printf("%s\n", json);
	free(json);
	return 0;
}

/* validate: one line per problem. */
static int
validate_frame(const struct opts *o, const struct mos_frame *fm,
    unsigned long n)
{
	struct mos_msg	*m;
	char		 text[512];

	if ((m = parse_frame(o, fm, text, sizeof text)) == NULL) {
		printf("frame %lu: %s\n", n, text);
		return -1;
	}
	mos_msg_free(m);
	return 0;
}

/* validate: a framing problem. */
static void
validate_stop(unsigned long n, const char *text)
{
	printf("frame %lu: %s\n", n, text);
}

/* convert: the frame re-encoded. */
static int
convert_frame(const struct opts *o, const struct mos_frame *fm,
    unsigned long n)
{
	struct mos_buf	b = { 0 };
	char		err[128];
	int		rc = 0;

	if (mos_recode(fm->data, fm->len, fm->enc, o->to, &b, err,
	    sizeof err) == -1) {
		fprintf(stderr, "mosmsg: frame %lu: %s\n", n, err);
		rc = -1;
	} else if (output(b.data, b.len) == -1)
		exit(1);
	mos_buf_free(&b);
	return rc;
}

/* convert: a framing problem. */
static void
convert_stop(unsigned long n, const char *text)
{
	fprintf(stderr, "mosmsg: frame %lu: %s\n", n, text);
}

/* Drain the ready frames; returns the framer status that stopped it. */
static int
stream_drain(const struct cmd *c, const struct opts *o, struct mos_framer *f,
    unsigned long *n, bool *bad)
{
	struct mos_frame	fm;
	int			r;

	while ((r = mos_framer_next(f, &fm)) == MOS_FRAME_READY)
		if (c->frame(o, &fm, ++*n) == -1)
			*bad = true;
	return r;
}

/*
 * Read the input in chunks, frame it and hand each frame to the command. A
 * framing error is reported as frame N+1 and ends the stream.
 */
static int
stream_run(const struct cmd *c, const struct opts *o)
{
	struct mos_framer	*f;
	uint8_t			*chunk;
	unsigned long		 n = 0;
	bool			 bad = false;
	ssize_t			 got = 1;
	int			 fd, r = MOS_FRAME_MORE;
	char			 text[256];

	if ((fd = input_open(o->path)) == -1)
		return 1;
	if ((f = mos_framer_new(o->enc, NULL)) == NULL ||
	    (chunk = malloc(READ_CHUNK)) == NULL) {
		fprintf(stderr, "mosmsg: out of memory\n");
		exit(1);
	}
	while (r == MOS_FRAME_MORE && got > 0) {
		if ((got = read(fd, chunk, READ_CHUNK)) == -1) {
			if (errno == EINTR) {
				got = 1;
				continue;
			}
			fprintf(stderr, "mosmsg: read: %s\n", strerror(errno));
			break;
		}
		if ((r = mos_framer_feed(f, chunk, (size_t)got)) != 0)
			break;		/* out of memory: reported below */
		r = stream_drain(c, o, f, &n, &bad);
	}
	if (r == MOS_FRAME_MORE && got == 0)
		r = mos_framer_end(f);
	if (r < 0) {
		snprintf(text, sizeof text, "framing: %s", mos_framer_errmsg(f));
		c->stop(n + 1, text);
		bad = true;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	free(chunk);
	mos_framer_free(f);
	if (got == -1)
		return 1;
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "mosmsg: write: %s\n", strerror(errno));
		return 1;
	}
	if ((c->flags & CMD_NEED_FRAME) != 0 && n == 0 && !bad) {
		printf("stream: no <mos> frame found\n");
		bad = true;
	}
	return bad ? EXIT_BAD : 0;
}

/* decode, validate and convert: frame the input. */
static int
cmd_stream(const struct cmd *c, const struct opts *o)
{
	return stream_run(c, o);
}

/* Encode one JSON line; -1 (reported) if it is bad. */
static int
encode_line(const struct opts *o, const char *line, size_t len,
    unsigned long lineno, struct mos_buf *out)
{
	struct mos_msg	*m;
	char		 err[256];
	int		 rc;

	if ((m = mos_msg_from_json(line, len, err, sizeof err)) == NULL) {
		fprintf(stderr, "mosmsg: line %lu: %s\n", lineno, err);
		return -1;
	}
	out->len = 0;
	rc = mos_write(m, o->enc, out, err, sizeof err);
	mos_msg_free(m);
	if (rc == -1) {
		fprintf(stderr, "mosmsg: line %lu: %s\n", lineno, err);
		return -1;
	}
	return output(out->data, out->len) == -1 ? -2 : 0;
}

/* True if a line holds only whitespace. */
static bool
blank(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

/* encode: JSON lines to wire bytes. */
static int
cmd_encode(const struct cmd *c, const struct opts *o)
{
	struct mos_buf	 out = { 0 };
	FILE		*in = stdin;
	char		*line = NULL;
	size_t		 cap = 0;
	ssize_t		 len;
	unsigned long	 lineno = 0;
	int		 rc, status = 0;

	(void)c;
	if (o->path != NULL && strcmp(o->path, "-") != 0 &&
	    (in = fopen(o->path, "r")) == NULL) {
		fprintf(stderr, "mosmsg: %s: %s\n", o->path, strerror(errno));
		return 1;
	}
	while ((len = getline(&line, &cap, in)) != -1) {
		lineno++;
		if (blank(line, (size_t)len))
			continue;
		if ((size_t)len > LINE_MAX_BYTES) {
			fprintf(stderr, "mosmsg: line %lu: longer than %u bytes\n",
			    lineno, LINE_MAX_BYTES);
			status = EXIT_BAD;
			continue;
		}
		if ((rc = encode_line(o, line, (size_t)len, lineno, &out)) == -2) {
			status = 1;
			break;
		}
		if (rc == -1)
			status = EXIT_BAD;
	}
	if (ferror(in)) {
		fprintf(stderr, "mosmsg: read: %s\n", strerror(errno));
		status = 1;
	}
	if (in != stdin)
		fclose(in);
	free(line);
	mos_buf_free(&out);
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "mosmsg: write: %s\n", strerror(errno));
		return 1;
	}
	return status;
}

static const struct cmd cmds[] = {
	{ "decode", "[--encoding utf16be|utf8|auto] [--strict] [FILE|-]",
	  "  Print one JSON object per frame, one per line (docs/mosmsg.md).\n"
	  "  A frame that fails prints {\"type\":null,\"error\":\"...\","
	  "\"frame\":N}\n  and decoding goes on; a framing error prints the "
	  "same and stops.\n  Exit 2 if any frame failed, else 0. Default "
	  "encoding: auto.\n",
	  CMD_STRICT, cmd_stream, decode_frame, print_error_line },
	{ "encode", "[--encoding utf16be|utf8] [FILE|-]",
	  "  Read JSON lines (the decode schema) and write each message as wire\n"
	  "  bytes (no BOM, no declaration). A bad line is reported on stderr\n"
	  "  with its number; exit 2 then. Default encoding: utf16be.\n",
	  CMD_OUTPUT, cmd_encode, NULL, NULL },
	{ "validate", "[--encoding utf16be|utf8|auto] [--strict] [FILE|-]",
	  "  Check every frame. Prints one line per problem, \"frame N: "
	  "error\";\n  exit 0 when all is well, 2 otherwise.\n",
	  CMD_STRICT | CMD_NEED_FRAME, cmd_stream, validate_frame,
	  validate_stop },
	{ "convert", "--to utf16be|utf8 [--encoding utf16be|utf8|auto] "
	  "[FILE|-]",
	  "  Write the frames of the input re-encoded, back to back; what lies\n"
	  "  between frames (whitespace, BOM, declaration, junk) is dropped.\n",
	  CMD_TO, cmd_stream, convert_frame, convert_stop },
};

/* Print the usage of every command. */
static void
usage(FILE *f)
{
	size_t	i;

	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		usage_cmd(f, &cmds[i]);
	fprintf(f, "exit status: 0 ok, 1 I/O error, 2 bad input, 64 usage\n");
}

/* Parse a command's options into o; -1 on a usage error, 1 for --help. */
static int
parse_opts(const struct cmd *c, int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "encoding", required_argument, NULL, 'e' },
		{ "strict", no_argument, NULL, 's' },
		{ "to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool	output_enc = (c->flags & CMD_OUTPUT) != 0;
	int	ch;

	o->enc = output_enc ? MOS_ENC_UTF16BE : MOS_ENC_AUTO;
	o->to = MOS_ENC_AUTO;
	o->mode = MOS_LENIENT;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "e:st:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'e':
			if (mos_enc_parse(optarg, &o->enc) == -1 ||
			    (output_enc && o->enc == MOS_ENC_AUTO)) {
				fprintf(stderr, "mosmsg: bad encoding '%s'\n",
				    optarg);
				return -1;
			}
			break;
		case 's':
			if ((c->flags & CMD_STRICT) == 0)
				return -1;
			o->mode = MOS_STRICT;
			break;
		case 't':
			if ((c->flags & CMD_TO) == 0 ||
			    mos_enc_parse(optarg, &o->to) == -1 ||
			    o->to == MOS_ENC_AUTO) {
				fprintf(stderr, "mosmsg: --to takes utf16be or "
				    "utf8\n");
				return -1;
			}
			break;
		case 'h':
			return 1;
		default:
			return -1;
		}
	}
	if ((c->flags & CMD_TO) != 0 && o->to == MOS_ENC_AUTO) {
		fprintf(stderr, "mosmsg: convert needs --to utf16be|utf8\n");
		return -1;
	}
	if (argc - optind > 1)
		return -1;
	o->path = optind < argc ? argv[optind] : NULL;
	return 0;
}

int
main(int argc, char **argv)
{
	const struct cmd	*c = NULL;
	struct opts		 o;
	size_t			 i;
	int			 r;
	char			 prog[32];

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			c = &cmds[i];
	if (c == NULL) {
		fprintf(stderr, "mosmsg: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	/* getopt names the program by argv[0]: make it "mosmsg decode". */
	snprintf(prog, sizeof prog, "mosmsg %s", c->name);
	argv[1] = prog;
	if ((r = parse_opts(c, argc - 1, argv + 1, &o)) != 0) {
		usage_cmd(r == 1 ? stdout : stderr, c);
		return r == 1 ? 0 : EXIT_USAGE;
	}
	mos_init();
	return c->run(c, &o);
}
