/*
 * bench_search: search latency over a 100,000-asset catalog, mosgw's
 * search (search_run: count, ranked page of 20 with paths and metadata,
 * as mosReqObjList uses it) beside a bare FTS5 query on the same index and
 * the same words (the ranked rowids of the page, nothing else), in one
 * table: p50 and p99 per kind of query.
 *
 * Both run on the same connection, taking turns at going first (the first
 * reads the pages from the file, the second finds them cached).
 *
 * The catalog is made here through catalog_put (so the index is the one the
 * gateway keeps): slugs of three words and descriptions of twelve from a
 * vocabulary of 5,000 made-up words, plus "news" in one asset of ten.
 * Figures only; nothing here asserts a timing.
 *
 * usage: bench_search [-d DIR] [-k] [-n ASSETS] [-q QUERIES]
 *   -k  keep DIR/search.db, and use it if it is there
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gateway.h"

#define VOCAB	5000
#define PAGE	20

enum kind { K_RARE, K_TWO, K_PREFIX, K_COMMON, K_FIELD, NKINDS };

static const char *const kind_names[NKINDS] = {
	"one word (~0.3 % of assets)",
	"two words, both must match",
	"prefix (3 letters*)",
	"common word (10 % of assets)",
	"word + field (objDur > n)",
};

static uint64_t	rng = 88172645463325252ULL;

/* xorshift64: the same catalog and queries every run. */
static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Word i of the vocabulary: letters only, 5 to 8 of them. */
static void
word(unsigned i, char *buf, size_t len)
{
	static const char	 cons[] = "bcdfghjklmnprstvz";
	static const char	 vow[] = "aeiou";
	size_t			 o = 0;
	unsigned		 v = i * 2654435761u;

	while (o + 2 < len && (o < 5 || v % 4 != 0) && o < 8) {
		buf[o++] = cons[v % 17];
		v /= 17;
		buf[o++] = vow[(v + i) % 5];
		v = v / 5 + i;
	}
	snprintf(buf + o, len - o, "%u", i % 100);
	/* letters then the number: unique per i, tokenised as one word */
}

static double
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Fill the catalog in one transaction. */
static int
fill(struct gwdb *g, int n)
{
	struct catalog_asset	 a;
	struct sbuf		 desc = { NULL, 0, 0 };
	char			 id[32], slug[128], w[32], *err = NULL;
	char			 type[] = "VIDEO", tb[] = "50", air[] = "READY";
	char			 by[] = "bench";
	int			 i, j;
	double			 t0 = now_ms();

	if (gwdb_relax(g, true) != QUEUE_OK || queue_tx_begin(g->q) !=
	    QUEUE_OK)
		return -1;
	for (i = 0; i < n; i++) {
		memset(&a, 0, sizeof a);
		snprintf(id, sizeof id, "BENCH-%06d", i);
		slug[0] = '\0';
		for (j = 0; j < 3; j++) {
			word((unsigned)(next_rand() % VOCAB), w, sizeof w);
			snprintf(slug + strlen(slug), sizeof slug - strlen(slug),
			    "%s%s", j ? " " : "", w);
		}
		desc.len = 0;
		sbuf_puts(&desc, i % 10 == 0 ? "<p>news " : "<p>");
		for (j = 0; j < 12; j++) {
			word((unsigned)(next_rand() % VOCAB), w, sizeof w);
			sbuf_printf(&desc, "%s ", w);
		}
		sbuf_puts(&desc, "</p>");
		a.obj_id = id;
		a.slug = slug;
		a.type = type;
		a.tb = tb;
		a.dur = (int64_t)(next_rand() % 10000);
		a.air = air;
		a.description = desc.s;
		a.changed_by = by;
		catalog_add_path(&a, CATALOG_PATH, "H.264", "http://mam/x.mp4");
		if (catalog_put(g, &a, NULL, NULL, &err) != QUEUE_OK) {
			fprintf(stderr, "put: %s\n", err);
			return -1;
		}
		free(a.paths[0].tech);
		free(a.paths[0].url);
		free(a.paths);
	}
	sbuf_free(&desc);
	if (queue_tx_commit(g->q) != QUEUE_OK)
		return -1;
	printf("catalog: %d assets indexed in %.1f s\n", n,
	    (now_ms() - t0) / 1000);
	return 0;
}

/* The general search text of query i of a kind. */
static void
query_text(enum kind k, char *buf, size_t len)
{
	char	w1[32], w2[32];

	word((unsigned)(next_rand() % VOCAB), w1, sizeof w1);
	word((unsigned)(next_rand() % VOCAB), w2, sizeof w2);
	switch (k) {
	case K_TWO:
		/* a slug's own words: most pairs would match nothing */
		snprintf(buf, len, "%s %s", w1, w2);
		break;
	case K_PREFIX:
		snprintf(buf, len, "%.3s*", w1);
		break;
	case K_COMMON:
		snprintf(buf, len, "news");
		break;
	default:
		snprintf(buf, len, "%s", w1);
		break;
	}
}

