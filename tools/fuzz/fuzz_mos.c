/*
 * fuzz_mos: frame the stream and parse every frame. A frame that fails must
 * say why. A message that parses must survive the round trips the tools
 * rely on: written (in both encodings) it parses again and writes the same
 * bytes; its JSON line reads back into a message with the same JSON line.
 */
#include "mosxml/mosjson.h"
#include "tools/fuzz/fuzz.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	LLVMFuzzerInitialize(int *, char ***);

/* Once per process. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	mos_init();
	return 0;
}

/* Write m, parse the result, write again: the two writings must match. */
static void
fm_rewrite(const struct mos_msg *m, enum mos_enc enc, enum mos_mode mode)
{
	struct mos_buf		 a = { 0 }, b = { 0 };
	struct mos_msg		*m2 = NULL;
	struct mos_error	 err;
	char			 ebuf[256];

	if (mos_write(m, enc, &a, ebuf, sizeof ebuf) != 0) {
		/* A lenient model may lack what the writer needs; a strict one not. */
		if (mode == MOS_STRICT)
			FUZZ_FAIL("fuzz_mos: strict %s does not write: %s\n",
			    mos_type_name(m->type), ebuf);
		goto done;
	}
	memset(&err, 0, sizeof err);
	if (mos_parse(a.data, a.len, enc, mode, &m2, &err) != MOS_OK) {
		FUZZ_FAIL("fuzz_mos: written %s (%s) does not parse: %s: %s\n",
		    mos_type_name(m->type), mos_enc_name(enc),
		    mos_err_name(err.code), err.msg);
		goto done;
	}
	if (mos_write(m2, enc, &b, ebuf, sizeof ebuf) != 0)
		FUZZ_FAIL("fuzz_mos: reparsed %s does not write: %s\n",
		    mos_type_name(m->type), ebuf);
	else if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		FUZZ_FAIL("fuzz_mos: %s (%s) writes differently after a "
		    "round trip\n", mos_type_name(m->type), mos_enc_name(enc));
done:
	mos_msg_free(m2);
	mos_buf_free(&a);
	mos_buf_free(&b);
}

/*
 * The JSON line must read back to a message with the same line, but for
 * its "warnings" (what the parse reported, which the reader skips).
 */
static void
fm_json(struct mos_msg *m)
{
	struct mos_msg	*m2;
	char		*j1, *j2 = NULL, *bare = NULL, ebuf[256];
	size_t		 nwarn = m->warnings.n;

	if ((j1 = mos_msg_to_json(m)) == NULL) {
		FUZZ_FAIL("fuzz_mos: %s has no JSON form\n",
		    mos_type_name(m->type));
		return;
	}
	m->warnings.n = 0;
	bare = mos_msg_to_json(m);
	m->warnings.n = nwarn;
	if ((m2 = mos_msg_from_json(j1, strlen(j1), ebuf, sizeof ebuf)) == NULL)
		FUZZ_FAIL("fuzz_mos: JSON of %s does not read back: %s\n",
		    mos_type_name(m->type), ebuf);
	else if ((j2 = mos_msg_to_json(m2)) == NULL || bare == NULL ||
	    strcmp(bare, j2) != 0)
		FUZZ_FAIL("fuzz_mos: JSON of %s changes on a round trip\n",
		    mos_type_name(m->type));
	mos_msg_free(m2);
	free(j1);
	free(j2);
	free(bare);
}

/* Parse one frame and check what came of it. */
static void
fm_frame(const struct mos_frame *fm, enum mos_mode mode)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err;

	memset(&err, 0, sizeof err);
	if (mos_parse(fm->data, fm->len, fm->enc, mode, &m, &err) != MOS_OK) {
		if (m != NULL || err.code == MOS_OK || err.msg[0] == '\0')
			FUZZ_FAIL("fuzz_mos: a failed parse without a clear "
			    "error (code %d)\n", err.code);
		mos_msg_free(m);
		return;
	}
	fm_rewrite(m, MOS_ENC_UTF16BE, mode);
	fm_rewrite(m, MOS_ENC_UTF8, mode);
	fm_json(m);
	mos_msg_free(m);
}

/* One input: configuration byte, then the stream. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_cfg		 c;
	struct mos_framer	*f;
	struct mos_frame	 fm;

	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	fuzz_cfg_decode(data[0], &c);
	if ((f = mos_framer_new(c.enc, &c.lim)) == NULL ||
	    mos_framer_feed(f, data + 1, size - 1) != 0)
		abort();
	while (mos_framer_next(f, &fm) == MOS_FRAME_READY)
		fm_frame(&fm, c.mode);
	mos_framer_free(f);
	mos_thread_release();	/* no memory kept from input to input */
	return 0;
}
