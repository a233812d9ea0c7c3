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
/*
 * Free what the calling thread keeps between parses (its libxml2 context and
 * scratch buffers) now rather than at thread exit; the next parse makes them
 * again. For a thread that goes idle, and for the fuzz targets, which must
 * end each input holding no more memory than they started with.
 */
void	mos_thread_release(void);

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
	MOS_FRAME_ERR_TRUNCATED = -3,	/* end of stream inside a frame (or junk) */
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
/*
 * Append bytes (copied). Returns 0, or MOS_FRAME_ERR_NOMEM. After an error
 * the bytes are dropped: the framer keeps returning that error.
 */
int	 mos_framer_feed(struct mos_framer *, const void *, size_t);
/*
 * Next complete frame, or MOS_FRAME_MORE, or an error (sticky: every later
 * call returns it). out->data stays valid until the next feed/next/free.
 */
int	 mos_framer_next(struct mos_framer *, struct mos_frame *out);
/*
 * End of stream: 0 when nothing but whitespace is pending, else an error
 * (MOS_FRAME_READY if a complete frame still waits for mos_framer_next).
 */
int	 mos_framer_end(struct mos_framer *);
/* True from a frame's "<mos" plus the character after it (frame deadline). */
bool	 mos_framer_in_frame(const struct mos_framer *);
size_t	 mos_framer_pending(const struct mos_framer *);	/* bytes held */
enum mos_enc mos_framer_encoding(const struct mos_framer *);	/* AUTO until decided */
const char *mos_frame_strerror(int);
/* The sticky error as one line with offsets and limits; "" if none. */
const char *mos_framer_errmsg(const struct mos_framer *);

/* Counters: the framer's cost is linear in fed whatever the chunking. */
struct mos_framer_stats {
	uint64_t	fed;		/* bytes given to mos_framer_feed */
	uint64_t	scanned;	/* bytes examined by the lexer */
	uint64_t	moved;		/* bytes copied when compacting or growing */
	uint64_t	frames;		/* frames handed out */
	uint64_t	buffer;		/* bytes allocated for the buffer now */
};
void	 mos_framer_stats(const struct mos_framer *, struct mos_framer_stats *);

struct mos_buf;
/*
 * The length in bytes of the valid UTF-8 sequence at s, n bytes left: 1-4,
 * or 0 (bad or overlong sequence, surrogate, U+FFFE/U+FFFF, cut short).
 */
size_t	 mos_utf8_seq(const char *s, size_t n);
/*
 * Re-encode text between MOS_ENC_UTF8 and MOS_ENC_UTF16BE (no BOM), appending
 * to out. Returns 0, or -1 on invalid input (bad UTF-8, lone surrogate, odd
 * UTF-16 length: errbuf names the offset) or OOM; nothing is appended then.
 */
int	 mos_recode(const void *, size_t, enum mos_enc from, enum mos_enc to,
	    struct mos_buf *out, char *errbuf, size_t errlen);

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
 *
 * Fields marked "verbatim XML" (mosPayload, description, mosAbstract, the
 * <p> of storyBody, unknown messages) hold the element's inner XML as UTF-8
 * text, markup and entity escapes included ("a &amp; b"); the writer emits
 * them unchanged. Use mos_msg_xml_text() to store plain text there.
 * Elements that are present but empty read as "not set" for numbers, times
 * and durations.
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
	/*
	 * supportedProfiles: profiles[i] = 1 (YES), 0 (NO), -1 (not stated);
	 * mos_msg_new() starts them all at -1.
	 */
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

/*
 * item (roCreate stories, roElementAction, mosItemReplace, ncsItem) and
 * storyItem (storyBody) share one struct. objSlug, objTB and objDur are not
 * in the 4.0 DTD item; ENPS plug-ins and sofie-mos-connection send them.
 */
