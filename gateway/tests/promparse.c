/*
 * promparse: the Prometheus text exposition format 0.0.4, checked strictly
 * (see promparse.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tests/promparse.h"

#define PROM_MAX_FAMILIES	256

struct fam {
	char	name[128];
	char	type[16];
	bool	help;
	bool	closed;		/* another family came after it */
};

static int
prom_fail(struct prom *p, int line, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
	p->line = line;
	return -1;
}

static bool
name_ok(const char *s, size_t n, bool colon)
{
	size_t	i;

	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' ||
	    (colon && s[0] == ':')))
		return false;
	for (i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' ||
		    (colon && s[i] == ':')))
			return false;
	return true;
}

static bool
ends(const char *s, const char *suffix)
{
	size_t	a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A value: a float, +Inf, -Inf, NaN. */
static bool
value_ok(const char *s, double *v)
{
	char	*e;

	if (strcmp(s, "+Inf") == 0) {
		*v = INFINITY;
		return true;
	}
	if (strcmp(s, "-Inf") == 0) {
		*v = -INFINITY;
		return true;
	}
	if (strcmp(s, "NaN") == 0) {
		*v = NAN;
		return true;
	}
	if (*s == '\0' || isspace((unsigned char)*s))
		return false;
	*v = strtod(s, &e);
	return *e == '\0';
}

static int
cmp_pair(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "k=v" pairs sorted and joined by ',' (the lookup key). */
static char *
canon(char **names, char **vals, size_t n, const char *skip)
{
	char	*pairs[8] = { NULL }, *out;
	size_t	 i, m = 0, len = 1;

	for (i = 0; i < n; i++) {
		if (skip != NULL && strcmp(names[i], skip) == 0)
			continue;
		pairs[m] = malloc(strlen(names[i]) + strlen(vals[i]) + 2);
		sprintf(pairs[m], "%s=%s", names[i], vals[i]);
		len += strlen(pairs[m++]) + 1;
	}
	qsort(pairs, m, sizeof *pairs, cmp_pair);
	out = calloc(1, len);
	for (i = 0; i < m; i++) {
		if (i > 0)
			strcat(out, ",");
		strcat(out, pairs[i]);
		free(pairs[i]);
	}
	return out;
}

static void
sample_free(struct prom_sample *s)
{
	size_t	j;

	free(s->name);
	free(s->labels);
	for (j = 0; j < s->nl; j++) {
		free(s->lnames[j]);
		free(s->lvals[j]);
	}
	memset(s, 0, sizeof *s);
}

/* One sample line into p->part (prom_free frees it on failure). 0 or -1. */
static int
parse_sample(struct prom *p, int ln, char *line)
{
	struct prom_sample	*s = &p->part;
	char			*c = line, *start, *v, *e;
	size_t			 i;

	while (*c != '\0' && *c != '{' && *c != ' ')
		c++;
	if (!name_ok(line, (size_t)(c - line), true))
		return prom_fail(p, ln, "bad metric name");
	s->name = strndup(line, (size_t)(c - line));
	if (*c == '{') {
		c++;
		while (*c != '}') {
			start = c;
			while (*c != '\0' && *c != '=')
				c++;
			if (*c != '=' || !name_ok(start, (size_t)(c - start),
			    false))
				return prom_fail(p, ln, "bad label name");
			if (s->nl == 8)
				return prom_fail(p, ln, "too many labels");
			/* counted at once, so that prom_free frees them */
			s->lnames[s->nl] = strndup(start, (size_t)(c - start));
			v = s->lvals[s->nl] = calloc(1, strlen(c) + 1);
			s->nl++;
			for (i = 0; i + 1 < s->nl; i++)
				if (strcmp(s->lnames[i], s->lnames[s->nl - 1]) ==
				    0)
					return prom_fail(p, ln, "label %s twice",
					    s->lnames[i]);
			if (*++c != '"')
				return prom_fail(p, ln, "label value not quoted");
			c++;
			while (*c != '"') {
				if (*c == '\0' || *c == '\n')
					return prom_fail(p, ln, "unterminated "
					    "label value");
				if (*c == '\\') {
					c++;
					if (*c == 'n')
						*v++ = '\n';
					else if (*c == '\\' || *c == '"')
						*v++ = *c;
					else
						return prom_fail(p, ln, "bad "
						    "escape \\%c", *c);
					c++;
				} else
					*v++ = *c++;
			}
			c++;
			if (*c == ',')
				c++;
			else if (*c != '}')
				return prom_fail(p, ln, "expected , or }");
		}
		c++;
	}
	if (*c != ' ')
		return prom_fail(p, ln, "no space before the value");
	c++;
	e = strchr(c, ' ');
	if (e != NULL) {
		*e++ = '\0';
		strtoll(e, &v, 10);	/* a timestamp */
		if (*e == '\0' || *v != '\0')
			return prom_fail(p, ln, "bad timestamp");
	}
	if (!value_ok(c, &s->value))
		return prom_fail(p, ln, "bad value '%s'", c);
	s->labels = canon(s->lnames, s->lvals, s->nl, NULL);
	return 0;
}

/* The family a sample belongs to (histogram suffixes). */
static struct fam *
find_fam(struct fam *f, size_t nf, const char *name)
{
	size_t	i, len;

	for (i = 0; i < nf; i++) {
		if (strcmp(f[i].name, name) == 0)
			return &f[i];
		len = strlen(f[i].name);
		if (strcmp(f[i].type, "histogram") == 0 &&
		    strncmp(name, f[i].name, len) == 0 &&
		    (strcmp(name + len, "_bucket") == 0 ||
		    strcmp(name + len, "_sum") == 0 ||
		    strcmp(name + len, "_count") == 0))
			return &f[i];
	}
	return NULL;
}

/* Histogram rules over the parsed samples of family f. */
static int
check_histogram(struct prom *p, const struct fam *f)
{
	char		 b[160], sum[160], cnt[160], *key, *k2;
	size_t		 i, j;
	double		 last, le, prevle;
	bool		 inf, found;
	char		*lev = NULL;

	snprintf(b, sizeof b, "%s_bucket", f->name);
	snprintf(sum, sizeof sum, "%s_sum", f->name);
	snprintf(cnt, sizeof cnt, "%s_count", f->name);
	for (i = 0; i < p->n; i++) {
		if (strcmp(p->s[i].name, cnt) != 0)
			continue;
		key = p->s[i].labels;
		prom_get(p, sum, key, &found);
		if (!found)
			return prom_fail(p, 0, "%s{%s}: no _sum", f->name, key);
		last = -1;
		prevle = -INFINITY;
		inf = false;
		for (j = 0; j < p->n; j++) {
			if (strcmp(p->s[j].name, b) != 0)
				continue;
			k2 = canon(p->s[j].lnames, p->s[j].lvals, p->s[j].nl,
			    "le");
			if (strcmp(k2, key) != 0) {
				free(k2);
				continue;
			}
			free(k2);
			lev = NULL;
			for (size_t l = 0; l < p->s[j].nl; l++)
				if (strcmp(p->s[j].lnames[l], "le") == 0)
					lev = p->s[j].lvals[l];
			if (lev == NULL || !value_ok(lev, &le))
				return prom_fail(p, 0, "%s: bucket without "
				    "a valid le", f->name);
			if (le <= prevle)
				return prom_fail(p, 0, "%s: le not "
				    "increasing", f->name);
			if (p->s[j].value < last)
				return prom_fail(p, 0, "%s: buckets not "
				    "cumulative", f->name);
			prevle = le;
			last = p->s[j].value;
			if (isinf(le) && le > 0) {
				inf = true;
				if (last != p->s[i].value)
					return prom_fail(p, 0, "%s: +Inf "
					    "bucket %g != _count %g", f->name,
					    last, p->s[i].value);
			}
		}
		if (!inf)
			return prom_fail(p, 0, "%s{%s}: no +Inf bucket",
			    f->name, key);
	}
	return 0;
}

int
prom_parse(struct prom *p, const char *text, const char *prefix)
{
	struct fam	 fams[PROM_MAX_FAMILIES], *f, *cur = NULL;
	char		*line, *next, *w, *rest;
	size_t		 nf = 0, i;
	int		 ln = 0;
	struct prom_sample s;

	memset(p, 0, sizeof *p);
	p->copy = strdup(text);
	if (*text == '\0' || text[strlen(text) - 1] != '\n')
		return prom_fail(p, 0, "the text must end with a newline");
	for (line = p->copy; *line != '\0'; line = next) {
		ln++;
		next = strchr(line, '\n');
		*next++ = '\0';
		if (*line == '\0')
			continue;
		if (*line == '#') {
			if (strncmp(line, "# HELP ", 7) != 0 &&
			    strncmp(line, "# TYPE ", 7) != 0)
				continue;	/* a comment */
			w = line + 7;
			rest = strchr(w, ' ');
			if (rest == NULL)
				return prom_fail(p, ln, "HELP/TYPE without "
				    "text");
			*rest++ = '\0';
			if (!name_ok(w, strlen(w), true))
				return prom_fail(p, ln, "bad name %s", w);
			if (prefix != NULL && strncmp(w, prefix,
			    strlen(prefix)) != 0)
				return prom_fail(p, ln, "%s lacks %s", w,
				    prefix);
			for (f = NULL, i = 0; i < nf; i++)
				if (strcmp(fams[i].name, w) == 0)
					f = &fams[i];
			if (f == NULL) {
				if (nf == PROM_MAX_FAMILIES)
					return prom_fail(p, ln, "too many");
				f = &fams[nf++];
				memset(f, 0, sizeof *f);
				snprintf(f->name, sizeof f->name, "%s", w);
			} else if (f->closed || f != cur)
				return prom_fail(p, ln, "%s: family split",
				    w);
			if (cur != NULL && cur != f)
				cur->closed = true;
			cur = f;
			if (line[2] == 'H') {
				if (f->help)
					return prom_fail(p, ln, "HELP twice");
				f->help = true;
				continue;
			}
			if (f->type[0] != '\0')
				return prom_fail(p, ln, "TYPE twice");
			if (strcmp(rest, "counter") != 0 &&
			    strcmp(rest, "gauge") != 0 &&
			    strcmp(rest, "histogram") != 0 &&
			    strcmp(rest, "summary") != 0 &&
			    strcmp(rest, "untyped") != 0)
				return prom_fail(p, ln, "bad type %s", rest);
			snprintf(f->type, sizeof f->type, "%s", rest);
			if (strcmp(rest, "counter") == 0 && !ends(w, "_total"))
				return prom_fail(p, ln, "counter %s without "
				    "_total", w);
			continue;
		}
		if (parse_sample(p, ln, line) != 0)
			return -1;
		p->s = realloc(p->s, (p->n + 1) * sizeof *p->s);
		s = p->s[p->n++] = p->part;
		memset(&p->part, 0, sizeof p->part);
		if ((f = find_fam(fams, nf, s.name)) == NULL ||
		    f->type[0] == '\0')
			return prom_fail(p, ln, "%s: sample before its TYPE",
			    s.name);
		if (f != cur)
			return prom_fail(p, ln, "%s: family split", s.name);
		if (strcmp(f->type, "histogram") == 0 &&
		    strcmp(s.name, f->name) == 0)
			return prom_fail(p, ln, "%s: histogram sample "
			    "without suffix", s.name);
		for (i = 0; i + 1 < p->n; i++)
			if (strcmp(p->s[i].name, s.name) == 0 &&
			    strcmp(p->s[i].labels, s.labels) == 0)
				return prom_fail(p, ln, "%s{%s} twice",
				    s.name, s.labels);
		if (strcmp(f->type, "counter") == 0 && s.value < 0)
			return prom_fail(p, ln, "negative counter");
	}
	for (i = 0; i < nf; i++) {
		if (fams[i].type[0] == '\0')
			return prom_fail(p, 0, "%s: no TYPE", fams[i].name);
		if (strcmp(fams[i].type, "histogram") == 0 &&
		    check_histogram(p, &fams[i]) != 0)
			return -1;
	}
	return 0;
}

void
prom_free(struct prom *p)
{
	size_t	i;

	for (i = 0; i < p->n; i++)
		sample_free(&p->s[i]);
	sample_free(&p->part);
	free(p->s);
	free(p->copy);
	memset(p, 0, sizeof *p);
}

double
prom_get(const struct prom *p, const char *name, const char *labels,
    bool *found)
{
	char	*names[8], *vals[8], *copy, *tok, *save, *eq, *key;
	size_t	 n = 0, i;
	double	 v = -1;

	*found = false;
	copy = strdup(labels);
	for (tok = strtok_r(copy, ",", &save); tok != NULL && n < 8;
	    tok = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(tok, '=')) == NULL)
			continue;
		*eq = '\0';
		names[n] = tok;
		vals[n++] = eq + 1;
	}
	key = canon(names, vals, n, NULL);
	for (i = 0; i < p->n; i++) {
		if (strcmp(p->s[i].name, name) == 0 &&
		    strcmp(p->s[i].labels, key) == 0) {
			*found = true;
			v = p->s[i].value;
			break;
		}
	}
	free(key);
	free(copy);
	return v;
}