/* Bare FTS5: the ranked rowids of a page, the same words. */
static double
bare(struct store *db, struct store_stmt *st, const char *text)
{
	struct sbuf	q = { NULL, 0, 0 };
	double		t0 = now_ms();

	(void)db;
	search_fts_query(&q, text);
	store_reset(st);
	store_bind_text_copy(st, 1, q.s, -1);
	while (store_step(st) == STORE_ROW)
		;
	sbuf_free(&q);
	return now_ms() - t0;
}

/* mosgw's search, as mosReqObjList runs it. */
static double
ours(struct gwdb *g, enum kind k, const char *text, int64_t *total)
{
	struct catalog_asset	 a[PAGE];
	struct search_query	 q;
	char			*err = NULL;
	size_t			 n, i;
	double			 t0 = now_ms();

	memset(&q, 0, sizeof q);
	q.text = text;
	if (k == K_FIELD && search_add_field(&q, 0, "objDur[. > 5000]", NULL,
	    NULL, &err) != 0)
		fprintf(stderr, "field: %s\n", err);
	if (search_run(g, &q, a, PAGE, &n, total, &err) != QUEUE_OK)
		fprintf(stderr, "search: %s\n", err);
	for (i = 0; i < n; i++)
		catalog_asset_clear(&a[i]);
	search_query_clear(&q);
	free(err);
	return now_ms() - t0;
}

int
main(int argc, char **argv)
{
	struct gwdb_opts	 o;
	struct gwdb		*g;
	struct store_stmt		*st;
	const char		*dir = ".";
	char			 path[4096], text[128], *err = NULL;
	double			*t_ours, *t_bare;
	int64_t			 total, sum;
	int			 n = 100000, nq = 500, ch, i;
	bool			 keep = false, have;
	enum kind		 k;

	while ((ch = getopt(argc, argv, "d:kn:q:")) != -1) {
		switch (ch) {
		case 'k':
			keep = true;	/* keep (and reuse) the database */
			break;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'q':
			nq = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_search [-d DIR] "
			    "[-n ASSETS] [-q QUERIES]\n");
			return 2;
		}
	}
	mos_init();
	snprintf(path, sizeof path, "%s/search.db", dir);
	have = keep && access(path, F_OK) == 0;
	if (!have)
		unlink(path);
	memset(&o, 0, sizeof o);
	o.path = path;
	o.busy_ms = 1000;
	if (gwdb_open(&g, &o, &err) != QUEUE_OK) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	if (!have && fill(g, n) != 0)
		return 1;

	if (store_prepare(g->db, "SELECT rowid FROM asset_fts WHERE "
	    "asset_fts MATCH ?1 ORDER BY bm25(asset_fts, 10.0, 4.0, 2.0, 1.0)"
	    " LIMIT 20", 0, &st) != STORE_OK) {
		fprintf(stderr, "prepare: %s\n", store_errmsg(g->db));
		return 1;
	}
	t_ours = calloc((size_t)nq, sizeof *t_ours);
	t_bare = calloc((size_t)nq, sizeof *t_bare);
	printf("search latency over %d assets, %d queries per row, page of "
	    "%d (ms)\n", n, nq, PAGE);
	printf("%-32s %9s %9s   %9s %9s %11s\n", "query", "mosgw p50", "p99",
	    "bare p50", "p99", "avg matches");
	for (k = 0; k < NKINDS; k++) {
		sum = 0;
		for (i = 0; i < nq; i++) {
			query_text(k == K_FIELD ? K_RARE : k, text,
			    sizeof text);
			/* Who goes first reads the pages cold: take turns. */
			if (i % 2 == 0) {
				t_ours[i] = ours(g, k, text, &total);
				t_bare[i] = bare(g->db, st, text);
			} else {
				t_bare[i] = bare(g->db, st, text);
				t_ours[i] = ours(g, k, text, &total);
			}
			sum += total;
		}
		qsort(t_ours, (size_t)nq, sizeof *t_ours, cmp_double);
		qsort(t_bare, (size_t)nq, sizeof *t_bare, cmp_double);
		printf("%-32s %9.3f %9.3f   %9.3f %9.3f %11lld\n",
		    kind_names[k], t_ours[nq / 2], t_ours[nq * 99 / 100],
		    t_bare[nq / 2], t_bare[nq * 99 / 100],
		    (long long)(sum / nq));
	}
	printf("(mosgw: count of all matches + ranked page with paths and "
	    "metadata; bare: ranked rowids of the page only)\n");
	store_finalize(st);
	free(t_ours);
	free(t_bare);
	gwdb_close(g);
	if (!keep)
		unlink(path);
	return 0;
}
