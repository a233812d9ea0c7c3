/*
 * The gateway's own tables, in the queue's SQLite file: opened with
 * queue_open, then our schema on queue_db(q), versioned in gw_meta (the
 * queue owns PRAGMA user_version). Writes run inside queue_tx_begin/commit
 * so that they nest with queue calls and share its STORE_BUSY handling.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "gateway/gateway.h"

/* The asset_fts row of asset a (key k), in plain text. */
#define GWDB_FTS_ROW \
	"k.id, mosgw_text(a.slug), mosgw_text(a.abstract)," \
	" mosgw_text(a.description), (SELECT group_concat(" \
	" mosgw_text(m.payload), ' ') FROM asset_meta m" \
	" WHERE m.obj_id = a.obj_id)"


static const char *const gwdb_schema_v1 =
	"CREATE TABLE IF NOT EXISTS gw_meta("
	" key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE ncs("
	" name TEXT PRIMARY KEY, ncs_id TEXT NOT NULL,"
	" enabled INTEGER NOT NULL, publish INTEGER NOT NULL DEFAULT 1,"
	" max_attempts INTEGER NOT NULL DEFAULT 10, updated INTEGER NOT NULL);"
	"CREATE TABLE msgid("
	" ncs TEXT NOT NULL, port TEXT NOT NULL,"
	" reserved_upto INTEGER NOT NULL,"
	" PRIMARY KEY(ncs, port)) WITHOUT ROWID;"
	"CREATE TABLE assets("
	" obj_id TEXT PRIMARY KEY, slug TEXT NOT NULL, type TEXT NOT NULL,"
	" tb TEXT NOT NULL, dur INTEGER NOT NULL, rev INTEGER NOT NULL,"
	" air TEXT NOT NULL, status TEXT NOT NULL, abstract TEXT,"
	" description TEXT NOT NULL, obj_group TEXT,"
	" created_by TEXT NOT NULL, created INTEGER NOT NULL,"
	" changed_by TEXT NOT NULL, changed INTEGER NOT NULL,"
	" deleted INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE asset_paths("
	" obj_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
	" tech TEXT NOT NULL, url TEXT NOT NULL,"
	" PRIMARY KEY(obj_id, seq)) WITHOUT ROWID;"
	"CREATE TABLE asset_meta("
	" obj_id TEXT NOT NULL, seq INTEGER NOT NULL, scope TEXT,"
	" schema TEXT NOT NULL, payload TEXT NOT NULL,"
	" PRIMARY KEY(obj_id, seq)) WITHOUT ROWID;"
	"CREATE TABLE delivery("
	" ncs TEXT NOT NULL, obj_id TEXT NOT NULL, rev INTEGER NOT NULL,"
	" status TEXT NOT NULL, t_ms INTEGER NOT NULL,"
	" PRIMARY KEY(ncs, obj_id)) WITHOUT ROWID;"
	"CREATE TABLE history("
	" id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, ncs TEXT NOT NULL,"
	" port TEXT NOT NULL, dir TEXT NOT NULL, conn INTEGER NOT NULL,"
	" message_id INTEGER, type TEXT NOT NULL, outcome TEXT NOT NULL,"
	" xml TEXT NOT NULL);"
	"CREATE INDEX history_t ON history(t_ms);";

/*
 * Version 2: running orders. A running order is keyed by (ncs, ro_id); its
 * stories and items refer to its row id and carry their position in play
 * order; head and xml hold each level's fields as XML.
 */
static const char *const gwdb_schema_v2 =
	"CREATE TABLE ro("
	" id INTEGER PRIMARY KEY, ncs TEXT NOT NULL, ro_id TEXT NOT NULL,"
	" slug TEXT, head TEXT NOT NULL, air TEXT,"
	" confirmed INTEGER NOT NULL DEFAULT 1,"
	" created INTEGER NOT NULL, changed INTEGER NOT NULL,"
	" UNIQUE(ncs, ro_id));"
	"CREATE TABLE ro_story("
	" ro INTEGER NOT NULL, story_id TEXT NOT NULL, pos INTEGER NOT NULL,"
	" slug TEXT, head TEXT NOT NULL, body TEXT,"
	" PRIMARY KEY(ro, story_id)) WITHOUT ROWID;"
	"CREATE INDEX ro_story_pos ON ro_story(ro, pos);"
	"CREATE TABLE ro_item("
	" ro INTEGER NOT NULL, story_id TEXT NOT NULL, item_id TEXT NOT NULL,"
	" pos INTEGER NOT NULL, obj_id TEXT NOT NULL, mos_id TEXT,"
	" slug TEXT, channel TEXT, ed_start INTEGER, ed_dur INTEGER,"
	" user_dur INTEGER, xml TEXT NOT NULL,"
	" PRIMARY KEY(ro, story_id, item_id)) WITHOUT ROWID;"
	"CREATE INDEX ro_item_pos ON ro_item(ro, story_id, pos);"
	"CREATE INDEX ro_item_obj ON ro_item(obj_id);";

/*
 * Version 3: the search index. asset_key gives every objID a stable integer
 * (the rowid of its asset_fts row); asset_fts holds the plain text of the
 * slug, abstract, description and external metadata payloads of every asset
 * that is not deleted. catalog_put/catalog_delete keep it in step inside
 * their transaction (ST_FTS_*); the migration indexes what exists.
 */
