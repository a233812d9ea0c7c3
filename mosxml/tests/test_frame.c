/*
 * The framer: any chunking gives the same frames; every case of issue 2
 * (junk, BOM, declaration, nested <mos>, CDATA/comments/PIs, attribute
 * values, odd bytes, truncation, caps, AUTO); linear cost; mos_recode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"

#define MAXF	16

struct got_frame {
	uint8_t		*data;
	size_t		 len;
	uint64_t	 off;
	enum mos_enc	 enc;
};

/* What one feeding of a stream produced. */
struct run {
	size_t			n;
	struct got_frame	f[MAXF];
	int			status;	/* 0, or the framing error */
};

/* A test stream: its bytes and the frames it must give. */
struct stream {
	struct mos_buf	buf;
	size_t		n;
	size_t		start[MAXF];
	size_t		len[MAXF];
};

/* Parts of a stream: frames are marked. */
struct part {
	const char	*text;	/* UTF-8 */
	bool		 frame;
};

/* A UTF-8 message with non-BMP text and every trap inside it. */
static const char msg_traps[] =
    "<mos version=\"2.8.5\" note='a > b </mos> <mos>'>"
    "<mosID>mam.example.mos</mosID><ncsID>NCS1</ncsID>"
    "<messageID>2</messageID><mosObj><objID>\xce\xa9\xf0\x9f\x98\x80"
    "\xf0\x9d\x84\x9e</objID><objSlug>Gr\xc3\xbc\xc3\x9f" "e \xe6\xbc\xa2"
    "\xe5\xad\x97 \xf0\x9f\x8e\xac</objSlug><!-- </mos> <mos> -->"
    "<description><![CDATA[ </mos> <mos> ]]]></description>"
    "<?pi </mos> <mos>?><mosExternalMetadata><mosPayload>"
    "<mos><inner a=\"</mos>\">x</inner></mos><mos/><mosID>y</mosID>"
    "</mosPayload></mosExternalMetadata></mosObj></mos>";

static const struct part parts_multi[] = {
	{ "  \n<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n", false },
	{ "<mos>\n\t<mosID>mam.example.mos</mosID>\n\t<ncsID>NCS1</ncsID>\n"
	  "\t<messageID>1</messageID>\n\t<heartbeat><time>2024-01-02T03:04:"
	  "05Z</time></heartbeat>\n</mos>", true },
	{ "\r\n", false },
	{ msg_traps, true },
	{ "junk <mosObj>x</mosObj> <mosID/> <!-- <mos> --> </mos> ", false },
	{ "<mos\n><mosID>m</mosID><ncsID>n</ncsID><messageID>3</messageID>"
	  "<roAck><roID>R;1\\x</roID><roStatus>OK \xf0\x9f\x98\x80</roStatus>"
	  "</roAck></mos  >", true },
	{ "<mos/>", true },
	{ "\n", false },
	{ NULL, false },
};

/* Append UTF-8 text to b in the given encoding. */
static void
put(struct mos_buf *b, const char *utf8, enum mos_enc enc)
{
	char	err[128];

	assert_int_equal(mos_recode(utf8, strlen(utf8), MOS_ENC_UTF8, enc, b,
	    err, sizeof err), 0);
}

