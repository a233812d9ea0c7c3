/*
 * Integration: running orders against the real mosgw.
 *
 * roCreate is acknowledged with its roID and the status of each of our
 * items (known objects READY / NOT READY, unknown ones reported as such);
 * roElementAction, roReq -> roList, roReqAll -> roListAll, mosItemReplace
 * and roStorySend on the upper port; mosctl ro ls|show and asset usage see
 * the result. A message naming an unknown running order gets an error
 * roStatus and the gateway asks the NCS for it (roReq on its own upper link)
 * and rebuilds it from the roList. After a restart it sends roReqAll and
 * roReqs what is listed; what the list omits is kept, marked unconfirmed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "gateway/tests/itutil.h"

#define WAIT_MS		10000
#define MOSID		"mosgw.test"
#define NCSID		"NCSPEER"

static int	next_id = 100;

/* Send body on conn in our envelope and wait for the answer. */
static const struct ncspeer_frame *
send_body(struct gwrig *r, int conn, const char *body)
{
	const struct ncspeer_frame	*f;
	char				*text;
	int				 id = next_id++;

	text = itutil_frame_text(MOSID, NCSID, id, body);
	f = itutil_send_text(r, conn, id, text, WAIT_MS);
	free(text);
	return f;
}

/* The answer is a roAck for ro_id whose roStatus contains want. */
static bool
ro_ack(const struct ncspeer_frame *f, const char *ro_id, const char *want)
{
	const struct mos_ro_ack	*a;

	if (f == NULL || f->msg == NULL || f->msg->type != MOS_T_RO_ACK)
		return false;
	a = &f->msg->u.ro_ack;
	return a->ro_id != NULL && strcmp(a->ro_id, ro_id) == 0 &&
	    a->ro_status != NULL && strstr(a->ro_status, want) != NULL;
}

/* The order of a roList answer: "S1[I1,I2] S2[]". */
static char *
list_order(const struct ncspeer_frame *f)
{
	const struct mos_ro	*ro;
	char			 buf[1024];
	size_t			 i, j, n = 0;

	if (f == NULL || f->msg == NULL || f->msg->type != MOS_T_RO_LIST)
		return strdup("(no roList)");
	ro = &f->msg->u.ro_list;
	buf[0] = '\0';
	for (i = 0; i < ro->story.n; i++) {
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s[",
		    i > 0 ? " " : "", ro->story.v[i].story_id);
		for (j = 0; j < ro->story.v[i].item.n; j++)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s",
			    j > 0 ? "," : "", ro->story.v[i].item.v[j].item_id);
		n += (size_t)snprintf(buf + n, sizeof buf - n, "]");
	}
	return strdup(buf);
}

/* roReq ro_id on conn: the order it answers, or what it said. */
static char *
req_order(struct gwrig *r, int conn, const char *ro_id)
{
	const struct ncspeer_frame	*f;
	char				 body[256];

	snprintf(body, sizeof body, "<roReq><roID>%s</roID></roReq>", ro_id);
	f = send_body(r, conn, body);
	if (f != NULL && f->msg != NULL && f->msg->type == MOS_T_RO_ACK)
		return strdup(f->msg->u.ro_ack.ro_status);
	return list_order(f);
}

#define CHECK_ORDER(r, conn, ro_id, want) do {				\
	char *got_ = req_order((r), (conn), (ro_id));			\
	if (strcmp(got_, (want)) != 0) {				\
		gwrig_dump((r), "order", __FILE__, __LINE__);		\
		fail_msg("order of %s: got %s, want %s", (ro_id), got_,	\
		    (want));						\
	}								\
	free(got_);							\
} while (0)

/* A roCreate model for the peer to hold. */
static struct mos_msg *
ro_model(const char *body)
{
	struct mos_msg	*m;
	char		*text;

	text = itutil_frame_text(MOSID, NCSID, 1, body);
	if (mos_parse(text, strlen(text), MOS_ENC_UTF8, MOS_LENIENT, &m,
	    NULL) != MOS_OK)
		fail_msg("bad model %s", body);
	free(text);
	return m;
}