static const char *const gwdb_schema_v3 =
	"CREATE TABLE asset_key("
	" id INTEGER PRIMARY KEY, obj_id TEXT NOT NULL UNIQUE);"
	"CREATE VIRTUAL TABLE asset_fts USING fts5("
	" slug, abstract, description, meta,"
	" tokenize = 'unicode61 remove_diacritics 2');"
	"INSERT INTO asset_key(obj_id) SELECT obj_id FROM assets;"
	"INSERT INTO asset_fts(rowid, slug, abstract, description, meta)"
	" SELECT " GWDB_FTS_ROW " FROM assets a"
	" JOIN asset_key k ON k.obj_id = a.obj_id WHERE a.deleted = 0;";

/*
 * Version 4: the initial sync of each NCS (isync.c). A row is made when an
 * NCS is first recorded: state 'running' (initial_sync = all) until every
 * asset up to after_obj, in objID order, has been enqueued, then 'done';
 * 'none' for initial_sync = none. The NCSs known before this version have
 * had their deliveries all along: they are done.
 */
static const char *const gwdb_schema_v4 =
	"CREATE TABLE ncs_sync("
	" ncs TEXT PRIMARY KEY, state TEXT NOT NULL,"
	" after_obj TEXT NOT NULL DEFAULT '', queued INTEGER NOT NULL DEFAULT 0,"
	" started INTEGER NOT NULL, finished INTEGER) WITHOUT ROWID;"
	"INSERT INTO ncs_sync(ncs, state, started, finished)"
	" SELECT name, 'done', updated, updated FROM ncs;";

/*
 * Version 5: the event log (events.c). Ids only grow (AUTOINCREMENT: a
 * pruned id is never given again). hook = 0 marks an event about a
 * webhook's own job, which never goes to a webhook (no feedback loop).
 * job.state and asset.delivered/asset.failed are written by a trigger on
 * the queue's job_events, so that they commit with the state change itself
 * whoever makes it (the daemon, mosctl); the delivery row of a completed
 * mosObj job is written before its completion (publisher.c), so the
 * trigger sees the revision and status the NCS acknowledged. Values go
 * through CAST to text: a JSON function given a BLOB would fail the
 * statement, and the state change with it.
 */
#define GWDB_JOB_STATE \
	"CASE NEW.to_state WHEN 0 THEN 'QUEUED' WHEN 1 THEN 'RUNNING'" \
	" WHEN 2 THEN 'DONE' WHEN 3 THEN 'FAILED' ELSE 'CANCELLED' END"
#define GWDB_JOB_OBJ \
	"CASE WHEN j.kind IN ('" CATALOG_KIND_PUBLISH "', '" ROSTAT_KIND \
	"', '" ROSTAT_KIND_REPLACE "') THEN CAST(j.payload AS TEXT)" \
	" WHEN json_valid(CAST(j.payload AS TEXT)) AND" \
	" json_type(CAST(j.payload AS TEXT)) = 'object' THEN" \
	" json_extract(CAST(j.payload AS TEXT), '$.objID') END"
static const char *const gwdb_schema_v5 =
	"CREATE TABLE events("
	" id INTEGER PRIMARY KEY AUTOINCREMENT, t_ms INTEGER NOT NULL,"
	" type TEXT NOT NULL, data TEXT NOT NULL,"
	" hook INTEGER NOT NULL DEFAULT 1);"
	"CREATE INDEX events_t ON events(t_ms);"
	"CREATE TRIGGER events_job AFTER INSERT ON job_events BEGIN"
	" INSERT INTO events(t_ms, type, data, hook)"
	"  SELECT NEW.t, 'job.state', json_object('jobId', j.id,"
	"  'kind', j.kind, 'objID', " GWDB_JOB_OBJ ", 'state', "
	GWDB_JOB_STATE ", 'attempt', NEW.attempt),"
	"  substr(j.kind, 1, 8) <> '" WEBHOOK_KIND_PREFIX "'"
	"  FROM jobs j WHERE j.id = NEW.job_id;"
	" INSERT INTO events(t_ms, type, data)"
	"  SELECT NEW.t, 'asset.delivered', json_object('objID', d.obj_id,"
	"  'objRev', d.rev, 'ncs', d.ncs, 'status', d.status)"
	"  FROM jobs j JOIN delivery d ON d.ncs = substr(j.lane, 5)"
	"  AND d.obj_id = CAST(j.payload AS TEXT)"
	"  WHERE NEW.to_state = 2 AND j.id = NEW.job_id"
	"  AND j.kind = '" CATALOG_KIND_PUBLISH "';"
	" INSERT INTO events(t_ms, type, data)"
	"  SELECT NEW.t, 'asset.failed', json_object('objID',"
	"  CAST(j.payload AS TEXT), 'objRev', a.rev,"
	"  'ncs', substr(j.lane, 5), 'status', a.status, 'error', NEW.note)"
	"  FROM jobs j LEFT JOIN assets a ON a.obj_id = CAST(j.payload AS TEXT)"
	"  WHERE NEW.to_state = 3 AND j.id = NEW.job_id"
	"  AND j.kind = '" CATALOG_KIND_PUBLISH "';"
	" END;";

/*
 * Version 6: the answers to running-order changes, keyed by the NCS, the
 * port and the NCS's messageID, so that a resent message (the NCS lost our
 * roAck) gets the same answer without being applied again. digest tells a
 * resend from a new message that reuses the messageID; items holds the
 * per-item statuses of the roAck (JSON). Bounded by rostore.c.
 */