/* Append raw bytes. */
static void
put_raw(struct mos_buf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n) {
		b->cap = b->len + n + 64;
		assert_non_null(b->data = realloc(b->data, b->cap));
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* Build a stream from parts, noting where its frames are. */
static void
stream_build(struct stream *s, const struct part *p, enum mos_enc enc)
{
	memset(s, 0, sizeof *s);
	for (; p->text != NULL; p++) {
		if (p->frame) {
			assert_true(s->n < MAXF);
			s->start[s->n] = s->buf.len;
		}
		put(&s->buf, p->text, enc);
		if (p->frame) {
			s->len[s->n] = s->buf.len - s->start[s->n];
			s->n++;
		}
	}
}

/* Free a run's frames. */
static void
run_free(struct run *r)
{
	size_t	i;

	for (i = 0; i < r->n; i++)
		free(r->f[i].data);
	r->n = 0;
}

/* Take every ready frame; returns MOS_FRAME_MORE or an error. */
static int
drain(struct mos_framer *fr, struct run *r)
{
	struct mos_frame	fm;
	int			s;

	while ((s = mos_framer_next(fr, &fm)) == MOS_FRAME_READY) {
		assert_true(r->n < MAXF);
		assert_non_null(r->f[r->n].data = malloc(fm.len + 1));
		memcpy(r->f[r->n].data, fm.data, fm.len);
		r->f[r->n].len = fm.len;
		r->f[r->n].off = fm.offset;
		r->f[r->n].enc = fm.enc;
		r->n++;
	}
	return s;
}

/* Feed data cut at the given offsets (ascending), draining after each feed. */
static void
run_cuts(struct mos_framer *fr, const uint8_t *d, size_t len,
    const size_t *cuts, size_t ncuts, struct run *r)
{
	size_t	i, from = 0, to;
	int	s = MOS_FRAME_MORE;

	memset(r, 0, sizeof *r);
	for (i = 0; i <= ncuts && s == MOS_FRAME_MORE; i++) {
		to = cuts != NULL && i < ncuts ? cuts[i] : len;
		assert_int_equal(mos_framer_feed(fr, d + from, to - from), 0);
		from = to;
		s = drain(fr, r);
	}
	if (s == MOS_FRAME_MORE)
		s = mos_framer_end(fr);
	r->status = s;
}

/* One run with a fresh framer. */
static void
run_new(enum mos_enc enc, const struct mos_framer_limits *lim,
    const uint8_t *d, size_t len, const size_t *cuts, size_t ncuts,
    struct run *r)
{
	struct mos_framer	*fr;

	assert_non_null(fr = mos_framer_new(enc, lim));
	run_cuts(fr, d, len, cuts, ncuts, r);
	mos_framer_free(fr);
}

/* A run must give exactly the stream's frames and end cleanly. */
static void
run_expect(const struct run *r, const struct stream *s, enum mos_enc enc,
    const char *what, size_t arg)
{
	size_t	i;
	bool	ok = r->status == 0 && r->n == s->n;

	for (i = 0; ok && i < s->n; i++)
		ok = r->f[i].len == s->len[i] && r->f[i].off == s->start[i] &&
		    r->f[i].enc == enc && memcmp(r->f[i].data,
		    s->buf.data + s->start[i], s->len[i]) == 0;
	if (!ok) {
		print_error("%s %zu: got %zu frames, status %d (want %zu, 0)\n",
		    what, arg, r->n, r->status, s->n);
		for (i = 0; i < r->n && i < s->n; i++)
			print_error("  frame %zu: got %zu bytes at %llu, want %zu "
			    "at %zu\n", i, r->f[i].len,
			    (unsigned long long)r->f[i].off, s->len[i],
			    s->start[i]);
		for (i = 0; i < r->n && i < s->n; i++)
			if (r->f[i].len == s->len[i])
				print_error("  %zu: enc %d [%.*s]\n", i, r->f[i].enc,
				    (int)r->f[i].len, r->f[i].data);
		fail();
	}
}

/* A small deterministic PRNG (xorshift). */
static uint64_t
rng(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

/* Every split offset, random chunkings and 1-byte feeding, in one mode. */
static void
check_chunkings(enum mos_enc wire, enum mos_enc mode)
{
	struct stream	 s;
	struct run	 r;
	size_t		*cuts, i, n, cut;
	uint64_t	 st = 0x9e3779b97f4a7c15ull;
	int		 round;

	stream_build(&s, parts_multi, wire);
	assert_int_equal(s.n, 4);
	/* One feed, then every split into two feeds. */
	for (cut = 0; cut <= s.buf.len; cut++) {
		run_new(mode, NULL, s.buf.data, s.buf.len, &cut, 1, &r);
		run_expect(&r, &s, wire, "split at", cut);
		run_free(&r);
	}
	/* Every byte on its own. */
	assert_non_null(cuts = calloc(s.buf.len, sizeof *cuts));
	for (i = 0; i < s.buf.len; i++)
		cuts[i] = i;
	run_new(mode, NULL, s.buf.data, s.buf.len, cuts, s.buf.len, &r);
	run_expect(&r, &s, wire, "1-byte feeding", 1);
	run_free(&r);
	/* Random chunk sizes, 1..97 bytes. */
	for (round = 0; round < 300; round++) {
		for (n = 0, cut = 0; ; n++) {
			cut += 1 + rng(&st) % 97;
			if (cut >= s.buf.len)
				break;
			cuts[n] = cut;
		}
		run_new(mode, NULL, s.buf.data, s.buf.len, cuts, n, &r);
		run_expect(&r, &s, wire, "random chunking round", (size_t)round);
		run_free(&r);
	}
	free(cuts);
	mos_buf_free(&s.buf);
}

/* UTF-16BE stream, framer in UTF-16BE mode. */
static void
test_chunkings_utf16(void **state)
{
	(void)state;
	check_chunkings(MOS_ENC_UTF16BE, MOS_ENC_UTF16BE);
}

/* UTF-8 stream, framer in UTF-8 mode. */
static void
test_chunkings_utf8(void **state)
{
	(void)state;
	check_chunkings(MOS_ENC_UTF8, MOS_ENC_UTF8);
}

/* Both wire encodings through AUTO. */
static void
test_chunkings_auto(void **state)
{
	(void)state;
	check_chunkings(MOS_ENC_UTF16BE, MOS_ENC_AUTO);
	check_chunkings(MOS_ENC_UTF8, MOS_ENC_AUTO);
}

/* Some splits of the UTF-16BE stream fall inside surrogate pairs. */
static void
test_surrogate_splits(void **state)
{
	struct stream	s;
	struct run	r;
	size_t		i, hits = 0;

	(void)state;
	stream_build(&s, parts_multi, MOS_ENC_UTF16BE);
	for (i = 2; i + 2 <= s.buf.len; i += 2) {
		/* A split between a high and a low surrogate. */
		if ((s.buf.data[i - 2] & 0xfc) != 0xd8)
			continue;
		hits++;
		run_new(MOS_ENC_UTF16BE, NULL, s.buf.data, s.buf.len, &i, 1, &r);
		run_expect(&r, &s, MOS_ENC_UTF16BE, "surrogate split at", i);
		run_free(&r);
	}
	assert_true(hits >= 4);
	mos_buf_free(&s.buf);
}

/* Several frames in one feed come out one per call, in order. */
static void
test_coalesced(void **state)
{
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct stream		 s;
	size_t			 i;

	(void)state;
	stream_build(&s, parts_multi, MOS_ENC_UTF16BE);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF16BE, NULL));
	assert_int_equal(mos_framer_feed(fr, s.buf.data, s.buf.len), 0);
	for (i = 0; i < s.n; i++) {
		assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
		assert_int_equal(fm.len, s.len[i]);
		assert_int_equal(fm.offset, s.start[i]);
		assert_memory_equal(fm.data, s.buf.data + s.start[i], fm.len);
	}
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
	assert_int_equal(mos_framer_end(fr), 0);
	assert_false(mos_framer_in_frame(fr));
	mos_framer_free(fr);
	mos_buf_free(&s.buf);
}

