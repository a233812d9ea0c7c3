/*
 * mosxml internals: the descriptor tables that drive the one generic
 * walker each for parse (parse.c), write (write.c), JSON (json.c) and
 * compare (schema.c), plus the arena and buffer functions they share.
 * Not installed; only the codec sources include it.
 */
#ifndef MOSXML_SCHEMA_H
#define MOSXML_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mosxml/mosxml.h"

/* How one element or attribute maps onto a C field. */
enum mos_fk {
	MOS_FK_STR,		/* element text -> const char * */
	MOS_FK_XML,		/* element inner XML, verbatim -> const char * */
	MOS_FK_U32,		/* uint32_t; the bool at aux says present */
	MOS_FK_DEC,		/* struct mos_dec */
	MOS_FK_TIME,		/* struct mos_time */
	MOS_FK_DUR,		/* struct mos_dur */
	MOS_FK_ATTR,		/* attribute -> const char * */
	MOS_FK_TEXT,		/* the element's own text (objPath URL) */
	MOS_FK_STRUCT,		/* nested struct, inline */
	MOS_FK_PTR,		/* pointer to a nested struct, NULL when absent */
	MOS_FK_ARRAY,		/* MOS_ARRAY(struct sub), one element each */
	MOS_FK_STRS,		/* MOS_ARRAY(const char *), one element each */
	MOS_FK_WRAP,		/* <name> wrapping MOS_ARRAY(struct sub) of <elem> */
	MOS_FK_GROUP,		/* flat repeated group of sub's fields (roAck) */
	MOS_FK_PROFILES,	/* listMachInfo supportedProfiles (container) */
	MOS_FK_PROFILE,		/* listMachInfo mosProfileN (flat); aux = N */
	MOS_FK_BODY,		/* roStorySend storyBody (mixed content) */
};

#define MOS_F_REQ	0x01	/* required in strict mode */
#define MOS_F_KEY	0x02	/* required in every mode and by the writer */
#define MOS_F_MAX128	0x04	/* strict: at most 128 characters */
#define MOS_F_MAX255	0x08	/* strict: at most 255 characters */
#define MOS_F_REV	0x10	/* strict: at most 999 (objRev) */
#define MOS_F_AIR	0x20	/* "NOTREADY" is read as "NOT READY" */
#define MOS_F_ENUM	0x40	/* strict: one of vals */
#define MOS_F_ID	0x80	/* an identifier: surrounding white space dropped */

struct mos_sdesc;

struct mos_fdesc {
	const char		*name;	/* element or attribute name; JSON key */
	uint8_t			 kind;	/* enum mos_fk */
	uint8_t			 flags;
	uint16_t		 off;	/* offset of the field in its struct */
	uint16_t		 aux;	/* see enum mos_fk */
	const struct mos_sdesc	*sub;
	const char *const	*vals;	/* MOS_F_ENUM: NULL-terminated */
	const char		*elem;	/* MOS_FK_WRAP: the wrapped element */
};

/* Strict: exactly one of the struct's arrays is non-empty (element_source). */
#define MOS_SF_ONE_LIST	0x01

struct mos_sdesc {
	const char		*name;	/* element name (storyItem shares item) */
	size_t			 size;
	const struct mos_fdesc	*f;
	size_t			 n;
	int			 flags;	/* MOS_SF_* */
};

/* Message types: no envelope IDs (ActiveX) or no messageID (keepAlive). */
#define MOS_TF_NOIDS	0x01
#define MOS_TF_NOMSGID	0x02

struct mos_tdesc {
	const char		*name;
	int8_t			 profile;
	uint8_t			 flags;
	const struct mos_sdesc	*body;
};

extern const struct mos_tdesc	mos_tdescs[MOS_T__COUNT];
extern const struct mos_sdesc	mos_sd_item;

/* Field access. */
#define MOS_FP(base, f)		((void *)((char *)(base) + (f)->off))
#define MOS_CFP(base, f)	((const void *)((const char *)(base) + (f)->off))
/* The presence flag of a MOS_FK_U32 field. */
#define MOS_HAS(base, f)	((bool *)((char *)(base) + (f)->aux))
#define MOS_CHAS(base, f)	((const bool *)((const char *)(base) + (f)->aux))