static const char *const gwdb_schema_v6 =
	"CREATE TABLE ro_answer("
	" id INTEGER PRIMARY KEY, ncs TEXT NOT NULL, port INTEGER NOT NULL,"
	" message_id INTEGER NOT NULL, digest BLOB NOT NULL,"
	" t_ms INTEGER NOT NULL, items TEXT,"
	" UNIQUE(ncs, port, message_id));";

/*
 * Version 7: nothing on SQLite. On PostgreSQL the table of link ownership
 * (owner.c), which one instance never needs; the versions stay in step.
 */
static const char *const gwdb_schema_v7 = "SELECT 1;";

/*
 * Version 8: the last failed delivery of each asset to each NCS (its job,
 * the revision, the NCS's NACK text or why it failed), for the asset's
 * delivery state in GET /v1/assets/{objID}. The same trigger discipline
 * as the events (version 5): a publish job that fails writes it, one that
 * completes (a later revision, or the same one after a requeue) clears
 * it. The migration takes the newest FAILED publish job of each, unless a
 * delivery was acknowledged after it.
 */
static const char *const gwdb_schema_v8 =
	"CREATE TABLE delivery_failed("
	" ncs TEXT NOT NULL, obj_id TEXT NOT NULL, job_id INTEGER NOT NULL,"
	" rev INTEGER, error TEXT, t_ms INTEGER NOT NULL,"
	" PRIMARY KEY(ncs, obj_id)) WITHOUT ROWID;"
	"CREATE TRIGGER delivery_failed_job AFTER INSERT ON job_events"
	" WHEN NEW.to_state IN (2, 3) BEGIN"
	" DELETE FROM delivery_failed WHERE NEW.to_state = 2 AND"
	"  (ncs, obj_id) = (SELECT substr(j.lane, 5), CAST(j.payload AS TEXT)"
	"  FROM jobs j WHERE j.id = NEW.job_id"
	"  AND j.kind = '" CATALOG_KIND_PUBLISH "');"
	" INSERT INTO delivery_failed(ncs, obj_id, job_id, rev, error, t_ms)"
	"  SELECT substr(j.lane, 5), CAST(j.payload AS TEXT), j.id, a.rev,"
	"  NEW.note, NEW.t"
	"  FROM jobs j LEFT JOIN assets a ON a.obj_id = CAST(j.payload AS TEXT)"
	"  WHERE NEW.to_state = 3 AND j.id = NEW.job_id"
	"  AND j.kind = '" CATALOG_KIND_PUBLISH "'" GWDB_FAILED_SET ";"
	" END;"
	GWDB_FAILED_FILL("CAST(j.payload AS TEXT)");

/* Migrations: entry i takes the schema from version i to i + 1. */
static const char *const *const gwdb_migrations[] = { &gwdb_schema_v1,
	&gwdb_schema_v2, &gwdb_schema_v3, &gwdb_schema_v4,
	&gwdb_schema_v5, &gwdb_schema_v6, &gwdb_schema_v7,
	&gwdb_schema_v8 };
_Static_assert(nitems(gwdb_migrations) == GWDB_SCHEMA_VERSION,
    "one migration per schema version");