/* Frame one UTF-8 text in both encodings; expect one frame equal to want. */
static void
expect_one(const char *text, const char *want)
{
	static const enum mos_enc encs[] = { MOS_ENC_UTF16BE, MOS_ENC_UTF8 };
	struct mos_buf	in = { 0 }, w = { 0 };
	struct run	r;
	size_t		i;

	for (i = 0; i < 2; i++) {
		in.len = w.len = 0;
		put(&in, text, encs[i]);
		put(&w, want, encs[i]);
		run_new(encs[i], NULL, in.data, in.len, NULL, 0, &r);
		if (r.status != 0 || r.n != 1 || r.f[0].len != w.len ||
		    memcmp(r.f[0].data, w.data, w.len) != 0) {
			print_error("%s: %zu frames, status %d for: %s\n",
			    mos_enc_name(encs[i]), r.n, r.status, text);
			fail();
		}
		run_free(&r);
	}
	mos_buf_free(&in);
	mos_buf_free(&w);
}

/* The framing cases of issue 2, one by one. */
static void
test_cases(void **state)
{
	(void)state;
	/* Junk and whitespace before <mos>; <mosID>, <mosObj> are not <mos>. */
	expect_one(" \t\r\n<mosID>x</mosID><mosObj><mos2/>"
	    "junk<mos>a</mos>", "<mos>a</mos>");
	expect_one("<mos >a</mos>", "<mos >a</mos>");
	expect_one("<mos\tv=\"1\" w='2'>a</mos>", "<mos\tv=\"1\" w='2'>a</mos>");
	expect_one("<mos/>", "<mos/>");
	expect_one("<mos a='/'/>", "<mos a='/'/>");
	expect_one("<mos>a</mos \r\n>", "<mos>a</mos \r\n>");
	/* The declaration is skipped, not part of the frame. */
	expect_one("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<mos>a</mos>",
	    "<mos>a</mos>");
	/* Nested <mos> inside a payload balances. */
	expect_one("<mos><p><mos><mos>x</mos></mos></p></mos>",
	    "<mos><p><mos><mos>x</mos></mos></p></mos>");
	/* CDATA, comments, PIs: their <mos> and </mos> do not count. */
	expect_one("<mos><![CDATA[</mos><mos>]]></mos>",
	    "<mos><![CDATA[</mos><mos>]]></mos>");
	expect_one("<mos><!-- </mos> --></mos>", "<mos><!-- </mos> --></mos>");
	expect_one("<mos><!--></mos>--></mos>", "<mos><!--></mos>--></mos>");
	expect_one("<mos><?x </mos>?></mos>", "<mos><?x </mos>?></mos>");
	expect_one("<!-- <mos>x</mos> --><mos>a</mos>", "<mos>a</mos>");
	expect_one("<![CDATA[<mos>]]><mos>a</mos>", "<mos>a</mos>");
	expect_one("<!DOCTYPE x [<!ENTITY e \"<mos>\">]><mos>a</mos>",
	    "<mos>a</mos>");
	/* Attribute values holding > and </mos>. */
	expect_one("<mos a=\"></mos>\"><b c='</mos>'/></mos>",
	    "<mos a=\"></mos>\"><b c='</mos>'/></mos>");
	/* Names that begin with mos, or with a prefix, are other elements. */
	expect_one("<mos><mosx>a</mosx><x:mos/></mosx:y></mos>",
	    "<mos><mosx>a</mosx><x:mos/></mosx:y></mos>");
	/* Only the exact name counts. */
	expect_one("<mo><Mos><xos><nos></xos></Mos></mo><mos>a</mos>",
	    "<mos>a</mos>");
	expect_one("<mos><mo><xos><m></m></xos></mo></mos>",
	    "<mos><mo><xos><m></m></xos></mo></mos>");
	/* A stray '<' restarts the tag. */
	expect_one("a << <<mos>b</mos>", "<mos>b</mos>");
}

