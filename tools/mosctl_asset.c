/*
 * mosctl asset: the catalog from the command line. put and delete write the
 * row and enqueue one delivery per enabled NCS in one transaction (the
 * gateway's catalog code), so a change that mosctl reports as stored is
 * delivered even if the gateway is down right now. With --url the verbs go
 * to the daemon's /v1/assets instead (and `import` sends NDJSON there).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/http.h>
#include <jansson.h>

#include "gateway/gateway.h"
#include "mosxml/mosjson.h"
#include "tools/mosctl.h"
#include "tools/mosctl_api.h"

/* Usage of the asset commands. */
void
mosctl_asset_usage(FILE *f)
{
	fprintf(f,
	    "  asset put OBJID --slug S [--type STILL|AUDIO|VIDEO|OTHER] [--tb "
	    "50]\n"
	    "            [--dur SAMPLES] [--abstract TEXT | --abstract-xml "
	    "XML]\n"
	    "            [--description TEXT | --description-xml XML] [--group "
	    "G]\n            [--air READY|'NOT READY'] [--path URL --tech "
	    "DESC]...\n"
	    "            [--proxy-path URL --tech DESC]... [--metadata-path "
	    "URL --tech DESC]...\n"
	    "            [--meta-schema URL --meta-payload XML [--meta-scope "
	    "OBJECT]]...\n            [--by USER]\n"
	    "  asset delete OBJID [--by USER]\n"
	    "  asset usage OBJID   (the running orders, stories and items "
	    "using it)\n"
	    "  asset ls [--all] [--after OBJID] [--limit N]\n"
	    "  asset ls --query TEXT [--limit N]   (every word, ranked)\n"
	    "  asset show OBJID\n"
	    "  asset import FILE|-   (with --url: NDJSON, one asset a line "
	    "with its objID)\n");
}

/* Open the database through the gateway's schema; NULL after saying why. */
struct gwdb *
mosctl_gwdb_open(struct mosctl *ctl)
{
	struct gwdb_opts	 o;
	struct gwdb		*g;
	char			*err = NULL;
	int			 rc;

	memset(&o, 0, sizeof o);
	o.driver = (enum store_driver)ctl->driver;
	o.path = ctl->db;
	o.dsn = ctl->dsn;
	o.sync_normal = ctl->sync_normal;
	o.must_exist = true;
	if ((rc = gwdb_open(&g, &o, &err)) != QUEUE_OK) {
		if (rc == QUEUE_ENOTFOUND)
			mosctl_no_db(ctl);
		else
			fprintf(ctl->err, "mosctl: %s: %s\n", ctl->db,
			    err != NULL ? err : "?");
		free(err);
		return NULL;
	}
	return g;
}

/* The database is not there: say so, and how one is made. */
void
mosctl_no_db(struct mosctl *ctl)
{
	fprintf(ctl->err, "mosctl: no database at %s (mosctl never creates "
	    "one: start mosgw with it, or run mosctl --db %s init)\n",
	    ctl->db, ctl->db);
}

