/*
 * Library setup: libxml2 initialisation and the process-wide external
 * entity loader that refuses everything (hardening.md 1.2), plus the
 * encoding names shared by the framer, the parser and the tools.
 */
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "mosxml/mosxml.h"

static pthread_once_t	init_once = PTHREAD_ONCE_INIT;

/* Refuse every external entity, DTD or catalog lookup. */
static xmlParserInputPtr
init_deny_loader(const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
	(void)url;
	(void)id;
	(void)ctxt;
	return NULL;
}

/* Drop libxml2's unstructured messages: errors are read from the context. */
static void
init_quiet(void *ctx, const char *fmt, ...)
{
	(void)ctx;
	(void)fmt;
}

/* The body of mos_init, run once. */
static void
init_once_body(void)
{
	xmlInitParser();
	xmlSetExternalEntityLoader(init_deny_loader);
	xmlSetGenericErrorFunc(NULL, init_quiet);
}

/* Initialise libxml2 and install the deny-all entity loader. */
void
mos_init(void)
{
	pthread_once(&init_once, init_once_body);
}

/* The name of an encoding: "utf16be", "utf8" or "auto". */
const char *
mos_enc_name(enum mos_enc enc)
{
	switch (enc) {
	case MOS_ENC_UTF16BE:
		return "utf16be";
	case MOS_ENC_UTF8:
		return "utf8";
	case MOS_ENC_AUTO:
		return "auto";
	}
	return "?";
}

/* Parse an encoding name (also "utf-16be", "ucs2be", "utf-8"). */
int
mos_enc_parse(const char *s, enum mos_enc *enc)
{
	static const struct {
		const char	*name;
		enum mos_enc	 enc;
	} names[] = {
		{ "utf16be", MOS_ENC_UTF16BE }, { "utf-16be", MOS_ENC_UTF16BE },
		{ "ucs2be", MOS_ENC_UTF16BE }, { "ucs-2be", MOS_ENC_UTF16BE },
		{ "utf8", MOS_ENC_UTF8 }, { "utf-8", MOS_ENC_UTF8 },
		{ "auto", MOS_ENC_AUTO },
	};
	size_t	i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*enc = names[i].enc;
			return 0;
		}
	}
	return -1;
}