/* A BOM before the first frame, in each encoding and in AUTO. */
static void
test_bom(void **state)
{
	static const uint8_t be[] = { 0xfe, 0xff, 0, '<', 0, 'm', 0, 'o', 0,
	    's', 0, '/', 0, '>' };
	static const uint8_t u8[] = { 0xef, 0xbb, 0xbf, '<', 'm', 'o', 's',
	    '/', '>', '\n' };
	struct run	r;

	(void)state;
	run_new(MOS_ENC_UTF16BE, NULL, be, sizeof be, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.f[0].off, 2);
	run_free(&r);
	run_new(MOS_ENC_AUTO, NULL, be, sizeof be, NULL, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.f[0].enc, MOS_ENC_UTF16BE);
	run_free(&r);
	run_new(MOS_ENC_UTF8, NULL, u8, sizeof u8, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.f[0].off, 3);
	run_free(&r);
	run_new(MOS_ENC_AUTO, NULL, u8, sizeof u8, NULL, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.f[0].enc, MOS_ENC_UTF8);
	run_free(&r);
	/* The wrong BOM for the link is an encoding error. */
	run_new(MOS_ENC_UTF8, NULL, be, sizeof be, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
	run_new(MOS_ENC_UTF16BE, NULL, u8, sizeof u8, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
}

/* "<mos>" and "</mos>" at odd offsets in UTF-16BE are not markup. */
static void
test_odd_offset_decoy(void **state)
{
	/*
	 * Units 4E00 3C00 6D00 6F00 7300 3E00 read from offset 1 as
	 * 00 3C 00 6D 00 6F 00 73 00 3E: "<mos>" shifted by one byte.
	 */
	static const uint8_t open_decoy[] = { 0x4e, 0, 0x3c, 0, 0x6d, 0,
	    0x6f, 0, 0x73, 0, 0x3e, 0 };
	static const uint8_t close_decoy[] = { 0x4e, 0, 0x3c, 0, 0x2f, 0,
	    0x6d, 0, 0x6f, 0, 0x73, 0, 0x3e, 0 };
	struct mos_buf	in = { 0 };
	struct run	r;
	size_t		fstart, flen;

	(void)state;
	put_raw(&in, open_decoy, sizeof open_decoy);
	put_raw(&in, open_decoy, sizeof open_decoy);
	fstart = in.len;
	put(&in, "<mos>", MOS_ENC_UTF16BE);
	put_raw(&in, close_decoy, sizeof close_decoy);
	put_raw(&in, open_decoy, sizeof open_decoy);
	put(&in, "</mos>", MOS_ENC_UTF16BE);
	flen = in.len - fstart;
	put_raw(&in, close_decoy, sizeof close_decoy);
	put(&in, "<mos/>", MOS_ENC_UTF16BE);
	run_new(MOS_ENC_UTF16BE, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.f[0].off, fstart);
	assert_int_equal(r.f[0].len, flen);
	assert_int_equal(r.f[1].len, 12);
	run_free(&r);
	mos_buf_free(&in);
}

/* A trailing odd byte, a truncated frame, trailing junk and whitespace. */
static void
test_stream_end(void **state)
{
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 in = { 0 };
	struct run		 r;

	(void)state;
	put(&in, "<mos>a</mos>", MOS_ENC_UTF16BE);
	put_raw(&in, "\0", 1);
	run_new(MOS_ENC_UTF16BE, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.status, MOS_FRAME_ERR_ODD);
	run_free(&r);

	in.len = 0;
	put(&in, "<mos>a</mos><mos><mosID>x</mos", MOS_ENC_UTF16BE);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF16BE, NULL));
	assert_int_equal(mos_framer_feed(fr, in.data, in.len), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
	assert_true(mos_framer_in_frame(fr));
	assert_int_equal(mos_framer_pending(fr), in.len - 24);
	assert_int_equal(mos_framer_end(fr), MOS_FRAME_ERR_TRUNCATED);
	assert_non_null(strstr(mos_framer_errmsg(fr), "offset 24"));
	/* Sticky. */
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_ERR_TRUNCATED);
	mos_framer_free(fr);

	in.len = 0;
	put(&in, "<mos>a</mos> trailing", MOS_ENC_UTF8);
	run_new(MOS_ENC_UTF8, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.status, MOS_FRAME_ERR_TRUNCATED);
	run_free(&r);

	in.len = 0;
	put(&in, "<mos>a</mos> \r\n\t", MOS_ENC_UTF16BE);
	run_new(MOS_ENC_AUTO, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.status, 0);
	run_free(&r);

	/* Empty and blank streams are fine; a lone "<" is not. */
	run_new(MOS_ENC_AUTO, NULL, (const uint8_t *)"", 0, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	run_new(MOS_ENC_AUTO, NULL, (const uint8_t *)" \n", 2, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	run_new(MOS_ENC_AUTO, NULL, (const uint8_t *)"<", 1, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_TRUNCATED);
	mos_buf_free(&in);
}

/* mos_framer_end leaves a frame it finds for mos_framer_next. */
static void
test_end_finds_frame(void **state)
{
	struct mos_framer	*fr;
	struct mos_frame	 fm;

	(void)state;
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, NULL));
	assert_int_equal(mos_framer_feed(fr, "<mos>a</mos>", 12), 0);
	assert_int_equal(mos_framer_end(fr), MOS_FRAME_READY);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.len, 12);
	assert_int_equal(mos_framer_end(fr), 0);
	mos_framer_free(fr);
}

