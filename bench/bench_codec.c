/*
 * bench_codec: the MOS codec's speed beside bare libxml2, in the same run.
 *
 * Inputs, built in code: a mosAck (about 330 bytes of UTF-16BE, the
 * gateway's most frequent small frame), a typical mosObj (about 1.5 KB) and
 * a large roCreate (200 stories, 1,000 items). For each, every figure is
 * the rate over a fixed wall time (BENCH_TIME seconds, default 1):
 *
 *   framer only         mos_framer_feed + mos_framer_next
 *   parse only          mos_parse of the frame into the typed model
 *   frame+parse+model   the same, then mos_parse into the typed model
 *   bare xmlReadMemory  the ceiling: libxml2 building a DOM from the frame
 *                       (encoding "UTF-16BE", the parser's options); it and
 *                       the codec run in alternating slices
 *   writer utf16be/utf8 mos_write of the parsed model
 *
 * Aims (issue 2): the codec within 1.4x of bare libxml2; writer > 200 MB/s.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/xmlversion.h>

#include "mosxml/mosxml.h"

/* What mosxml/parse.c passes to libxml2 (hardening.md 1.9). */
#define BARE_OPTS	(XML_PARSE_NONET | XML_PARSE_NOERROR | \
			 XML_PARSE_NOWARNING | XML_PARSE_IGNORE_ENC)

#define AIM_RATIO	1.4
#define PAIR_SLICES	5	/* codec and ceiling alternate this many times */
#define AIM_WRITER_MBS	200.0
#define NINPUT		3	/* mosAck, mosObj, roCreate */

struct input {
	const char	*name;
	struct mos_buf	 wire;		/* one UTF-16BE frame */
	struct mos_msg	*msg;		/* its parsed model */
	struct mos_framer *fr;
	struct mos_buf	 out;		/* writer output */
};

static double	bench_time = 1.0;

/* Append printf-style UTF-8 text. */
static void
text_add(struct mos_buf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
text_add(struct mos_buf *t, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf((char *)t->data + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < t->cap - t->len)
			break;
		t->cap = 2 * (t->cap + (size_t)n + 64);
		if ((t->data = realloc(t->data, t->cap)) == NULL)
			abort();
	}
	t->len += (size_t)n;
}

/* The envelope every message built here starts with. */
static void
gen_envelope(struct mos_buf *t, int id)
{
	text_add(t, "<mos>\n<mosID>mam.bench.example.mos</mosID>\n"
	    "<ncsID>ncs.bench.example</ncsID>\n<messageID>%d</messageID>\n", id);
}

/* A mosAck as the gateway receives it (about 330 bytes in UTF-16BE). */
static void
gen_mos_ack(struct mos_buf *t)
{
	text_add(t, "<mos><mosID>mam.bench.mos</mosID><ncsID>ncs.bench</ncsID>"
	    "<messageID>5021</messageID><mosAck><objID>MAM-000172</objID>"
	    "<objRev>3</objRev><status>ACK</status></mosAck></mos>");
}

/* A typical mosObj as a MAM publishes it (about 1.5 KB in UTF-16BE). */
static void
gen_mos_obj(struct mos_buf *t)
{
	gen_envelope(t, 5020);
	text_add(t, "<mosObj>\n"
	    "<objID>MAM-2024-000172</objID>\n"
	    "<objSlug>Council budget vote: reactions</objSlug>\n"
	    "<objGroup>News/Local</objGroup>\n"
	    "<objType>VIDEO</objType>\n"
	    "<objTB>50</objTB>\n"
	    "<objRev>3</objRev>\n"
	    "<objDur>5100</objDur>\n"
	    "<status>UPDATED</status>\n"
	    "<objAir>READY</objAir>\n"
	    "<objPaths>\n"
	    "<objPath techDescription=\"XDCAM HD\">\\\\mam01\\media\\"
	    "MAM-2024-000172.mxf</objPath>\n"
	    "<objProxyPath techDescription=\"Proxy\">https://mam.example/p/"
	    "MAM-2024-000172.mp4</objProxyPath>\n"
	    "</objPaths>\n"
	    "<createdBy>anna</createdBy>\n"
	    "<created>2024-03-18T07:12:09,120Z</created>\n"
	    "<changedBy>ola</changedBy>\n"
	    "<changed>2024-03-18T09:40:51,004Z</changed>\n"
	    "<description>Mayor and opposition leader after the vote."
	    "</description>\n"
	    "</mosObj>\n</mos>\n");
}