static const char *const gwdb_sql[ST__COUNT] = {
	[ST_ASSET_GET] = "SELECT " GWDB_ASSET_COLS " FROM assets"
	    " WHERE obj_id = ?1",
	[ST_ASSET_PATHS] = "SELECT kind, tech, url FROM asset_paths"
	    " WHERE obj_id = ?1 ORDER BY seq",
	[ST_ASSET_META] = "SELECT scope, schema, payload FROM asset_meta"
	    " WHERE obj_id = ?1 ORDER BY seq",
	[ST_ASSET_UPSERT] = "INSERT INTO assets(" GWDB_ASSET_COLS ")"
	    " VALUES(?1, ?2, ?3, ?4, ?5, 1, ?6, 'NEW', ?7, ?8, ?9, ?10, ?11,"
	    " ?10, ?11, 0)"
	    " ON CONFLICT(obj_id) DO UPDATE SET slug = excluded.slug,"
	    " type = excluded.type, tb = excluded.tb, dur = excluded.dur,"
	    " air = excluded.air, abstract = excluded.abstract,"
	    " description = excluded.description,"
	    " obj_group = excluded.obj_group,"
	    " rev = CASE WHEN assets.rev >= 999 THEN 1 ELSE assets.rev + 1 END,"
	    " status = CASE WHEN assets.deleted <> 0 THEN 'NEW'"
	    "  ELSE 'UPDATED' END,"
	    " created_by = CASE WHEN assets.deleted <> 0"
	    "  THEN excluded.created_by ELSE assets.created_by END,"
	    " created = CASE WHEN assets.deleted <> 0 THEN excluded.created"
	    "  ELSE assets.created END,"
	    " changed_by = excluded.changed_by, changed = excluded.changed,"
	    " deleted = 0 RETURNING rev",
	[ST_ASSET_PATHS_DEL] = "DELETE FROM asset_paths WHERE obj_id = ?1",
	[ST_ASSET_META_DEL] = "DELETE FROM asset_meta WHERE obj_id = ?1",
	[ST_ASSET_PATH_ADD] = "INSERT INTO asset_paths(obj_id, seq, kind, tech,"
	    " url) VALUES(?1, ?2, ?3, ?4, ?5)",
	[ST_ASSET_META_ADD] = "INSERT INTO asset_meta(obj_id, seq, scope,"
	    " schema, payload) VALUES(?1, ?2, ?3, ?4, ?5)",
	[ST_ASSET_DELETE] = "UPDATE assets SET deleted = 1, status = 'DELETED',"
	    " rev = CASE WHEN rev >= 999 THEN 1 ELSE rev + 1 END,"
	    " changed_by = ?2, changed = ?3"
	    " WHERE obj_id = ?1 AND deleted = 0 RETURNING rev",
	[ST_ASSET_LIST] = "SELECT " GWDB_ASSET_COLS " FROM assets"
	    " WHERE obj_id > ?1 AND (deleted = 0 OR ?2 <> 0) ORDER BY obj_id"
	    " LIMIT ?3",
	[ST_NCS_PUBLISH] = "SELECT name, max_attempts FROM ncs"
	    " WHERE enabled = 1 AND publish = 1 ORDER BY name",
	[ST_DELIVERY_GET] = "SELECT status FROM delivery"
	    " WHERE ncs = ?1 AND obj_id = ?2",
	[ST_DELIVERY_PUT] = "INSERT INTO delivery(ncs, obj_id, rev, status,"
	    " t_ms)"
	    " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(ncs, obj_id) DO UPDATE"
	    " SET rev = excluded.rev, status = excluded.status,"
	    " t_ms = excluded.t_ms",
	/* the block of ?3 ids after the stored one (none or a bad value: 0) */
	[ST_MSGID_TAKE] = "INSERT INTO msgid(ncs, port, reserved_upto)"
	    " VALUES(?1, ?2, ?3) ON CONFLICT(ncs, port) DO UPDATE"
	    " SET reserved_upto = CASE WHEN msgid.reserved_upto BETWEEN 0"
	    " AND 2147483647 THEN (msgid.reserved_upto + ?3 - 1) % 2147483647"
	    " + 1 ELSE ?3 END RETURNING reserved_upto",
	[ST_HISTORY_ADD] = "INSERT INTO history(t_ms, ncs, port, dir, conn,"
	    " message_id, type, outcome, xml)"
	    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_FTS_KEY] = "INSERT INTO asset_key(obj_id) VALUES(?1)"
	    " ON CONFLICT(obj_id) DO NOTHING",
	[ST_FTS_DEL] = "DELETE FROM asset_fts WHERE rowid ="
	    " (SELECT id FROM asset_key WHERE obj_id = ?1)",
	[ST_FTS_ADD] = "INSERT INTO asset_fts(rowid, slug, abstract,"
	    " description, meta) SELECT " GWDB_FTS_ROW " FROM assets a"
	    " JOIN asset_key k ON k.obj_id = a.obj_id"
	    " WHERE a.obj_id = ?1 AND a.deleted = 0",
	[ST_FTS_KEYS] = "INSERT INTO asset_key(obj_id) SELECT value"
	    " FROM json_each(?1) WHERE true ORDER BY key"
	    " ON CONFLICT(obj_id) DO NOTHING",
	[ST_FTS_DEL_MANY] = "DELETE FROM asset_fts WHERE rowid IN"
	    " (SELECT id FROM asset_key WHERE obj_id IN"
	    " (SELECT value FROM json_each(?1)))",
	[ST_FTS_ADD_MANY] = "INSERT INTO asset_fts(rowid, slug, abstract,"
	    " description, meta) SELECT " GWDB_FTS_ROW " FROM assets a"
	    " JOIN asset_key k ON k.obj_id = a.obj_id"
	    " WHERE a.obj_id IN (SELECT value FROM json_each(?1))"
	    " AND a.deleted = 0",
	[ST_SEARCH_COUNT] = "SELECT count(*) FROM asset_fts"
	    " WHERE asset_fts MATCH ?1",
	[ST_SEARCH_PAGE] = "SELECT " CATALOG_COLS " FROM (SELECT rowid AS id,"
	    " " GWDB_RANK " AS r FROM asset_fts WHERE asset_fts MATCH ?1"
	    " ORDER BY r, rowid LIMIT ?2 OFFSET ?3) f"
	    " JOIN asset_key k ON k.id = f.id"
	    " JOIN assets a ON a.obj_id = k.obj_id ORDER BY f.r, f.id",
	[ST_META_GET] = "SELECT value FROM gw_meta WHERE key = ?1",
	[ST_META_PUT] = "INSERT INTO gw_meta(key, value) VALUES(?1, ?2)"
	    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
	[ST_RO_FIND] = "SELECT id FROM ro WHERE ncs = ?1 AND ro_id = ?2",
	[ST_RO_INSERT] = "INSERT INTO ro(ncs, ro_id, slug, head, confirmed,"
	    " created, changed) VALUES(?1, ?2, ?3, ?4, 1, ?5, ?5)"
	    " RETURNING id",
	[ST_RO_HEAD] = "UPDATE ro SET slug = ?3, head = ?4, changed = ?5,"
	    " confirmed = 1 WHERE ncs = ?1 AND ro_id = ?2 RETURNING id",
	[ST_RO_AIR] = "UPDATE ro SET air = ?2, changed = ?3 WHERE id = ?1",
	[ST_RO_TOUCH] = "UPDATE ro SET changed = ?2 WHERE id = ?1",
	[ST_RO_DELETE] = "DELETE FROM ro WHERE id = ?1",
	[ST_RO_STORIES_DEL] = "DELETE FROM ro_story WHERE ro = ?1",
	[ST_RO_ITEMS_DEL] = "DELETE FROM ro_item WHERE ro = ?1",
	[ST_RO_STORY_HAS] = "SELECT 1 FROM ro_story"
	    " WHERE ro = ?1 AND story_id = ?2",
	[ST_RO_STORY_IDS] = "SELECT story_id FROM ro_story WHERE ro = ?1"
	    " ORDER BY pos",
	[ST_RO_STORY_ADD] = "INSERT INTO ro_story(ro, story_id, pos, slug,"
	    " head) VALUES(?1, ?2, ?3, ?4, ?5)",
	[ST_RO_STORY_DEL] = "DELETE FROM ro_story"
	    " WHERE ro = ?1 AND story_id = ?2",
	[ST_RO_STORY_ITEMS_DEL] = "DELETE FROM ro_item"
	    " WHERE ro = ?1 AND story_id = ?2",
	[ST_RO_STORY_POS] = "UPDATE ro_story SET pos = ?3"
	    " WHERE ro = ?1 AND story_id = ?2",
	[ST_RO_STORY_BODY] = "UPDATE ro_story SET body = ?3"
	    " WHERE ro = ?1 AND story_id = ?2 RETURNING 1",
	[ST_RO_ITEM_IDS] = "SELECT item_id FROM ro_item"
	    " WHERE ro = ?1 AND story_id = ?2 ORDER BY pos",
	[ST_RO_ITEM_ADD] = "INSERT INTO ro_item(ro, story_id, item_id, pos,"
	    " obj_id, mos_id, slug, channel, ed_start, ed_dur, user_dur, xml)"
	    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[ST_RO_ITEM_DEL] = "DELETE FROM ro_item"
	    " WHERE ro = ?1 AND story_id = ?2 AND item_id = ?3",
	[ST_RO_ITEM_POS] = "UPDATE ro_item SET pos = ?4"
	    " WHERE ro = ?1 AND story_id = ?2 AND item_id = ?3",
	[ST_RO_ASSET_AIR] = "SELECT air, deleted, dur, tb,"
	    " (SELECT group_concat(p, char(10)) FROM (SELECT kind || ' ' ||"
	    " tech || ' ' || url AS p FROM asset_paths WHERE obj_id = ?1"
	    " ORDER BY seq)) FROM assets WHERE obj_id = ?1",
	[ST_RO_GET] = "SELECT id, head, air, confirmed, changed FROM ro"
	    " WHERE ncs = ?1 AND ro_id = ?2",
	[ST_RO_STORIES] = "SELECT story_id, head FROM ro_story WHERE ro = ?1"
	    " ORDER BY pos",
	[ST_RO_STORY_ITEMS] = "SELECT xml FROM ro_item"
	    " WHERE ro = ?1 AND story_id = ?2 ORDER BY pos",
	[ST_RO_LIST] = "SELECT ncs, ro_id, slug, head, air, confirmed,"
	    " changed,"
	    " (SELECT count(*) FROM ro_story s WHERE s.ro = r.id),"
	    " (SELECT count(*) FROM ro_item i WHERE i.ro = r.id)"
	    " FROM ro r WHERE CAST(?1 AS TEXT) IS NULL OR ncs = ?1"
	    " ORDER BY ncs, ro_id",
	[ST_RO_CONFIRM] = "UPDATE ro SET confirmed = ?3"
	    " WHERE ncs = ?1 AND (CAST(?2 AS TEXT) IS NULL OR ro_id = ?2)",
	[ST_RO_USAGE] = "SELECT r.ncs, r.ro_id, i.story_id, i.item_id,"
	    " i.slug, i.channel FROM ro_item i JOIN ro r ON r.id = i.ro"
	    " JOIN ro_story s ON s.ro = i.ro AND s.story_id = i.story_id"
	    " WHERE i.obj_id = ?1 ORDER BY r.ncs, r.ro_id, s.pos, i.pos",
	[ST_RO_STAT_NCS] = "SELECT DISTINCT r.ncs, n.max_attempts"
	    " FROM ro_item i JOIN ro r ON r.id = i.ro"
	    " JOIN ncs n ON n.name = r.ncs"
	    " WHERE i.obj_id = ?1 AND n.enabled = 1 ORDER BY r.ncs",
	[ST_RO_ITEM_ANY] = "SELECT EXISTS (SELECT 1 FROM ro_item)",
	[ST_RO_STAT_ITEMS] = "SELECT r.ro_id, i.story_id, i.item_id,"
	    " i.channel, i.xml FROM ro_item i JOIN ro r ON r.id = i.ro"
	    " JOIN ro_story s ON s.ro = i.ro AND s.story_id = i.story_id"
	    " WHERE i.obj_id = ?1 AND r.ncs = ?2"
	    " AND (i.mos_id IS NULL OR i.mos_id = '' OR i.mos_id = ?3)"
	    " ORDER BY r.ro_id, s.pos, i.pos",
	[ST_ASSET_JOBS] = "SELECT j.id, j.lane FROM ncs n JOIN jobs j"
	    " ON j.coalesce_key = 'obj:' || ?1 || '@' || n.name AND j.state = 0"
	    " WHERE n.enabled = 1 AND n.publish = 1 ORDER BY n.name",
	[ST_SYNC_NEW] = "INSERT INTO ncs_sync(ncs, state, started)"
	    " VALUES(?1, ?2, ?3) ON CONFLICT(ncs) DO NOTHING",
	[ST_SYNC_RUNNING] = "SELECT s.ncs, s.after_obj, n.max_attempts"
	    " FROM ncs_sync s JOIN ncs n ON n.name = s.ncs"
	    " WHERE s.state = 'running' AND n.enabled = 1 AND n.publish = 1"
	    " ORDER BY s.ncs",
	[ST_SYNC_WAITING] = "SELECT count(*) FROM (SELECT 1 FROM jobs"
	    " WHERE lane = ?1 AND state = 0 AND blocked = 0 AND priority = ?2"
	    " LIMIT ?3) w",
	[ST_SYNC_NEXT] = "SELECT obj_id FROM assets"
	    " WHERE obj_id > ?1 AND deleted = 0 ORDER BY obj_id LIMIT ?2",
	[ST_SYNC_SKIP] = "SELECT CASE WHEN EXISTS(SELECT 1 FROM delivery"
	    " WHERE ncs = ?1 AND obj_id = ?2) OR EXISTS(SELECT 1 FROM jobs"
	    " WHERE coalesce_key = ?3 AND state = 0) THEN 1 ELSE 0 END",
	[ST_SYNC_MOVE] = "UPDATE ncs_sync SET after_obj = ?2,"
	    " queued = queued + ?3,"
	    " state = CASE WHEN ?4 <> 0 THEN 'done' ELSE state END,"
	    " finished = CASE WHEN ?4 <> 0 THEN ?5 ELSE finished END"
	    " WHERE ncs = ?1",
	[ST_EVENTS_ADD] = "INSERT INTO events(t_ms, type, data)"
	    " VALUES(?1, ?2, ?3)",
	[ST_EVENTS_READ] = "SELECT id, t_ms, type, data, hook FROM events"
	    " WHERE id > ?1 ORDER BY id LIMIT ?2",
	[ST_EVENTS_HEAD] = "SELECT coalesce((SELECT seq FROM sqlite_sequence"
	    " WHERE name = 'events'), 0), coalesce((SELECT value FROM gw_meta"
	    " WHERE key = 'events_pruned'), 0)",
	[ST_RO_ANSWER_GET] = "SELECT digest, items, CASE WHEN id = (SELECT"
	    " max(id) FROM ro_answer WHERE ncs = ?1) THEN 1 ELSE 0 END"
	    " FROM ro_answer"
	    " WHERE ncs = ?1 AND port = ?2 AND message_id = ?3 AND t_ms >= ?4",
	[ST_RO_ANSWER_PUT] = "INSERT OR REPLACE INTO ro_answer(ncs, port,"
	    " message_id, digest, t_ms, items)"
	    " VALUES(?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
	[ST_RO_ANSWER_TRIM] = "DELETE FROM ro_answer WHERE id <= ?1"
	    " OR t_ms < ?2",
	[ST_RO_ANSWER_FORGET] = "DELETE FROM ro_answer WHERE ncs = ?1",
};