/* The junk cap: max_junk bytes are skipped, one more is an error. */
static void
test_junk_cap(void **state)
{
	struct mos_framer_limits lim = { .max_junk = 100 };
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 in = { 0 };
	struct run		 r;
	size_t			 i;

	(void)state;
	for (i = 0; i < 50; i++)
		put(&in, "x", MOS_ENC_UTF16BE);
	put(&in, "<mos/>", MOS_ENC_UTF16BE);
	run_new(MOS_ENC_UTF16BE, &lim, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.n, 1);
	run_free(&r);

	in.len = 0;
	for (i = 0; i < 101; i++)
		put(&in, " ", MOS_ENC_UTF8);
	put(&in, "<mos/>", MOS_ENC_UTF8);
	run_new(MOS_ENC_UTF8, &lim, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_JUNK);
	assert_int_equal(r.n, 0);
	/* Same in AUTO, where the whitespace runs before the decision. */
	run_new(MOS_ENC_AUTO, &lim, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_JUNK);

	/* Junk between frames counts from the end of the last frame. */
	in.len = 0;
	put(&in, "<mos/>", MOS_ENC_UTF8);
	for (i = 0; i < 200; i++)
		put(&in, "j", MOS_ENC_UTF8);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, &lim));
	assert_int_equal(mos_framer_feed(fr, in.data, in.len), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_ERR_JUNK);
	assert_string_not_equal(mos_framer_errmsg(fr), "");
	/* Sticky, and later bytes are dropped. */
	assert_int_equal(mos_framer_feed(fr, "<mos/>", 6), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_ERR_JUNK);
	assert_int_equal(mos_framer_end(fr), MOS_FRAME_ERR_JUNK);
	mos_framer_free(fr);
	mos_buf_free(&in);
}