/* One item of the running order. */
static void
gen_item(struct mos_buf *t, int s, int i)
{
	text_add(t, "\t\t\t<item>\n"
	    "\t\t\t\t<itemID>%d</itemID>\n"
	    "\t\t\t\t<itemSlug>Story %d item %d</itemSlug>\n"
	    "\t\t\t\t<objID>MAM-2024-%06d</objID>\n"
	    "\t\t\t\t<mosID>mam.bench.example.mos</mosID>\n"
	    "\t\t\t\t<mosAbstract>Clip for story %d</mosAbstract>\n"
	    "\t\t\t\t<itemChannel>A</itemChannel>\n"
	    "\t\t\t\t<itemEdStart>0</itemEdStart>\n"
	    "\t\t\t\t<itemEdDur>%d</itemEdDur>\n"
	    "\t\t\t\t<itemTrigger>CHAINED</itemTrigger>\n"
	    "\t\t\t\t<mosExternalMetadata>\n"
	    "\t\t\t\t\t<mosScope>STORY</mosScope>\n"
	    "\t\t\t\t\t<mosSchema>http://ncs.example/schema/item.xsd"
	    "</mosSchema>\n"
	    "\t\t\t\t\t<mosPayload><cue>%d</cue><graphics>L3 name"
	    "</graphics></mosPayload>\n"
	    "\t\t\t\t</mosExternalMetadata>\n"
	    "\t\t\t</item>\n", i, s, i, s * 100 + i, s, 250 + 25 * i, i);
}

/* A large roCreate: stories x items per story. */
static void
gen_ro_create(struct mos_buf *t, int stories, int items)
{
	int	s, i;

	gen_envelope(t, 2100);
	text_add(t, "\t<roCreate>\n\t\t<roID>RO;EVENING;2024-03-18</roID>\n"
	    "\t\t<roSlug>Evening news 18:00</roSlug>\n"
	    "\t\t<roChannel>NRK1</roChannel>\n"
	    "\t\t<roEdStart>2024-03-18T18:00:00</roEdStart>\n"
	    "\t\t<roEdDur>01:30:00</roEdDur>\n");
	for (s = 1; s <= stories; s++) {
		text_add(t, "\t\t<story>\n\t\t\t<storyID>STORY-%d</storyID>\n"
		    "\t\t\t<storySlug>Story number %d</storySlug>\n"
		    "\t\t\t<storyNum>A%d</storyNum>\n", s, s, s);
		for (i = 1; i <= items; i++)
			gen_item(t, s, i);
		text_add(t, "\t\t</story>\n");
	}
	text_add(t, "\t</roCreate>\n</mos>\n");
}

/* Make an input from UTF-8 text: UTF-16BE wire bytes and a parsed model. */
static void
input_init(struct input *in, const char *name, const struct mos_buf *text)
{
	struct mos_error	err;
	char			msg[128];

	memset(in, 0, sizeof *in);
	in->name = name;
	if (mos_recode(text->data, text->len, MOS_ENC_UTF8, MOS_ENC_UTF16BE,
	    &in->wire, msg, sizeof msg) != 0) {
		fprintf(stderr, "bench_codec: %s: %s\n", name, msg);
		exit(1);
	}
	if (mos_parse(in->wire.data, in->wire.len, MOS_ENC_UTF16BE, MOS_LENIENT,
	    &in->msg, &err) != MOS_OK) {
		fprintf(stderr, "bench_codec: %s does not parse: %s\n", name,
		    err.msg);
		exit(1);
	}
	if ((in->fr = mos_framer_new(MOS_ENC_UTF16BE, NULL)) == NULL)
		abort();
}

/* Seconds on the monotonic clock. */
static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Feed one copy of the frame and take it back from the framer. */
static const struct mos_frame *
frame_once(struct input *in)
{
	static struct mos_frame	f;

	if (mos_framer_feed(in->fr, in->wire.data, in->wire.len) != 0 ||
	    mos_framer_next(in->fr, &f) != MOS_FRAME_READY)
		abort();
	return &f;
}

/* framer only */
static void
w_framer(struct input *in)
{
	(void)frame_once(in);
}

/* frame+parse+model */
static void
w_codec(struct input *in)
{
	const struct mos_frame	*f = frame_once(in);
	struct mos_msg		*m;

	if (mos_parse(f->data, f->len, f->enc, MOS_LENIENT, &m, NULL) != MOS_OK)
		abort();
	mos_msg_free(m);
}

/* parse only */
static void
w_parse(struct input *in)
{
	struct mos_msg	*m;

	if (mos_parse(in->wire.data, in->wire.len, MOS_ENC_UTF16BE,
	    MOS_LENIENT, &m, NULL) != MOS_OK)
		abort();
	mos_msg_free(m);
}

/* bare xmlReadMemory: the ceiling */
static void
w_bare(struct input *in)
{
	xmlDocPtr	doc;

	doc = xmlReadMemory((const char *)in->wire.data, (int)in->wire.len,
	    NULL, "UTF-16BE", BARE_OPTS);
	if (doc == NULL)
		abort();
	xmlFreeDoc(doc);
}

/* Write the model once in an encoding. */
static void
write_once(struct input *in, enum mos_enc enc)
{
	char	err[128];

	in->out.len = 0;
	if (mos_write(in->msg, enc, &in->out, err, sizeof err) != 0) {
		fprintf(stderr, "bench_codec: %s: write: %s\n", in->name, err);
		exit(1);
	}
}

