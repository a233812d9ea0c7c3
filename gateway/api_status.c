/*
 * Watching the gateway: GET /metrics (Prometheus text, see metrics.c),
 * GET /readyz (no token: listeners open and the database file still there
 * and writable, with a summary per NCS) and the status page GET / (HTML
 * rendered here with a little inline script, no external assets: links,
 * queue, failed jobs with a requeue button for admin, the latest messages,
 * running orders).
 *
 * The page's database part (queue counts, failed jobs, history, running
 * orders) is read on the bookkeeping thread; links are read on the loop.
 * Everything that comes from the database or a peer is HTML-escaped.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gateway/gateway.h"

#define STATUS_FAILED_MAX	50	/* failed jobs on the page */
#define STATUS_HISTORY_MAX	25	/* latest messages on the page */
#define STATUS_PAYLOAD_MAX	120	/* bytes of a job's payload shown */
#define STATUS_HISTORY_SCAN	2000	/* newest history rows looked at */

/* ------------------------------------------------------------------------ */
/* GET /metrics */

static void
metrics_send(void *arg)
{
	struct api_req	*r = arg;
	struct sbuf	 sb = { NULL, 0, 0 };

	metrics_render(api_gw(r), &sb);
	api_reply_body(r, 200, "text/plain; version=0.0.4; charset=utf-8",
	    sb.s, sb.len);
	sbuf_free(&sb);
}

/* GET /metrics (role read). */
void
api_metrics(struct api_req *r)
{
	metrics_refresh(api_gw(r), metrics_send, r);
}

/* ------------------------------------------------------------------------ */
/* GET /readyz */

const char *
api_not_ready(struct gw *gw)
{
	const struct gw_config	*cfg = gw->cfg;
	const char		*why;
	struct stat		 sb;
	struct statvfs		 vfs;
	int			 ports[GW_NPORTS], p;

	if (gw->stopping)
		return "stopping";
	ports[GW_PORT_LOWER] = cfg->lower_port;
	ports[GW_PORT_UPPER] = cfg->upper_port;
	ports[GW_PORT_QUERY] = cfg->query_port;
	for (p = 0; p < GW_NPORTS; p++) {
		if (ports[p] != 0 && gw->listeners[p] == NULL)
			return p == GW_PORT_LOWER ? "lower-listener-closed" :
			    p == GW_PORT_UPPER ? "upper-listener-closed" :
			    "query-listener-closed";
	}
	if (gw->db_lost)
		return "database-lost";
	/* a server, not a file: its loss is db_lost */
	if (cfg->db_driver == STORE_POSTGRESQL)
		return NULL;
	if ((why = gwdb_hold_lost(&gw->hold, cfg->db_path)) != NULL)
		return strcmp(why, "unlinked") == 0 ? "database-removed" :
		    strcmp(why, "replaced") == 0 ? "database-replaced" :
		    "database-unreadable";
	if (stat(cfg->db_path, &sb) == -1)
		return "database-unreadable";
	/* the write bits too: root may write what is marked read-only */
	if ((sb.st_mode & 0222) == 0 || access(cfg->db_path, W_OK) != 0)
		return "database-read-only";
	if (statvfs(cfg->db_path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
		return "database-read-only-filesystem";
	return NULL;
}

/* The links of an NCS as JSON. */
static json_t *
readyz_links(struct ncs *n)
{
	json_t		*a = json_array();
	struct link	*l;
	int		 t, p;

	for (t = 0; t < 2; t++) {
		for (p = 0; p < 2; p++) {
			if ((l = n->link[t][p]) == NULL)
				continue;
			json_array_append_new(a, json_pack("{s:s, s:s, s:s, "
			    "s:s}", "port", gw_port_name(l->port), "target",
			    t == 0 ? "primary" : "buddy", "state",
			    link_state_name(l->state), "reason", l->reason));
		}
	}
	if ((l = n->qlink) != NULL)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s}",
		    "port", "query", "target", "primary", "state",
		    link_state_name(l->state), "reason", l->reason));
	return a;
}

/* "up" when the active target's lower and upper links are up. */
static const char *
readyz_ncs_state(struct ncs *n)
{
	struct link	*lo = n->link[n->active][0], *up = n->link[n->active][1];

	if (lo == NULL || up == NULL)
		return "down";
	if (lo->state == LINK_UP && up->state == LINK_UP)
		return "up";
	if (link_is_up(lo) || link_is_up(up))
		return "degraded";
	return "down";
}