/* mosctl init: create a new database file (0640) with the schema. */
int
mosctl_init(struct mosctl *ctl, int argc, char **argv)
{
	struct gwdb_opts	 o;
	struct gwdb		*g;
	char			*err = NULL;

	(void)argv;
	if (argc != 0) {
		fprintf(ctl->err, "usage: mosctl --db FILE init\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl->driver == STORE_POSTGRESQL) {
		fprintf(ctl->err, "mosctl: init makes a database file; on "
		    "PostgreSQL mosgw makes its tables in the database it is "
		    "given\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (access(ctl->db, F_OK) == 0) {
		fprintf(ctl->err, "mosctl: %s exists; init only creates a new "
		    "database\n", ctl->db);
		return MOSCTL_EXIT_FAIL;
	}
	memset(&o, 0, sizeof o);
	o.path = ctl->db;
	o.sync_normal = ctl->sync_normal;
	if (gwdb_open(&g, &o, &err) != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: %s: %s\n", ctl->db, err != NULL ?
		    err : "?");
		free(err);
		return MOSCTL_EXIT_DB;
	}
	gwdb_close(g);
	if (!ctl->json)
		fprintf(ctl->out, "created %s (schema %d, queue schema %d)\n",
		    ctl->db, GWDB_SCHEMA_VERSION, QUEUE_SCHEMA_VERSION);
	else
		fprintf(ctl->out, "{\"created\":true,\"schema\":%d,"
		    "\"queue_schema\":%d}\n", GWDB_SCHEMA_VERSION,
		    QUEUE_SCHEMA_VERSION);
	return MOSCTL_EXIT_OK;
}

/* The default user: $USER, else "mosctl". */
static const char *
asset_user(const char *by)
{
	const char	*u;

	if (by != NULL)
		return by;
	if ((u = getenv("USER")) != NULL && *u != '\0')
		return u;
	return "mosctl";
}

/* Plain text as XML character data (for --description/--abstract). */
static char *
asset_escape(const char *s)
{
	struct sbuf	sb = { NULL, 0, 0 };

	sbuf_xml_text(&sb, s);
	if (sb.s == NULL)
		sbuf_puts(&sb, "");
	return sb.s;
}

/* Replace a string field. */
static void
asset_set(char **field, char *value)
{
	free(*field);
	*field = value;
}

/* Refuse a verbatim-XML option that is not fit for its element; -1 if so. */
static int
asset_xml_opt(struct mosctl *ctl, const char *opt, const char *elem,
    const char *v)
{
	char	msg[256];

	if (mos_fragment_check(elem, v, strlen(v), MOS_STRICT, NULL, msg,
	    sizeof msg) == 0)
		return 0;
	fprintf(ctl->err, "mosctl: %s: %s\n", opt, msg);
	return -1;
}

/* Set the techDescription of the last path given. */
static int
asset_tech(struct mosctl *ctl, struct catalog_asset *a, const char *tech)
{
	if (a->npaths == 0 || *a->paths[a->npaths - 1].tech != '\0') {
		fprintf(ctl->err, "mosctl: --tech must follow a --path, "
		    "--proxy-path or --metadata-path\n");
		return -1;
	}
	asset_set(&a->paths[a->npaths - 1].tech, xstrdup(tech));
	return 0;
}

/* Parse a non-negative integer argument. */
static int
asset_number(struct mosctl *ctl, const char *opt, const char *v, int64_t *out)
{
	char		*end;
	long long	 n;

	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < 0) {
		fprintf(ctl->err, "mosctl: %s takes a number, not '%s'\n", opt,
		    v);
		return -1;
	}
	*out = n;
	return 0;
}

enum {
	OPT_SLUG = 256, OPT_TYPE, OPT_TB, OPT_DUR, OPT_ABSTRACT,
	    OPT_ABSTRACT_XML,
	OPT_DESC, OPT_DESC_XML, OPT_GROUP, OPT_AIR, OPT_PATH, OPT_PROXY,
	    OPT_MDPATH,
	OPT_TECH, OPT_SCHEMA, OPT_PAYLOAD, OPT_SCOPE, OPT_BY,
};

/* Apply one option of `asset put`; -1 on a usage error. */
static int
asset_put_opt(struct mosctl *ctl, struct catalog_asset *a, int c,
    const char *arg, const char **schema, const char **scope)
{
	switch (c) {
	case OPT_SLUG:
		asset_set(&a->slug, xstrdup(arg));
		return 0;
	case OPT_TYPE:
		asset_set(&a->type, xstrdup(arg));
		return 0;
	case OPT_TB:
		asset_set(&a->tb, xstrdup(arg));
		return 0;
	case OPT_DUR:
		return asset_number(ctl, "--dur", arg, &a->dur);
	case OPT_ABSTRACT:
		asset_set(&a->abstract, asset_escape(arg));
		return 0;
	case OPT_ABSTRACT_XML:
		if (asset_xml_opt(ctl, "--abstract-xml", "mosAbstract",
		    arg) == -1)
			return -1;
		asset_set(&a->abstract, xstrdup(arg));
		return 0;
	case OPT_DESC:
		asset_set(&a->description, asset_escape(arg));
		return 0;
	case OPT_DESC_XML:
		if (asset_xml_opt(ctl, "--description-xml", "description",
		    arg) == -1)
			return -1;
		asset_set(&a->description, xstrdup(arg));
		return 0;
	case OPT_GROUP:
		asset_set(&a->group, xstrdup(arg));
		return 0;
	case OPT_AIR:
		asset_set(&a->air, xstrdup(strcmp(arg, "NOTREADY") == 0 ?
		    "NOT READY" : arg));
		return 0;
	case OPT_PATH:
	case OPT_PROXY:
	case OPT_MDPATH:
		catalog_add_path(a, c == OPT_PATH ? CATALOG_PATH :
		    c == OPT_PROXY ? CATALOG_PROXY : CATALOG_METADATA, "", arg);
		return 0;
	case OPT_TECH:
		return asset_tech(ctl, a, arg);
	case OPT_SCHEMA:
		*schema = arg;
		return 0;
	case OPT_SCOPE:
		*scope = arg;
		return 0;
	case OPT_PAYLOAD:
		if (*schema == NULL) {
			fprintf(ctl->err, "mosctl: --meta-payload needs a "
			    "--meta-schema before it\n");
			return -1;
		}
		if (asset_xml_opt(ctl, "--meta-payload", "mosPayload",
		    arg) == -1)
			return -1;
		catalog_add_meta(a, *scope, *schema, arg);
		*schema = *scope = NULL;
		return 0;
	case OPT_BY:
		asset_set(&a->changed_by, xstrdup(arg));
		return 0;
	}
	mosctl_asset_usage(ctl->err);
	return -1;
}

