/*
 * Shared by the fuzz targets (fuzz_frame.c, fuzz_mos.c, fuzz_session.c) and
 * by regress.c, which includes the targets to replay the seeds and corpora
 * without clang.
 *
 * Every input starts with one configuration byte; the rest is the stream:
 *   bits 0-1  encoding: 0 UTF-16BE, 1 UTF-8, 2 and 3 AUTO
 *   bits 2-3  caps: 0 defaults, 1 tiny, 2 small, 3 large frames, tiny junk
 *   bit  4    strict parsing (fuzz_mos)
 *   bits 5-7  chunking pattern (fuzz_frame)
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"

#define FUZZ_MAX_INPUT	(1u << 20)

/* An invariant broke: abort under libFuzzer, count and go on under regress. */
#ifdef FUZZ_REGRESS
extern unsigned long fuzz_failures;
#define FUZZ_FAIL(...) do {						\
	fprintf(stderr, "FAIL: " __VA_ARGS__);				\
	fuzz_failures++;						\
} while (0)
#else
#define FUZZ_FAIL(...) do {						\
	fprintf(stderr, "FAIL: " __VA_ARGS__);				\
	abort();							\
} while (0)
#endif

struct fuzz_cfg {
	enum mos_enc			enc;
	struct mos_framer_limits	lim;
	enum mos_mode			mode;
	unsigned int			chunking;	/* 0..7 */
};

/* Decode the configuration byte. */
static inline void
fuzz_cfg_decode(uint8_t b, struct fuzz_cfg *c)
{
	static const struct mos_framer_limits caps[4] = {
		{ 0, 0 }, { 96, 32 }, { 4096, 1024 }, { 1u << 20, 16 },
	};
	static const enum mos_enc encs[4] = {
		MOS_ENC_UTF16BE, MOS_ENC_UTF8, MOS_ENC_AUTO, MOS_ENC_AUTO,
	};

	c->enc = encs[b & 3];
	c->lim = caps[(b >> 2) & 3];
	c->mode = (b & 0x10) != 0 ? MOS_STRICT : MOS_LENIENT;
	c->chunking = b >> 5;
}

/* The configuration byte for an encoding, caps, mode and chunking. */
static inline uint8_t
fuzz_cfg_encode(enum mos_enc enc, unsigned int caps, bool strict,
    unsigned int chunking)
{
	unsigned int	e = enc == MOS_ENC_UTF16BE ? 0 : enc == MOS_ENC_UTF8 ?
			    1 : 2;

	return (uint8_t)(e | (caps & 3) << 2 | (strict ? 0x10 : 0) |
	    (chunking & 7) << 5);
}

/*
 * The size of the next chunk for a chunking pattern: 1, 2 or 3 bytes, up to
 * 7, 64, 4096 bytes, everything left, up to 257 bytes. rng (xorshift) is
 * seeded by the caller from the input.
 */
static inline size_t
fuzz_chunk(unsigned int pattern, uint32_t *rng, size_t left)
{
	static const size_t max[8] = { 1, 2, 3, 7, 64, 4096, 0, 257 };
	size_t	m = max[pattern & 7] != 0 ? max[pattern & 7] : left;

	*rng ^= *rng << 13;
	*rng ^= *rng >> 17;
	*rng ^= *rng << 5;
	if ((pattern & 7) <= 2)
		return m;
	return 1 + *rng % m;
}

#endif /* FUZZ_H */