/* GET /readyz: no token. */
void
api_readyz(struct api_req *r)
{
	struct gw	*gw = api_gw(r);
	struct ncs	*n;
	const char	*why = api_not_ready(gw);
	json_t		*o, *a = json_array();

	for (n = TAILQ_FIRST(&gw->ncs); n != NULL; n = TAILQ_NEXT(n, entry))
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}",
		    "name", n->conf->name, "state", readyz_ncs_state(n),
		    "active", n->active == 0 ? "primary" : "buddy", "links",
		    readyz_links(n)));
	o = json_pack("{s:s, s:o}", "status", why == NULL ? "ready" :
	    "not-ready", "ncs", a);
	if (why != NULL)
		json_object_set_new(o, "reason", json_string(why));
	api_reply_json(r, why == NULL ? 200 : 503, o);
}

/* ------------------------------------------------------------------------ */
/* GET /: the status page */

/* A message of the history, without its XML. */
struct page_msg {
	int64_t		 t_ms;
	char		 ncs[64];
	char		 port[8];
	char		 dir[4];
	int32_t		 message_id;
	char		 type[64];
	char		 outcome[64];
};

struct page_task {
	struct api_req		*r;
	struct queue_stats	 st;
	struct queue_job	*failed;
	size_t			 nfailed;
	struct page_msg		 hist[STATUS_HISTORY_MAX];
	size_t			 nhist;
	int64_t			 heartbeats;	/* left out of hist */
	struct rostore_row	*ros;
	size_t			 nros;
};

/* A text column into a buffer ("" for NULL). */
static void
page_col(struct store_stmt *st, int i, char *buf, size_t len)
{
	const char	*s = store_column_text(st, i);

	util_strlcpy(buf, s != NULL ? s : "", len);
}

/*
 * The latest messages but heartbeats (counted instead), among the newest
 * STATUS_HISTORY_SCAN rows, without their XML.
 */
static int
page_history_run(struct gwdb *g, struct page_task *t)
{
	struct store_stmt	*st;
	struct page_msg	*m;
	int		 rc;

	if ((rc = store_prepare(g->db, "SELECT t_ms, ncs, port, dir, "
	    "message_id, type, outcome FROM history WHERE id > (SELECT "
	    "coalesce(max(id), 0) FROM history) - ?1 ORDER BY id DESC", 0,
	    &st)) != STORE_OK)
		return gwdb_rc(rc);
	store_bind_int(st, 1, STATUS_HISTORY_SCAN);
	while ((rc = store_step(st)) == STORE_ROW) {
		if (strcmp(store_column_text(st, 5),
		    "heartbeat") == 0) {
			t->heartbeats++;
			continue;
		}
		if (t->nhist == STATUS_HISTORY_MAX)
			continue;
		m = &t->hist[t->nhist++];
		m->t_ms = store_column_int64(st, 0);
		page_col(st, 1, m->ncs, sizeof m->ncs);
		page_col(st, 2, m->port, sizeof m->port);
		page_col(st, 3, m->dir, sizeof m->dir);
		m->message_id = store_column_int(st, 4);
		page_col(st, 5, m->type, sizeof m->type);
		page_col(st, 6, m->outcome, sizeof m->outcome);
	}
	store_finalize(st);
	return rc == STORE_DONE ? QUEUE_OK : gwdb_rc(rc);
}

/* On the bookkeeping thread: what the page shows from the database. */
static int
page_run(struct gwdb *g, void *arg)
{
	struct page_task	*t = arg;
	struct queue_filter	 qf;
	int			 rc;

	if ((rc = queue_stats(g->q, &t->st)) != QUEUE_OK)
		return rc;
	memset(&qf, 0, sizeof qf);
	qf.state = QUEUE_FAILED;
	qf.limit = STATUS_FAILED_MAX;
	if ((rc = queue_list(g->q, &qf, &t->failed, &t->nfailed)) != QUEUE_OK)
		return rc;
	if ((rc = page_history_run(g, t)) != QUEUE_OK)
		return rc;
	return rostore_list(g, NULL, &t->ros, &t->nros);
}

/* Text as HTML (element content and quoted attribute values). */
static void
html(struct sbuf *sb, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		switch (*s) {
		case '&': sbuf_puts(sb, "&amp;"); break;
		case '<': sbuf_puts(sb, "&lt;"); break;
		case '>': sbuf_puts(sb, "&gt;"); break;
		case '"': sbuf_puts(sb, "&quot;"); break;
		case '\'': sbuf_puts(sb, "&#39;"); break;
		default: sbuf_add(sb, s, 1);
		}
	}
}

