/* itutil: setup and teardown shared by the integration suites (itutil.h). */
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
