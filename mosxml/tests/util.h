/*
 * Code shared by the mosxml test suites: files, fixture lists, the
 * shared MOS examples, UTF-16BE copies and process memory figures.
 */
#ifndef MOSXML_TESTS_UTIL_H
#define MOSXML_TESTS_UTIL_H

#include <stddef.h>

#include "mosxml/mosxml.h"

/* The whole file; aborts the test on failure. Free with free(). */
char	*mostest_slurp(const char *path, size_t *len);
/*
 * Sorted paths of the files in dir whose names end in suffix; the count in
 * *n. NULL (and *n = 0) when dir cannot be read. Free with mostest_list_free.
 */
char	**mostest_list(const char *dir, const char *suffix, size_t *n);
void	 mostest_list_free(char **, size_t);
/* $MOSGW_TOP/fixtures/msg (or ./fixtures/msg). */
const char *mostest_fixtures(void);
/*
 * $MOSGW_SHARED/mos-examples, or NULL after printing the SKIP line when it
 * is absent; the caller then calls skip().
 */
const char *mostest_examples(void);
/* UTF-8 text re-encoded as UTF-16BE with the framer's recoder. */
void	 mostest_utf16(const char *, size_t, struct mos_buf *);
/* Append a string to a buffer (realloc'd like the codec's own). */
void	 mostest_buf_add(struct mos_buf *, const char *);
/* The buffer's bytes as a C string (a NUL is kept after len). */
const char *mostest_cstr(struct mos_buf *);
/* A field of /proc/self/status in kB ("VmRSS", "VmHWM"), -1 if unknown. */
long	 mostest_vm_kb(const char *);
/* False under AddressSanitizer or valgrind, whose allocators skew RSS figures. */
bool	mostest_rss_meaningful(void);
/* Reset VmHWM to the current RSS (Linux clear_refs); best effort. */
void	 mostest_vm_reset_peak(void);
/* Parse fixture path (UTF-8) in a mode; fails the test on error. */
struct mos_msg *mostest_parse_file(const char *path, enum mos_mode);
/* Parse a string literal (UTF-8) leniently; fails the test on error. */
struct mos_msg *mostest_parse_str(const char *);

#endif /* MOSXML_TESTS_UTIL_H */