struct mos_item {
	const char	*item_id;
	const char	*item_slug;
	const char	*obj_id;
	const char	*obj_slug;
	const char	*mos_id;
	const char	*mos_plug_in_id;
	const char	*mos_abstract;	/* verbatim XML text */
	struct mos_obj_paths *obj_paths;	/* NULL when absent */
	const char	*item_channel;
	uint32_t	 item_ed_start;	/* samples */
	uint32_t	 item_ed_dur;
	uint32_t	 item_user_timing_dur;
	bool		 has_item_ed_start;
	bool		 has_item_ed_dur;
	bool		 has_item_user_timing_dur;
	bool		 has_obj_dur;
	struct mos_dec	 obj_tb;
	uint32_t	 obj_dur;
	const char	*item_trigger;	/* MANUAL | TIMED | CHAINED +-n */
	const char	*macro_in;
	const char	*macro_out;
	const char	*mos_item_editor_prog_id;	/* ENPS: the editor plug-in */
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

struct mos_story {
	const char	*story_id;
	const char	*story_slug;
	const char	*story_num;
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
	MOS_ARRAY(struct mos_item)	item;
};

/*
 * A running order: roCreate, roReplace, roList, roMetadataReplace (no
 * stories) and the ro summaries of roListAll (no macros, no stories).
 */
struct mos_ro {
	const char	*ro_id;
	const char	*ro_slug;
	const char	*ro_channel;
	struct mos_time	 ro_ed_start;
	struct mos_dur	 ro_ed_dur;
	const char	*ro_trigger;
	const char	*macro_in;
	const char	*macro_out;
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
	MOS_ARRAY(struct mos_story)	story;
};

/* roDelete, roReq. */
struct mos_ro_ref {
	const char	*ro_id;
};

struct mos_ro_element_stat {
	const char	*element;	/* attribute: RO | STORY | ITEM */
	const char	*ro_id;
	const char	*story_id;
	const char	*item_id;
	const char	*obj_id;
	const char	*item_channel;
	const char	*status;
	struct mos_time	 time;
};

struct mos_ro_ready_to_air {
	const char	*ro_id;
	const char	*ro_air;	/* READY | NOT READY (NOTREADY read as NOT READY) */
};

/* roElementAction: element_target?(storyID, itemID?). */
struct mos_element_target {
	const char	*story_id;
	const char	*item_id;
};

/* element_source: exactly one of the four lists is used. */
struct mos_element_source {
	MOS_ARRAY(struct mos_story)	story;
	MOS_ARRAY(struct mos_item)	item;
	MOS_ARRAY(const char *)		story_id;
	MOS_ARRAY(const char *)		item_id;
};

struct mos_ro_element_action {
	const char	*operation;	/* attribute: INSERT | REPLACE | MOVE | DELETE | SWAP */
	const char	*ro_id;
	struct mos_element_target *element_target;	/* NULL when absent */
	struct mos_element_source element_source;
};

/*
 * The deprecated roStory* messages: roStoryAppend (story+), roStoryInsert and
 * roStoryReplace (storyID, story+), roStoryMove and roStorySwap (storyID x2;
 * a blank second storyID moves to the bottom), roStoryDelete and
 * roStoryMoveMultiple (storyID+, the last one is the target).
 */
struct mos_ro_story_op {
	const char	*ro_id;
	MOS_ARRAY(const char *)		story_id;
	MOS_ARRAY(struct mos_story)	story;
};

/*
 * The deprecated roItem* messages: roItemInsert and roItemReplace (storyID,
 * itemID, item+), roItemMoveMultiple and roItemDelete (storyID, itemID+).
 */
struct mos_ro_item_op {
	const char	*ro_id;
	const char	*story_id;
	MOS_ARRAY(const char *)		item_id;
	MOS_ARRAY(struct mos_item)	item;
};

/* Profile 3 */

/*
 * mosObjCreate (no attributes) and mosReqObjAction (attributes operation
 * NEW | UPDATE | DELETE and objID; every element optional).
 */
struct mos_obj_action {
	const char	*operation;	/* attribute */
	const char	*obj_id;	/* attribute */
	const char	*obj_slug;
	const char	*mos_abstract;	/* verbatim XML text */
	const char	*obj_group;
	const char	*obj_type;
	struct mos_dec	 obj_tb;
	uint32_t	 obj_dur;
	bool		 has_obj_dur;
	struct mos_time	 time;
	const char	*created_by;
	const char	*changed_by;
	struct mos_time	 changed;
	const char	*description;	/* verbatim XML text */
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

struct mos_item_replace {
	const char	*ro_id;
	const char	*story_id;
	struct mos_item	 item;
};

/* mosReqSearchableSchema (username only) and mosListSearchableSchema. */
struct mos_searchable_schema {
	const char	*username;	/* attribute */
	const char	*mos_schema;
};

struct mos_search_field {
	const char	*xpath;		/* attribute XPath */
	const char	*sort_by_order;	/* attribute */
	const char	*sort_type;	/* attribute */
};

struct mos_search_group {
	MOS_ARRAY(struct mos_search_field)	search_field;
};

struct mos_req_obj_list {
	const char	*username;	/* attribute */
	const char	*query_id;
	uint32_t	 list_return_start;
	uint32_t	 list_return_end;
	bool		 has_list_return_start;
	bool		 has_list_return_end;
	const char	*general_search;
	const char	*mos_schema;
	MOS_ARRAY(struct mos_search_group)	search_group;
};

struct mos_obj_list {
	const char	*username;	/* attribute */
	const char	*query_id;
	uint32_t	 list_return_start;
	uint32_t	 list_return_end;
	uint32_t	 list_return_total;
	bool		 has_list_return_start;
	bool		 has_list_return_end;
	bool		 has_list_return_total;
	const char	*list_return_status;
	MOS_ARRAY(struct mos_obj)	list;	/* <list><mosObj>...</list> */
};

/* Profile 4 */

struct mos_ro_list_all {
	MOS_ARRAY(struct mos_ro)	ro;
};

/* storyBody is mixed content: its parts in document order. */
enum mos_body_kind {
	MOS_BODY_TEXT = 0,		/* character data directly in storyBody */
	MOS_BODY_P,			/* <p>: inner XML verbatim (may hold <pi>, <em>, ...) */
	MOS_BODY_PRESENTER,		/* <storyPresenter>: text */
	MOS_BODY_PRESENTER_RR,		/* <storyPresenterRR>: text */
	MOS_BODY_ITEM,			/* <storyItem> */
};

struct mos_body_part {
	enum mos_body_kind kind;
	const char	*text;		/* all kinds but MOS_BODY_ITEM */
	struct mos_item	*item;		/* MOS_BODY_ITEM */
};

struct mos_story_body {
	const char	*read1st_mem_as_body;	/* attribute Read1stMEMasBody */
	MOS_ARRAY(struct mos_body_part)	part;
};

struct mos_ro_story_send {
	const char	*ro_id;
	const char	*story_id;
	const char	*story_slug;
	const char	*story_num;
	struct mos_story_body story_body;
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

/* Profile 5 */

struct mos_ro_ctrl {
	const char	*ro_id;
	const char	*story_id;
	const char	*item_id;
	const char	*command;	/* READY | EXECUTE | PAUSE | STOP | SIGNAL */
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

struct mos_ro_item_cue {
	const char	*mos_id;
	const char	*ro_id;
	const char	*story_id;
	const char	*item_id;
	const char	*ro_event_type;
	struct mos_time	 ro_event_time;
	MOS_ARRAY(struct mos_ext_meta)	ext_meta;
};

/* Profile 7 roReqStoryAction and the plug-in's ncsReqStoryAction. */
struct mos_story_action {
	const char	*operation;	/* attribute: NEW | UPDATE | DELETE | MOVE (| REPLACE) */
	const char	*lease_lock;	/* attribute */
	const char	*username;	/* attribute */
	struct mos_ro_story_send ro_story_send;
};

/* ncsItem: one item per the DTD; every item is kept when more arrive. */
struct mos_ncs_item {
	MOS_ARRAY(struct mos_item)	item;
};

/* MOS_T_UNKNOWN: the message element's inner XML, verbatim. */
struct mos_unknown {
	const char	*xml;
};

struct mos_arena;

struct mos_msg {
	enum mos_type	 type;
	const char	*type_name;	/* element name of the message as received */
	const char	*mos_id;	/* NULL when absent */
	const char	*ncs_id;
	bool		 has_message_id;
	int32_t		 message_id;	/* >= 1 when present; hex input is converted */
	/*
	 * What lenient mode repaired, one line each with the element path
	 * ("roCreate/story/item: itemEdStart: \"-5\" is below 0, read as
	 * 0"); not part of the model (mos_msg_equal ignores it).
	 */
	MOS_ARRAY(const char *)	warnings;
	union {
		struct mos_heartbeat		heartbeat;
		struct mos_list_mach_info	list_mach_info;
		struct mos_obj			mos_obj;
		struct mos_ack			mos_ack;
		struct mos_req_obj		mos_req_obj;
		struct mos_req_all		mos_req_all;
		struct mos_list_all		mos_list_all;
		struct mos_ro_ack		ro_ack;
		struct mos_ro			ro_create;
		struct mos_ro			ro_replace;
		struct mos_ro_ref		ro_delete;
		struct mos_ro_ref		ro_req;
		struct mos_ro			ro_list;
		struct mos_ro			ro_metadata_replace;
		struct mos_ro_element_stat	ro_element_stat;
		struct mos_ro_ready_to_air	ro_ready_to_air;
		struct mos_ro_element_action	ro_element_action;
		struct mos_ro_story_op		ro_story_append;
		struct mos_ro_story_op		ro_story_insert;
		struct mos_ro_story_op		ro_story_replace;
		struct mos_ro_story_op		ro_story_move;
		struct mos_ro_story_op		ro_story_swap;
		struct mos_ro_story_op		ro_story_delete;
		struct mos_ro_story_op		ro_story_move_multiple;
		struct mos_ro_item_op		ro_item_insert;
		struct mos_ro_item_op		ro_item_replace;
		struct mos_ro_item_op		ro_item_move_multiple;
		struct mos_ro_item_op		ro_item_delete;
		struct mos_obj_action		mos_obj_create;
		struct mos_item_replace		mos_item_replace;
		struct mos_obj_action		mos_req_obj_action;
		struct mos_searchable_schema	mos_req_searchable_schema;
		struct mos_searchable_schema	mos_list_searchable_schema;
		struct mos_req_obj_list		mos_req_obj_list;
		struct mos_obj_list		mos_obj_list;
		struct mos_ro_list_all		ro_list_all;
		struct mos_ro_story_send	ro_story_send;
		struct mos_ro_ctrl		ro_ctrl;
		struct mos_ro_item_cue		ro_item_cue;
		struct mos_story_action		ro_req_story_action;
		struct mos_story_action		ncs_req_story_action;
		struct mos_ncs_item		ncs_item;
		struct mos_unknown		unknown;
	} u;
	struct mos_arena *arena;
};

struct mos_msg	*mos_msg_new(enum mos_type);	/* zeroed body; NULL on OOM */
void		 mos_msg_free(struct mos_msg *);	/* accepts NULL */
void		*mos_msg_alloc(struct mos_msg *, size_t);	/* zeroed, arena-owned */
char		*mos_msg_strdup(struct mos_msg *, const char *);	/* NULL stays NULL */
char		*mos_msg_strndup(struct mos_msg *, const char *, size_t);
/* n zeroed elements of size bytes, arena-owned; NULL on overflow or OOM. */
void		*mos_msg_calloc(struct mos_msg *, size_t n, size_t size);
/*
 * Plain text made fit for a verbatim-XML field (description, mosAbstract,
 * mosPayload, storyBody <p>): & < > escaped, arena-owned. NULL stays NULL.
 */
char		*mos_msg_xml_text(struct mos_msg *, const char *);
/*
 * Equal models: same type, envelope and every field (decimals compared by
 * value, so 59.94 equals 59.940). Useful to tell a retry from a new message
 * that reuses a messageID.
 */
bool		 mos_msg_equal(const struct mos_msg *, const struct mos_msg *);

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

/*
 * What could be read of the envelope of a frame that failed, for the NACK
 * (a byte scan: the predefined entities and character references are
 * decoded, as the parser does).
 */
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
 *
 * Unknown elements are skipped anywhere; an unknown message element gives
 * MOS_T_UNKNOWN with type_name set, not an error. Both modes need the
 * identity fields the writer needs (objID of mosObj/mosReqObj, roID of
 * running-order messages, storyID, itemID); MOS_STRICT also needs every
 * element the DTD requires, the envelope IDs (none for ActiveX messages,
 * no messageID for keepAlive), objRev <= 999, 128-character limits and the
 * listed values (objType, objAir, status of mosAck, operation, ...).
 * MOS_ENC_AUTO picks UTF-16BE when the first byte is 0, else UTF-8.
 */
int	mos_parse(const void *frame, size_t len, enum mos_enc, enum mos_mode,
	    struct mos_msg **out, struct mos_error *err);
const char *mos_err_name(enum mos_err);
/* Parser size cap in bytes (default MOS_FRAME_MAX_DEFAULT); set before threads. */
void	mos_parse_set_max(size_t);

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
 *
 * What is set is written; the identity fields (see mos_parse) are
 * required. Text that XML 1.0 cannot carry (C0 controls but tab, LF, CR)
 * or bad UTF-8 is refused with the field named; out is left as it was.
 */
int	mos_write(const struct mos_msg *m, enum mos_enc, struct mos_buf *out,
	    char *errbuf, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Verbatim-XML fragments (parse.c)                                          */

#define MOS_FRAGMENT_DEPTH	128	/* MOS_STRICT: elements nested in a fragment */

/*
 * Check text meant for a verbatim-XML field on its own, as the content of
 * its element elem ("mosPayload", "mosAbstract", "description", "p" of
 * storyBody, or the element of an unknown message), before it is pasted
 * into a message: the writer emits such fields as they are. It must be
 * UTF-8 without NUL or C0 controls (but tab, LF, CR), at most the parser's
 * size cap, and a well-formed fragment under the parser's hardening (no
 * DOCTYPE, no entities but the five predefined ones and character
 * references, no external loading) whose tags balance inside it, so that
 * it can neither close its element nor open a sibling.
 *
 * MOS_STRICT adds the rules for what we publish: elements nested at most
 * MOS_FRAGMENT_DEPTH deep, and description as MOS defines it: text with
 * <p>, <em> and <tab/> only, without attributes, comments or processing
 * instructions. MOS_LENIENT accepts whatever the parser accepts inside
 * that element, so that a message read from an NCS can be written again.
 *
 * Returns 0, or -1 with msg saying what is wrong and where, naming elem
 * and a byte offset into s ("mosAbstract: closes its element at offset
 * 0"). With canon not NULL, the fragment as the parser will read it back
 * from a message is appended there, NUL-terminated (empty elements as
 * <a/>, attributes double-quoted, character references resolved, line
 * ends normalised); a fragment already in that form comes back unchanged.
 */
int	mos_fragment_check(const char *elem, const char *s, size_t len,
	    enum mos_mode, struct mos_buf *canon, char *msg, size_t msglen);

#endif /* MOSXML_H */
