/*
 * fuzz_frame: the framer fed the whole stream at once, and fed the same bytes
 * in chunks (sizes drawn from a PRNG seeded by the input), must give the same
 * frames, offsets, encodings and errors. Every frame must be a slice of the
 * stream that starts with "<mos", ends with '>', fits the cap, and sits on
 * code-unit boundaries.
 */
#include "tools/fuzz/fuzz.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* What one feeding produced, as bytes to compare. */
struct ff_log {
	uint8_t	*p;
	size_t	 len;
	size_t	 cap;
};

/* Append to a log. */
static void
ff_put(struct ff_log *l, const void *p, size_t n)
{
	if (n > l->cap - l->len) {
		l->cap = 2 * (l->len + n);
		if ((l->p = realloc(l->p, l->cap)) == NULL)
			abort();
	}
	memcpy(l->p + l->len, p, n);
	l->len += n;
}

/* True if the n-unit ASCII text t sits at p in encoding enc. */
static bool
ff_is(const uint8_t *p, const char *t, size_t n, enum mos_enc enc)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (enc == MOS_ENC_UTF8 ? p[i] != (uint8_t)t[i] :
		    p[2 * i] != 0 || p[2 * i + 1] != (uint8_t)t[i])
			return false;
	return true;
}

/* Check one frame against the stream s and the frame before it. */
static void
ff_check(const struct fuzz_cfg *c, const uint8_t *s, size_t n,
    const struct mos_frame *fm, uint64_t *next)
{
	size_t	us = fm->enc == MOS_ENC_UTF16BE ? 2 : 1;
	size_t	cap = c->lim.max_frame != 0 ? c->lim.max_frame :
		    MOS_FRAME_MAX_DEFAULT;

	if (fm->enc == MOS_ENC_AUTO || (c->enc != MOS_ENC_AUTO &&
	    fm->enc != c->enc))
		FUZZ_FAIL("fuzz_frame: frame encoding %d\n", fm->enc);
	if (fm->offset < *next || fm->offset > n || fm->len > n - fm->offset ||
	    memcmp(fm->data, s + fm->offset, fm->len) != 0)
		FUZZ_FAIL("fuzz_frame: frame at %llu (%zu bytes) is not the "
		    "stream's bytes\n", (unsigned long long)fm->offset, fm->len);
	else if (fm->len < 6 * us || !ff_is(fm->data, "<mos", 4, fm->enc) ||
	    !ff_is(fm->data + fm->len - us, ">", 1, fm->enc))
		FUZZ_FAIL("fuzz_frame: frame at %llu is not <mos...>\n",
		    (unsigned long long)fm->offset);
	if (fm->len > cap)
		FUZZ_FAIL("fuzz_frame: frame of %zu bytes over the cap %zu\n",
		    fm->len, cap);
	if (us == 2 && ((fm->offset | fm->len) & 1) != 0)
		FUZZ_FAIL("fuzz_frame: UTF-16BE frame off code units\n");
	*next = fm->offset + fm->len;
}

/* Take the ready frames into the log; returns the status that stopped it. */
static int
ff_drain(struct mos_framer *f, const struct fuzz_cfg *c, const uint8_t *s,
    size_t n, uint64_t *next, struct ff_log *l)
{
	struct mos_frame	fm;
	uint64_t		len;
	uint8_t			enc;
	int			r;

	while ((r = mos_framer_next(f, &fm)) == MOS_FRAME_READY) {
		ff_check(c, s, n, &fm, next);
		len = fm.len;
		enc = (uint8_t)fm.enc;
		ff_put(l, &fm.offset, sizeof fm.offset);
		ff_put(l, &len, sizeof len);
		ff_put(l, &enc, 1);
		ff_put(l, fm.data, fm.len);
	}
	return r;
}

/* Frame s whole (chunked false) or in chunks; log what came out. */
static void
ff_run(const struct fuzz_cfg *c, const uint8_t *s, size_t n, bool chunked,
    struct ff_log *l)
{
	struct mos_framer	*f;
	uint64_t		 next = 0;
	uint32_t		 rng = (uint32_t)n * 2654435761u + c->chunking + 1;
	size_t			 at = 0, k;
	unsigned int		 pattern;
	int			 r = MOS_FRAME_MORE;

	if ((f = mos_framer_new(c->enc, &c->lim)) == NULL)
		abort();
	/*
	 * Fixed tiny chunks only for small inputs: a call per byte of a big
	 * input finds nothing the random small chunks do not, at many times
	 * the cost.
	 */
	pattern = n > 4096 && c->chunking <= 2 ? c->chunking + 3 : c->chunking;
	while (at < n && r == MOS_FRAME_MORE) {
		k = chunked ? fuzz_chunk(pattern, &rng, n - at) : n - at;
		if (k > n - at)
			k = n - at;
		if (mos_framer_feed(f, s + at, k) != 0)
			abort();
		at += k;
		r = ff_drain(f, c, s, n, &next, l);
	}
	if (r == MOS_FRAME_MORE && (r = mos_framer_end(f)) == MOS_FRAME_READY)
		FUZZ_FAIL("fuzz_frame: end found a frame the drain missed\n");
	if (r != 0 && (r >= 0 || *mos_framer_errmsg(f) == '\0'))
		FUZZ_FAIL("fuzz_frame: status %d without an error text\n", r);
	ff_put(l, &r, sizeof r);
	ff_put(l, mos_framer_errmsg(f), strlen(mos_framer_errmsg(f)));
	mos_framer_free(f);
}

/* One input: configuration byte, then the stream. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_cfg	c;
	struct ff_log	whole = { 0 }, parts = { 0 };

	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	fuzz_cfg_decode(data[0], &c);
	ff_run(&c, data + 1, size - 1, false, &whole);
	ff_run(&c, data + 1, size - 1, true, &parts);
	if (whole.len != parts.len || memcmp(whole.p, parts.p, whole.len) != 0)
		FUZZ_FAIL("fuzz_frame: whole and chunked (configuration %02x) "
		    "feeding differ\n", data[0]);
	free(whole.p);
	free(parts.p);
	return 0;
}