static void
test_create_edit_read(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	const struct mos_ro_ack		*a;
	char				*out = NULL;
	int				 c;

	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "one", "--air", "READY", (char *)NULL) == 0);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A2",
	    "--slug", "two", "--air", "NOT READY", (char *)NULL) == 0);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>R1</roID><roSlug>Six</roSlug>"
	    "<story><storyID>S1</storyID><storySlug>Fire</storySlug>"
	    "<item><itemID>I1</itemID><objID>A1</objID><mosID>" MOSID
	    "</mosID><itemChannel>B</itemChannel></item>"
	    "<item><itemID>I2</itemID><objID>A2</objID><mosID>" MOSID
	    "</mosID></item>"
	    "<item><itemID>I3</itemID><objID>NOPE</objID><mosID>" MOSID
	    "</mosID></item>"
	    "<item><itemID>I4</itemID><objID>G1</objID><mosID>cg.other"
	    "</mosID></item></story>"
	    "<story><storyID>S2</storyID></story></roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	a = &f->msg->u.ro_ack;
	GWRIG_CHECK(r, a->entries.n == 3);
	GWRIG_CHECK(r, strcmp(a->entries.v[0].item_id, "I1") == 0 &&
	    strcmp(a->entries.v[0].status, "READY") == 0 &&
	    strcmp(a->entries.v[0].item_channel, "B") == 0);
	GWRIG_CHECK(r, strcmp(a->entries.v[1].status, "NOT READY") == 0);
	GWRIG_CHECK(r, strcmp(a->entries.v[2].obj_id, "NOPE") == 0 &&
	    strcmp(a->entries.v[2].status, "UNKNOWN OBJECT") == 0);
	CHECK_ORDER(r, c, "R1", "S1[I1,I2,I3,I4] S2[]");

	f = send_body(r, c, "<roElementAction operation=\"MOVE\"><roID>R1"
	    "</roID><element_target><storyID>S1</storyID><itemID>I1</itemID>"
	    "</element_target><element_source><itemID>I3</itemID>"
	    "</element_source></roElementAction>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	f = send_body(r, c, "<roStoryMove><roID>R1</roID><storyID>S1"
	    "</storyID><storyID></storyID></roStoryMove>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	CHECK_ORDER(r, c, "R1", "S2[] S1[I3,I1,I2,I4]");
	/* duplicate IDs: an error roStatus, nothing changes */
	f = send_body(r, c, "<roElementAction operation=\"INSERT\"><roID>R1"
	    "</roID><element_target><storyID>S1</storyID><itemID></itemID>"
	    "</element_target><element_source><item><itemID>I2</itemID>"
	    "<objID>A2</objID></item></element_source></roElementAction>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "Duplicate itemID I2"));
	CHECK_ORDER(r, c, "R1", "S2[] S1[I3,I1,I2,I4]");
	/* mosItemReplace from the NCS side, roStorySend */
	f = send_body(r, c, "<mosItemReplace><roID>R1</roID><storyID>S1"
	    "</storyID><item><itemID>I3</itemID><objID>A1</objID><mosID>"
	    MOSID "</mosID></item></mosItemReplace>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	GWRIG_CHECK(r, f->msg->u.ro_ack.entries.n == 1 &&
	    strcmp(f->msg->u.ro_ack.entries.v[0].status, "READY") == 0);
	f = send_body(r, c, "<roStorySend><roID>R1</roID><storyID>S1"
	    "</storyID><storySlug>Fire</storySlug><storyBody><p>Words</p>"
	    "</storyBody></roStorySend>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	f = send_body(r, c, "<roReadyToAir><roID>R1</roID><roAir>READY"
	    "</roAir></roReadyToAir>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	/* roReqAll from the NCS: roListAll */
	f = send_body(r, c, "<roReqAll/>");
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_RO_LIST_ALL &&
	    f->msg->u.ro_list_all.ro.n == 1 &&
	    strcmp(f->msg->u.ro_list_all.ro.v[0].ro_slug, "Six") == 0);
	/* the operator's view */
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "ro", "ls",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "R1") != NULL &&
	    strstr(out, "2 stories") != NULL &&
	    strstr(out, "READY") != NULL);
	free(out);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "--json", "ro", "show",
	    "R1", (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "\"ro_id\":\"R1\"") != NULL &&
	    strstr(out, "\"item_id\":\"I3\"") != NULL);
	free(out);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "ro", "show", "R1",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "I3") != NULL && strstr(out, "Fire") !=
	    NULL);
	free(out);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "asset", "usage", "A1",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "I1") != NULL && strstr(out, "I3") != NULL
	    && strstr(out, "I2") == NULL);
	free(out);
	/* roDelete */
	f = send_body(r, c, "<roDelete><roID>R1</roID></roDelete>");
	GWRIG_CHECK(r, ro_ack(f, "R1", "OK"));
	CHECK_ORDER(r, c, "R1", "Unknown roID R1");
}

