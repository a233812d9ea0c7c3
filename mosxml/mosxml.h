/*
 * mosxml: the MOS codec.
 *
 *   framer  bytes off a socket, in any chunking -> one <mos>...</mos> frame at a time
 *   parser  one frame -> a typed struct mos_msg (hardened libxml2, no DTD, no entities)
 *   writer  struct mos_msg -> wire bytes (UTF-16BE or UTF-8), DTD element order
 *   json    struct mos_msg <-> the JSON Lines schema of `mosmsg` (mosxml/json.c)
 *
 * Depends on libxml2 and libc only. Thread-safe once mos_init() has run.
 */
#ifndef MOSXML_H
#define MOSXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Library setup (init.c)                                                    */

/*
 * Initialise libxml2 and install a process-wide external-entity loader that
 * refuses everything. Call once, before any parsing thread exists. Idempotent.
 */
void	mos_init(void);

/* ------------------------------------------------------------------------ */
/* Encodings and modes                                                       */

enum mos_enc {
	MOS_ENC_UTF16BE = 0,	/* the MOS 2.x default (UCS-2 big-endian) */
	MOS_ENC_UTF8 = 1,	/* Octopus and friends, per link */
	MOS_ENC_AUTO = 2,	/* framer only: decide from the first non-space character */
};

enum mos_mode {
	MOS_LENIENT = 0,	/* accept the vendor quirks of mos-protocol.md */
	MOS_STRICT = 1,
};

const char	*mos_enc_name(enum mos_enc);		/* "utf16be", "utf8", "auto" */
int		 mos_enc_parse(const char *, enum mos_enc *);	/* 0 or -1 */

/* ------------------------------------------------------------------------ */
/* Framer (frame.c)                                                          */

#define MOS_FRAME_MAX_DEFAULT	(16u << 20)	/* bytes of one frame, on the wire */
#define MOS_JUNK_MAX_DEFAULT	(64u << 10)	/* bytes skipped before a <mos> */

struct mos_framer_limits {
	size_t	max_frame;	/* 0 = MOS_FRAME_MAX_DEFAULT */
	size_t	max_junk;	/* 0 = MOS_JUNK_MAX_DEFAULT */
};

enum mos_frame_status {
	MOS_FRAME_READY = 1,		/* *out holds one complete frame */
	MOS_FRAME_MORE = 0,		/* need more bytes */
	MOS_FRAME_ERR_TOO_BIG = -1,	/* frame exceeds max_frame */
	MOS_FRAME_ERR_JUNK = -2,	/* more than max_junk bytes before <mos> */
	MOS_FRAME_ERR_TRUNCATED = -3,	/* end of stream inside a frame */
	MOS_FRAME_ERR_ODD = -4,		/* end of stream on an odd byte (UTF-16) */
	MOS_FRAME_ERR_ENCODING = -5,	/* bytes that cannot be the chosen encoding */
	MOS_FRAME_ERR_NOMEM = -6,
};

struct mos_frame {
	const uint8_t	*data;	/* starts at '<' of <mos, ends after '>' of </mos> */
	size_t		 len;
	enum mos_enc	 enc;	/* never MOS_ENC_AUTO */
	uint64_t	 offset;	/* stream offset of data[0] */
};

struct mos_framer;

struct mos_framer *mos_framer_new(enum mos_enc, const struct mos_framer_limits *);
void	 mos_framer_free(struct mos_framer *);
void	 mos_framer_set_limits(struct mos_framer *, const struct mos_framer_limits *);
/* Append bytes (copied). Returns 0, or MOS_FRAME_ERR_NOMEM. */
int	 mos_framer_feed(struct mos_framer *, const void *, size_t);
/*
 * Next complete frame, or MOS_FRAME_MORE, or an error (sticky: every later
 * call returns it). out->data stays valid until the next feed/next/free.
 */
int	 mos_framer_next(struct mos_framer *, struct mos_frame *out);
/* End of stream: 0 when nothing but whitespace is pending, else an error. */
int	 mos_framer_end(struct mos_framer *);
/* True once the first byte of a frame's "<mos" has been seen (frame deadline). */
bool	 mos_framer_in_frame(const struct mos_framer *);
size_t	 mos_framer_pending(const struct mos_framer *);	/* bytes held */
enum mos_enc mos_framer_encoding(const struct mos_framer *);	/* AUTO until decided */
const char *mos_frame_strerror(int);