/* A SQLite result code as a queue_rc. */
int
gwdb_rc(int rc)
{
	switch (rc) {
	case STORE_OK:
	case STORE_DONE:
	case STORE_ROW:
		return QUEUE_OK;
	case STORE_BUSY:
		return QUEUE_EBUSY;
	case STORE_FULL:
		return QUEUE_EFULL;
	case STORE_CONSTRAINT:
	case STORE_MISMATCH:
		return QUEUE_EINVAL;
	default:
		return QUEUE_EIO;
	}
}

/* The last database error text. */
const char *
gwdb_errmsg(struct gwdb *g)
{
	return store_errmsg(g->db);
}

/* A cached statement, ready for binding. */
struct store_stmt *
gwdb_stmt(struct gwdb *g, enum gwdb_stmt which)
{
	struct store_stmt	*st;

	if ((st = g->st[which]) == NULL) {
		if (store_prepare(g->db, gwdb_is_pg(g) &&
		    gwdb_pg_sql[which] != NULL ? gwdb_pg_sql[which] :
		    gwdb_sql[which], STORE_KEEP,
		    &g->st[which]) != STORE_OK)
			fatalx("prepare %d: %s", (int)which,
			    store_errmsg(g->db));
		st = g->st[which];
	}
	store_reset(st);
	return st;
}