static void
test_unknown_ro_resync(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt;
	int				 c;

	ncspeer_hold_ro(r->ncs, ro_model("<roCreate><roID>RS</roID>"
	    "<roSlug>held</roSlug><story><storyID>S1</storyID><item><itemID>"
	    "I1</itemID><objID>A1</objID><mosID>" MOSID "</mosID></item>"
	    "</story><story><storyID>S2</storyID></story></roCreate>"));
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	memset(&mt, 0, sizeof mt);
	mt.type = "roReq";
	mt.side = NCSPEER_ACCEPTED;
	mt.port = NCSPEER_UPPER;
	mt.from = ncspeer_nframes(r->ncs);
	f = send_body(r, c, "<roStoryDelete><roID>RS</roID><storyID>S2"
	    "</storyID></roStoryDelete>");
	GWRIG_CHECK(r, ro_ack(f, "RS", "Unknown roID RS"));
	/* the gateway asks for it on its own upper link */
	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    strcmp(f->msg->u.ro_req.ro_id, "RS") == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=ro.resync",
	    "ro=RS", "result=rebuilt", (char *)NULL) != -1);
	CHECK_ORDER(r, c, "RS", "S1[I1] S2[]");
	/* now the same message applies */
	f = send_body(r, c, "<roStoryDelete><roID>RS</roID><storyID>S2"
	    "</storyID></roStoryDelete>");
	GWRIG_CHECK(r, ro_ack(f, "RS", "OK"));
	CHECK_ORDER(r, c, "RS", "S1[I1]");
	/* an unknown story: error roStatus, and a resync as well */
	mt.from = ncspeer_nframes(r->ncs);
	f = send_body(r, c, "<roStoryDelete><roID>RS</roID><storyID>S9"
	    "</storyID></roStoryDelete>");
	GWRIG_CHECK(r, ro_ack(f, "RS", "Unknown storyID S9"));
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
}

static void
test_req_all_after_restart(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt;
	struct ncspeer_policy		 pol;
	char				*out = NULL;
	int				 c;

	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>KEEP</roID><roSlug>k</roSlug>"
	    "<story><storyID>S1</storyID></story></roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "KEEP", "OK"));
	ncspeer_hold_ro(r->ncs, ro_model("<roCreate><roID>H1</roID>"
	    "<roSlug>h</roSlug><story><storyID>X</storyID></story>"
	    "</roCreate>"));
	memset(&mt, 0, sizeof mt);
	mt.side = NCSPEER_ACCEPTED;
	mt.port = NCSPEER_UPPER;
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	GWRIG_CHECK(r, gwproc_start(r->gw) == 0);
	mt.type = "roReqAll";
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	mt.type = "roReq";
	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    strcmp(f->msg->u.ro_req.ro_id, "H1") == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=ro.resync",
	    "ro=H1", "result=rebuilt", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "ro", "ls",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "H1") != NULL);
	GWRIG_CHECK(r, strstr(out, "KEEP") != NULL &&
	    strstr(out, "unconfirmed") != NULL);
	free(out);
	/* an NCS that refuses roReqAll: nothing is lost */
	memset(&pol, 0, sizeof pol);
	pol.ro_req_all_nack = true;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	GWRIG_CHECK(r, gwproc_start(r->gw) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=ro.list_all",
	    "refused", (char *)NULL) != -1);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	CHECK_ORDER(r, c, "KEEP", "S1[]");
	CHECK_ORDER(r, c, "H1", "X[]");
}