/* ------------------------------------------------------------------------ */
/* Scalar types (time.c)                                                     */

/* A MOS time: YYYY-MM-DD'T'hh:mm:ss[,ddd][Z|+hh:mm|-hh:mm]. */
#define MOS_TIME_SET	0x01	/* a value is present (empty elements are not SET) */
#define MOS_TIME_FRAC	0x02	/* had a fraction */
#define MOS_TIME_ZONE	0x04	/* had a zone: Z or an offset */
struct mos_time {
	int64_t	sec;	/* the written wall-clock digits as seconds since 1970, as if UTC */
	int32_t	ms;	/* 0..999 */
	int16_t	tz_min;	/* offset east of UTC in minutes when MOS_TIME_ZONE */
	uint8_t	flags;
};

/* Exact decimal, e.g. objTB 59.94 = { 5994, 2 }. */
struct mos_dec {
	int64_t	v;
	uint8_t	scale;	/* digits after the point */
	bool	set;
};

/* roEdDur, roEdStart-style durations "hh:mm:ss" as seconds. */
struct mos_dur {
	uint32_t sec;
	bool	 set;
};

int	mos_time_parse(const char *, enum mos_mode, struct mos_time *);	/* 0 or -1 */
/* Spec form, comma fraction: "2009-04-11T14:22:07,125Z". Returns length. */
size_t	mos_time_format(const struct mos_time *, char *, size_t);
/* ISO 8601 for JSON: "2009-04-11T14:22:07.125Z", offset kept if given. */
size_t	mos_time_iso(const struct mos_time *, char *, size_t);
int	mos_time_parse_iso(const char *, struct mos_time *);
void	mos_time_now(struct mos_time *);	/* UTC with fraction and Z */
int64_t	mos_time_utc_ms(const struct mos_time *);	/* applies the offset if any */
int	mos_dec_parse(const char *, struct mos_dec *);
size_t	mos_dec_format(const struct mos_dec *, char *, size_t);
double	mos_dec_to_double(const struct mos_dec *);
int	mos_dur_parse(const char *, enum mos_mode, struct mos_dur *);
size_t	mos_dur_format(const struct mos_dur *, char *, size_t);	/* "hh:mm:ss" */

/* ------------------------------------------------------------------------ */
/* The message model (msg.c)                                                 */

/*
 * Every message struct below is owned by its struct mos_msg: strings and
 * arrays live in the message's arena and go with mos_msg_free(). A NULL
 * string means "element absent"; "" means present but empty.
 *
 * Repeated elements are MOS_ARRAY(T): { T *v; size_t n; }.
 */
#define MOS_ARRAY(T)	struct { T *v; size_t n; }

/* Every message type the codec knows. Keep MOS_T_UNKNOWN first. */
enum mos_type {
	MOS_T_UNKNOWN = 0,	/* well-formed, known envelope, unknown message element */
	/* Profile 0 */
	MOS_T_HEARTBEAT,
	MOS_T_REQ_MACH_INFO,
	MOS_T_LIST_MACH_INFO,
	MOS_T_KEEP_ALIVE,		/* MOS 4.0 */
	/* Profile 1 */
	MOS_T_MOS_ACK,
	MOS_T_MOS_OBJ,
	MOS_T_MOS_REQ_OBJ,
	MOS_T_MOS_REQ_ALL,
	MOS_T_MOS_LIST_ALL,
	/* Profile 2 */
	MOS_T_RO_ACK,
	MOS_T_RO_CREATE,
	MOS_T_RO_REPLACE,
	MOS_T_RO_DELETE,
	MOS_T_RO_REQ,
	MOS_T_RO_LIST,
	MOS_T_RO_METADATA_REPLACE,
	MOS_T_RO_ELEMENT_STAT,
	MOS_T_RO_READY_TO_AIR,
	MOS_T_RO_ELEMENT_ACTION,
	MOS_T_RO_STORY_APPEND,
	MOS_T_RO_STORY_INSERT,
	MOS_T_RO_STORY_REPLACE,
	MOS_T_RO_STORY_MOVE,
	MOS_T_RO_STORY_SWAP,
	MOS_T_RO_STORY_DELETE,
	MOS_T_RO_STORY_MOVE_MULTIPLE,
	MOS_T_RO_ITEM_INSERT,
	MOS_T_RO_ITEM_REPLACE,
	MOS_T_RO_ITEM_MOVE_MULTIPLE,
	MOS_T_RO_ITEM_DELETE,
	/* Profile 3 */
	MOS_T_MOS_OBJ_CREATE,
	MOS_T_MOS_ITEM_REPLACE,
	MOS_T_MOS_REQ_OBJ_ACTION,
	MOS_T_MOS_REQ_SEARCHABLE_SCHEMA,
	MOS_T_MOS_LIST_SEARCHABLE_SCHEMA,
	MOS_T_MOS_REQ_OBJ_LIST,
	MOS_T_MOS_OBJ_LIST,
	/* Profile 4 */
	MOS_T_RO_REQ_ALL,
	MOS_T_RO_LIST_ALL,
	MOS_T_RO_STORY_SEND,
	/* Profile 5 */
	MOS_T_RO_CTRL,
	MOS_T_RO_ITEM_CUE,
	/* Profile 7 */
	MOS_T_RO_REQ_STORY_ACTION,
	/* ActiveX / plug-in messages (no envelope IDs) */
	MOS_T_NCS_ITEM,
	MOS_T_NCS_REQ_STORY_ACTION,
	MOS_T__COUNT
};