/* Bind text, or NULL for a NULL string. */
void
gwdb_bind_text(struct store_stmt *st, int i, const char *s)
{
	if (s == NULL)
		store_bind_null(st, i);
	else
		store_bind_text(st, i, s, -1);
}

/* Step a statement until done; reset it. */
int
gwdb_exec_stmt(struct gwdb *g, struct store_stmt *st)
{
	int	rc;

	(void)g;
	while ((rc = store_step(st)) == STORE_ROW)
		;
	store_reset(st);
	return gwdb_rc(rc);
}

/* One value from gw_meta; QUEUE_ENOTFOUND if the key is absent. */
int
gwdb_meta_get(struct gwdb *g, const char *key, int64_t *val)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_META_GET);
	int		 rc;

	store_bind_text(st, 1, key, -1);
	rc = store_step(st);
	if (rc == STORE_ROW)
		*val = store_column_int64(st, 0);
	store_reset(st);
	if (rc == STORE_DONE)
		return QUEUE_ENOTFOUND;
	return gwdb_rc(rc);
}

/* Set a value in gw_meta (inside the caller's transaction or autocommit). */
int
gwdb_meta_put(struct gwdb *g, const char *key, int64_t val)
{
	struct store_stmt	*st = gwdb_stmt(g, ST_META_PUT);

	store_bind_text(st, 1, key, -1);
	store_bind_int64(st, 2, val);
	return gwdb_exec_stmt(g, st);
}