/* Bytes that may be anything: control characters as \xNN, then HTML. */
static void
html_bytes(struct sbuf *sb, const char *s, size_t len)
{
	struct sbuf	e = { NULL, 0, 0 };

	sbuf_escape(&e, s, len);
	html(sb, e.s);
	sbuf_free(&e);
}

/* A wall-clock time in ms: "2026-12-01 10:00:00", ISO in its title. */
static void
html_time(struct sbuf *sb, int64_t ms)
{
	char	iso[40];

	if (ms <= 0) {
		sbuf_puts(sb, "&ndash;");
		return;
	}
	util_iso_ms(ms, iso, sizeof iso);
	sbuf_printf(sb, "<time datetime=\"%s\" title=\"%s\">%.10s %.8s"
	    "</time>", iso, iso, iso, iso + 11);
}

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, "
    "initial-scale=1\">\n<title>mosgw status</title>\n<style>\n"
    "body{font-family:system-ui,sans-serif;margin:0;padding:.5rem 1rem;"
    "color:#222;background:#fafafa}\n"
    "h1{font-size:1.3rem;margin:.3rem 0}h2{font-size:1.1rem;"
    "margin:1.2rem 0 .4rem}\n"
    ".wrap{overflow-x:auto}table{border-collapse:collapse;width:100%;"
    "font-size:.9rem}\n"
    "th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid "
    "#ddd;vertical-align:top}\n"
    "th{background:#eee}.st{font-weight:600}.up{color:#176f2c}"
    ".degraded,.connecting{color:#9a6700}.down{color:#b3261e}"
    ".sleeping{color:#666}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:.5rem}.card{background:#fff;"
    "border:1px solid #ddd;border-radius:6px;padding:.4rem .7rem;"
    "min-width:6rem}\n"
    ".card b{display:block;font-size:1.2rem}button{font-size:1rem;"
    "padding:.3rem .8rem}\n"
    ".small{color:#666;font-size:.85rem}#msg{margin:.2rem 0;"
    "min-height:1.2rem}\n"
    "@media (max-width:600px){body{padding:.3rem .5rem}"
    "th,td{padding:.25rem .3rem;font-size:.8rem}}\n"
    "</style></head><body>\n";

/*
 * The requeue buttons call POST /v1/jobs/{id}/requeue with the page's own
 * credentials (the browser sends them again), then reload the page.
 */
static const char page_script[] =
    "<script>\n"
    "document.addEventListener('click', function (e) {\n"
    "  var b = e.target.closest('button.requeue');\n"
    "  if (!b) return;\n"
    "  var id = b.getAttribute('data-job'), msg = "
    "document.getElementById('msg');\n"
    "  b.disabled = true;\n"
    "  fetch('/v1/jobs/' + encodeURIComponent(id) + '/requeue', {method: "
    "'POST', credentials: 'same-origin', headers: {'Content-Type': "
    "'application/json'}, body: '{}'})\n"
    "  .then(function (r) {\n"
    "    if (r.ok) { msg.textContent = 'Job ' + id + ' requeued.';\n"
    "      var c = document.getElementById('state-' + id);\n"
    "      if (c) c.textContent = 'QUEUED';\n"
    "      setTimeout(function () { location.reload(); }, 1500); }\n"
    "    else return r.json().then(function (p) { b.disabled = false;\n"
    "      msg.textContent = 'Job ' + id + ': ' + (p.detail || r.status); "
    "});\n"
    "  }).catch(function (err) { b.disabled = false; msg.textContent = "
    "'Job ' + id + ': ' + err; });\n"
    "});\n"
    "</script>\n";