const char	*mos_type_name(enum mos_type);		/* "mosObj"; "unknown" for 0 */
enum mos_type	 mos_type_from_name(const char *);	/* MOS_T_UNKNOWN if not known */
/* The MOS profile a message belongs to (0..7), -1 for unknown. */
int		 mos_type_profile(enum mos_type);

/* mosExternalMetadata: mosPayload kept verbatim as XML text (UTF-8). */
struct mos_ext_meta {
	const char	*mos_scope;	/* OBJECT | STORY | PLAYLIST, or NULL */
	const char	*mos_schema;
	const char	*mos_payload;	/* inner XML of <mosPayload>, verbatim */
};

/* objPath, objProxyPath, objMetadataPath. */
struct mos_path {
	const char	*tech_description;	/* attribute techDescription */
	const char	*url;			/* element text */
};

struct mos_obj_paths {
	MOS_ARRAY(struct mos_path)	obj_path;
	MOS_ARRAY(struct mos_path)	obj_proxy_path;
	MOS_ARRAY(struct mos_path)	obj_metadata_path;
};

/* Profile 0 */

struct mos_heartbeat {
	struct mos_time	time;
};

struct mos_default_active_x {
	const char	*mode;
	const char	*control_file_location;
	const char	*control_slug;
	const char	*control_name;
	const char	*control_default_params;
};

struct mos_list_mach_info {
	const char	*manufacturer;
	const char	*model;
	const char	*hw_rev;
	const char	*sw_rev;
	const char	*dom;
	const char	*sn;
	const char	*id;
	struct mos_time	 time;
	struct mos_time	 op_time;
	const char	*mos_rev;
	/* supportedProfiles: profiles[i] = 1 (YES), 0 (NO), -1 (not stated) */
	int8_t		 profiles[8];
	const char	*device_type;		/* deviceType attribute: NCS | MOS | N/A */
	bool		 profiles_flat;		/* input used <mosProfileN> directly */
	MOS_ARRAY(struct mos_default_active_x)	default_active_x;
	MOS_ARRAY(struct mos_ext_meta)		ext_meta;
};

/* Profile 1 */

