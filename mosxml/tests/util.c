/*
 * Code shared by the mosxml test suites.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/tests/util.h"

/* Read a whole file. */
char *
mostest_slurp(const char *path, size_t *len)
{
	FILE	*f;
	char	*buf;
	long	 n;

	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Order paths for qsort. */
static int
list_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted paths of the files in dir ending in suffix. */
char **
mostest_list(const char *dir, const char *suffix, size_t *n)
{
	DIR		*d;
	struct dirent	*e;
	char		**v = NULL, **nv;
	size_t		 cap = 0, sl = strlen(suffix), nl;

	*n = 0;
	if ((d = opendir(dir)) == NULL)
		return NULL;
	while ((e = readdir(d)) != NULL) {
		nl = strlen(e->d_name);
		if (nl <= sl || strcmp(e->d_name + nl - sl, suffix) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof *v);
			assert_non_null(nv);
			v = nv;
		}
		v[*n] = malloc(strlen(dir) + nl + 2);
		assert_non_null(v[*n]);
		sprintf(v[*n], "%s/%s", dir, e->d_name);
		(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(v, *n, sizeof *v, list_cmp);
	return v;
}

/* Free a list from mostest_list. */
void
mostest_list_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The fixture directory of our own example messages. */
const char *
mostest_fixtures(void)
{
	static char	path[4096];
	const char	*top = getenv("MOSGW_TOP");

	snprintf(path, sizeof path, "%s/fixtures/msg", top ? top : ".");
	return path;
}

/* The shared examples directory, or NULL (with the SKIP line printed). */
const char *
mostest_examples(void)
{
	static char	path[4096];
	const char	*shared = getenv("MOSGW_SHARED");
	DIR		*d;

	snprintf(path, sizeof path, "%s/mos-examples",
	    shared ? shared : "../shared");
	if ((d = opendir(path)) == NULL) {
		printf("SKIP: ../shared/mos-examples not found\n");
		return NULL;
	}
	closedir(d);
	return path;
}

/* UTF-8 text as UTF-16BE. */
void
mostest_utf16(const char *s, size_t len, struct mos_buf *out)
{
	char	err[128];

	out->len = 0;
	if (mos_recode(s, len, MOS_ENC_UTF8, MOS_ENC_UTF16BE, out, err,
	    sizeof err) != 0)
		fail_msg("recode: %s", err);
}

/* Make room for n more bytes plus a NUL. */
static void
buf_room(struct mos_buf *b, size_t n)
{
	uint8_t	*p;

	if (b->cap - b->len > n)
		return;
	p = realloc(b->data, b->len + n + 1);
	assert_non_null(p);
	b->data = p;
	b->cap = b->len + n + 1;
}

/* Append a string. */
void
mostest_buf_add(struct mos_buf *b, const char *s)
{
	buf_room(b, strlen(s));
	memcpy(b->data + b->len, s, strlen(s));
	b->len += strlen(s);
}

/* The buffer as a C string. */
const char *
mostest_cstr(struct mos_buf *b)
{
	buf_room(b, 0);
	b->data[b->len] = '\0';
	return (const char *)b->data;
}

/* A kB figure from /proc/self/status. */
long
mostest_vm_kb(const char *field)
{
	FILE	*f;
	char	 line[256];
	long	 v = -1;
	size_t	 fl = strlen(field);

	if ((f = fopen("/proc/self/status", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* Reset the peak resident size so that the next VmHWM is the next peak. */
void
mostest_vm_reset_peak(void)
{
	FILE	*f;

	if ((f = fopen("/proc/self/clear_refs", "w")) == NULL)
		return;
	fputs("5", f);
	fclose(f);
}

/* Parse a UTF-8 file in a mode, failing the test on error. */
struct mos_msg *
mostest_parse_file(const char *path, enum mos_mode mode)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err;
	char			*buf;
	size_t			 len;
	int			 rc;

	buf = mostest_slurp(path, &len);
	rc = mos_parse(buf, len, MOS_ENC_UTF8, mode, &m, &err);
	free(buf);
	if (rc != MOS_OK)
		fail_msg("%s: %s: %s", path, mos_err_name(rc), err.msg);
	return m;
}

/* Parse a literal leniently. */
struct mos_msg *
mostest_parse_str(const char *s)
{
	struct mos_msg		*m = NULL;
	struct mos_error	 err;
	int			 rc;

	rc = mos_parse(s, strlen(s), MOS_ENC_UTF8, MOS_LENIENT, &m, &err);
	if (rc != MOS_OK)
		fail_msg("%s: %s", mos_err_name(rc), err.msg);
	return m;
}

/* False under AddressSanitizer or valgrind, whose allocators skew RSS figures. */
bool
mostest_rss_meaningful(void)
{
	const char	*pre = getenv("LD_PRELOAD");

#if defined(__SANITIZE_ADDRESS__)
	return false;
#endif
	return pre == NULL || strstr(pre, "vgpreload") == NULL;
}