/* Wait for n roElementStat frames from mt.from on; all with status. */
static bool
wait_stats(struct gwrig *r, struct ncspeer_match *mt, size_t n,
    const char *status, const char *items)
{
	const struct ncspeer_frame	*f;
	char				 got[256];
	size_t				 i, len = 0;

	if (ncspeer_wait_count(r->ncs, mt, n, WAIT_MS) < n)
		return false;
	got[0] = '\0';
	for (i = mt->from; i < ncspeer_nframes(r->ncs); i++) {
		f = ncspeer_frame_at(r->ncs, i);
		if (f->msg == NULL || f->msg->type != MOS_T_RO_ELEMENT_STAT ||
		    f->side != NCSPEER_ACCEPTED)
			continue;
		if (strcmp(f->msg->u.ro_element_stat.status, status) != 0 ||
		    strcmp(f->msg->u.ro_element_stat.element, "ITEM") != 0)
			return false;
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%s",
		    len > 0 ? "," : "", f->msg->u.ro_element_stat.item_id);
	}
	return strcmp(got, items) == 0;
}

static void
test_status_back(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt;
	char				 lane[64];
	int				 c;

	snprintf(lane, sizeof lane, "rostat:%s", "n1");
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "one", "--air", "READY", (char *)NULL) == 0);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>R2</roID><roSlug>s</roSlug>"
	    "<story><storyID>S1</storyID>"
	    "<item><itemID>I1</itemID><objID>A1</objID><mosID>" MOSID
	    "</mosID></item>"
	    "<item><itemID>I2</itemID><objID>A1</objID><mosID>cg.other"
	    "</mosID></item></story>"
	    "<story><storyID>S2</storyID>"
	    "<item><itemID>I3</itemID><objID>A1</objID><mosID>" MOSID
	    "</mosID><itemChannel>V</itemChannel></item></story>"
	    "</roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "R2", "OK"));
	memset(&mt, 0, sizeof mt);
	mt.type = "roElementStat";
	mt.side = NCSPEER_ACCEPTED;
	mt.from = ncspeer_nframes(r->ncs);
	/* the asset goes offline: NOT READY for our two items, acked */
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "one", "--air", "NOT READY", (char *)NULL) == 0);
	GWRIG_CHECK(r, wait_stats(r, &mt, 2, "NOT READY", "I1,I3"));
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, lane, QUEUE_DONE) == 1);
	/* a change that is not about readiness or media sends nothing */
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "renamed", "--air", "NOT READY", (char *)NULL) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, lane, -1) == 1);
	/* a new duration: mos_item_replace is off here, nothing is sent */
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "renamed", "--air", "NOT READY", "--dur", "99",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, lane, QUEUE_DONE, 2, WAIT_MS)
	    == 2);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=rostat.sent",
	    "kind=itemreplace", "sent=0", (char *)NULL) != -1);
	/* link down: queued, delivered once the NCS is back */
	ncspeer_down(r->ncs, false);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.down",
	    "port=upper", (char *)NULL) != -1);
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "one", "--air", "READY", "--dur", "99",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, lane, QUEUE_DONE) == 2);
	GWRIG_CHECK(r, ncspeer_up(r->ncs) == 0);
	GWRIG_CHECK(r, wait_stats(r, &mt, 2, "READY", "I1,I3"));
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, lane, QUEUE_DONE) == 3);
}

/* An NCS that wants mosItemReplace when an item's media changes. */
static int
setup_item_replace(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF16BE,
	    "mos_item_replace = true\n");
}