/* The frame cap: a frame of max_frame bytes passes, one more byte fails. */
static void
test_frame_cap(void **state)
{
	struct mos_framer_limits lim;
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 in = { 0 };
	struct run		 r;

	(void)state;
	put(&in, "<mos>abcd</mos>", MOS_ENC_UTF16BE);
	lim = (struct mos_framer_limits){ .max_frame = in.len };
	run_new(MOS_ENC_UTF16BE, &lim, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.n, 1);
	run_free(&r);
	lim.max_frame = in.len - 1;
	run_new(MOS_ENC_UTF16BE, &lim, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_TOO_BIG);
	assert_int_equal(r.n, 0);

	/* A frame that never ends stops at the cap, not at end of stream. */
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, &lim));
	assert_int_equal(mos_framer_feed(fr, "<mos>", 5), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
	assert_int_equal(mos_framer_feed(fr, "0123456789012345678901234567", 28),
	    0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_ERR_TOO_BIG);
	assert_non_null(strstr(mos_framer_errmsg(fr), "exceeds 29 bytes"));
	mos_framer_free(fr);
	mos_buf_free(&in);
}

/* Limits change mid-stream: small before the first frame, then large. */
static void
test_set_limits(void **state)
{
	struct mos_framer_limits small = { .max_frame = 64, .max_junk = 16 };
	struct mos_framer_limits big = { 0 };
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	char			 text[300];

	(void)state;
	memset(text, 'x', sizeof text);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, &small));
	assert_int_equal(mos_framer_feed(fr, "<mos>hello</mos><mos>", 21), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	mos_framer_set_limits(fr, &big);
	assert_int_equal(mos_framer_feed(fr, text, sizeof text), 0);
	assert_int_equal(mos_framer_feed(fr, "</mos>", 6), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.len, 5 + sizeof text + 6);
	assert_int_equal(fm.offset, 16);
	mos_framer_set_limits(fr, &small);
	assert_int_equal(mos_framer_feed(fr, "<mos>", 5), 0);
	assert_int_equal(mos_framer_feed(fr, text, 100), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_ERR_TOO_BIG);
	mos_framer_free(fr);
}

