/* Profile 0: heartbeat and reqMachInfo, answered at once on the same socket. */
#include "gateway/gateway.h"

/* The ncsID to answer with: the request's, else the NCS's own. */
static const char *
profile0_ncs_id(struct ncs *ncs, const struct mos_msg *m)
{
	if (m->ncs_id != NULL && *m->ncs_id != '\0')
		return m->ncs_id;
	return ncs->conf->ncs_id;
}

/* heartbeat -> heartbeat with our time and the same messageID. */
void
profile0_heartbeat(struct gw *gw, struct conn *c, struct ncs *ncs,
    const struct mos_msg *m)
{
	dispatch_reply(c, reply_heartbeat(gw->cfg->mos_id, profile0_ncs_id(ncs,
	    m), m->has_message_id ? m->message_id : 0), "reply");
}

/* reqMachInfo -> listMachInfo. */
void
profile0_req_mach_info(struct gw *gw, struct conn *c, struct ncs *ncs,
    const struct mos_msg *m)
{
	dispatch_reply(c, reply_list_mach_info(gw->cfg, profile0_ncs_id(ncs, m),
	    m->has_message_id ? m->message_id : 0, gw->started_ms), "reply");
}