static void
test_item_replace(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	const struct mos_item		*it;
	struct ncspeer_match		 mt;
	int				 c;

	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "C1",
	    "--slug", "clip", "--dur", "100", (char *)NULL) == 0);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>R4</roID><roSlug>s</roSlug>"
	    "<story><storyID>S1</storyID><item><itemID>I1</itemID>"
	    "<itemSlug>keep me</itemSlug><objID>C1</objID><mosID>" MOSID
	    "</mosID><itemEdStart>5</itemEdStart></item></story>"
	    "</roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "R4", "OK"));
	memset(&mt, 0, sizeof mt);
	mt.type = "mosItemReplace";
	mt.side = NCSPEER_ACCEPTED;
	mt.from = ncspeer_nframes(r->ncs);
	/* new duration and a path, same readiness */
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "C1",
	    "--slug", "clip", "--dur", "250", "--path",
	    "http://media.local/c1.mp4", "--tech", "H.264", (char *)NULL) == 0);
	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_item_replace.ro_id, "R4") == 0 &&
	    strcmp(f->msg->u.mos_item_replace.story_id, "S1") == 0);
	it = &f->msg->u.mos_item_replace.item;
	GWRIG_CHECK(r, strcmp(it->item_id, "I1") == 0 &&
	    strcmp(it->item_slug, "keep me") == 0 && it->item_ed_start == 5);
	GWRIG_CHECK(r, it->has_obj_dur && it->obj_dur == 250);
	GWRIG_CHECK(r, it->obj_paths != NULL &&
	    it->obj_paths->obj_path.n == 1 &&
	    strcmp(it->obj_paths->obj_path.v[0].url,
	    "http://media.local/c1.mp4") == 0);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, "rostat:n1", WAIT_MS) == 0);
	mt.type = "roElementStat";
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 0);
}

/* An NCS that takes no roElementStat at all. */
static int
setup_no_stat(void **state)
{
	return itutil_setup_ncs(state, MOS_ENC_UTF16BE,
	    "ro_element_stat =\n");
}

static void
test_status_back_off(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct ncspeer_match		 mt;
	int				 c;

	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>R3</roID><roSlug>s</roSlug>"
	    "<story><storyID>S1</storyID><item><itemID>I1</itemID><objID>B1"
	    "</objID><mosID>" MOSID "</mosID></item></story></roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "R3", "OK"));
	memset(&mt, 0, sizeof mt);
	mt.type = "roElementStat";
	mt.from = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "B1",
	    "--slug", "b", (char *)NULL) == 0);
	/* the job is settled without a message */
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, "rostat:n1", WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=rostat.sent",
	    "obj=B1", "sent=0", (char *)NULL) != -1);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 0);
}

/*
 * A change the NCS sends again with the same messageID (our roAck was
 * lost) gets the same roAck and is not applied twice: on the same
 * connection, after a reconnect and after a restart. The same messageID
 * on a different message is a new message.
 */
static void
test_resend(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	uint8_t				*first;
	size_t				 first_len;
	char				*text, *other;
	int				 c, i;

	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "A1",
	    "--slug", "one", "--air", "READY", (char *)NULL) == 0);
	c = gwrig_dial(r, NCSPEER_UPPER);
	GWRIG_CHECK(r, c > 0);
	f = send_body(r, c, "<roCreate><roID>RR</roID><story><storyID>S1"
	    "</storyID></story></roCreate>");
	GWRIG_CHECK(r, ro_ack(f, "RR", "OK"));
	text = itutil_frame_text(MOSID, NCSID, 7001, "<roElementAction "
	    "operation=\"INSERT\"><roID>RR</roID><element_target><storyID>S1"
	    "</storyID><itemID></itemID></element_target><element_source>"
	    "<item><itemID>I1</itemID><objID>A1</objID><mosID>" MOSID
	    "</mosID></item></element_source></roElementAction>");
	f = itutil_send_text(r, c, 7001, text, WAIT_MS);
	GWRIG_CHECK(r, ro_ack(f, "RR", "OK") &&
	    f->msg->u.ro_ack.entries.n == 1 &&
	    strcmp(f->msg->u.ro_ack.entries.v[0].status, "READY") == 0);
	first_len = f->raw_len;
	first = malloc(first_len);
	GWRIG_CHECK(r, first != NULL);
	memcpy(first, f->raw, first_len);
	for (i = 0; i < 3; i++) {
		if (i == 1) {		/* the NCS reconnects */
			ncspeer_close(r->ncs, c, false);
			c = gwrig_dial(r, NCSPEER_UPPER);
			GWRIG_CHECK(r, c > 0);
		} else if (i == 2) {	/* the gateway restarts */
			GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
			GWRIG_CHECK(r, gwproc_start(r->gw) == 0);
			c = gwrig_dial(r, NCSPEER_UPPER);
			GWRIG_CHECK(r, c > 0);
		}
		f = itutil_send_text(r, c, 7001, text, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->raw_len == first_len &&
		    memcmp(f->raw, first, first_len) == 0);
		CHECK_ORDER(r, c, "RR", "S1[I1]");
	}
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=ro.msg",
	    "message_id=7001", "resend=answered-again", (char *)NULL) != -1);
	/* the same messageID on another message: applied */
	other = itutil_frame_text(MOSID, NCSID, 7001, "<roElementAction "
	    "operation=\"INSERT\"><roID>RR</roID><element_target><storyID>S1"
	    "</storyID><itemID></itemID></element_target><element_source>"
	    "<item><itemID>I2</itemID><objID>A1</objID></item>"
	    "</element_source></roElementAction>");
	f = itutil_send_text(r, c, 7001, other, WAIT_MS);
	GWRIG_CHECK(r, ro_ack(f, "RR", "OK"));
	CHECK_ORDER(r, c, "RR", "S1[I1,I2]");
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS,
	    "event=ro.msgid_reused", "message_id=7001", (char *)NULL) != -1);
	/* and that one is now the message a resend repeats */
	f = itutil_send_text(r, c, 7001, other, WAIT_MS);
	GWRIG_CHECK(r, ro_ack(f, "RR", "OK"));
	CHECK_ORDER(r, c, "RR", "S1[I1,I2]");
	free(first);
	free(text);
	free(other);
}