/* The NCS links, from the loop. */
static void
page_links(struct sbuf *sb, struct gw *gw)
{
	struct ncs	*n;
	struct link	*l;
	int		 t, p;
	int64_t		 now = util_now_ms();

	sbuf_puts(sb, "<h2>NCS links</h2>\n<div class=\"wrap\"><table "
	    "id=\"links\"><tr><th>NCS</th><th>Port</th><th>Target</th>"
	    "<th>State</th><th>Last heartbeat</th><th>Peer</th></tr>\n");
	TAILQ_FOREACH(n, &gw->ncs, entry) {
		for (t = 0; t < 2; t++) {
			for (p = 0; p < 3; p++) {
				l = p < 2 ? n->link[t][p] : t == 0 ? n->qlink :
				    NULL;
				if (l == NULL)
					continue;
				sbuf_puts(sb, "<tr><td>");
				html(sb, n->conf->name);
				sbuf_printf(sb, "</td><td>%s</td><td>%s%s</td>"
				    "<td class=\"st %s\">%s", gw_port_name(
				    l->port), t == 0 ? "primary" : "buddy",
				    n->active == t ? " (active)" : "",
				    link_state_name(l->state),
				    link_state_name(l->state));
				if (l->reason[0] != '\0') {
					sbuf_puts(sb, " <span class=\"small\">");
					html(sb, l->reason);
					sbuf_puts(sb, "</span>");
				}
				sbuf_puts(sb, "</td><td>");
				if (l->hb_ok_ms > 0) {
					html_time(sb, l->hb_ok_ms);
					sbuf_printf(sb, " <span class=\"small\">"
					    "(%llds ago)</span>", (long long)
					    ((now - l->hb_ok_ms) / 1000));
				} else
					sbuf_puts(sb, "&ndash;");
				sbuf_puts(sb, "</td><td>");
				html(sb, link_host(l));
				sbuf_printf(sb, ":%d</td></tr>\n",
				    link_port_number(l));
			}
		}
	}
	sbuf_puts(sb, "</table></div>\n");
}

/* Queue counts and the failed jobs. */
static void
page_queue(struct sbuf *sb, const struct page_task *t, bool admin)
{
	const struct queue_job	*j;
	size_t			 i;
	int			 s;

	sbuf_puts(sb, "<h2>Queue</h2>\n<div class=\"cards\" id=\"queue\">");
	for (s = 0; s < 5; s++)
		sbuf_printf(sb, "<div class=\"card\">%s<b>%lld</b></div>",
		    queue_state_name((enum queue_state)s),
		    (long long)t->st.count[s]);
	sbuf_printf(sb, "<div class=\"card\">oldest due<b>%.1f s</b></div>"
	    "</div>\n", (double)t->st.oldest_due_age_ms / 1000);
	/* the button first: a phone shows the left of a wide table */
	sbuf_puts(sb, "<h2>Failed jobs</h2>\n<p id=\"msg\" role=\"status\">"
	    "</p>\n<div class=\"wrap\"><table id=\"failed\"><tr><th>Job</th>"
	    "<th>Lane</th><th>Kind</th><th>Payload</th><th>Attempts</th>"
	    "<th>Last error</th><th>Updated</th><th>State</th></tr>\n");
	for (i = 0; i < t->nfailed; i++) {
		j = &t->failed[i];
		sbuf_printf(sb, "<tr><td>%lld", (long long)j->id);
		if (admin)
			sbuf_printf(sb, "<br><button class=\"requeue\" "
			    "data-job=\"%lld\">Requeue</button>",
			    (long long)j->id);
		sbuf_puts(sb, "</td><td>");
		html(sb, j->lane);
		sbuf_puts(sb, "</td><td>");
		html(sb, j->kind);
		sbuf_puts(sb, "</td><td>");
		if (j->payload != NULL)
			html_bytes(sb, j->payload, j->payload_len <
			    STATUS_PAYLOAD_MAX ? j->payload_len :
			    STATUS_PAYLOAD_MAX);
		sbuf_printf(sb, "</td><td>%d/%d</td><td>", j->attempts,
		    j->max_attempts);
		html(sb, j->last_error);
		sbuf_puts(sb, "</td><td>");
		html_time(sb, j->updated_ms);
		sbuf_printf(sb, "</td><td id=\"state-%lld\">FAILED</td></tr>\n",
		    (long long)j->id);
	}
	if (t->nfailed == 0)
		sbuf_puts(sb, "<tr><td colspan=\"8\">none</td></tr>\n");
	sbuf_puts(sb, "</table></div>\n");
}

