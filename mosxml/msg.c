/*
 * The message model: one arena per message (every string and array of a
 * message comes from it and goes with mos_msg_free) and the message type
 * names.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "mosxml/mosxml.h"
#include "mosxml/schema.h"

#define ARENA_FIRST	2048		/* bytes inside the mos_msg allocation */
#define ARENA_MIN	4096
#define ARENA_MAX	(1u << 20)
#define ARENA_ALIGN	alignof(max_align_t)

struct mos_chunk {
	struct mos_chunk	*next;
	alignas(max_align_t) char data[];
};

struct mos_arena {
	struct mos_chunk	*chunks;	/* malloc'd chunks, newest first */
	char			*p;		/* free space of the current chunk */
	size_t			 left;
	size_t			 next;		/* size of the next chunk */
};

/* A message, its arena and the arena's first chunk in one allocation. */
struct msg_block {
	struct mos_msg		msg;
	struct mos_arena	arena;
	alignas(max_align_t) char first[ARENA_FIRST];
};

/* Bytes from the arena, aligned to align (1 or ARENA_ALIGN); not zeroed. */
static void *
arena_get(struct mos_arena *a, size_t len, size_t align)
{
	struct mos_chunk	*c;
	size_t			 pad, size;
	void			*r;

	pad = (size_t)(-(uintptr_t)a->p) & (align - 1);
	if (pad + len > a->left) {
		if (len > SIZE_MAX / 2 - sizeof *c)
			return NULL;
		size = a->next;
		if (size < len + ARENA_ALIGN)
			size = len + ARENA_ALIGN;
		if ((c = malloc(sizeof *c + size)) == NULL)
			return NULL;
		c->next = a->chunks;
		a->chunks = c;
		a->p = c->data;
		a->left = size;
		if (a->next < ARENA_MAX)
			a->next *= 2;
		pad = 0;
	}
	r = a->p + pad;
	a->p += pad + len;
	a->left -= pad + len;
	return r;
}

/* A new message of the given type with a zeroed body. */
struct mos_msg *
mos_msg_new(enum mos_type type)
{
	struct msg_block	*b;

	if ((b = malloc(sizeof *b)) == NULL)
		return NULL;
	memset(&b->msg, 0, sizeof b->msg);
	b->arena.chunks = NULL;
	b->arena.p = b->first;
	b->arena.left = sizeof b->first;
	b->arena.next = ARENA_MIN;
	b->msg.arena = &b->arena;
	b->msg.type = type;
	b->msg.type_name = mos_type_name(type);
	if (type == MOS_T_LIST_MACH_INFO)
		memset(b->msg.u.list_mach_info.profiles, -1,
		    sizeof b->msg.u.list_mach_info.profiles);
	return &b->msg;
}

/* Free a message and everything in its arena. */
void
mos_msg_free(struct mos_msg *m)
{
	struct mos_chunk	*c, *next;

	if (m == NULL)
		return;
	for (c = m->arena->chunks; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	free(m);	/* the msg_block starts with the message */
}

/* Zeroed, aligned bytes from the message's arena. */
void *
mos_msg_alloc(struct mos_msg *m, size_t len)
{
	void	*p;

	if ((p = arena_get(m->arena, len == 0 ? 1 : len, ARENA_ALIGN)) != NULL)
		memset(p, 0, len);
	return p;
}

/* n zeroed elements of size bytes. */
void *
mos_msg_calloc(struct mos_msg *m, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	return mos_msg_alloc(m, n * size);
}

/* Exactly len bytes of s plus a NUL, in the arena. */
char *
mos_msg_strndup_raw(struct mos_msg *m, const char *s, size_t len)
{
	char	*p;

	if (len == SIZE_MAX || (p = arena_get(m->arena, len + 1, 1)) == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* An arena copy of s; NULL stays NULL. */
char *
mos_msg_strdup(struct mos_msg *m, const char *s)
{
	if (s == NULL)
		return NULL;
	return mos_msg_strndup_raw(m, s, strlen(s));
}

/* An arena copy of at most len bytes of s. */
char *
mos_msg_strndup(struct mos_msg *m, const char *s, size_t len)
{
	if (s == NULL)
		return NULL;
	return mos_msg_strndup_raw(m, s, strnlen(s, len));
}

/* Plain text escaped for a verbatim-XML field, in the arena. */
char *
mos_msg_xml_text(struct mos_msg *m, const char *s)
{
	struct mos_buf	b = { NULL, 0, 0 };
	char		*r;
	int		 bad;

	if (s == NULL)
		return NULL;
	if (mos_buf_escape(&b, s, strlen(s), 0, &bad) == -1) {
		mos_buf_free(&b);
		return NULL;
	}
	r = mos_msg_strndup_raw(m, b.len ? (const char *)b.data : "", b.len);
	mos_buf_free(&b);
	return r;
}

/* The element name of a message type; "unknown" for MOS_T_UNKNOWN. */
const char *
mos_type_name(enum mos_type t)
{
	if ((unsigned)t >= MOS_T__COUNT)
		return "unknown";
	return mos_tdescs[t].name;
}

/* The type of a message element name, MOS_T_UNKNOWN if not known. */
enum mos_type
mos_type_from_name(const char *name)
{
	int	t;

	for (t = 1; t < MOS_T__COUNT; t++) {
		if (name[0] == mos_tdescs[t].name[0] &&
		    strcmp(name, mos_tdescs[t].name) == 0)
			return (enum mos_type)t;
	}
	return MOS_T_UNKNOWN;
}

/* The profile of a message type, -1 for unknown. */
int
mos_type_profile(enum mos_type t)
{
	if ((unsigned)t >= MOS_T__COUNT)
		return -1;
	return mos_tdescs[t].profile;
}