struct mos_obj {
	const char	*obj_id;
	const char	*obj_slug;
	const char	*mos_abstract;	/* may hold markup: kept verbatim as XML text */
	const char	*obj_group;
	const char	*obj_type;	/* STILL | AUDIO | VIDEO (| OTHER) */
	struct mos_dec	 obj_tb;
	uint32_t	 obj_rev;
	bool		 has_obj_rev;
	uint32_t	 obj_dur;
	bool		 has_obj_dur;
	const char	*status;	/* NEW | UPDATED | MOVED | DELETED | ... */
	const char	*obj_air;	/* READY | NOT READY (NOTREADY read as NOT READY) */
	struct mos_obj_paths *obj_paths;	/* NULL when absent */
	const char	*created_by;
	struct mos_time	 created;
	const char	*changed_by;
	struct mos_time	 changed;
	const char	*description;	/* mixed content (<p>, <em>, <tab>): verbatim XML text */
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

struct mos_ack {
	const char	*obj_id;
	uint32_t	 obj_rev;
	bool		 has_obj_rev;
	const char	*status;	/* ACK | NACK */
	const char	*status_description;
};

struct mos_req_obj {
	const char	*obj_id;
};

struct mos_req_all {
	uint32_t	 pause;
	bool		 has_pause;
};

struct mos_list_all {
	MOS_ARRAY(struct mos_obj)	mos_obj;
};

/* Profile 2: the roAck group repeats per object. */
struct mos_ro_ack_entry {
	const char	*story_id;
	const char	*item_id;
	const char	*obj_id;
	const char	*item_channel;
	const char	*status;
};

struct mos_ro_ack {
	const char	*ro_id;
	const char	*ro_status;	/* "OK" or error prose */
	MOS_ARRAY(struct mos_ro_ack_entry)	entries;
};

/* Running orders, stories, items, Profile 3-7 and ncsItem: same pattern. */
/* @@MODEL@@ (structs for the remaining message types go here) */

struct mos_arena;

struct mos_msg {
	enum mos_type	 type;
	const char	*type_name;	/* element name of the message as received */
	const char	*mos_id;	/* NULL when absent */
	const char	*ncs_id;
	bool		 has_message_id;
	int32_t		 message_id;	/* >= 1 when present; hex input is converted */
	union {
		struct mos_heartbeat		heartbeat;
		struct mos_list_mach_info	list_mach_info;
		struct mos_obj			mos_obj;
		struct mos_ack			mos_ack;
		struct mos_req_obj		mos_req_obj;
		struct mos_req_all		mos_req_all;
		struct mos_list_all		mos_list_all;
		struct mos_ro_ack		ro_ack;
		/* @@UNION@@ (one member per remaining message type) */
	} u;
	struct mos_arena *arena;
};

struct mos_msg	*mos_msg_new(enum mos_type);	/* zeroed body; NULL on OOM */
void		 mos_msg_free(struct mos_msg *);	/* accepts NULL */
void		*mos_msg_alloc(struct mos_msg *, size_t);	/* zeroed, arena-owned */
char		*mos_msg_strdup(struct mos_msg *, const char *);	/* NULL stays NULL */
char		*mos_msg_strndup(struct mos_msg *, const char *, size_t);

/* ------------------------------------------------------------------------ */
/* Parser (parse.c)                                                          */

enum mos_err {
	MOS_OK = 0,
	MOS_E_XML = 1,		/* not well-formed, or rejected by the hardening */
	MOS_E_DOCTYPE = 2,	/* DTD / entity declarations are never accepted */
	MOS_E_ROOT = 3,		/* root element is not <mos> */
	MOS_E_ENVELOPE = 4,	/* mosID/ncsID/messageID missing or bad (strict) */
	MOS_E_FIELD = 5,	/* a required field missing or a value out of range */
	MOS_E_TOO_BIG = 6,
	MOS_E_NOMEM = 7,
	MOS_E_ENCODING = 8,	/* odd length, bad surrogates, NUL */
};

/* What could be read of the envelope of a frame that failed, for the NACK. */
struct mos_envelope {
	bool	 have_mos_id, have_ncs_id, have_message_id;
	char	 mos_id[129];
	char	 ncs_id[129];
	int32_t	 message_id;
	char	 type_name[64];	/* message element name, "" if unknown */
};

struct mos_error {
	enum mos_err	code;
	int		xml_code;	/* libxml2 error number, 0 if none */
	int		line;
	char		msg[256];	/* one line, no newline, names the element */
	struct mos_envelope env;
};

/*
 * Parse one frame. On success returns MOS_OK and *out (free with
 * mos_msg_free). On failure *out is NULL and err (if not NULL) says why and
 * holds what could be recovered of the envelope.
 */
int	mos_parse(const void *frame, size_t len, enum mos_enc, enum mos_mode,
	    struct mos_msg **out, struct mos_error *err);
const char *mos_err_name(enum mos_err);

/* ------------------------------------------------------------------------ */
/* Writer (write.c)                                                          */

struct mos_buf {
	uint8_t	*data;
	size_t	 len;
	size_t	 cap;
};

void	mos_buf_free(struct mos_buf *);
/*
 * Append one complete <mos>...</mos> frame for m in the given encoding (no BOM,
 * no XML declaration, DTD element order). Returns 0, or -1 if a required
 * field is missing (msg says which) or on OOM.
 */
int	mos_write(const struct mos_msg *m, enum mos_enc, struct mos_buf *out,
	    char *errbuf, size_t errlen);

#endif /* MOSXML_H */