/* Print the outcome of a put or delete. */
static void
asset_report(struct mosctl *ctl, const char *verb, const char *obj_id, int rev,
    int njobs)
{
	struct sbuf	sb = { NULL, 0, 0 };

	if (ctl->json) {
		sbuf_printf(&sb, "{\"op\":\"%s\",\"objID\":", verb);
		sbuf_json_str(&sb, obj_id);
		sbuf_printf(&sb, ",\"rev\":%d,\"deliveries\":%d}\n", rev,
		    njobs);
		fputs(sb.s, ctl->out);
		sbuf_free(&sb);
	} else
		fprintf(ctl->out, "asset %s: %s rev %d, %d deliver%s queued\n",
		    obj_id, verb, rev, njobs, njobs == 1 ? "y" : "ies");
	if (njobs == 0)
		fprintf(ctl->err, "mosctl: note: no NCS with publish on is "
		    "recorded "
		    "in this database (mosgw records them at start)\n");
}

/* The path of an asset on the API (objID escaped); malloc'd. */
static char *
asset_api_path(const char *obj_id)
{
	char	*enc = evhttp_uriencode(obj_id, -1, 0), *p;

	xasprintf(&p, "/v1/assets/%s", enc);
	free(enc);
	return p;
}

/* The answer to a PUT or DELETE (202 with objRev and jobs), reported. */
static int
asset_api_change(struct mosctl *ctl, const char *method, const char *verb,
    const char *obj_id, const char *body)
{
	json_t	*o;
	char	*path = asset_api_path(obj_id);
	int	 rc;

	rc = mosctl_api_call(ctl, method, path, NULL, "application/json", body,
	    body != NULL ? strlen(body) : 0, &o);
	free(path);
	if (rc != MOSCTL_EXIT_OK)
		return rc;
	asset_report(ctl, verb, obj_id, (int)json_integer_value(
	    json_object_get(o, "objRev")), (int)json_array_size(
	    json_object_get(o, "jobs")));
	json_decref(o);
	return MOSCTL_EXIT_OK;
}

