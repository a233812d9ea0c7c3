/*
 * mosjson: struct mos_msg <-> the JSON Lines schema of `mosmsg decode`
 * (documented in docs/mosmsg.md). A separate archive, libmosjson.a, because it
 * needs jansson; the codec itself needs only libxml2.
 */
#ifndef MOSJSON_H
#define MOSJSON_H

#include <stddef.h>

#include "mosxml/mosxml.h"

/* One JSON object (UTF-8, no newline) for m; malloc'd, caller frees. */
char	*mos_msg_to_json(const struct mos_msg *m);
/* Parse one JSON object of that schema. NULL on error, with errbuf filled. */
struct mos_msg *mos_msg_from_json(const char *json, size_t len, char *errbuf,
	    size_t errlen);
/* The same from a JSON value already parsed (a jansson json_t). */
struct json_t;
struct mos_msg *mos_msg_from_json_value(struct json_t *, char *errbuf,
	    size_t errlen);

#endif /* MOSJSON_H */
