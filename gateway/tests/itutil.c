/* itutil: setup and teardown shared by the integration suites (itutil.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/tests/itutil.h"

/* A rig from options; the peer writes enc. */
int
itutil_setup_opts(void **state, enum mos_enc enc, const struct gwproc_opts *o)
{
	*state = gwrig_new_opts(enc, o);
	return *state == NULL ? -1 : 0;
}

/* The usual rig with these [gateway] lines. */
int
itutil_setup_gateway(void **state, const char *gateway_extra)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.gateway_extra = gateway_extra;
	return itutil_setup_opts(state, MOS_ENC_UTF16BE, &o);
}

/* The usual rig with these NCS lines. */
int
itutil_setup_ncs(void **state, enum mos_enc enc, const char *ncs_extra)
{
	*state = gwrig_new(enc, ncs_extra);
	return *state == NULL ? -1 : 0;
}

/* The usual rig. */
int
itutil_setup(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF16BE, NULL);
}

/* Stop the gateway, expecting exit status 0, and the peer. */
int
itutil_teardown(void **state)
{
	struct gwrig	*r = *state;
	int		 st;

	st = gwproc_stop(r->gw);
	if (st != 0)
		gwrig_dump(r, "SIGTERM exit status", __FILE__, __LINE__);
	gwrig_free(r);
	return st == 0 ? 0 : -1;
}

/* An envelope in UTF-8 text around body, with that pair and messageID. */
char *
itutil_frame_text(const char *mos_id, const char *ncs_id, int id,
    const char *body)
{
	char	*s;

	if (asprintf(&s, "<mos><mosID>%s</mosID><ncsID>%s</ncsID>"
	    "<messageID>%d</messageID>%s</mos>", mos_id, ncs_id, id, body) == -1)
		abort();
	return s;
}

/* Send UTF-8 text on conn, wait for the reply with messageID id. */
const struct ncspeer_frame *
itutil_send_text(struct gwrig *r, int conn, int id, const char *text,
    int timeout_ms)
{
	struct ncspeer_match	mt = { .conn = conn, .message_id = id };

	mt.from = ncspeer_nframes(r->ncs);
	if (ncspeer_send_xml(r->ncs, conn, text) != 0)
		return NULL;
	return ncspeer_wait(r->ncs, &mt, timeout_ms);
}
