/*
 * gateway/openapi.yaml against the routes the daemon serves (api_routes[]):
 * every route served is documented, every documented route is served.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define MAX_OPS	128

struct op {
	char	method[16];
	char	path[256];
	bool	seen;
};

/* "METHOD PATH" of every operation under paths: (two-space indent YAML). */
static size_t
read_ops(const char *file, struct op *ops, size_t max)
{
	FILE	*f;
	char	 line[1024], path[256] = "", *p;
	size_t	 n = 0, i, len;
	bool	 in_paths = false;
	static const char *const methods[] = { "get", "put", "post", "delete",
	    "patch", "head", "options" };

	if ((f = fopen(file, "r")) == NULL)
		fail_msg("%s: cannot open", file);
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, "paths:") == 0) {
			in_paths = true;
			continue;
		}
		if (line[0] != ' ' && line[0] != '\0')
			in_paths = false;
		if (!in_paths)
			continue;
		if (strncmp(line, "  /", 3) == 0 && line[strlen(line) - 1] ==
		    ':') {
			snprintf(path, sizeof path, "%.*s",
			    (int)strlen(line) - 3, line + 2);
			continue;
		}
		if (strncmp(line, "    ", 4) != 0 || line[4] == ' ')
			continue;
		p = line + 4;
		for (i = 0; i < sizeof methods / sizeof methods[0]; i++) {
			len = strlen(methods[i]);
			if (strncmp(p, methods[i], len) == 0 && p[len] == ':') {
				assert_true(n < max);
				for (len = 0; methods[i][len] != '\0'; len++)
					ops[n].method[len] =
					    (char)toupper((unsigned char)
					    methods[i][len]);
				ops[n].method[len] = '\0';
				snprintf(ops[n].path, sizeof ops[n].path, "%s",
				    path);
				n++;
			}
		}
	}
	fclose(f);
	return n;
}

static void
test_routes_documented(void **state)
{
	struct op		 ops[MAX_OPS];
	const struct api_route	*rt;
	const char		*top = getenv("MOSGW_TOP");
	char			 file[1024];
	size_t			 n, i;
	bool			 bad = false;

	(void)state;
	snprintf(file, sizeof file, "%s/gateway/openapi.yaml",
	    top != NULL ? top : ".");
	n = read_ops(file, ops, MAX_OPS);
	assert_true(n > 0);
	for (rt = api_routes; rt->method != NULL; rt++) {
		for (i = 0; i < n; i++) {
			if (strcmp(ops[i].method, rt->method) == 0 &&
			    strcmp(ops[i].path, rt->path) == 0)
				break;
		}
		if (i == n) {
			print_error("served, not in openapi.yaml: %s %s\n",
			    rt->method, rt->path);
			bad = true;
		} else
			ops[i].seen = true;
	}
	for (i = 0; i < n; i++) {
		if (!ops[i].seen) {
			print_error("in openapi.yaml, not served: %s %s\n",
			    ops[i].method, ops[i].path);
			bad = true;
		}
	}
	assert_false(bad);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_documented),
	};

	return cmocka_run_group_tests_name("gateway_openapi", tests, NULL,
	    NULL);
}
