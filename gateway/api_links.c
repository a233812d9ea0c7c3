/*
 * /v1/links: the state of our links to every NCS, read from the link
 * structures on the loop (no database): per NCS, port (lower, upper,
 * query) and target (primary, buddy), with the instance that owns the
 * NCS's links (owner.c).
 */
#include <stdlib.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "mosxml/mosxml.h"

/* A monotonic instant as wall-clock ISO 8601 text; JSON null for 0. */
static json_t *
links_time(int64_t mono, int64_t now_wall, int64_t now_mono)
{
	char	buf[40];

	if (mono <= 0)
		return json_null();
	util_iso_ms(now_wall - (now_mono - mono), buf, sizeof buf);
	return json_string(buf);
}

/* Who owns the NCS's outbound links (owner.c), as far as known. */
static json_t *
links_owner(struct gw *gw, const struct ncs *n)
{
	char	holder[80];
	int64_t	epoch;
	json_t	*o;

	owner_info(gw->owner, n, holder, sizeof holder, &epoch);
	o = json_pack("{s:s?, s:I, s:b}", "instance", holder[0] != '\0' ?
	    holder : NULL, "epoch", (json_int_t)epoch, "ours", n->owned);
	if (o == NULL)
		fatalx("json_pack failed");
	return o;
}

/* One link as a JSON object. */
static json_t *
links_one(const struct link *l, bool active, int64_t wall, int64_t mono)
{
	const struct ncs	*n = l->ncs;
	const struct link_msg	*lm = l->inflight;
	json_t			*o, *fl = json_null(), *hb;
	bool			 hb_on = n->conf->heartbeat_ms > 0 &&
	    l->port != GW_PORT_QUERY;

	if (lm != NULL && lm->message_id != 0)
		fl = json_pack("{s:i, s:s, s:o, s:i}", "messageID",
		    (int)lm->message_id, "type", l->inflight_hb ? "heartbeat" :
		    mos_type_name(lm->type), "since", links_time(l->sent_mono,
		    wall, mono), "tries", lm->tries);
	hb = json_pack("{s:o, s:o, s:I}",
	    "lastSent", hb_on && l->ups > 0 ? links_time(l->hb_last_mono, wall,
	    mono) : json_null(),
	    "lastReceived", links_time(l->hb_rx_mono, wall, mono),
	    "answered", (json_int_t)l->hb_ok);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:s, s:o, s:s?, "
	    "s:s?, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:i}}",
	    "ncs", n->conf->name,
	    "ncsID", ncs_wire_id(n, l->target),
	    "port", gw_port_name(l->port),
	    "target", l->target == 0 ? "primary" : "buddy",
	    "host", link_host(l),
	    "portNumber", link_port_number(l),
	    "active", active,
	    "state", link_state_name(l->state),
	    "since", links_time(l->since_mono, wall, mono),
	    "why", l->reason[0] != '\0' ? l->reason : NULL,
	    "lastError", l->last_error[0] != '\0' ? l->last_error : NULL,
	    "heartbeat", hb,
	    "inFlight", fl,
	    "counts",
	    "connects", (json_int_t)l->ups,
	    "sent", (json_int_t)l->msgs_sent,
	    "acks", (json_int_t)l->acks,
	    "nacks", (json_int_t)l->nacks,
	    "timeouts", (json_int_t)l->timeouts,
	    "failuresInARow", l->failures);
	if (o == NULL)
		fatalx("json_pack failed");
	json_object_set_new(o, "owner", links_owner(n->gw, n));
	return o;
}

/* GET /v1/links */
void
api_links(struct api_req *r)
{
	struct gw	*gw = api_gw(r);
	struct ncs	*n;
	json_t		*a = json_array();
	int64_t		 wall = util_now_ms(), mono = util_mono_ms();
	int		 t, p, active;

	TAILQ_FOREACH(n, &gw->ncs, entry) {
		active = n->active;
		for (t = 0; t < 2; t++) {
			for (p = 0; p < 2; p++) {
				if (n->link[t][p] != NULL)
					json_array_append_new(a, links_one(
					    n->link[t][p], t == active, wall,
					    mono));
			}
		}
		if (n->qlink != NULL)
			json_array_append_new(a, links_one(n->qlink,
			    active == 0, wall, mono));
	}
	api_reply_json(r, 200, json_pack("{s:s, s:o}", "instance",
	    owner_instance(gw->owner), "links", a));
}