/* writer utf16be */
static void
w_write16(struct input *in)
{
	write_once(in, MOS_ENC_UTF16BE);
}

/* writer utf8 */
static void
w_write8(struct input *in)
{
	write_once(in, MOS_ENC_UTF8);
}

/* Runs and seconds of one measurement, summed over its slices. */
struct rate {
	unsigned long	n;
	double		t;
};

/* Run work for secs more seconds, adding to r. */
static void
measure_add(void (*work)(struct input *), struct input *in, double secs,
    struct rate *r)
{
	unsigned long	batch = 1, i;
	double		t0, t;

	work(in);	/* warm up: buffers, caches */
	t0 = now();
	do {
		for (i = 0; i < batch; i++)
			work(in);
		r->n += batch;
		t = now() - t0;
		if (t < secs / 50)
			batch *= 2;
	} while (t < secs);
	r->t += t;
}

/* Run work for the bench time; returns runs per second. */
static double
measure(void (*work)(struct input *), struct input *in)
{
	struct rate	r = { 0, 0 };

	measure_add(work, in, bench_time, &r);
	return (double)r.n / r.t;
}

/*
 * The codec and its ceiling in alternating slices, so that a change in the
 * machine's load hits both alike.
 */
static void
measure_pair(struct input *in, double *codec, double *bare)
{
	struct rate	c = { 0, 0 }, b = { 0, 0 };
	int		i;

	for (i = 0; i < PAIR_SLICES; i++) {
		measure_add(w_codec, in, bench_time / PAIR_SLICES, &c);
		measure_add(w_bare, in, bench_time / PAIR_SLICES, &b);
	}
	*codec = (double)c.n / c.t;
	*bare = (double)b.n / b.t;
}

/* One row of the table. */
static void
row(const struct input *in, const char *what, double rate, size_t bytes)
{
	printf("%-10s %9zu  %-28s %11.0f %9.1f\n", in->name, bytes, what, rate,
	    rate * (double)bytes / 1e6);
}

/* Every figure for one input; returns 0 when both aims are met. */
static int
bench_input(struct input *in)
{
	double	codec, bare, w16, w8, ratio;
	size_t	n = in->wire.len;

	row(in, "framer only", measure(w_framer, in), n);
	row(in, "parse only", measure(w_parse, in), n);
	measure_pair(in, &codec, &bare);
	row(in, "frame+parse+model", codec, n);
	row(in, "bare xmlReadMemory (ceiling)", bare, n);
	w16 = measure(w_write16, in);
	row(in, "writer utf16be", w16, in->out.len);
	w8 = measure(w_write8, in);
	row(in, "writer utf8", w8, in->out.len);
	write_once(in, MOS_ENC_UTF16BE);
	ratio = bare / codec;
	printf("%-10s %9s  codec time / bare time: %.2fx (aim <= %.1fx: %s); "
	    "writer %.0f MB/s (aim > %.0f: %s)\n", in->name, "", ratio,
	    AIM_RATIO, ratio <= AIM_RATIO ? "met" : "NOT met",
	    w16 * (double)in->out.len / 1e6, AIM_WRITER_MBS,
	    w16 * (double)in->out.len / 1e6 > AIM_WRITER_MBS ? "met" :
	    "NOT met");
	return ratio <= AIM_RATIO && w16 * (double)in->out.len / 1e6 >
	    AIM_WRITER_MBS ? 0 : 1;
}

int
main(void)
{
	struct mos_buf	 text = { 0 };
	struct input	 in[NINPUT];
	const char	*env;
	int		 i, missed = 0;

	if ((env = getenv("BENCH_TIME")) != NULL && atof(env) > 0)
		bench_time = atof(env);
	mos_init();
	gen_mos_ack(&text);
	input_init(&in[0], "mosAck", &text);
	text.len = 0;
	gen_mos_obj(&text);
	input_init(&in[1], "mosObj", &text);
	text.len = 0;
	gen_ro_create(&text, 200, 5);
	input_init(&in[2], "roCreate", &text);
	mos_buf_free(&text);

	printf("codec benchmark: UTF-16BE input, libxml2 %s, %.1f s per "
	    "figure, MB = 10^6 bytes\n", LIBXML_DOTTED_VERSION, bench_time);
	printf("roCreate: 200 stories, 1,000 items\n\n");
	printf("%-10s %9s  %-28s %11s %9s\n", "input", "bytes", "measurement",
	    "frames/s", "MB/s");
	for (i = 0; i < NINPUT; i++) {
		missed += bench_input(&in[i]);
		printf("\n");
	}
	for (i = 0; i < NINPUT; i++) {
		mos_framer_free(in[i].fr);
		mos_msg_free(in[i].msg);
		mos_buf_free(&in[i].wire);
		mos_buf_free(&in[i].out);
	}
	printf("aims met for %d of %d inputs\n", NINPUT - missed, NINPUT);
	return 0;
}
