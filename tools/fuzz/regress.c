/*
 * regress: replay the fuzz seeds and corpora through the fuzz targets, built
 * with the ordinary compiler, as part of `make check` (after libxml2's
 * testFuzzer.c: each target is included here under its own name).
 *
 * Inputs: the .xml files of tools/fuzz/seed (our seed streams), of
 * fixtures/msg and, when present, of ../shared/mos-examples, each as
 * UTF-16BE and as UTF-8 under several configuration bytes (see fuzz.h); all
 * of them back to back as one stream; the saved reproducers, every file of
 * tools/fuzz/seed/repro/TARGET; and the kept corpora, every file of
 * tools/fuzz/corpus/TARGET, both replayed as they are.
 *
 *   regress               run; ends with "N passed, N failed, N skipped"
 *   regress --corpus DIR  write those seed inputs into DIR/TARGET/
 *                         (the seeds of `make fuzz`)
 */
#define FUZZ_REGRESS

#include <errno.h>
#include <glob.h>
#include <sys/stat.h>

#include "tools/fuzz/fuzz.h"

unsigned long	fuzz_failures;

#define LLVMFuzzerTestOneInput fuzz_frame_one
#include "tools/fuzz/fuzz_frame.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_mos_one
#define LLVMFuzzerInitialize fuzz_mos_init
#include "tools/fuzz/fuzz_mos.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_session_one
#define LLVMFuzzerInitialize fuzz_session_init
#include "tools/fuzz/fuzz_session.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize
#define LLVMFuzzerTestOneInput fuzz_fragment_one
#include "tools/fuzz/fuzz_fragment.c"
#undef LLVMFuzzerTestOneInput

typedef int	(*target_fn)(const uint8_t *, size_t);
typedef int	(*init_fn)(int *, char ***);

struct target {
	const char	*name;
	target_fn	 fn;
	init_fn		 init;		/* once, before its first input */
	bool		 ready;
};

static struct target targets[] = {
	{ "fuzz_frame", fuzz_frame_one, NULL, false },
	{ "fuzz_mos", fuzz_mos_one, fuzz_mos_init, false },
	{ "fuzz_session", fuzz_session_one, fuzz_session_init, false },
	{ "fuzz_fragment", fuzz_fragment_one, NULL, false },
};
#define T_FRAME		(&targets[0])
#define T_MOS		(&targets[1])
#define T_SESSION	(&targets[2])

/* fuzz_frame: (caps, chunking) pairs tried with the fixed and AUTO modes. */
static const unsigned int frame_cfgs[][2] = {
	{ 0, 0 }, { 0, 3 }, { 0, 6 }, { 2, 4 }, { 1, 7 }, { 3, 5 },
};

static const char	*corpus;	/* --corpus DIR, or NULL to run */
static unsigned long	 passed, failed, skipped, written;

/* Read a whole file; NULL (reported) on error. */
static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE	*f;
	uint8_t	*p = NULL;
	long	 len;

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (p = malloc((size_t)len + 1)) == NULL ||
	    fread(p, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "regress: %s: %s\n", path, strerror(errno));
		free(p);
		p = NULL;
	} else
		*n = (size_t)len;
	if (f != NULL)
		fclose(f);
	return p;
}