/* put over the API: the asset as the body of a mosObj, less mosgw's keys. */
static int
asset_put_api(struct mosctl *ctl, const struct catalog_asset *a)
{
	static const char *const owned[] = { "objID", "objRev", "status",
	    "created", "changed" };
	struct mos_msg	*m;
	json_t		*o, *body;
	char		*s, *err = NULL;
	size_t		 i;
	int		 rc;

	if ((m = catalog_mos_obj(a, "NEW", &err)) == NULL) {
		fprintf(ctl->err, "mosctl: asset put %s: %s\n", a->obj_id,
		    err != NULL ? err : "out of memory");
		free(err);
		return MOSCTL_EXIT_USAGE;
	}
	s = mos_msg_to_json(m);
	mos_msg_free(m);
	if (s == NULL || (o = json_loads(s, 0, NULL)) == NULL)
		fatalx("mos_msg_to_json failed");
	free(s);
	body = json_object_get(o, "body");
	for (i = 0; i < nitems(owned); i++)
		json_object_del(body, owned[i]);
	if ((s = json_dumps(body, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(o);
	rc = asset_api_change(ctl, "PUT", "put", a->obj_id, s);
	free(s);
	return rc;
}

/* asset put OBJID ... */
static int
asset_put(struct mosctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "slug", required_argument, NULL, OPT_SLUG },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "tb", required_argument, NULL, OPT_TB },
		{ "dur", required_argument, NULL, OPT_DUR },
		{ "abstract", required_argument, NULL, OPT_ABSTRACT },
		{ "abstract-xml", required_argument, NULL, OPT_ABSTRACT_XML },
		{ "description", required_argument, NULL, OPT_DESC },
		{ "description-xml", required_argument, NULL, OPT_DESC_XML },
		{ "group", required_argument, NULL, OPT_GROUP },
		{ "air", required_argument, NULL, OPT_AIR },
		{ "path", required_argument, NULL, OPT_PATH },
		{ "proxy-path", required_argument, NULL, OPT_PROXY },
		{ "metadata-path", required_argument, NULL, OPT_MDPATH },
		{ "tech", required_argument, NULL, OPT_TECH },
		{ "meta-schema", required_argument, NULL, OPT_SCHEMA },
		{ "meta-payload", required_argument, NULL, OPT_PAYLOAD },
		{ "meta-scope", required_argument, NULL, OPT_SCOPE },
		{ "by", required_argument, NULL, OPT_BY },
		{ NULL, 0, NULL, 0 },
	};
	struct catalog_asset	 a;
	struct gwdb		*g;
	const char		*schema = NULL, *scope = NULL;
	char			*err = NULL;
	int			 c, rc, rev = 0, njobs = 0;
	size_t			 i;

	memset(&a, 0, sizeof a);
	a.type = xstrdup("VIDEO");
	a.tb = xstrdup("50");
	a.air = xstrdup("READY");
	a.description = xstrdup("");
	optind = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (asset_put_opt(ctl, &a, c, optarg, &schema, &scope) != 0) {
			catalog_asset_clear(&a);
			return MOSCTL_EXIT_USAGE;
		}
	}
	for (i = 0; i < a.npaths; i++) {
		if (*a.paths[i].tech == '\0') {
			fprintf(ctl->err, "mosctl: path '%s' needs --tech DESC "
			    "after it\n", a.paths[i].url);
			catalog_asset_clear(&a);
			return MOSCTL_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || a.slug == NULL || schema != NULL) {
		fprintf(ctl->err, "mosctl: asset put needs OBJID and "
		    "--slug%s\n", schema != NULL ? " (and --meta-payload after "
		    "--meta-schema)" : "");
		catalog_asset_clear(&a);
		return MOSCTL_EXIT_USAGE;
	}
	a.obj_id = xstrdup(argv[optind]);
	if (a.changed_by == NULL)
		a.changed_by = xstrdup(asset_user(NULL));
	a.created_by = xstrdup(a.changed_by);
	if (ctl->url != NULL) {
		if ((rc = catalog_validate(&a, &err)) != QUEUE_OK) {
			fprintf(ctl->err, "mosctl: asset put %s: %s\n",
			    a.obj_id, err);
			free(err);
			catalog_asset_clear(&a);
			return MOSCTL_EXIT_USAGE;
		}
		rc = asset_put_api(ctl, &a);
		catalog_asset_clear(&a);
		return rc;
	}
	if ((g = mosctl_gwdb_open(ctl)) == NULL) {
		catalog_asset_clear(&a);
		return MOSCTL_EXIT_DB;
	}
	rc = catalog_put(g, &a, &rev, &njobs, &err);
	if (rc == QUEUE_OK)
		asset_report(ctl, "put", a.obj_id, rev, njobs);
	else
		fprintf(ctl->err, "mosctl: asset put %s: %s\n", a.obj_id,
		    err != NULL ? err : queue_strerror(rc));
	free(err);
	gwdb_close(g);
	catalog_asset_clear(&a);
	if (rc == QUEUE_OK)
		return MOSCTL_EXIT_OK;
	return rc == QUEUE_EINVAL ? MOSCTL_EXIT_USAGE : MOSCTL_EXIT_DB;
}