/* The latest messages and the running orders. */
static void
page_history(struct sbuf *sb, const struct page_task *t)
{
	const struct page_msg		*h;
	const struct rostore_row	*ro;
	size_t				 i;

	sbuf_puts(sb, "<h2>Latest messages</h2>\n");
	if (t->heartbeats > 0)
		sbuf_printf(sb, "<p class=\"small\">%lld heartbeats among the "
		    "newest %d messages are not shown.</p>\n",
		    (long long)t->heartbeats, STATUS_HISTORY_SCAN);
	sbuf_puts(sb, "<div class=\"wrap\"><table "
	    "id=\"history\"><tr><th>Time</th><th>NCS</th><th>Port</th>"
	    "<th>Dir</th><th>Type</th><th>messageID</th><th>Outcome</th>"
	    "</tr>\n");
	for (i = 0; i < t->nhist; i++) {
		h = &t->hist[i];
		sbuf_puts(sb, "<tr><td>");
		html_time(sb, h->t_ms);
		sbuf_puts(sb, "</td><td>");
		html(sb, h->ncs);
		sbuf_puts(sb, "</td><td>");
		html(sb, h->port);
		sbuf_puts(sb, "</td><td>");
		html(sb, h->dir);
		sbuf_puts(sb, "</td><td>");
		html(sb, h->type);
		sbuf_printf(sb, "</td><td>%d</td><td>", (int)h->message_id);
		html(sb, h->outcome);
		sbuf_puts(sb, "</td></tr>\n");
	}
	if (t->nhist == 0)
		sbuf_puts(sb, "<tr><td colspan=\"7\">none recorded</td>"
		    "</tr>\n");
	sbuf_puts(sb, "</table></div>\n<h2>Running orders</h2>\n<div "
	    "class=\"wrap\"><table id=\"ros\"><tr><th>NCS</th><th>roID</th>"
	    "<th>Slug</th><th>Stories</th><th>Items</th><th>Air</th>"
	    "<th>Changed</th></tr>\n");
	for (i = 0; i < t->nros; i++) {
		ro = &t->ros[i];
		sbuf_puts(sb, "<tr><td>");
		html(sb, ro->ncs);
		sbuf_puts(sb, "</td><td>");
		html(sb, ro->ro_id);
		sbuf_puts(sb, "</td><td>");
		html(sb, ro->slug);
		sbuf_printf(sb, "</td><td>%lld</td><td>%lld</td><td>",
		    (long long)ro->nstories, (long long)ro->nitems);
		html(sb, ro->air);
		sbuf_puts(sb, "</td><td>");
		html_time(sb, ro->changed_ms);
		sbuf_puts(sb, "</td></tr>\n");
	}
	if (t->nros == 0)
		sbuf_puts(sb, "<tr><td colspan=\"7\">none</td></tr>\n");
	sbuf_puts(sb, "</table></div>\n");
}

static void
page_task_free(struct page_task *t)
{
	queue_jobs_free(t->failed, t->nfailed);
	rostore_rows_free(t->ros, t->nros);
	free(t);
}

/* Back on the loop: render. */
static void
page_done(void *arg, int rc)
{
	struct page_task	*t = arg;
	struct api_req		*r = t->r;
	struct gw		*gw = api_gw(r);
	struct sbuf		 sb = { NULL, 0, 0 };
	const char		*why = api_not_ready(gw);
	bool			 admin = r->role >= API_ADMIN;

	if (rc != QUEUE_OK) {
		api_problem_db(r, rc, NULL);
		page_task_free(t);
		return;
	}
	sbuf_puts(&sb, page_head);
	sbuf_puts(&sb, "<h1>mosgw ");
	html(&sb, gw->cfg->mos_id);
	sbuf_puts(&sb, "</h1>\n<p class=\"small\">version " MOSGW_VERSION
	    ", started ");
	html_time(&sb, gw->started_ms);
	sbuf_printf(&sb, ", <span id=\"ready\" class=\"st %s\">%s</span>",
	    why == NULL ? "up" : "down", why == NULL ? "ready" : "not ready: ");
	if (why != NULL)
		html(&sb, why);
	sbuf_puts(&sb, " &middot; signed in as ");
	html(&sb, r->who);
	sbuf_printf(&sb, " (%s) &middot; <a href=\"/\">reload</a></p>\n",
	    api_role_name(r->role));
	page_links(&sb, gw);
	page_queue(&sb, t, admin);
	page_history(&sb, t);
	if (admin)
		sbuf_puts(&sb, page_script);
	sbuf_puts(&sb, "</body></html>\n");
	api_reply_body(r, 200, "text/html; charset=utf-8", sb.s, sb.len);
	sbuf_free(&sb);
	page_task_free(t);
}

/* GET / (role read; requeue buttons for admin). */
void
api_status_page(struct api_req *r)
{
	struct page_task	*t;

	t = xcalloc(1, sizeof *t);
	t->r = r;
	dbw_submit(api_gw(r)->dbw, page_run, page_done, t);
}