/* Any MOS_ARRAY(T), read and written through memcpy. */
struct mos_anyarr {
	void	*v;
	size_t	 n;
};

static inline struct mos_anyarr
mos_arr_get(const void *p)
{
	struct mos_anyarr	a;

	memcpy(&a, p, sizeof a);
	return a;
}

static inline void
mos_arr_set(void *p, void *v, size_t n)
{
	struct mos_anyarr	a = { v, n };

	memcpy(p, &a, sizeof a);
}

/* Whether a field repeats (arrays may appear many times). */
static inline int
mos_fk_repeats(uint8_t kind)
{
	return kind == MOS_FK_ARRAY || kind == MOS_FK_STRS ||
	    kind == MOS_FK_GROUP || kind == MOS_FK_PROFILE;
}

/* Element fields of sd by name, starting the search at *cursor. */
const struct mos_fdesc *mos_sdesc_find(const struct mos_sdesc *,
	    const char *, size_t *cursor);
/* Attribute fields of sd by name. */
const struct mos_fdesc *mos_sdesc_find_attr(const struct mos_sdesc *,
	    const char *);
/* The field of kind k in sd, or NULL. */
const struct mos_fdesc *mos_sdesc_find_kind(const struct mos_sdesc *, int);
/* Whether two entries of a flat group (roAck) can be told apart. */
int	mos_group_apart(const struct mos_sdesc *, const void *, const void *);
/* Whether s is one of the NULL-terminated vals. */
int	mos_enum_ok(const char *const *, const char *);
/* The current length of a UTF-8 string in characters. */
size_t	mos_utf8_chars(const char *);

/* Arena-owned copies that never fail for want of a NUL (msg.c). */
char	*mos_msg_strndup_raw(struct mos_msg *, const char *, size_t);

/* Input handling (input.c). */
/* A MOS number, decimal or hex (0xFF, xFF), optional '+', at most max. */
int	mos_parse_number(const char *, uint64_t max, uint64_t *);
/*
 * UTF-16BE to UTF-8 into out (room for len / 2 * 3 + 4 bytes), NUL-ended.
 * Bad input is replaced by U+FFFD and makes the result -1.
 */
int	mos_utf16_to_utf8(const uint8_t *, size_t, char *out, size_t *outlen);
/* Recover the envelope of (possibly broken) UTF-8 XML text. */
void	mos_env_scan(const char *, size_t, struct mos_envelope *);

struct mos_scratch {
	struct mos_buf		 utf8;
	struct mos_buf		 tb;
	struct _xmlParserCtxt	*xml;		/* kept libxml2 context (parse.c) */
	unsigned		 xml_frames;	/* frames it has parsed */
};
/* This thread's scratch buffers (take them, then put them back), or NULL. */
struct mos_scratch *mos_scratch_get(void);
void	mos_scratch_put(struct mos_scratch *, struct mos_buf *, struct mos_buf *);

/* Buffers (write.c). */
int	mos_buf_reserve(struct mos_buf *, size_t);
int	mos_buf_add(struct mos_buf *, const void *, size_t);
/*
 * Append s escaped for text (attr = 0) or a double-quoted attribute
 * (attr = 1). Returns 0, or -1 on OOM, on a control character that XML 1.0
 * cannot carry, or on bad UTF-8 (*bad says which: 1 control, 2 UTF-8, 3 OOM).
 */
int	mos_buf_escape(struct mos_buf *, const char *, size_t, int attr,
	    int *bad);
/*
 * s checked by mos_fragment_check() as the content of elem, serialised as
 * the parser stores verbatim XML, in m's arena. NULL with msg filled when
 * it is refused (parse.c).
 */
const char *mos_xml_canon(struct mos_msg *m, const char *elem, const char *s,
	    enum mos_mode, char *msg, size_t msglen);
/* Check UTF-8 (no NUL, no C0 control but tab, LF, CR). 0 or -1. */
int	mos_utf8_check(const char *, size_t);
/* The length of the longest prefix that mos_utf8_check() accepts. */
size_t	mos_utf8_valid(const char *, size_t);

#endif /* MOSXML_SCHEMA_H */
