/*
 * mosctl ro: the running orders the gateway holds, as the NCSs sent them
 * (ls, show), and `asset usage`: which running orders, stories and items
 * use an asset.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "tools/mosctl.h"

/* Usage of the ro commands. */
void
mosctl_ro_usage(FILE *f)
{
	fprintf(f,
	    "  ro ls [--ncs NAME]\n"
	    "  ro show ROID [--ncs NAME]\n");
}

/* A string or "" as a JSON value. */
static void
ro_json_str(struct sbuf *sb, const char *key, const char *s, bool comma)
{
	sbuf_printf(sb, "%s\"%s\":", comma ? "," : "", key);
	sbuf_json_str(sb, s != NULL ? s : "");
}

/* The --ncs option, the only one these commands take. */
static int
ro_options(struct mosctl *ctl, int argc, char **argv, const char **ncs)
{
	static const struct option longopts[] = {
		{ "ncs", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int	c;

	*ncs = NULL;
	optind = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'n') {
			mosctl_ro_usage(ctl->err);
			return -1;
		}
		*ncs = optarg;
	}
	return 0;
}

/* ro ls [--ncs NAME] */
static int
ro_ls(struct mosctl *ctl, int argc, char **argv)
{
	struct rostore_row	*r;
	struct gwdb		*g;
	struct sbuf		 sb = { NULL, 0, 0 };
	const char		*ncs;
	char			 changed[32];
	size_t			 n, i;
	int			 rc;

	if (ro_options(ctl, argc, argv, &ncs) != 0 || optind != argc)
		return MOSCTL_EXIT_USAGE;
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	if ((rc = rostore_list(g, ncs, &r, &n)) != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: ro ls: %s\n", queue_strerror(rc));
		gwdb_close(g);
		return MOSCTL_EXIT_DB;
	}
	for (i = 0; i < n; i++) {
		util_iso_ms(r[i].changed_ms, changed, sizeof changed);
		if (ctl->json) {
			sb.len = 0;
			sbuf_puts(&sb, "{");
			ro_json_str(&sb, "ncs", r[i].ncs, false);
			ro_json_str(&sb, "ro_id", r[i].ro_id, true);
			ro_json_str(&sb, "slug", r[i].slug, true);
			ro_json_str(&sb, "air", r[i].air, true);
			sbuf_printf(&sb, ",\"confirmed\":%s,\"stories\":%lld,"
			    "\"items\":%lld", r[i].confirmed ? "true" : "false",
			    (long long)r[i].nstories, (long long)r[i].nitems);
			ro_json_str(&sb, "changed", changed, true);
			sbuf_puts(&sb, "}\n");
			fputs(sb.s, ctl->out);
		} else
			fprintf(ctl->out, "%-12s %-24s %5lld stories %6lld items "
			    "%-9s %-11s %s  %s\n", r[i].ncs, r[i].ro_id,
			    (long long)r[i].nstories, (long long)r[i].nitems,
			    r[i].air[0] != '\0' ? r[i].air : "-",
			    r[i].confirmed ? "confirmed" : "unconfirmed",
			    changed, r[i].slug);
	}
	sbuf_free(&sb);
	rostore_rows_free(r, n);
	gwdb_close(g);
	return MOSCTL_EXIT_OK;
}

/* The NCS holding a running order when --ncs is not given: the only one. */
static int
ro_which_ncs(struct mosctl *ctl, struct gwdb *g, const char *ro_id,
    char **ncs)
{
	struct rostore_row	*r;
	size_t			 n, i, found = 0;
	int			 rc;

	*ncs = NULL;
	if ((rc = rostore_list(g, NULL, &r, &n)) != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: ro: %s\n", queue_strerror(rc));
		return MOSCTL_EXIT_DB;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].ro_id, ro_id) != 0)
			continue;
		if (found++ == 0)
			*ncs = xstrdup(r[i].ncs);
	}
	rostore_rows_free(r, n);
	if (found == 1)
		return MOSCTL_EXIT_OK;
	free(*ncs);
	*ncs = NULL;
	if (found == 0)
		fprintf(ctl->err, "mosctl: ro %s: no such running order\n",
		    ro_id);
	else
		fprintf(ctl->err, "mosctl: ro %s: held for %zu NCSs, give "
		    "--ncs NAME\n", ro_id, found);
	return MOSCTL_EXIT_FAIL;
}