/* Write one corpus file DIR/TARGET/NAME. */
static void
corpus_write(const struct target *t, const char *name, const uint8_t *p,
    size_t n)
{
	char	 path[4096];
	FILE	*f;

	snprintf(path, sizeof path, "%s/%s", corpus, t->name);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/%s", corpus, t->name, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(p, 1, n, f) != n ||
	    fclose(f) != 0) {
		fprintf(stderr, "regress: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	written++;
}

/* Run one input through a target, initialising it first if need be. */
static int
run(struct target *t, const uint8_t *p, size_t n)
{
	if (!t->ready && t->init != NULL)
		t->init(NULL, NULL);
	t->ready = true;
	return t->fn(p, n);
}

/* Run (or write) one input: cfg byte then the stream. */
static void
one(struct target *t, const char *name, uint8_t cfg, const uint8_t *s,
    size_t n)
{
	uint8_t	*in;
	char	 fname[512];

	if ((in = malloc(n + 1)) == NULL)
		abort();
	in[0] = cfg;
	memcpy(in + 1, s, n);
	if (corpus != NULL) {
		snprintf(fname, sizeof fname, "%s.%02x", name, cfg);
		corpus_write(t, fname, in, n + 1);
	} else if (run(t, in, n + 1) != 0)
		fuzz_failures++;
	free(in);
}

/*
 * fuzz_session configuration bytes (see fuzz_session.c): lower port whole,
 * upper port in 7-byte chunks with the peer closing, query port in 64-byte
 * chunks with the peer reading only at the end.
 */
static const uint8_t session_cfgs[] = { 6 << 2, 1 | 3 << 2 | 0x20,
    2 | 4 << 2 | 0x40 };

/*
 * Every configuration of the targets for a stream in encoding enc. A corpus
 * gets one fuzz_frame configuration per mode and one of each other target:
 * the fuzzer varies the configuration byte itself.
 */
static void
all_cfgs(const char *name, const uint8_t *s, size_t n, enum mos_enc enc)
{
	size_t	i, k, nf = corpus != NULL ? 1 :
		    sizeof frame_cfgs / sizeof frame_cfgs[0];
	int	m;

	for (m = 0; m < 2; m++)
		for (i = 0; i < nf; i++) {
			k = corpus != NULL ? (size_t)m + 1 : i;
			one(T_FRAME, name, fuzz_cfg_encode(m == 0 ? enc :
			    MOS_ENC_AUTO, frame_cfgs[k][0], false,
			    frame_cfgs[k][1]), s, n);
		}
	one(T_MOS, name, fuzz_cfg_encode(enc, 0, false, 0), s, n);
	for (i = 0; i < (corpus != NULL ? 1 : nitems(session_cfgs)); i++)
		one(T_SESSION, name, session_cfgs[i], s, n);
	if (corpus != NULL)
		return;
	one(T_MOS, name, fuzz_cfg_encode(enc, 0, true, 0), s, n);
	one(T_MOS, name, fuzz_cfg_encode(MOS_ENC_AUTO, 0, false, 0), s, n);
}

/* Count a group of runs as one test, named by what it replayed. */
static void
tally(const char *what, unsigned long before)
{
	if (corpus != NULL)
		return;
	if (fuzz_failures == before)
		passed++;
	else {
		failed++;
		printf("FAILED: %s\n", what);
	}
}

/* A UTF-8 text stream, as it is and as UTF-16BE; appended to all8. */
static void
text_input(const char *path, struct mos_buf *all8)
{
	struct mos_buf	 be = { 0 };
	const char	*base = strrchr(path, '/') != NULL ? strrchr(path, '/') +
			    1 : path;
	char		 name[256], err[128];
	unsigned long	 before = fuzz_failures;
	uint8_t		*s;
	size_t		 n;

	if ((s = slurp(path, &n)) == NULL) {
		failed++;
		return;
	}
	snprintf(name, sizeof name, "%s.utf8", base);
	all_cfgs(name, s, n, MOS_ENC_UTF8);
	snprintf(name, sizeof name, "%s.utf16be", base);
	if (mos_recode(s, n, MOS_ENC_UTF8, MOS_ENC_UTF16BE, &be, err,
	    sizeof err) == 0)
		all_cfgs(name, be.data, be.len, MOS_ENC_UTF16BE);
	if (mos_recode(s, n, MOS_ENC_UTF8, MOS_ENC_UTF8, all8, err,
	    sizeof err) == 0)
		mos_recode("\n", 1, MOS_ENC_UTF8, MOS_ENC_UTF8, all8, err,
		    sizeof err);
	mos_buf_free(&be);
	free(s);
	tally(path, before);
}

/* Every file of a glob pattern under the directory in env (or fallback). */
static size_t
text_inputs(const char *env, const char *fallback, const char *pattern,
    struct mos_buf *all8)
{
	const char	*base = getenv(env);
	glob_t		 g;
	char		 pat[4096];
	size_t		 i, n;

	snprintf(pat, sizeof pat, "%s/%s", base != NULL && *base != '\0' ?
	    base : fallback, pattern);
	if (glob(pat, 0, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc; i++)
		text_input(g.gl_pathv[i], all8);
	n = g.gl_pathc;
	globfree(&g);
	return n;
}

/* Every file under tools/fuzz/DIR/TARGET, replayed as it is. */
static void
replay(const char *dir)
{
	const char	*top = getenv("MOSGW_TOP");
	unsigned long	 before;
	glob_t		 g;
	char		 pat[4096];
	uint8_t		*p;
	size_t		 i, j, n;

	for (j = 0; j < nitems(targets) && corpus == NULL; j++) {
		snprintf(pat, sizeof pat, "%s/tools/fuzz/%s/%s/*",
		    top != NULL ? top : ".", dir, targets[j].name);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (i = 0; i < g.gl_pathc; i++) {
			before = fuzz_failures;
			if ((p = slurp(g.gl_pathv[i], &n)) != NULL) {
				run(&targets[j], p, n);
				free(p);
			} else
				fuzz_failures++;
			tally(g.gl_pathv[i], before);
		}
		globfree(&g);
	}
}

int
main(int argc, char **argv)
{
	struct mos_buf	all8 = { 0 }, all16 = { 0 };
	unsigned long	before;
	size_t		seeds;
	char		err[128];

	if (argc == 3 && strcmp(argv[1], "--corpus") == 0)
		corpus = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: regress [--corpus DIR]\n");
		return 64;
	}
	if (corpus != NULL && mkdir(corpus, 0755) == -1 && errno != EEXIST) {
		fprintf(stderr, "regress: %s: %s\n", corpus, strerror(errno));
		return 1;
	}
	mos_init();
	seeds = text_inputs("MOSGW_TOP", ".", "tools/fuzz/seed/*.xml", &all8);
	seeds += text_inputs("MOSGW_TOP", ".", "fixtures/msg/*.xml", &all8);
	if (text_inputs("MOSGW_SHARED", "../shared", "mos-examples/*.xml",
	    &all8) == 0) {
		printf("SKIP: ../shared/mos-examples not found\n");
		skipped++;
	}
	if (seeds == 0) {
		fprintf(stderr, "regress: no seeds under $MOSGW_TOP "
		    "(tools/fuzz/seed, fixtures/msg)\n");
		failed++;
	}
	/* Everything back to back: frames, junk and BOMs between them. */
	before = fuzz_failures;
	all_cfgs("all.utf8", all8.data, all8.len, MOS_ENC_UTF8);
	if (mos_recode(all8.data, all8.len, MOS_ENC_UTF8, MOS_ENC_UTF16BE,
	    &all16, err, sizeof err) == 0)
		all_cfgs("all.utf16be", all16.data, all16.len, MOS_ENC_UTF16BE);
	tally("all inputs as one stream", before);
	replay("seed/repro");
	replay("corpus");
	if (T_SESSION->ready && fs.ndone > 0) {
		before = fuzz_failures;
		fs_history();		/* the check of the last inputs */
		tally("fuzz_session: history of the last inputs", before);
	}
	mos_buf_free(&all8);
	mos_buf_free(&all16);
	if (corpus != NULL) {
		printf("regress: wrote %lu inputs under %s\n", written, corpus);
		return 0;
	}
	printf("%lu passed, %lu failed, %lu skipped\n", passed, failed,
	    skipped);
	return failed != 0;
}