/* The schema version recorded in gw_meta (0 = none yet). */
static int
gwdb_version(struct gwdb *g, int64_t *v)
{
	int	rc;

	rc = store_exec(g->db, gwdb_is_pg(g) ?
	    "CREATE TABLE IF NOT EXISTS gw_meta("
	    "key TEXT PRIMARY KEY, value BIGINT NOT NULL)" :
	    "CREATE TABLE IF NOT EXISTS gw_meta("
	    "key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
	if (rc != STORE_OK)
		return gwdb_rc(rc);
	*v = 0;
	rc = gwdb_meta_get(g, "schema_version", v);
	return rc == QUEUE_ENOTFOUND ? QUEUE_OK : rc;
}

/* Bring the schema to GWDB_SCHEMA_VERSION in one transaction. */
static int
gwdb_migrate(struct gwdb *g, char **err)
{
	int64_t	v;
	int	rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK) {
		xasprintf(err, "cannot start the schema transaction: %s",
		    queue_strerror(rc));
		return rc;
	}
	if ((rc = gwdb_version(g, &v)) != QUEUE_OK)
		goto fail;
	if (v > GWDB_SCHEMA_VERSION) {
		queue_tx_rollback(g->q);
		xasprintf(err, "the database's gateway schema is version %lld, "
		    "newer than this mosgw knows (%d)", (long long)v,
		    GWDB_SCHEMA_VERSION);
		return QUEUE_EINVAL;
	}
	for (; v < GWDB_SCHEMA_VERSION; v++) {
		rc = store_exec(g->db, gwdb_is_pg(g) ?
		    gwdb_pg_migrations[v] : *gwdb_migrations[v]);
		if (rc != STORE_OK) {
			xasprintf(err, "schema migration to version %lld: %s",
			    (long long)v + 1, store_errmsg(g->db));
			queue_tx_rollback(g->q);
			return gwdb_rc(rc);
		}
		rc = gwdb_meta_put(g, "schema_version", v + 1);
		if (rc != QUEUE_OK)
			goto fail;
	}
	if ((rc = queue_tx_commit(g->q)) != QUEUE_OK) {
		xasprintf(err, "schema commit: %s", queue_strerror(rc));
		return rc;
	}
	return QUEUE_OK;
fail:
	xasprintf(err, "schema: %s", store_errmsg(g->db));
	queue_tx_rollback(g->q);
	return rc;
}

/* SQL mosgw_text(x): the plain text of verbatim XML text (see catalog.c). */
static void
gwdb_text_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct sbuf	 sb = { NULL, 0, 0 };
	const char	*s;

	(void)argc;
	if ((s = (const char *)sqlite3_value_text(argv[0])) == NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	catalog_plain_text(&sb, s);
	sqlite3_result_text(ctx, sb.s != NULL ? sb.s : "", -1,
	    SQLITE_TRANSIENT);
	sbuf_free(&sb);
}

