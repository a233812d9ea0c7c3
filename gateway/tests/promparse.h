/*
 * promparse: a checker of the Prometheus text exposition format 0.0.4 for
 * the tests of GET /metrics. It parses the whole text and refuses what the
 * format (or Prometheus's naming conventions) does not allow: bad metric or
 * label names, bad label escapes, a sample before its family's TYPE, a
 * family split in two, a duplicate sample, counters without _total,
 * histograms whose buckets are not cumulative, lack +Inf, or whose _count
 * differs from the +Inf bucket or lacks a _sum. Samples are kept so that
 * tests can read values.
 */
#ifndef PROMPARSE_H
#define PROMPARSE_H

#include <stdbool.h>
#include <stddef.h>

struct prom_sample {
	char	*name;
	char	*labels;	/* canonical: k="v",k="v" sorted, unescaped v */
	char	*lnames[8];
	char	*lvals[8];	/* unescaped */
	size_t	 nl;
	double	 value;
};

struct prom {
	struct prom_sample	*s;
	size_t			 n;
	char			 err[256];	/* why it is refused */
	int			 line;		/* where */
	char			*copy;		/* the text, cut into lines */
	struct prom_sample	 part;		/* a sample being parsed */
};

/* Parse text; 0, or -1 with err and line set. prom_free it either way. */
int	 prom_parse(struct prom *, const char *text, const char *prefix);
void	 prom_free(struct prom *);
/*
 * The value of a sample: name and its labels as "k=v,k=v" in any order,
 * unescaped ("" for none). -1 if there is no such sample (found false).
 */
double	 prom_get(const struct prom *, const char *name, const char *labels,
	    bool *found);

#endif /* PROMPARSE_H */