/* asset delete OBJID [--by USER] */
static int
asset_delete(struct mosctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, OPT_BY },
		{ NULL, 0, NULL, 0 },
	};
	struct gwdb	*g;
	const char	*by = NULL;
	char		*err = NULL;
	int		 c, rc, rev = 0, njobs = 0;

	optind = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != OPT_BY) {
			mosctl_asset_usage(ctl->err);
			return MOSCTL_EXIT_USAGE;
		}
		by = optarg;
	}
	if (optind + 1 != argc) {
		fprintf(ctl->err, "mosctl: asset delete needs OBJID\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl->url != NULL)
		return asset_api_change(ctl, "DELETE", "delete", argv[optind],
		    NULL);
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	rc = catalog_delete(g, argv[optind], asset_user(by), &rev, &njobs,
	    &err);
	if (rc == QUEUE_OK)
		asset_report(ctl, "delete", argv[optind], rev, njobs);
	else
		fprintf(ctl->err, "mosctl: asset delete %s: %s\n", argv[optind],
		    err != NULL ? err : queue_strerror(rc));
	free(err);
	gwdb_close(g);
	if (rc == QUEUE_OK)
		return MOSCTL_EXIT_OK;
	return rc == QUEUE_ENOTFOUND || rc == QUEUE_EINVAL ? MOSCTL_EXIT_FAIL :
	    MOSCTL_EXIT_DB;
}

/* One asset as a JSON object. */
static void
asset_json(struct sbuf *sb, const struct catalog_asset *a)
{
	static const char *const kinds[] = { "path", "proxy", "metadata" };
	size_t	i;

	sbuf_puts(sb, "{\"objID\":");
	sbuf_json_str(sb, a->obj_id);
	sbuf_puts(sb, ",\"slug\":");
	sbuf_json_str(sb, a->slug);
	sbuf_printf(sb, ",\"type\":\"%s\",\"tb\":%s,\"dur\":%lld,\"rev\":%d,"
	    "\"air\":\"%s\",\"status\":\"%s\",\"deleted\":%s", a->type, a->tb,
	    (long long)a->dur, a->rev, a->air, a->status,
	    a->deleted ? "true" : "false");
	sbuf_puts(sb, ",\"group\":");
	sbuf_json_str(sb, a->group != NULL ? a->group : "");
	sbuf_puts(sb, ",\"abstract\":");
	sbuf_json_str(sb, a->abstract != NULL ? a->abstract : "");
	sbuf_puts(sb, ",\"description\":");
	sbuf_json_str(sb, a->description != NULL ? a->description : "");
	sbuf_puts(sb, ",\"createdBy\":");
	sbuf_json_str(sb, a->created_by);
	sbuf_printf(sb, ",\"created\":%lld,\"changedBy\":",
	    (long long)a->created_ms);
	sbuf_json_str(sb, a->changed_by);
	sbuf_printf(sb, ",\"changed\":%lld,\"paths\":[",
	    (long long)a->changed_ms);
	for (i = 0; i < a->npaths; i++) {
		sbuf_printf(sb, "%s{\"kind\":\"%s\",\"tech\":",
		    i == 0 ? "" : ",", kinds[a->paths[i].kind]);
		sbuf_json_str(sb, a->paths[i].tech);
		sbuf_puts(sb, ",\"url\":");
		sbuf_json_str(sb, a->paths[i].url);
		sbuf_puts(sb, "}");
	}
	sbuf_puts(sb, "],\"meta\":[");
	for (i = 0; i < a->nmeta; i++) {
		sbuf_printf(sb, "%s{\"scope\":", i == 0 ? "" : ",");
		sbuf_json_str(sb, a->meta[i].scope != NULL ?
		    a->meta[i].scope : "");
		sbuf_puts(sb, ",\"schema\":");
		sbuf_json_str(sb, a->meta[i].schema);
		sbuf_puts(sb, ",\"payload\":");
		sbuf_json_str(sb, a->meta[i].payload);
		sbuf_puts(sb, "}");
	}
	sbuf_puts(sb, "]}\n");
}

/* One asset for people. */
static void
asset_print(FILE *f, const struct catalog_asset *a)
{
	static const char *const kinds[] = { "objPath", "objProxyPath",
	    "objMetadataPath" };
	char	created[32], changed[32];
	size_t	i;

	util_iso_ms(a->created_ms, created, sizeof created);
	util_iso_ms(a->changed_ms, changed, sizeof changed);
	fprintf(f, "objID:       %s\nslug:        %s\ntype:        %s\n"
	    "tb:          %s\ndur:         %lld\nrev:         %d\n"
	    "air:         %s\nstatus:      %s%s\ngroup:       %s\n"
	    "abstract:    %s\ndescription: %s\ncreated:     %s by %s\n"
	    "changed:     %s by %s\n", a->obj_id, a->slug, a->type, a->tb,
	    (long long)a->dur, a->rev, a->air, a->status,
	    a->deleted ? " (tombstone)" : "", a->group != NULL ? a->group : "",
	    a->abstract != NULL ? a->abstract : "", a->description,
	    created, a->created_by, changed, a->changed_by);
	for (i = 0; i < a->npaths; i++)
		fprintf(f, "%-13s%s (%s)\n", kinds[a->paths[i].kind],
		    a->paths[i].url, a->paths[i].tech);
	for (i = 0; i < a->nmeta; i++)
		fprintf(f, "metadata:    %s%s%s: %s\n", a->meta[i].schema,
		    a->meta[i].scope != NULL ? " scope " : "",
		    a->meta[i].scope != NULL ? a->meta[i].scope : "",
		    a->meta[i].payload);
}

/* Print a JSON object as "key: value" lines (nested values as JSON). */
static void
asset_api_print(struct mosctl *ctl, json_t *o)
{
	const char	*k;
	json_t		*v;
	char		*s;

	json_object_foreach(o, k, v) {
		if (json_is_string(v))
			fprintf(ctl->out, "%-20s %s\n", k, json_string_value(v));
		else {
			s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			fprintf(ctl->out, "%-20s %s\n", k, s != NULL ? s : "?");
			free(s);
		}
	}
}

/* show over the API: the asset and its delivery per NCS. */
static int
asset_show_api(struct mosctl *ctl, const char *obj_id)
{
	json_t	*o;
	char	*path = asset_api_path(obj_id), *s;
	int	 rc;

	rc = mosctl_api_get_json(ctl, path, &o);
	free(path);
	if (rc != MOSCTL_EXIT_OK)
		return rc;
	if (ctl->json) {
		s = json_dumps(o, JSON_COMPACT);
		fprintf(ctl->out, "%s\n", s);
		free(s);
	} else
		asset_api_print(ctl, o);
	json_decref(o);
	return MOSCTL_EXIT_OK;
}

/* asset show OBJID */
static int
asset_show(struct mosctl *ctl, int argc, char **argv)
{
	struct catalog_asset	 a;
	struct gwdb		*g;
	struct sbuf		 sb = { NULL, 0, 0 };
	int			 rc;

	if (argc != 2) {
		fprintf(ctl->err, "mosctl: asset show needs OBJID\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl->url != NULL)
		return asset_show_api(ctl, argv[1]);
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	rc = catalog_get(g, argv[1], &a);
	if (rc == QUEUE_OK) {
		if (ctl->json) {
			asset_json(&sb, &a);
			fputs(sb.s, ctl->out);
			sbuf_free(&sb);
		} else
			asset_print(ctl->out, &a);
		catalog_asset_clear(&a);
	} else
		fprintf(ctl->err, "mosctl: asset %s: %s\n", argv[1],
		    rc == QUEUE_ENOTFOUND ? "not in the catalog" :
		    queue_strerror(rc));
	gwdb_close(g);
	if (rc == QUEUE_OK)
		return MOSCTL_EXIT_OK;
	return rc == QUEUE_ENOTFOUND ? MOSCTL_EXIT_FAIL : MOSCTL_EXIT_DB;
}

/* Print one page of `asset ls`. */
static void
asset_ls_page(struct mosctl *ctl, const struct catalog_asset *a, size_t n)
{
	struct sbuf	sb = { NULL, 0, 0 };
	char		changed[32];
	size_t		i;

	for (i = 0; i < n; i++) {
		if (ctl->json) {
			sb.len = 0;
			asset_json(&sb, &a[i]);
			fputs(sb.s, ctl->out);
			continue;
		}
		util_iso_ms(a[i].changed_ms, changed, sizeof changed);
		fprintf(ctl->out, "%-24s %4d %-8s %-6s %-24s %s\n", a[i].obj_id,
		    a[i].rev, a[i].status, a[i].type, changed, a[i].slug);
	}
	sbuf_free(&sb);
}

/*
 * ls over the API: pages of GET /v1/assets (no tombstones there), or with
 * query the pages of its search (GET /v1/assets?q=), ranked.
 */
static int
asset_ls_api(struct mosctl *ctl, const char *after0, const char *query,
    int64_t limit)
{
	struct sbuf	 q = { NULL, 0, 0 };
	json_t		*o, *a, *v;
	char		*after = after0 != NULL ? xstrdup(after0) : NULL, *enc;
	char		*s;
	int64_t		 shown = 0, want;
	size_t		 i, n;
	int		 rc = MOSCTL_EXIT_OK;

	if (!ctl->json)
		fprintf(ctl->out, "%-24s %4s %-8s %-6s %-24s %s\n", "OBJID",
		    "REV", "STATUS", "TYPE", "CHANGED", "SLUG");
	while (shown < limit) {
		want = limit - shown < 1000 ? limit - shown : 1000;
		q.len = 0;
		sbuf_printf(&q, "/v1/assets?limit=%lld", (long long)want);
		if (query != NULL) {
			enc = evhttp_uriencode(query, -1, 0);
			sbuf_printf(&q, "&q=%s", enc);
			free(enc);
		}
		if (after != NULL) {
			enc = evhttp_uriencode(after, -1, 0);
			sbuf_printf(&q, "&after=%s", enc);
			free(enc);
		}
		if ((rc = mosctl_api_get_json(ctl, q.s, &o)) != MOSCTL_EXIT_OK)
			break;
		a = json_object_get(o, "assets");
		n = json_array_size(a);
		json_array_foreach(a, i, v) {
			if (ctl->json) {
				s = json_dumps(v, JSON_COMPACT);
				fprintf(ctl->out, "%s\n", s);
				free(s);
				continue;
			}
			fprintf(ctl->out, "%-24s %4lld %-8s %-6s %-24s %s\n",
			    json_string_value(json_object_get(v, "objID")),
			    (long long)json_integer_value(json_object_get(v,
			    "objRev")), json_string_value(json_object_get(v,
			    "status")), json_string_value(json_object_get(v,
			    "objType")), json_string_value(json_object_get(v,
			    "changed")), json_string_value(json_object_get(v,
			    "objSlug")));
		}
		free(after);
		if (query != NULL)	/* a count of results */
			after = json_is_string(json_object_get(o, "next")) ?
			    xstrdup(json_string_value(json_object_get(o,
			    "next"))) : NULL;
		else
			after = n > 0 ? xstrdup(json_string_value(
			    json_object_get(json_array_get(a, n - 1),
			    "objID"))) : NULL;
		json_decref(o);
		shown += (int64_t)n;
		if ((int64_t)n < want || after == NULL)
			break;
	}
	free(after);
	sbuf_free(&q);
	return rc;
}

/* asset import FILE|- : NDJSON to POST /v1/assets:import (--url only). */
static int
asset_import(struct mosctl *ctl, int argc, char **argv)
{
	struct sbuf	 body = { NULL, 0, 0 };
	FILE		*f;
	json_t		*o, *v;
	char		 buf[65536];
	size_t		 n, i;
	int		 rc;

	if (argc != 2) {
		fprintf(ctl->err, "mosctl: asset import needs FILE (or - for "
		    "stdin)\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (ctl->url == NULL) {
		fprintf(ctl->err, "mosctl: asset import goes through the "
		    "daemon: give --url URL and --token-file FILE\n");
		return MOSCTL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-") == 0)
		f = stdin;
	else if ((f = fopen(argv[1], "r")) == NULL) {
		fprintf(ctl->err, "mosctl: %s: %s\n", argv[1],
		    strerror(errno));
		return MOSCTL_EXIT_FAIL;
	}
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		sbuf_add(&body, buf, n);
	if (f != stdin)
		fclose(f);
	rc = mosctl_api_call(ctl, "POST", "/v1/assets:import", NULL,
	    "application/x-ndjson", body.s != NULL ? body.s : "", body.len,
	    &o);
	sbuf_free(&body);
	if (rc != MOSCTL_EXIT_OK)
		return rc;
	if (ctl->json) {
		char	*s = json_dumps(o, JSON_COMPACT);

		fprintf(ctl->out, "%s\n", s);
		free(s);
	} else {
		fprintf(ctl->out, "%lld accepted, %zu refused\n",
		    (long long)json_integer_value(json_object_get(o,
		    "accepted")), json_array_size(json_object_get(o,
		    "refused")));
		json_array_foreach(json_object_get(o, "refused"), i, v) {
			fprintf(ctl->out, "line %lld: %s\n",
			    (long long)json_integer_value(json_object_get(v,
			    "line")), json_string_value(json_object_get(v,
			    "detail")));
		}
	}
	rc = json_array_size(json_object_get(o, "refused")) == 0 ?
	    MOSCTL_EXIT_OK : MOSCTL_EXIT_FAIL;
	json_decref(o);
	return rc;
}

/*
 * asset ls --query TEXT on the database file: the search's ranked
 * results, a page at a time.
 */
static int
asset_ls_query(struct mosctl *ctl, struct gwdb *g, const char *text,
    int64_t limit)
{
	struct catalog_asset	 page[100];
	struct search_query	 q;
	int64_t			 total = 0;
	size_t			 n, i, want;
	char			*err = NULL;
	int			 rc = QUEUE_OK;

	memset(&q, 0, sizeof q);
	q.text = text;
	while (q.offset < limit) {
		want = limit - q.offset < (int64_t)nitems(page) ?
		    (size_t)(limit - q.offset) : nitems(page);
		if ((rc = search_run(g, &q, page, want, &n, &total, &err)) !=
		    QUEUE_OK || n == 0)
			break;
		asset_ls_page(ctl, page, n);
		for (i = 0; i < n; i++)
			catalog_asset_clear(&page[i]);
		q.offset += (int64_t)n;
		if (n < want)
			break;
	}
	if (rc != QUEUE_OK)
		fprintf(ctl->err, "mosctl: asset ls: %s\n", err != NULL ? err :
		    queue_strerror(rc));
	free(err);
	return rc;
}

/* The text of --query: it must have a word to search for. */
static bool
asset_query_ok(struct mosctl *ctl, const char *text)
{
	if (search_has_word(text))
		return true;
	fprintf(ctl->err, "mosctl: asset ls: --query has no word to search "
	    "for (letters or digits)\n");
	return false;
}

/* asset ls [--all] [--after OBJID] [--limit N] | --query TEXT [--limit N] */
static int
asset_ls(struct mosctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "after", required_argument, NULL, 'A' },
		{ "limit", required_argument, NULL, 'l' },
		{ "query", required_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	struct catalog_asset	 page[100];
	struct gwdb		*g;
	char			*after = NULL, *query = NULL;
	bool			 all = false;
	int64_t			 limit = 1000, shown = 0;
	size_t			 n, i, want;
	int			 c, rc = QUEUE_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'a')
			all = true;
		else if (c == 'A')
			asset_set(&after, xstrdup(optarg));
		else if (c == 'q')
			asset_set(&query, xstrdup(optarg));
		else if (c != 'l' || asset_number(ctl, "--limit", optarg,
		    &limit) != 0) {
			free(after);
			free(query);
			return MOSCTL_EXIT_USAGE;
		}
	}
	if (query != NULL && (all || after != NULL)) {
		fprintf(ctl->err, "mosctl: asset ls --query takes --limit "
		    "only (the results of a search are ranked, deleted "
		    "assets are not in them)\n");
		rc = MOSCTL_EXIT_USAGE;
	} else if (query != NULL && !asset_query_ok(ctl, query))
		rc = MOSCTL_EXIT_USAGE;
	if (rc != MOSCTL_EXIT_OK) {
		free(after);
		free(query);
		return rc;
	}
	if (ctl->url != NULL) {
		if (all) {
			fprintf(ctl->err, "mosctl: asset ls --all (deleted "
			    "assets too) works on the database file only\n");
			free(after);
			return MOSCTL_EXIT_USAGE;
		}
		rc = asset_ls_api(ctl, after, query, limit);
		free(after);
		free(query);
		return rc;
	}
	if ((g = mosctl_gwdb_open(ctl)) == NULL) {
		free(after);
		free(query);
		return MOSCTL_EXIT_DB;
	}
	if (!ctl->json)
		fprintf(ctl->out, "%-24s %4s %-8s %-6s %-24s "
		    "%s\n", "OBJID", "REV",
		    "STATUS", "TYPE", "CHANGED", "SLUG");
	if (query != NULL) {
		rc = asset_ls_query(ctl, g, query, limit);
		free(query);
		gwdb_close(g);
		return rc == QUEUE_OK ? MOSCTL_EXIT_OK : MOSCTL_EXIT_DB;
	}
	while (shown < limit) {
		want = limit - shown < (int64_t)nitems(page) ?
		    (size_t)(limit - shown) : nitems(page);
		if ((rc = catalog_list(g, after, all, page, want,
		    &n)) != QUEUE_OK || n == 0)
			break;
		asset_ls_page(ctl, page, n);
		asset_set(&after, xstrdup(page[n - 1].obj_id));
		for (i = 0; i < n; i++)
			catalog_asset_clear(&page[i]);
		shown += (int64_t)n;
		if (n < want)
			break;
	}
	free(after);
	gwdb_close(g);
	if (rc != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: asset ls: %s\n", queue_strerror(rc));
		return MOSCTL_EXIT_DB;
	}
	return MOSCTL_EXIT_OK;
}

/* mosctl asset VERB ... */
int
mosctl_asset(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb verbs[] = {
		{ "put", asset_put },
		{ "delete", asset_delete },
		{ "ls", asset_ls },
		{ "show", asset_show },
		{ "import", asset_import },
		{ "usage", mosctl_ro_asset_usage },
		{ NULL, NULL },
	};

	if (ctl->url != NULL && argc > 0 && strcmp(argv[0], "usage") == 0) {
		fprintf(ctl->err, "mosctl: asset usage works on the database "
		    "file only (--db FILE)\n");
		return MOSCTL_EXIT_USAGE;
	}
	return mosctl_dispatch(ctl, "asset", verbs, mosctl_asset_usage, argc,
	    argv);
}