/* Has the gateway rebuilt running order BIG from the NCS's roList? */
static bool
big_rebuilt(void *arg)
{
	struct gwrig	*r = arg;

	return gwproc_log_count(r->gw, 0, "event=ro.resync", "ro=BIG",
	    "result=rebuilt", (char *)NULL) > 0;
}

/*
 * A large roList (the answer to our roReq, some MB on the wire) is parsed
 * and stored off the event loop: heartbeats on another connection are
 * answered all along, none of them waiting for anything like the time the
 * roList takes.
 */
static void
test_large_ro_list(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct sbuf			 sb = { NULL, 0, 0 };
	int64_t				 t0, took, slowest;
	char				*out = NULL;
	size_t				 sb_len;
	int				 c, hb, i, n;

	sbuf_puts(&sb, "<roCreate><roID>BIG</roID><roSlug>big</roSlug>"
	    "<mosExternalMetadata><mosScope>PLAYLIST</mosScope><mosSchema>"
	    "urn:test:big</mosSchema><mosPayload>");
	for (i = 0; i < 300000; i++)
		sbuf_printf(&sb, "<v>%d</v>", i % 10);
	sbuf_puts(&sb, "</mosPayload></mosExternalMetadata><story><storyID>"
	    "S1</storyID></story></roCreate>");
	ncspeer_hold_ro(r->ncs, ro_model(sb.s));
	sb_len = sb.len;
	sbuf_free(&sb);
	c = gwrig_dial(r, NCSPEER_UPPER);
	hb = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0 && hb > 0);
	t0 = ncspeer_now_ms();
	f = send_body(r, c, "<roStoryDelete><roID>BIG</roID><storyID>S2"
	    "</storyID></roStoryDelete>");
	GWRIG_CHECK(r, ro_ack(f, "BIG", "Unknown roID BIG"));
	n = itutil_heartbeats_until(r, hb, big_rebuilt, r, 60000, &slowest);
	took = ncspeer_now_ms() - t0;
	printf("roList of %zu bytes (UTF-8): %d heartbeats answered in %lld ms, "
	    "the slowest in %lld ms\n", sb_len, n, (long long)took,
	    (long long)slowest);
	if (n < 2 || itutil_loop_stalled(slowest, took)) {
		gwrig_dump(r, "heartbeats during the roList", __FILE__,
		    __LINE__);
		fail_msg("%d heartbeats answered in %lld ms, slowest %lld ms",
		    n, (long long)took, (long long)slowest);
	}
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "ro", "ls",
	    (char *)NULL) == 0);
	GWRIG_CHECK(r, strstr(out, "BIG") != NULL);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_edit_read,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_ro_resync,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_req_all_after_restart,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_status_back,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_status_back_off,
		    setup_no_stat, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_item_replace,
		    setup_item_replace, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_resend,
		    itutil_setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_large_ro_list,
		    itutil_setup, itutil_teardown),
	};

	mos_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
