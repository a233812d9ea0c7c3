/*
 * Profile 4 towards the NCS: after our upper link comes up (a reconnect or
 * a restart), roReqAll asks which running orders the NCS has; each one
 * listed is asked for with roReq and rebuilt from its roList. A running
 * order the list omits is never deleted, only marked unconfirmed: an NCS
 * that answers with an empty roListAll, or NACKs roReqAll, is normal.
 * (An inbound roReqAll is answered with roListAll by profile2_request.)
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

/* roListAll from the NCS, on its way to the store. */
struct p4_task {
	struct gw	*gw;
	char		*ncs;
	char		**ids;
	size_t		 n;
	int		 rc;
};

static int
p4_run(struct gwdb *g, void *arg)
{
	struct p4_task	*t = arg;

	t->rc = rostore_confirm(g, t->ncs, (const char *const *)t->ids, t->n);
	return t->rc;
}

/* Stored: ask for each running order listed. */
static void
p4_done(void *arg, int rc)
{
	struct p4_task	*t = arg;
	struct ncs	*n;
	size_t		 i;

	log_event(rc == QUEUE_OK ? LL_INFO : LL_WARN, "ro.list_all",
	    "ncs=%s listed=%zu result=%s", log_q(t->ncs), t->n,
	    rc == QUEUE_OK ? "ok" : queue_strerror(rc));
	if ((n = ncs_find_by_name(t->gw, t->ncs)) != NULL)
		for (i = 0; i < t->n; i++)
			profile2_resync(n, t->ids[i]);
	for (i = 0; i < t->n; i++)
		free(t->ids[i]);
	free(t->ids);
	free(t->ncs);
	free(t);
}

/* The answer to our roReqAll. */
static void
p4_req_all_cb(void *arg, struct link_msg *lm, enum link_result res,
    const struct mos_msg *reply)
{
	struct ncs			*n = arg;
	const struct mos_ro_list_all	*la;
	struct p4_task			*t;
	size_t				 i;

	(void)lm;
	if (res != LINK_REPLY)
		return;
	if (reply->type != MOS_T_RO_LIST_ALL) {
		/* a NACK is a normal answer: keep what we hold */
		log_event(LL_INFO, "ro.list_all", "ncs=%s result=%s",
		    log_q(n->conf->name), reply->type == MOS_T_RO_ACK ?
		    log_q(reply->u.ro_ack.ro_status) :
		    log_q(mos_type_name(reply->type)));
		return;
	}
	la = &reply->u.ro_list_all;
	t = xcalloc(1, sizeof *t);
	t->gw = n->gw;
	t->ncs = xstrdup(n->conf->name);
	t->ids = xcalloc(la->ro.n + 1, sizeof *t->ids);
	for (i = 0; i < la->ro.n; i++)
		if (la->ro.v[i].ro_id != NULL && *la->ro.v[i].ro_id != '\0')
			t->ids[t->n++] = xstrdup(la->ro.v[i].ro_id);
	dbw_submit(n->gw->dbw, p4_run, p4_done, t);
}

/* Our upper link to the NCS came up: ask what it has. */
void
profile4_link_up(struct ncs *n)
{
	struct mos_msg	*m;

	m = reply_new(MOS_T_RO_REQ_ALL, n->gw->cfg->mos_id, n->conf->ncs_id,
	    0);
	log_event(LL_INFO, "ro.req_all", "ncs=%s", log_q(n->conf->name));
	ncs_send(n, GW_PORT_UPPER, link_msg_new(m, p4_req_all_cb, n));
}