/* AUTO decides from the first non-space character; UTF-16LE is refused. */
static void
test_auto(void **state)
{
	static const uint8_t le[] = { '<', 0, 'm', 0, 'o', 0, 's', 0, '/', 0,
	    '>', 0 };
	static const uint8_t le_ws[] = { ' ', 0, '<', 0 };
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 in = { 0 };
	struct run		 r;

	(void)state;
	put(&in, "\r\n  <mos>a</mos>", MOS_ENC_UTF16BE);
	assert_non_null(fr = mos_framer_new(MOS_ENC_AUTO, NULL));
	assert_int_equal(mos_framer_encoding(fr), MOS_ENC_AUTO);
	assert_int_equal(mos_framer_feed(fr, in.data, 1), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
	assert_int_equal(mos_framer_encoding(fr), MOS_ENC_UTF16BE);
	assert_int_equal(mos_framer_feed(fr, in.data + 1, in.len - 1), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.enc, MOS_ENC_UTF16BE);
	assert_int_equal(fm.offset, 8);
	mos_framer_free(fr);

	in.len = 0;
	put(&in, " \t\n<mos>a</mos>", MOS_ENC_UTF8);
	assert_non_null(fr = mos_framer_new(MOS_ENC_AUTO, NULL));
	assert_int_equal(mos_framer_feed(fr, in.data, 4), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
	assert_int_equal(mos_framer_encoding(fr), MOS_ENC_AUTO);
	assert_int_equal(mos_framer_feed(fr, in.data + 4, in.len - 4), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.enc, MOS_ENC_UTF8);
	assert_int_equal(fm.offset, 3);
	mos_framer_free(fr);

	/* UTF-16LE, with or without leading space. */
	run_new(MOS_ENC_AUTO, NULL, le, sizeof le, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
	run_new(MOS_ENC_AUTO, NULL, le_ws, sizeof le_ws, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
	run_new(MOS_ENC_UTF16BE, NULL, le, sizeof le, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);

	/* A fixed link refuses a stream that is plainly the other encoding. */
	in.len = 0;
	put(&in, "\n<mos>a</mos>", MOS_ENC_UTF8);
	run_new(MOS_ENC_UTF16BE, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
	in.len = 0;
	put(&in, "<mos>a</mos>", MOS_ENC_UTF16BE);
	run_new(MOS_ENC_UTF8, NULL, in.data, in.len, NULL, 0, &r);
	assert_int_equal(r.status, MOS_FRAME_ERR_ENCODING);
	mos_buf_free(&in);
}

/* Build a big frame: "<mos>" + n bytes of markup + "</mos>". */
static void
big_frame(struct mos_buf *b, size_t n, enum mos_enc enc)
{
	static const char chunk[] = "<item a=\"1 > 0\"><t>text \xc3\xa9t\xc3"
	    "\xa9</t><!-- c --></item>\n";

	put(b, "<mos>", enc);
	while (b->len < n)
		put(b, chunk, enc);
	put(b, "</mos>", enc);
}

/* Feed one byte at a time; returns the framer's counters. */
static void
feed_bytewise(const struct mos_buf *in, enum mos_enc enc,
    struct mos_framer_stats *st, size_t *max_pending)
{
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	size_t			 i, frames = 0;
	int			 s;

	assert_non_null(fr = mos_framer_new(enc, NULL));
	*max_pending = 0;
	for (i = 0; i < in->len; i++) {
		assert_int_equal(mos_framer_feed(fr, in->data + i, 1), 0);
		while ((s = mos_framer_next(fr, &fm)) == MOS_FRAME_READY)
			frames++;
		assert_int_equal(s, MOS_FRAME_MORE);
		if (mos_framer_pending(fr) > *max_pending)
			*max_pending = mos_framer_pending(fr);
	}
	assert_int_equal(mos_framer_end(fr), 0);
	assert_int_equal(frames, 1);
	mos_framer_stats(fr, st);
	mos_framer_free(fr);
}

/*
 * Linear cost: a 10 MB frame fed one byte at a time examines each byte once
 * and copies at most a small multiple of the input; the same counts as one
 * feed of the whole frame, give or take.
 */
static void
test_linear(void **state)
{
	struct mos_framer_stats	 st, one;
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 in = { 0 };
	size_t			 maxp;

	(void)state;
	big_frame(&in, 10u << 20, MOS_ENC_UTF16BE);
	feed_bytewise(&in, MOS_ENC_UTF16BE, &st, &maxp);
	assert_int_equal(st.fed, in.len);
	assert_int_equal(st.scanned, in.len);
	assert_true(st.moved <= 2 * in.len);
	assert_int_equal(st.frames, 1);

	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF16BE, NULL));
	assert_int_equal(mos_framer_feed(fr, in.data, in.len), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.len, in.len);
	mos_framer_stats(fr, &one);
	assert_int_equal(one.scanned, st.scanned);
	mos_framer_free(fr);
	mos_buf_free(&in);
}

/*
 * Back-to-back frames of almost the initial buffer size, fed one byte at a time:
 * compaction stays amortised (copies bounded by a small multiple of input),
 * and a buffer grown for a 4 MB frame shrinks once small frames follow.
 */
static void
test_compaction(void **state)
{
	struct mos_framer_stats	 st;
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	struct mos_buf		 one = { 0 }, big = { 0 };
	size_t			 i, j, frames = 0;

	(void)state;
	put(&one, "<mos>", MOS_ENC_UTF8);
	while (one.len < 4000)
		put(&one, "<x>y</x>", MOS_ENC_UTF8);
	put(&one, "</mos>", MOS_ENC_UTF8);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, NULL));
	for (i = 0; i < 200; i++)
		for (j = 0; j < one.len; j++) {
			assert_int_equal(mos_framer_feed(fr, one.data + j, 1), 0);
			if (mos_framer_next(fr, &fm) == MOS_FRAME_READY)
				frames++;
		}
	mos_framer_stats(fr, &st);
	assert_int_equal(frames, 200);
	assert_true(st.moved <= 2 * st.fed);
	assert_true(st.buffer <= 4 * one.len);

	big_frame(&big, 4u << 20, MOS_ENC_UTF8);
	assert_int_equal(mos_framer_feed(fr, big.data, big.len), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	mos_framer_stats(fr, &st);
	assert_true(st.buffer >= big.len);
	assert_int_equal(mos_framer_feed(fr, one.data, one.len), 0);
	assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_READY);
	assert_int_equal(fm.len, one.len);
	mos_framer_stats(fr, &st);
	assert_true(st.buffer <= 4 * one.len + 4096);
	mos_framer_free(fr);
	mos_buf_free(&one);
	mos_buf_free(&big);
}

/* Skipped junk is dropped as it is scanned: memory stays flat. */
static void
test_junk_dropped(void **state)
{
	struct mos_framer_stats	 st;
	struct mos_framer_limits lim = { .max_junk = 4u << 20 };
	struct mos_framer	*fr;
	struct mos_frame	 fm;
	uint8_t			 junk[4096];
	size_t			 i;

	(void)state;
	memset(junk, 'j', sizeof junk);
	assert_non_null(fr = mos_framer_new(MOS_ENC_UTF8, &lim));
	for (i = 0; i < 1000; i++) {
		assert_int_equal(mos_framer_feed(fr, junk, sizeof junk), 0);
		assert_int_equal(mos_framer_next(fr, &fm), MOS_FRAME_MORE);
		assert_true(mos_framer_pending(fr) < 16);
	}
	mos_framer_stats(fr, &st);
	assert_int_equal(st.scanned, 1000 * sizeof junk);
	assert_true(st.moved < 64);
	mos_framer_free(fr);
}

/* mos_recode: known bytes both ways, invalid input refused. */
static void
test_recode(void **state)
{
	static const char u8[] = "A\xe2\x82\xac\xf0\x9f\x98\x80";
	static const uint8_t be[] = { 0, 'A', 0x20, 0xac, 0xd8, 0x3d, 0xde,
	    0x00 };
	static const char *bad8[] = { "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
	    "\xf4\x90\x80\x80", "\xe2\x82", "\x80", "\xff" };
	static const uint8_t lone_hi[] = { 0xd8, 0x3d, 0, 'A' };
	static const uint8_t lone_lo[] = { 0xde, 0x00 };
	struct mos_buf	out = { 0 };
	char		err[128];
	size_t		i;

	(void)state;
	assert_int_equal(mos_recode(u8, strlen(u8), MOS_ENC_UTF8,
	    MOS_ENC_UTF16BE, &out, err, sizeof err), 0);
	assert_int_equal(out.len, sizeof be);
	assert_memory_equal(out.data, be, sizeof be);
	out.len = 0;
	assert_int_equal(mos_recode(be, sizeof be, MOS_ENC_UTF16BE,
	    MOS_ENC_UTF8, &out, err, sizeof err), 0);
	assert_int_equal(out.len, strlen(u8));
	assert_memory_equal(out.data, u8, out.len);
	for (i = 0; i < sizeof bad8 / sizeof bad8[0]; i++) {
		out.len = 0;
		assert_int_equal(mos_recode(bad8[i], strlen(bad8[i]),
		    MOS_ENC_UTF8, MOS_ENC_UTF16BE, &out, err, sizeof err), -1);
		assert_int_equal(out.len, 0);
		assert_non_null(strstr(err, "invalid UTF-8 at byte 0"));
	}
	assert_int_equal(mos_recode(lone_hi, sizeof lone_hi, MOS_ENC_UTF16BE,
	    MOS_ENC_UTF8, &out, err, sizeof err), -1);
	assert_int_equal(mos_recode(lone_lo, sizeof lone_lo, MOS_ENC_UTF16BE,
	    MOS_ENC_UTF8, &out, err, sizeof err), -1);
	assert_int_equal(mos_recode(be, 3, MOS_ENC_UTF16BE, MOS_ENC_UTF8, &out,
	    err, sizeof err), -1);
	assert_non_null(strstr(err, "at byte 2"));
	assert_int_equal(mos_recode(be, 2, MOS_ENC_AUTO, MOS_ENC_UTF8, &out,
	    err, sizeof err), -1);
	mos_buf_free(&out);
}

/* Every status has a text; bad arguments are refused. */
static void
test_strerror(void **state)
{
	int	s;

	(void)state;
	for (s = MOS_FRAME_ERR_NOMEM; s <= MOS_FRAME_READY; s++) {
		assert_non_null(mos_frame_strerror(s));
		assert_string_not_equal(mos_frame_strerror(s),
		    "unknown framer status");
	}
	assert_string_equal(mos_frame_strerror(-99), "unknown framer status");
	assert_null(mos_framer_new((enum mos_enc)7, NULL));
	mos_framer_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunkings_utf16),
		cmocka_unit_test(test_chunkings_utf8),
		cmocka_unit_test(test_chunkings_auto),
		cmocka_unit_test(test_surrogate_splits),
		cmocka_unit_test(test_coalesced),
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_odd_offset_decoy),
		cmocka_unit_test(test_stream_end),
		cmocka_unit_test(test_end_finds_frame),
		cmocka_unit_test(test_junk_cap),
		cmocka_unit_test(test_frame_cap),
		cmocka_unit_test(test_set_limits),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_compaction),
		cmocka_unit_test(test_junk_dropped),
		cmocka_unit_test(test_recode),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests_name("frame", tests, NULL, NULL);
}