/* SQLite only: the SQL function mosgw_text, statement journals in memory. */
static int
gwdb_setup_sqlite(struct gwdb *g, char **err)
{
	struct sqlite3	*db = store_sqlite(g->db);

	if (db == NULL)
		return QUEUE_OK;
	if (sqlite3_create_function(db, "mosgw_text", 1, SQLITE_UTF8 |
	    SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL, gwdb_text_fn, NULL,
	    NULL) != SQLITE_OK) {
		xasprintf(err, "cannot register mosgw_text: %s",
		    sqlite3_errmsg(db));
		return QUEUE_EIO;
	}
	/* savepoints' statement journals in memory, not a temporary file */
	sqlite3_exec(db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
	return QUEUE_OK;
}

/* Open the database: the queue first, then our tables. */
int
gwdb_open(struct gwdb **out, const struct gwdb_opts *o, char **err)
{
	struct queue_opts	 qo;
	struct gwdb		*g;
	size_t			 n;
	int			 rc;

	*out = NULL;
	memset(&qo, 0, sizeof qo);
	qo.driver = o->driver;
	qo.path = o->path;
	qo.dsn = o->dsn;
	qo.idle_tx_ms = o->idle_tx_ms;
	qo.sync_normal = o->sync_normal;
	qo.busy_ms = o->busy_ms;
	qo.must_exist = o->must_exist;
	qo.check = o->check;
	qo.application_id = GWDB_APPLICATION_ID;
	qo.clock = o->clock;
	qo.clock_arg = o->clock_arg;
	g = xcalloc(1, sizeof *g);
	if ((rc = queue_open(&g->q, &qo, err)) != QUEUE_OK) {
		/* "PATH: why": the caller names the file itself */
		n = o->path != NULL ? strlen(o->path) : 0;
		if (*err != NULL && n > 0 && strncmp(*err, o->path, n) == 0 &&
		    strncmp(*err + n, ": ", 2) == 0)
			memmove(*err, *err + n + 2, strlen(*err + n + 2) + 1);
		free(g);
		return rc;
	}
	g->db = queue_db(g->q);
	if (o->ckpt_fn != NULL)
		queue_set_checkpointer(g->q, o->ckpt_fn, o->ckpt_arg);
	if ((rc = gwdb_setup_sqlite(g, err)) != QUEUE_OK) {
		gwdb_close(g);
		return rc;
	}
	if ((rc = gwdb_migrate(g, err)) != QUEUE_OK) {
		gwdb_close(g);
		return rc;
	}
	*out = g;
	return QUEUE_OK;
}

/* Close the database. */
void
gwdb_close(struct gwdb *g)
{
	size_t	i;

	if (g == NULL)
		return;
	for (i = 0; i < ST__COUNT; i++)
		store_finalize(g->st[i]);
	queue_close(g->q);
	free(g);
}

/* Lock the database file for this daemon and note its identity. */
int
gwdb_hold(struct gwdb_hold *h, const char *path, char **err)
{
	struct stat	sb;

	h->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (h->fd == -1) {
		xasprintf(err, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (flock(h->fd, LOCK_EX | LOCK_NB) == -1) {
		xasprintf(err, errno == EWOULDBLOCK ? "another mosgw is "
		    "running on this database" : "cannot lock: %s",
		    strerror(errno));
		close(h->fd);
		h->fd = -1;
		return -1;
	}
	if (fstat(h->fd, &sb) == -1) {
		xasprintf(err, "cannot stat: %s", strerror(errno));
		close(h->fd);
		h->fd = -1;
		return -1;
	}
	h->dev = sb.st_dev;
	h->ino = sb.st_ino;
	return 0;
}

/* Does path still name the file we hold? */
const char *
gwdb_hold_lost(const struct gwdb_hold *h, const char *path)
{
	struct stat	sb;

	if (stat(path, &sb) == -1)
		return errno == ENOENT ? "unlinked" : "cannot-stat";
	if (sb.st_dev != h->dev || sb.st_ino != h->ino)
		return "replaced";
	return NULL;
}

/*
 * Release the hold. Only after SQLite closed the file: closing any
 * descriptor of a file drops the process's POSIX locks on it, SQLite's too.
 */
void
gwdb_hold_release(struct gwdb_hold *h)
{
	if (h->fd != -1)
		close(h->fd);
	h->fd = -1;
}

/* Upsert one NCS row as enabled. */
static int
gwdb_put_ncs(struct gwdb *g, struct store_stmt *st, const struct ncs_conf *n,
    int64_t now)
{
	store_bind_text(st, 1, n->name, -1);
	store_bind_text(st, 2, n->ncs_id, -1);
	store_bind_int(st, 3, n->publish ? 1 : 0);
	store_bind_int(st, 4, n->max_attempts);
	store_bind_int64(st, 5, now);
	return gwdb_exec_stmt(g, st);
}

/*
 * Record the configured NCSs in one transaction: every row is disabled,
 * then each configured one is written enabled, so that mosctl knows where
 * an asset change must be delivered. An NCS seen for the first time gets
 * its initial sync row (isync.c).
 */
int
gwdb_sync_ncs(struct gwdb *g, const struct gw_config *cfg)
{
	struct store_stmt	*st = NULL;
	int64_t		 now = queue_now(g->q);
	size_t		 i;
	int		 rc;

	if ((rc = queue_tx_begin(g->q)) != QUEUE_OK)
		return rc;
	rc = store_prepare(g->db, "UPDATE ncs SET enabled = 0, updated = "
	    "?1 WHERE enabled = 1", 0, &st);
	if (rc == STORE_OK) {
		store_bind_int64(st, 1, now);
		rc = store_step(st) == STORE_DONE ? STORE_OK :
		    store_errcode(g->db);
	}
	store_finalize(st);
	st = NULL;
	if (rc == STORE_OK)
		rc = store_prepare(g->db, "INSERT INTO ncs(name, ncs_id,"
		    " enabled, publish, max_attempts, updated)"
		    " VALUES(?1, ?2, 1, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE"
		    " SET ncs_id = excluded.ncs_id, enabled = 1,"
		    " publish = excluded.publish,"
		    " max_attempts = excluded.max_attempts,"
		    " updated = excluded.updated", 0, &st);
	rc = gwdb_rc(rc);
	for (i = 0; rc == QUEUE_OK && i < cfg->nncs; i++) {
		if ((rc = gwdb_put_ncs(g, st, &cfg->ncs[i], now)) == QUEUE_OK)
			rc = isync_record(g, &cfg->ncs[i]);
	}
	store_finalize(st);
	if (rc != QUEUE_OK) {
		queue_tx_rollback(g->q);
		return rc;
	}
	return queue_tx_commit(g->q);
}

/*
 * Commits of this connection durable or not: SQLite's synchronous FULL or
 * NORMAL, PostgreSQL's synchronous_commit on or off (a session setting; a
 * new session after a lost connection is durable again).
 */
static int
gwdb_set_durable(struct gwdb *g, bool durable)
{
	if (gwdb_is_pg(g))
		return gwdb_rc(store_exec(g->db, durable ?
		    "SET synchronous_commit = on" :
		    "SET synchronous_commit = off"));
	return gwdb_rc(store_exec(g->db, durable ?
	    "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
}

/* Relaxed bookkeeping on this connection (see gateway.h). */
int
gwdb_relax(struct gwdb *g, bool on)
{
	int	rc;

	if ((rc = gwdb_set_durable(g, !on)) == QUEUE_OK)
		g->relaxed = on;
	return rc;
}

/* Around a commit that must be durable on a relaxed connection. */
int
gwdb_durable(struct gwdb *g, bool on)
{
	if (!g->relaxed)
		return QUEUE_OK;
	return gwdb_set_durable(g, on);
}