/* One item as JSON. */
static void
ro_item_json(struct sbuf *sb, const struct mos_item *it)
{
	sbuf_puts(sb, "{");
	ro_json_str(sb, "item_id", it->item_id, false);
	ro_json_str(sb, "obj_id", it->obj_id, true);
	ro_json_str(sb, "mos_id", it->mos_id, true);
	ro_json_str(sb, "slug", it->item_slug, true);
	ro_json_str(sb, "channel", it->item_channel, true);
	if (it->has_item_ed_start)
		sbuf_printf(sb, ",\"ed_start\":%u", it->item_ed_start);
	if (it->has_item_ed_dur)
		sbuf_printf(sb, ",\"ed_dur\":%u", it->item_ed_dur);
	if (it->has_item_user_timing_dur)
		sbuf_printf(sb, ",\"user_timing_dur\":%u",
		    it->item_user_timing_dur);
	sbuf_puts(sb, "}");
}

/* A running order as text or JSON. */
static void
ro_print(struct mosctl *ctl, const char *ncs, const struct mos_ro *ro,
    const struct rostore_info *info)
{
	const struct mos_story	*s;
	const struct mos_item	*it;
	struct sbuf		 sb = { NULL, 0, 0 };
	char			 changed[32];
	size_t			 i, j;

	util_iso_ms(info->changed_ms, changed, sizeof changed);
	if (!ctl->json) {
		fprintf(ctl->out, "ro %s (ncs %s) \"%s\" air %s, %s, changed "
		    "%s\n", ro->ro_id, ncs, ro->ro_slug != NULL ? ro->ro_slug :
		    "", info->air[0] != '\0' ? info->air : "-",
		    info->confirmed ? "confirmed" : "unconfirmed", changed);
		for (i = 0; i < ro->story.n; i++) {
			s = &ro->story.v[i];
			fprintf(ctl->out, "%4zu %-20s \"%s\"\n", i + 1,
			    s->story_id, s->story_slug != NULL ?
			    s->story_slug : "");
			for (j = 0; j < s->item.n; j++) {
				it = &s->item.v[j];
				fprintf(ctl->out, "     %3zu %-16s obj %-16s "
				    "mos %-12s ch %-4s \"%s\"\n", j + 1,
				    it->item_id, it->obj_id != NULL ?
				    it->obj_id : "", it->mos_id != NULL ?
				    it->mos_id : "", it->item_channel != NULL ?
				    it->item_channel : "-", it->item_slug !=
				    NULL ? it->item_slug : "");
			}
		}
		return;
	}
	sbuf_puts(&sb, "{");
	ro_json_str(&sb, "ncs", ncs, false);
	ro_json_str(&sb, "ro_id", ro->ro_id, true);
	ro_json_str(&sb, "slug", ro->ro_slug, true);
	ro_json_str(&sb, "air", info->air, true);
	sbuf_printf(&sb, ",\"confirmed\":%s", info->confirmed ? "true" :
	    "false");
	ro_json_str(&sb, "changed", changed, true);
	sbuf_puts(&sb, ",\"stories\":[");
	for (i = 0; i < ro->story.n; i++) {
		s = &ro->story.v[i];
		sbuf_puts(&sb, i > 0 ? ",{" : "{");
		ro_json_str(&sb, "story_id", s->story_id, false);
		ro_json_str(&sb, "slug", s->story_slug, true);
		sbuf_puts(&sb, ",\"items\":[");
		for (j = 0; j < s->item.n; j++) {
			if (j > 0)
				sbuf_puts(&sb, ",");
			ro_item_json(&sb, &s->item.v[j]);
		}
		sbuf_puts(&sb, "]}");
	}
	sbuf_puts(&sb, "]}\n");
	fputs(sb.s, ctl->out);
	sbuf_free(&sb);
}

