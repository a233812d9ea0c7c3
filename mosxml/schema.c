/*
 * The descriptor tables: for every message and every nested structure, its
 * elements in DTD order (MOS 4.0 DTD, XSD 2.8.4 where the DTD is silent),
 * the C field each maps to, and what strict mode checks. parse.c, write.c,
 * json.c and mos_msg_equal() below each walk these tables once.
 */
#include <stddef.h>
#include <string.h>

#include "mosxml/mosxml.h"
#include "mosxml/schema.h"

#define R	MOS_F_REQ
#define K	(MOS_F_KEY | MOS_F_REQ)
#define L	MOS_F_MAX128
#define I	MOS_F_ID

#define F(st, nm, k, fl, mem) \
	{ nm, k, fl, offsetof(st, mem), 0, NULL, NULL, NULL }
#define FU(st, nm, fl, mem, has) \
	{ nm, MOS_FK_U32, fl, offsetof(st, mem), offsetof(st, has), NULL, NULL, NULL }
#define FS(st, nm, k, fl, mem, sd) \
	{ nm, k, fl, offsetof(st, mem), 0, &(sd), NULL, NULL }
#define FE(st, nm, k, fl, mem, v) \
	{ nm, k, (fl) | MOS_F_ENUM, offsetof(st, mem), 0, NULL, v, NULL }
#define FW(st, nm, fl, mem, sd, el) \
	{ nm, MOS_FK_WRAP, fl, offsetof(st, mem), 0, &(sd), NULL, el }
#define FP(n) \
	{ "mosProfile" #n, MOS_FK_PROFILE, 0, 0, n, NULL, NULL, NULL }
#define NF(a)	(sizeof (a) / sizeof (a)[0])
#define SD(nm, st, a)	{ nm, sizeof(st), a, NF(a) }

static const char *const v_scope[] = { "OBJECT", "STORY", "PLAYLIST", NULL };
static const char *const v_obj_type[] = { "STILL", "AUDIO", "VIDEO", "OTHER",
	NULL };
static const char *const v_air[] = { "READY", "NOT READY", NULL };
static const char *const v_ack[] = { "ACK", "NACK", NULL };
static const char *const v_element[] = { "RO", "STORY", "ITEM", NULL };
static const char *const v_ea_op[] = { "INSERT", "REPLACE", "MOVE", "DELETE",
	"SWAP", NULL };
static const char *const v_roa_op[] = { "NEW", "UPDATE", "DELETE", NULL };
static const char *const v_command[] = { "READY", "EXECUTE", "PAUSE", "STOP",
	"SIGNAL", NULL };

/* Shared pieces. */

static const struct mos_fdesc f_ext_meta[] = {
	FE(struct mos_ext_meta, "mosScope", MOS_FK_STR, 0, mos_scope, v_scope),
	F(struct mos_ext_meta, "mosSchema", MOS_FK_STR, R, mos_schema),
	F(struct mos_ext_meta, "mosPayload", MOS_FK_XML, R, mos_payload),
};
static const struct mos_sdesc sd_ext_meta =
	SD("mosExternalMetadata", struct mos_ext_meta, f_ext_meta);

#define EXT_META(st) \
	FS(st, "mosExternalMetadata", MOS_FK_ARRAY, 0, ext_meta, sd_ext_meta)

static const struct mos_fdesc f_path[] = {
	F(struct mos_path, "techDescription", MOS_FK_ATTR, R, tech_description),
	F(struct mos_path, "#text", MOS_FK_TEXT, MOS_F_MAX255, url),
};
static const struct mos_sdesc sd_path = SD("objPath", struct mos_path, f_path);

static const struct mos_fdesc f_obj_paths[] = {
	FS(struct mos_obj_paths, "objPath", MOS_FK_ARRAY, 0, obj_path, sd_path),
	FS(struct mos_obj_paths, "objProxyPath", MOS_FK_ARRAY, 0,
	    obj_proxy_path, sd_path),
	FS(struct mos_obj_paths, "objMetadataPath", MOS_FK_ARRAY, 0,
	    obj_metadata_path, sd_path),
};
static const struct mos_sdesc sd_obj_paths =
	SD("objPaths", struct mos_obj_paths, f_obj_paths);

/* Profile 0 */

static const struct mos_sdesc sd_empty = { "empty", 0, NULL, 0 };

static const struct mos_fdesc f_heartbeat[] = {
	F(struct mos_heartbeat, "time", MOS_FK_TIME, R, time),
};
static const struct mos_sdesc sd_heartbeat =
	SD("heartbeat", struct mos_heartbeat, f_heartbeat);

static const struct mos_fdesc f_active_x[] = {
	F(struct mos_default_active_x, "mode", MOS_FK_STR, R, mode),
	F(struct mos_default_active_x, "controlFileLocation", MOS_FK_STR, R,
	    control_file_location),
	F(struct mos_default_active_x, "controlSlug", MOS_FK_STR, R | L,
	    control_slug),
	F(struct mos_default_active_x, "controlName", MOS_FK_STR, R,
	    control_name),
	F(struct mos_default_active_x, "controlDefaultParams", MOS_FK_STR, R,
	    control_default_params),
};
static const struct mos_sdesc sd_active_x =
	SD("defaultActiveX", struct mos_default_active_x, f_active_x);

static const struct mos_fdesc f_list_mach_info[] = {
	F(struct mos_list_mach_info, "manufacturer", MOS_FK_STR, R | L,
	    manufacturer),
	F(struct mos_list_mach_info, "model", MOS_FK_STR, R | L, model),
	F(struct mos_list_mach_info, "hwRev", MOS_FK_STR, R | L, hw_rev),
	F(struct mos_list_mach_info, "swRev", MOS_FK_STR, R | L, sw_rev),
	F(struct mos_list_mach_info, "DOM", MOS_FK_STR, R, dom),
	F(struct mos_list_mach_info, "SN", MOS_FK_STR, R | L, sn),
	F(struct mos_list_mach_info, "ID", MOS_FK_STR, R | L, id),
	F(struct mos_list_mach_info, "time", MOS_FK_TIME, R, time),
	F(struct mos_list_mach_info, "opTime", MOS_FK_TIME, 0, op_time),
	F(struct mos_list_mach_info, "mosRev", MOS_FK_STR, R | L, mos_rev),
	{ "supportedProfiles", MOS_FK_PROFILES, R, 0, 0, NULL, NULL, NULL },
	FP(0), FP(1), FP(2), FP(3), FP(4), FP(5), FP(6), FP(7),
	FS(struct mos_list_mach_info, "defaultActiveX", MOS_FK_ARRAY, 0,
	    default_active_x, sd_active_x),
	EXT_META(struct mos_list_mach_info),
};
static const struct mos_sdesc sd_list_mach_info =
	SD("listMachInfo", struct mos_list_mach_info, f_list_mach_info);

/* Profile 1 */

static const struct mos_fdesc f_obj[] = {
	F(struct mos_obj, "objID", MOS_FK_STR, K | L | I, obj_id),
	F(struct mos_obj, "objSlug", MOS_FK_STR, R | L, obj_slug),
	F(struct mos_obj, "mosAbstract", MOS_FK_XML, 0, mos_abstract),
	F(struct mos_obj, "objGroup", MOS_FK_STR, L, obj_group),
	FE(struct mos_obj, "objType", MOS_FK_STR, R, obj_type, v_obj_type),
	F(struct mos_obj, "objTB", MOS_FK_DEC, R, obj_tb),
	FU(struct mos_obj, "objRev", R | MOS_F_REV, obj_rev, has_obj_rev),
	FU(struct mos_obj, "objDur", R, obj_dur, has_obj_dur),
	F(struct mos_obj, "status", MOS_FK_STR, R | L, status),
	FE(struct mos_obj, "objAir", MOS_FK_STR, R | MOS_F_AIR, obj_air, v_air),
	FS(struct mos_obj, "objPaths", MOS_FK_PTR, 0, obj_paths, sd_obj_paths),
	F(struct mos_obj, "createdBy", MOS_FK_STR, R | L, created_by),
	F(struct mos_obj, "created", MOS_FK_TIME, R, created),
	F(struct mos_obj, "changedBy", MOS_FK_STR, R | L, changed_by),
	F(struct mos_obj, "changed", MOS_FK_TIME, R, changed),
	F(struct mos_obj, "description", MOS_FK_XML, R, description),
	EXT_META(struct mos_obj),
};
static const struct mos_sdesc sd_obj = SD("mosObj", struct mos_obj, f_obj);

static const struct mos_fdesc f_ack[] = {
	F(struct mos_ack, "objID", MOS_FK_STR, R | L | I, obj_id),
	FU(struct mos_ack, "objRev", R | MOS_F_REV, obj_rev, has_obj_rev),
	FE(struct mos_ack, "status", MOS_FK_STR, R, status, v_ack),
	F(struct mos_ack, "statusDescription", MOS_FK_STR, R,
	    status_description),
};
static const struct mos_sdesc sd_ack = SD("mosAck", struct mos_ack, f_ack);

static const struct mos_fdesc f_req_obj[] = {
	F(struct mos_req_obj, "objID", MOS_FK_STR, K | L | I, obj_id),
};
static const struct mos_sdesc sd_req_obj =
	SD("mosReqObj", struct mos_req_obj, f_req_obj);

static const struct mos_fdesc f_req_all[] = {
	FU(struct mos_req_all, "pause", R, pause, has_pause),
};
static const struct mos_sdesc sd_req_all =
	SD("mosReqAll", struct mos_req_all, f_req_all);

static const struct mos_fdesc f_list_all[] = {
	FS(struct mos_list_all, "mosObj", MOS_FK_ARRAY, 0, mos_obj, sd_obj),
};
static const struct mos_sdesc sd_list_all =
	SD("mosListAll", struct mos_list_all, f_list_all);

/* Profile 2 */

static const struct mos_fdesc f_ro_ack_entry[] = {
	F(struct mos_ro_ack_entry, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_ro_ack_entry, "itemID", MOS_FK_STR, R | L | I, item_id),
	F(struct mos_ro_ack_entry, "objID", MOS_FK_STR, R | L | I, obj_id),
	F(struct mos_ro_ack_entry, "itemChannel", MOS_FK_STR, L, item_channel),
	F(struct mos_ro_ack_entry, "status", MOS_FK_STR, R | L, status),
};
static const struct mos_sdesc sd_ro_ack_entry =
	SD("entries", struct mos_ro_ack_entry, f_ro_ack_entry);

static const struct mos_fdesc f_ro_ack[] = {
	F(struct mos_ro_ack, "roID", MOS_FK_STR, R | L | I, ro_id),
	F(struct mos_ro_ack, "roStatus", MOS_FK_STR, R, ro_status),
	FS(struct mos_ro_ack, "entries", MOS_FK_GROUP, 0, entries,
	    sd_ro_ack_entry),
};
static const struct mos_sdesc sd_ro_ack =
	SD("roAck", struct mos_ro_ack, f_ro_ack);

static const struct mos_fdesc f_item[] = {
	F(struct mos_item, "itemID", MOS_FK_STR, K | L | I, item_id),
	F(struct mos_item, "itemSlug", MOS_FK_STR, L, item_slug),
	F(struct mos_item, "objID", MOS_FK_STR, R | L | I, obj_id),
	F(struct mos_item, "objSlug", MOS_FK_STR, L, obj_slug),
	F(struct mos_item, "mosID", MOS_FK_STR, R | L | I, mos_id),
	F(struct mos_item, "mosPlugInID", MOS_FK_STR, 0, mos_plug_in_id),
	F(struct mos_item, "mosAbstract", MOS_FK_XML, 0, mos_abstract),
	FS(struct mos_item, "objPaths", MOS_FK_PTR, 0, obj_paths, sd_obj_paths),
	F(struct mos_item, "itemChannel", MOS_FK_STR, L, item_channel),
	FU(struct mos_item, "itemEdStart", 0, item_ed_start, has_item_ed_start),
	FU(struct mos_item, "itemEdDur", 0, item_ed_dur, has_item_ed_dur),
	FU(struct mos_item, "itemUserTimingDur", 0, item_user_timing_dur,
	    has_item_user_timing_dur),
	F(struct mos_item, "objTB", MOS_FK_DEC, 0, obj_tb),
	FU(struct mos_item, "objDur", 0, obj_dur, has_obj_dur),
	F(struct mos_item, "itemTrigger", MOS_FK_STR, 0, item_trigger),
	F(struct mos_item, "macroIn", MOS_FK_STR, L, macro_in),
	F(struct mos_item, "macroOut", MOS_FK_STR, L, macro_out),
	F(struct mos_item, "mosItemEditorProgID", MOS_FK_STR, L,
	    mos_item_editor_prog_id),
	EXT_META(struct mos_item),
};
const struct mos_sdesc mos_sd_item = SD("item", struct mos_item, f_item);

static const struct mos_fdesc f_story[] = {
	F(struct mos_story, "storyID", MOS_FK_STR, K | L | I, story_id),
	F(struct mos_story, "storySlug", MOS_FK_STR, L, story_slug),
	F(struct mos_story, "storyNum", MOS_FK_STR, L, story_num),
	EXT_META(struct mos_story),
	FS(struct mos_story, "item", MOS_FK_ARRAY, 0, item, mos_sd_item),
};
static const struct mos_sdesc sd_story =
	SD("story", struct mos_story, f_story);

/* roCreate, roReplace, roList; roMetadataReplace stops before story. */
static const struct mos_fdesc f_ro[] = {
	F(struct mos_ro, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro, "roSlug", MOS_FK_STR, R | L, ro_slug),
	F(struct mos_ro, "roChannel", MOS_FK_STR, L, ro_channel),
	F(struct mos_ro, "roEdStart", MOS_FK_TIME, 0, ro_ed_start),
	F(struct mos_ro, "roEdDur", MOS_FK_DUR, 0, ro_ed_dur),
	F(struct mos_ro, "roTrigger", MOS_FK_STR, 0, ro_trigger),
	F(struct mos_ro, "macroIn", MOS_FK_STR, L, macro_in),
	F(struct mos_ro, "macroOut", MOS_FK_STR, L, macro_out),
	EXT_META(struct mos_ro),
	FS(struct mos_ro, "story", MOS_FK_ARRAY, 0, story, sd_story),
};
static const struct mos_sdesc sd_ro = SD("ro", struct mos_ro, f_ro);
static const struct mos_sdesc sd_ro_meta =
	{ "roMetadataReplace", sizeof(struct mos_ro), f_ro, NF(f_ro) - 1 };

/* The ro summary of roListAll. */
static const struct mos_fdesc f_ro_summary[] = {
	F(struct mos_ro, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro, "roSlug", MOS_FK_STR, L, ro_slug),
	F(struct mos_ro, "roChannel", MOS_FK_STR, L, ro_channel),
	F(struct mos_ro, "roEdStart", MOS_FK_TIME, 0, ro_ed_start),
	F(struct mos_ro, "roEdDur", MOS_FK_DUR, 0, ro_ed_dur),
	F(struct mos_ro, "roTrigger", MOS_FK_STR, 0, ro_trigger),
	EXT_META(struct mos_ro),
};
static const struct mos_sdesc sd_ro_summary =
	SD("ro", struct mos_ro, f_ro_summary);

static const struct mos_fdesc f_ro_ref[] = {
	F(struct mos_ro_ref, "roID", MOS_FK_STR, K | L | I, ro_id),
};
static const struct mos_sdesc sd_ro_ref =
	SD("roRef", struct mos_ro_ref, f_ro_ref);

static const struct mos_fdesc f_ro_element_stat[] = {
	FE(struct mos_ro_element_stat, "element", MOS_FK_ATTR, R, element,
	    v_element),
	F(struct mos_ro_element_stat, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_element_stat, "storyID", MOS_FK_STR, L | I, story_id),
	F(struct mos_ro_element_stat, "itemID", MOS_FK_STR, L | I, item_id),
	F(struct mos_ro_element_stat, "objID", MOS_FK_STR, L | I, obj_id),
	F(struct mos_ro_element_stat, "itemChannel", MOS_FK_STR, L,
	    item_channel),
	F(struct mos_ro_element_stat, "status", MOS_FK_STR, R | L, status),
	F(struct mos_ro_element_stat, "time", MOS_FK_TIME, R, time),
};
static const struct mos_sdesc sd_ro_element_stat =
	SD("roElementStat", struct mos_ro_element_stat, f_ro_element_stat);

static const struct mos_fdesc f_ro_ready_to_air[] = {
	F(struct mos_ro_ready_to_air, "roID", MOS_FK_STR, K | L | I, ro_id),
	FE(struct mos_ro_ready_to_air, "roAir", MOS_FK_STR, R | MOS_F_AIR,
	    ro_air, v_air),
};
static const struct mos_sdesc sd_ro_ready_to_air =
	SD("roReadyToAir", struct mos_ro_ready_to_air, f_ro_ready_to_air);

static const struct mos_fdesc f_element_target[] = {
	F(struct mos_element_target, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_element_target, "itemID", MOS_FK_STR, L | I, item_id),
};
static const struct mos_sdesc sd_element_target =
	SD("element_target", struct mos_element_target, f_element_target);

static const struct mos_fdesc f_element_source[] = {
	FS(struct mos_element_source, "story", MOS_FK_ARRAY, 0, story,
	    sd_story),
	FS(struct mos_element_source, "item", MOS_FK_ARRAY, 0, item,
	    mos_sd_item),
	F(struct mos_element_source, "storyID", MOS_FK_STRS, L | I, story_id),
	F(struct mos_element_source, "itemID", MOS_FK_STRS, L | I, item_id),
};
static const struct mos_sdesc sd_element_source = { "element_source",
	sizeof(struct mos_element_source), f_element_source,
	NF(f_element_source), MOS_SF_ONE_LIST };

static const struct mos_fdesc f_ro_element_action[] = {
	FE(struct mos_ro_element_action, "operation", MOS_FK_ATTR, R,
	    operation, v_ea_op),
	F(struct mos_ro_element_action, "roID", MOS_FK_STR, K | L | I, ro_id),
	FS(struct mos_ro_element_action, "element_target", MOS_FK_PTR, 0,
	    element_target, sd_element_target),
	FS(struct mos_ro_element_action, "element_source", MOS_FK_STRUCT, R,
	    element_source, sd_element_source),
};
static const struct mos_sdesc sd_ro_element_action =
	SD("roElementAction", struct mos_ro_element_action,
	    f_ro_element_action);

/* roStoryInsert, roStoryReplace; the first two for move/swap/delete. */
static const struct mos_fdesc f_story_op[] = {
	F(struct mos_ro_story_op, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_story_op, "storyID", MOS_FK_STRS, R | L | I, story_id),
	FS(struct mos_ro_story_op, "story", MOS_FK_ARRAY, R, story, sd_story),
};
static const struct mos_fdesc f_story_append[] = {
	F(struct mos_ro_story_op, "roID", MOS_FK_STR, K | L | I, ro_id),
	FS(struct mos_ro_story_op, "story", MOS_FK_ARRAY, R, story, sd_story),
};
static const struct mos_sdesc sd_story_op =
	SD("roStoryInsert", struct mos_ro_story_op, f_story_op);
static const struct mos_sdesc sd_story_ids =
	{ "roStoryMove", sizeof(struct mos_ro_story_op), f_story_op, 2 };
static const struct mos_sdesc sd_story_append =
	SD("roStoryAppend", struct mos_ro_story_op, f_story_append);

/* roItemInsert, roItemReplace; the first three for move/delete. */
static const struct mos_fdesc f_item_op[] = {
	F(struct mos_ro_item_op, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_item_op, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_ro_item_op, "itemID", MOS_FK_STRS, R | L | I, item_id),
	FS(struct mos_ro_item_op, "item", MOS_FK_ARRAY, R, item, mos_sd_item),
};
static const struct mos_sdesc sd_item_op =
	SD("roItemInsert", struct mos_ro_item_op, f_item_op);
static const struct mos_sdesc sd_item_ids =
	{ "roItemDelete", sizeof(struct mos_ro_item_op), f_item_op, 3 };

/* Profile 3 */

static const struct mos_fdesc f_obj_create[] = {
	F(struct mos_obj_action, "objSlug", MOS_FK_STR, R | L, obj_slug),
	F(struct mos_obj_action, "objGroup", MOS_FK_STR, L, obj_group),
	FE(struct mos_obj_action, "objType", MOS_FK_STR, R, obj_type,
	    v_obj_type),
	F(struct mos_obj_action, "objTB", MOS_FK_DEC, R, obj_tb),
	FU(struct mos_obj_action, "objDur", 0, obj_dur, has_obj_dur),
	F(struct mos_obj_action, "time", MOS_FK_TIME, 0, time),
	F(struct mos_obj_action, "createdBy", MOS_FK_STR, L, created_by),
	F(struct mos_obj_action, "description", MOS_FK_XML, 0, description),
	EXT_META(struct mos_obj_action),
};
static const struct mos_sdesc sd_obj_create =
	SD("mosObjCreate", struct mos_obj_action, f_obj_create);

static const struct mos_fdesc f_req_obj_action[] = {
	FE(struct mos_obj_action, "operation", MOS_FK_ATTR, R, operation,
	    v_roa_op),
	F(struct mos_obj_action, "objID", MOS_FK_ATTR, L | I, obj_id),
	F(struct mos_obj_action, "objSlug", MOS_FK_STR, L, obj_slug),
	F(struct mos_obj_action, "mosAbstract", MOS_FK_XML, 0, mos_abstract),
	F(struct mos_obj_action, "objGroup", MOS_FK_STR, L, obj_group),
	FE(struct mos_obj_action, "objType", MOS_FK_STR, 0, obj_type,
	    v_obj_type),
	F(struct mos_obj_action, "objTB", MOS_FK_DEC, 0, obj_tb),
	FU(struct mos_obj_action, "objDur", 0, obj_dur, has_obj_dur),
	F(struct mos_obj_action, "time", MOS_FK_TIME, 0, time),
	F(struct mos_obj_action, "createdBy", MOS_FK_STR, L, created_by),
	F(struct mos_obj_action, "changedBy", MOS_FK_STR, L, changed_by),
	F(struct mos_obj_action, "changed", MOS_FK_TIME, 0, changed),
	F(struct mos_obj_action, "description", MOS_FK_XML, 0, description),
	EXT_META(struct mos_obj_action),
};
static const struct mos_sdesc sd_req_obj_action =
	SD("mosReqObjAction", struct mos_obj_action, f_req_obj_action);

static const struct mos_fdesc f_item_replace[] = {
	F(struct mos_item_replace, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_item_replace, "storyID", MOS_FK_STR, R | L | I, story_id),
	FS(struct mos_item_replace, "item", MOS_FK_STRUCT, R, item,
	    mos_sd_item),
};
static const struct mos_sdesc sd_item_replace =
	SD("mosItemReplace", struct mos_item_replace, f_item_replace);

/* mosReqSearchableSchema stops before mosSchema. */
static const struct mos_fdesc f_searchable_schema[] = {
	F(struct mos_searchable_schema, "username", MOS_FK_ATTR, 0, username),
	F(struct mos_searchable_schema, "mosSchema", MOS_FK_STR, R, mos_schema),
};
static const struct mos_sdesc sd_list_searchable_schema =
	SD("mosListSearchableSchema", struct mos_searchable_schema,
	    f_searchable_schema);
static const struct mos_sdesc sd_req_searchable_schema =
	{ "mosReqSearchableSchema", sizeof(struct mos_searchable_schema),
	    f_searchable_schema, 1 };

static const struct mos_fdesc f_search_field[] = {
	F(struct mos_search_field, "XPath", MOS_FK_ATTR, R, xpath),
	F(struct mos_search_field, "sortByOrder", MOS_FK_ATTR, 0,
	    sort_by_order),
	F(struct mos_search_field, "sortType", MOS_FK_ATTR, 0, sort_type),
};
static const struct mos_sdesc sd_search_field =
	SD("searchField", struct mos_search_field, f_search_field);

static const struct mos_fdesc f_search_group[] = {
	FS(struct mos_search_group, "searchField", MOS_FK_ARRAY, R,
	    search_field, sd_search_field),
};
static const struct mos_sdesc sd_search_group =
	SD("searchGroup", struct mos_search_group, f_search_group);

static const struct mos_fdesc f_req_obj_list[] = {
	F(struct mos_req_obj_list, "username", MOS_FK_ATTR, 0, username),
	F(struct mos_req_obj_list, "queryID", MOS_FK_STR, R | L, query_id),
	FU(struct mos_req_obj_list, "listReturnStart", R, list_return_start,
	    has_list_return_start),
	FU(struct mos_req_obj_list, "listReturnEnd", R, list_return_end,
	    has_list_return_end),
	F(struct mos_req_obj_list, "generalSearch", MOS_FK_STR, R | L,
	    general_search),
	F(struct mos_req_obj_list, "mosSchema", MOS_FK_STR, R, mos_schema),
	FS(struct mos_req_obj_list, "searchGroup", MOS_FK_ARRAY, 0,
	    search_group, sd_search_group),
};
static const struct mos_sdesc sd_req_obj_list =
	SD("mosReqObjList", struct mos_req_obj_list, f_req_obj_list);

static const struct mos_fdesc f_obj_list[] = {
	F(struct mos_obj_list, "username", MOS_FK_ATTR, 0, username),
	F(struct mos_obj_list, "queryID", MOS_FK_STR, R | L, query_id),
	FU(struct mos_obj_list, "listReturnStart", R, list_return_start,
	    has_list_return_start),
	FU(struct mos_obj_list, "listReturnEnd", R, list_return_end,
	    has_list_return_end),
	FU(struct mos_obj_list, "listReturnTotal", R, list_return_total,
	    has_list_return_total),
	F(struct mos_obj_list, "listReturnStatus", MOS_FK_STR, L,
	    list_return_status),
	FW(struct mos_obj_list, "list", 0, list, sd_obj, "mosObj"),
};
static const struct mos_sdesc sd_obj_list =
	SD("mosObjList", struct mos_obj_list, f_obj_list);

/* Profile 4 */

static const struct mos_fdesc f_ro_list_all[] = {
	FS(struct mos_ro_list_all, "ro", MOS_FK_ARRAY, 0, ro, sd_ro_summary),
};
static const struct mos_sdesc sd_ro_list_all =
	SD("roListAll", struct mos_ro_list_all, f_ro_list_all);

static const struct mos_fdesc f_ro_story_send[] = {
	F(struct mos_ro_story_send, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_story_send, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_ro_story_send, "storySlug", MOS_FK_STR, L, story_slug),
	F(struct mos_ro_story_send, "storyNum", MOS_FK_STR, L, story_num),
	F(struct mos_ro_story_send, "storyBody", MOS_FK_BODY, R, story_body),
	EXT_META(struct mos_ro_story_send),
};
static const struct mos_sdesc sd_ro_story_send =
	SD("roStorySend", struct mos_ro_story_send, f_ro_story_send);

/* Profile 5 */

static const struct mos_fdesc f_ro_ctrl[] = {
	F(struct mos_ro_ctrl, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_ctrl, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_ro_ctrl, "itemID", MOS_FK_STR, R | L | I, item_id),
	FE(struct mos_ro_ctrl, "command", MOS_FK_STR, R, command, v_command),
	EXT_META(struct mos_ro_ctrl),
};
static const struct mos_sdesc sd_ro_ctrl =
	SD("roCtrl", struct mos_ro_ctrl, f_ro_ctrl);

static const struct mos_fdesc f_ro_item_cue[] = {
	F(struct mos_ro_item_cue, "mosID", MOS_FK_STR, R | L | I, mos_id),
	F(struct mos_ro_item_cue, "roID", MOS_FK_STR, K | L | I, ro_id),
	F(struct mos_ro_item_cue, "storyID", MOS_FK_STR, R | L | I, story_id),
	F(struct mos_ro_item_cue, "itemID", MOS_FK_STR, R | L | I, item_id),
	F(struct mos_ro_item_cue, "roEventType", MOS_FK_STR, R, ro_event_type),
	F(struct mos_ro_item_cue, "roEventTime", MOS_FK_TIME, R,
	    ro_event_time),
	EXT_META(struct mos_ro_item_cue),
};
static const struct mos_sdesc sd_ro_item_cue =
	SD("roItemCue", struct mos_ro_item_cue, f_ro_item_cue);

/* Profile 7 and the plug-in's ncsReqStoryAction. */

static const struct mos_fdesc f_story_action[] = {
	F(struct mos_story_action, "operation", MOS_FK_ATTR, R, operation),
	F(struct mos_story_action, "leaseLock", MOS_FK_ATTR, 0, lease_lock),
	F(struct mos_story_action, "username", MOS_FK_ATTR, 0, username),
	FS(struct mos_story_action, "roStorySend", MOS_FK_STRUCT, R,
	    ro_story_send, sd_ro_story_send),
};
static const struct mos_sdesc sd_story_action =
	SD("roReqStoryAction", struct mos_story_action, f_story_action);

static const struct mos_fdesc f_ncs_item[] = {
	FS(struct mos_ncs_item, "item", MOS_FK_ARRAY, R, item, mos_sd_item),
};
static const struct mos_sdesc sd_ncs_item =
	SD("ncsItem", struct mos_ncs_item, f_ncs_item);

#define T(e, nm, pr, fl, sd)	[e] = { nm, pr, fl, &(sd) }

const struct mos_tdesc mos_tdescs[MOS_T__COUNT] = {
	[MOS_T_UNKNOWN] = { "unknown", -1, 0, NULL },
	T(MOS_T_HEARTBEAT, "heartbeat", 0, 0, sd_heartbeat),
	T(MOS_T_REQ_MACH_INFO, "reqMachInfo", 0, 0, sd_empty),
	T(MOS_T_LIST_MACH_INFO, "listMachInfo", 0, 0, sd_list_mach_info),
	T(MOS_T_KEEP_ALIVE, "keepAlive", 0, MOS_TF_NOMSGID, sd_empty),
	T(MOS_T_MOS_ACK, "mosAck", 1, 0, sd_ack),
	T(MOS_T_MOS_OBJ, "mosObj", 1, 0, sd_obj),
	T(MOS_T_MOS_REQ_OBJ, "mosReqObj", 1, 0, sd_req_obj),
	T(MOS_T_MOS_REQ_ALL, "mosReqAll", 1, 0, sd_req_all),
	T(MOS_T_MOS_LIST_ALL, "mosListAll", 1, 0, sd_list_all),
	T(MOS_T_RO_ACK, "roAck", 2, 0, sd_ro_ack),
	T(MOS_T_RO_CREATE, "roCreate", 2, 0, sd_ro),
	T(MOS_T_RO_REPLACE, "roReplace", 2, 0, sd_ro),
	T(MOS_T_RO_DELETE, "roDelete", 2, 0, sd_ro_ref),
	T(MOS_T_RO_REQ, "roReq", 2, 0, sd_ro_ref),
	T(MOS_T_RO_LIST, "roList", 2, 0, sd_ro),
	T(MOS_T_RO_METADATA_REPLACE, "roMetadataReplace", 2, 0, sd_ro_meta),
	T(MOS_T_RO_ELEMENT_STAT, "roElementStat", 2, 0, sd_ro_element_stat),
	T(MOS_T_RO_READY_TO_AIR, "roReadyToAir", 2, 0, sd_ro_ready_to_air),
	T(MOS_T_RO_ELEMENT_ACTION, "roElementAction", 2, 0,
	    sd_ro_element_action),
	T(MOS_T_RO_STORY_APPEND, "roStoryAppend", 2, 0, sd_story_append),
	T(MOS_T_RO_STORY_INSERT, "roStoryInsert", 2, 0, sd_story_op),
	T(MOS_T_RO_STORY_REPLACE, "roStoryReplace", 2, 0, sd_story_op),
	T(MOS_T_RO_STORY_MOVE, "roStoryMove", 2, 0, sd_story_ids),
	T(MOS_T_RO_STORY_SWAP, "roStorySwap", 2, 0, sd_story_ids),
	T(MOS_T_RO_STORY_DELETE, "roStoryDelete", 2, 0, sd_story_ids),
	T(MOS_T_RO_STORY_MOVE_MULTIPLE, "roStoryMoveMultiple", 2, 0,
	    sd_story_ids),
	T(MOS_T_RO_ITEM_INSERT, "roItemInsert", 2, 0, sd_item_op),
	T(MOS_T_RO_ITEM_REPLACE, "roItemReplace", 2, 0, sd_item_op),
	T(MOS_T_RO_ITEM_MOVE_MULTIPLE, "roItemMoveMultiple", 2, 0, sd_item_ids),
	T(MOS_T_RO_ITEM_DELETE, "roItemDelete", 2, 0, sd_item_ids),
	T(MOS_T_MOS_OBJ_CREATE, "mosObjCreate", 3, 0, sd_obj_create),
	T(MOS_T_MOS_ITEM_REPLACE, "mosItemReplace", 3, 0, sd_item_replace),
	T(MOS_T_MOS_REQ_OBJ_ACTION, "mosReqObjAction", 3, 0, sd_req_obj_action),
	T(MOS_T_MOS_REQ_SEARCHABLE_SCHEMA, "mosReqSearchableSchema", 3, 0,
	    sd_req_searchable_schema),
	T(MOS_T_MOS_LIST_SEARCHABLE_SCHEMA, "mosListSearchableSchema", 3, 0,
	    sd_list_searchable_schema),
	T(MOS_T_MOS_REQ_OBJ_LIST, "mosReqObjList", 3, 0, sd_req_obj_list),
	T(MOS_T_MOS_OBJ_LIST, "mosObjList", 3, 0, sd_obj_list),
	T(MOS_T_RO_REQ_ALL, "roReqAll", 4, 0, sd_empty),
	T(MOS_T_RO_LIST_ALL, "roListAll", 4, 0, sd_ro_list_all),
	T(MOS_T_RO_STORY_SEND, "roStorySend", 4, 0, sd_ro_story_send),
	T(MOS_T_RO_CTRL, "roCtrl", 5, 0, sd_ro_ctrl),
	T(MOS_T_RO_ITEM_CUE, "roItemCue", 5, 0, sd_ro_item_cue),
	T(MOS_T_RO_REQ_STORY_ACTION, "roReqStoryAction", 7, 0, sd_story_action),
	/* ActiveX plug-in messages are counted with Profile 7 (content editing). */
	T(MOS_T_NCS_ITEM, "ncsItem", 7, MOS_TF_NOIDS, sd_ncs_item),
	T(MOS_T_NCS_REQ_STORY_ACTION, "ncsReqStoryAction", 7, MOS_TF_NOIDS,
	    sd_story_action),
};

/* The element field named name, searched from *cursor round the table. */
const struct mos_fdesc *
mos_sdesc_find(const struct mos_sdesc *sd, const char *name, size_t *cursor)
{
	const struct mos_fdesc	*f;
	size_t			 i, j;

	for (i = 0, j = *cursor; i < sd->n; i++, j++) {
		if (j >= sd->n)
			j = 0;
		f = &sd->f[j];
		if (f->name[0] != name[0] || f->kind == MOS_FK_ATTR ||
		    f->kind == MOS_FK_TEXT || strcmp(f->name, name) != 0)
			continue;
		*cursor = j;
		return f;
	}
	return NULL;
}

/* The attribute field named name. */
const struct mos_fdesc *
mos_sdesc_find_attr(const struct mos_sdesc *sd, const char *name)
{
	size_t	i;

	for (i = 0; i < sd->n; i++) {
		if (sd->f[i].kind == MOS_FK_ATTR &&
		    strcmp(sd->f[i].name, name) == 0)
			return &sd->f[i];
	}
	return NULL;
}

/* The first field of a kind. */
const struct mos_fdesc *
mos_sdesc_find_kind(const struct mos_sdesc *sd, int kind)
{
	size_t	i;

	for (i = 0; i < sd->n; i++) {
		if (sd->f[i].kind == kind)
			return &sd->f[i];
	}
	return NULL;
}

/*
 * Whether two consecutive entries of a flat group stay apart on the wire:
 * the next must start at or before the field where the previous ended.
 */
int
mos_group_apart(const struct mos_sdesc *sub, const void *prev,
    const void *next)
{
	size_t	i, last = 0, first = sub->n;

	for (i = 0; i < sub->n; i++) {
		if (*(const char *const *)MOS_CFP(prev, &sub->f[i]) != NULL)
			last = i;
		if (first == sub->n &&
		    *(const char *const *)MOS_CFP(next, &sub->f[i]) != NULL)
			first = i;
	}
	return first <= last;
}

/* Whether s is one of vals. */
int
mos_enum_ok(const char *const *vals, const char *s)
{
	for (; *vals != NULL; vals++) {
		if (strcmp(*vals, s) == 0)
			return 1;
	}
	return 0;
}

/* Characters in a UTF-8 string. */
size_t
mos_utf8_chars(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0'; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Equal strings, NULL only equal to NULL. */
static int
eq_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* A decimal without trailing fraction zeros. */
static struct mos_dec
dec_norm(struct mos_dec d)
{
	while (d.scale > 0 && d.v % 10 == 0) {
		d.v /= 10;
		d.scale--;
	}
	return d;
}

static int eq_struct(const struct mos_sdesc *, const void *, const void *);

/* Equal listMachInfo profile lists. */
static int
eq_profiles(const struct mos_list_mach_info *a,
    const struct mos_list_mach_info *b)
{
	return memcmp(a->profiles, b->profiles, sizeof a->profiles) == 0 &&
	    a->profiles_flat == b->profiles_flat &&
	    eq_str(a->device_type, b->device_type);
}

/* Equal storyBody contents. */
static int
eq_body(const struct mos_story_body *a, const struct mos_story_body *b)
{
	size_t	i;

	if (!eq_str(a->read1st_mem_as_body, b->read1st_mem_as_body) ||
	    a->part.n != b->part.n)
		return 0;
	for (i = 0; i < a->part.n; i++) {
		if (a->part.v[i].kind != b->part.v[i].kind ||
		    !eq_str(a->part.v[i].text, b->part.v[i].text))
			return 0;
		if ((a->part.v[i].item == NULL) != (b->part.v[i].item == NULL))
			return 0;
		if (a->part.v[i].item != NULL && !eq_struct(&mos_sd_item,
		    a->part.v[i].item, b->part.v[i].item))
			return 0;
	}
	return 1;
}

/* Equal arrays of structs or of strings. */
static int
eq_array(const struct mos_fdesc *f, const void *pa, const void *pb)
{
	struct mos_anyarr	a = mos_arr_get(pa), b = mos_arr_get(pb);
	size_t			i;

	if (a.n != b.n)
		return 0;
	for (i = 0; i < a.n; i++) {
		if (f->kind == MOS_FK_STRS) {
			if (!eq_str(((const char **)a.v)[i],
			    ((const char **)b.v)[i]))
				return 0;
		} else if (!eq_struct(f->sub, (char *)a.v + i * f->sub->size,
		    (char *)b.v + i * f->sub->size))
			return 0;
	}
	return 1;
}

/* Equal values of one field. */
static int
eq_field(const struct mos_fdesc *f, const void *a, const void *b)
{
	const void		*pa = MOS_CFP(a, f), *pb = MOS_CFP(b, f);
	const struct mos_time	*ta = pa, *tb = pb;
	struct mos_dec		 da, db;
	void *const		*qa = pa, *const *qb = pb;

	switch (f->kind) {
	case MOS_FK_STR: case MOS_FK_XML: case MOS_FK_ATTR: case MOS_FK_TEXT:
		return eq_str(*(const char *const *)pa, *(const char *const *)pb);
	case MOS_FK_U32:
		if (*MOS_CHAS(a, f) != *MOS_CHAS(b, f))
			return 0;
		return !*MOS_CHAS(a, f) ||
		    *(const uint32_t *)pa == *(const uint32_t *)pb;
	case MOS_FK_DEC:
		da = dec_norm(*(const struct mos_dec *)pa);
		db = dec_norm(*(const struct mos_dec *)pb);
		return da.set == db.set && (!da.set ||
		    (da.v == db.v && da.scale == db.scale));
	case MOS_FK_TIME:
		return ta->flags == tb->flags && (!(ta->flags & MOS_TIME_SET) ||
		    (ta->sec == tb->sec && ta->ms == tb->ms &&
		    (!(ta->flags & MOS_TIME_ZONE) || ta->tz_min == tb->tz_min)));
	case MOS_FK_DUR:
		return ((const struct mos_dur *)pa)->set ==
		    ((const struct mos_dur *)pb)->set &&
		    ((const struct mos_dur *)pa)->sec ==
		    ((const struct mos_dur *)pb)->sec;
	case MOS_FK_STRUCT:
		return eq_struct(f->sub, pa, pb);
	case MOS_FK_PTR:
		if (*qa == NULL || *qb == NULL)
			return *qa == *qb;
		return eq_struct(f->sub, *qa, *qb);
	case MOS_FK_ARRAY: case MOS_FK_STRS: case MOS_FK_WRAP: case MOS_FK_GROUP:
		return eq_array(f, pa, pb);
	case MOS_FK_PROFILES:
		return eq_profiles(a, b);
	case MOS_FK_BODY:
		return eq_body(pa, pb);
	}
	return 1;	/* MOS_FK_PROFILE: compared with MOS_FK_PROFILES */
}

/* Equal structs, field by field. */
static int
eq_struct(const struct mos_sdesc *sd, const void *a, const void *b)
{
	size_t	i;

	for (i = 0; i < sd->n; i++) {
		if (!eq_field(&sd->f[i], a, b))
			return 0;
	}
	return 1;
}

/* Equal messages: type, envelope and every field. */
bool
mos_msg_equal(const struct mos_msg *a, const struct mos_msg *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (a->type != b->type || !eq_str(a->type_name, b->type_name) ||
	    !eq_str(a->mos_id, b->mos_id) || !eq_str(a->ncs_id, b->ncs_id) ||
	    a->has_message_id != b->has_message_id ||
	    (a->has_message_id && a->message_id != b->message_id))
		return false;
	if (a->type == MOS_T_UNKNOWN || (unsigned)a->type >= MOS_T__COUNT)
		return eq_str(a->u.unknown.xml, b->u.unknown.xml);
	return eq_struct(mos_tdescs[a->type].body, &a->u, &b->u);
}