/* ro show ROID [--ncs NAME] */
static int
ro_show(struct mosctl *ctl, int argc, char **argv)
{
	struct rostore_info	 info;
	struct mos_msg		*m;
	struct gwdb		*g;
	const char		*ncs_opt, *ro_id;
	char			*ncs = NULL;
	int			 rc, ex = MOSCTL_EXIT_OK;

	if (ro_options(ctl, argc, argv, &ncs_opt) != 0)
		return MOSCTL_EXIT_USAGE;
	if (optind != argc - 1) {
		fprintf(ctl->err, "mosctl: ro show needs ROID\n");
		return MOSCTL_EXIT_USAGE;
	}
	ro_id = argv[optind];
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	if (ncs_opt != NULL)
		ncs = xstrdup(ncs_opt);
	else if ((ex = ro_which_ncs(ctl, g, ro_id, &ncs)) != MOSCTL_EXIT_OK) {
		gwdb_close(g);
		return ex;
	}
	rc = rostore_get(g, ncs, ro_id, &m, &info);
	if (rc == QUEUE_OK) {
		ro_print(ctl, ncs, &m->u.ro_list, &info);
		mos_msg_free(m);
	} else {
		fprintf(ctl->err, "mosctl: ro %s: %s\n", ro_id,
		    rc == QUEUE_ENOTFOUND ? "no such running order" :
		    queue_strerror(rc));
		ex = rc == QUEUE_ENOTFOUND ? MOSCTL_EXIT_FAIL : MOSCTL_EXIT_DB;
	}
	free(ncs);
	gwdb_close(g);
	return ex;
}

/* asset usage OBJID: where an asset is used. */
int
mosctl_ro_asset_usage(struct mosctl *ctl, int argc, char **argv)
{
	struct rostore_use	*u;
	struct gwdb		*g;
	struct sbuf		 sb = { NULL, 0, 0 };
	size_t			 n, i;
	int			 rc;

	if (argc != 2) {
		fprintf(ctl->err, "mosctl: asset usage needs OBJID\n");
		return MOSCTL_EXIT_USAGE;
	}
	if ((g = mosctl_gwdb_open(ctl)) == NULL)
		return MOSCTL_EXIT_DB;
	if ((rc = rostore_usage(g, argv[1], &u, &n)) != QUEUE_OK) {
		fprintf(ctl->err, "mosctl: asset usage: %s\n",
		    queue_strerror(rc));
		gwdb_close(g);
		return MOSCTL_EXIT_DB;
	}
	for (i = 0; i < n; i++) {
		if (ctl->json) {
			sb.len = 0;
			sbuf_puts(&sb, "{");
			ro_json_str(&sb, "ncs", u[i].ncs, false);
			ro_json_str(&sb, "ro_id", u[i].ro_id, true);
			ro_json_str(&sb, "story_id", u[i].story_id, true);
			ro_json_str(&sb, "item_id", u[i].item_id, true);
			ro_json_str(&sb, "slug", u[i].slug, true);
			ro_json_str(&sb, "channel", u[i].channel, true);
			sbuf_puts(&sb, "}\n");
			fputs(sb.s, ctl->out);
		} else
			fprintf(ctl->out, "%-12s %-24s %-20s %-16s %-4s %s\n",
			    u[i].ncs, u[i].ro_id, u[i].story_id, u[i].item_id,
			    u[i].channel[0] != '\0' ? u[i].channel : "-",
			    u[i].slug);
	}
	if (n == 0 && !ctl->json)
		fprintf(ctl->out, "asset %s is in no running order\n",
		    argv[1]);
	sbuf_free(&sb);
	rostore_uses_free(u, n);
	gwdb_close(g);
	return MOSCTL_EXIT_OK;
}

int
mosctl_ro(struct mosctl *ctl, int argc, char **argv)
{
	static const struct mosctl_verb verbs[] = {
		{ "ls", ro_ls },
		{ "show", ro_show },
		{ NULL, NULL },
	};

	return mosctl_dispatch(ctl, "ro", verbs, mosctl_ro_usage, argc, argv);
}
