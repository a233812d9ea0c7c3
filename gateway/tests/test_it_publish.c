/*
 * Integration: the publisher and Profile 1 against a scripted NCS.
 *
 * An asset change made with mosctl becomes a mosObj on the gateway's lower
 * link and its job finishes only on the matching mosAck; a NACK retries and
 * ends FAILED with the NACK text in the job's history; an ack timeout resends
 * with the same messageID, and after the resends counts as a failed attempt
 * (FAILED at max_attempts, the NCS never blocked for good); an ack with the
 * wrong messageID does not count;
 * an NCS restart loses nothing queued meanwhile; mosReqObj and mosReqAll are
 * answered; the history can be exported as a capture. A verbatim-XML
 * fragment that would close its element never reaches the NCS: mosctl
 * refuses it, and a catalog row that holds one fails its job.
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

#define WAIT_MS		5000
#define RETRY_MS	15000	/* NACK retries wait out the queue's backoff */

/* Database settings that keep retries and leases short. */
#define FAST_DB		"backoff_base = 0.2\nbackoff_max = 1\nlease = 5\n"

/* A gateway with fast retries and one NCS peer; the extra NCS lines given. */
static int
setup_rig(void **state, enum mos_enc enc, const char *ncs_extra)
{
	struct gwproc_opts	o;

	memset(&o, 0, sizeof o);
	o.database_extra = FAST_DB;
	o.ncs[0].extra = ncs_extra;
	o.nncs = 1;
	return itutil_setup_opts(state, enc, &o);
}

/* The default rig (UTF-16BE, ack_timeout 1 s, 3 attempts). */
static int
setup(void **state)
{
	return setup_rig(state, MOS_ENC_UTF16BE, NULL);
}

/* A 0.3 s ack timeout and two resends. */
static int
setup_short_ack(void **state)
{
	return setup_rig(state, MOS_ENC_UTF16BE,
	    "ack_timeout = 0.3\nretries = 2\n");
}

/* A strict NCS section with a short ack timeout. */
static int
setup_strict(void **state)
{
	return setup_rig(state, MOS_ENC_UTF16BE, "mode = strict\n"
	    "ack_timeout = 0.3\nretries = 2\n");
}

/* An NCS that speaks UTF-8. */
static int
setup_utf8(void **state)
{
	return setup_rig(state, MOS_ENC_UTF8, NULL);
}

/* Wait for a mosObj for obj_id on the gateway's own lower link. */
static const struct ncspeer_frame *
wait_obj(struct gwrig *r, const char *obj_id, size_t from, int timeout_ms)
{
	struct ncspeer_match	mt = { .type = "mosObj", .port = NCSPEER_LOWER,
				    .side = NCSPEER_ACCEPTED, .obj_id = obj_id };

	mt.from = from;
	return ncspeer_wait(r->ncs, &mt, timeout_ms);
}

/* Whether f is a mosObj with that status and objRev. */
static bool
obj_is(const struct ncspeer_frame *f, const char *status, uint32_t rev)
{
	const struct mos_obj	*o;

	if (f == NULL || f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ)
		return false;
	o = &f->msg->u.mos_obj;
	return o->status != NULL && strcmp(o->status, status) == 0 &&
	    o->has_obj_rev && o->obj_rev == rev;
}

/* The text of the newest event note of the only FAILED job of the lane. */
static char *
failed_note(struct gwrig *r)
{
	struct queue		*q;
	struct queue_filter	 flt;
	struct queue_job	*jobs = NULL;
	struct queue_event	*ev = NULL;
	size_t			 n = 0, ne = 0, i;
	char			*note = NULL;

	if ((q = gwproc_queue(r->gw)) == NULL)
		return NULL;
	memset(&flt, 0, sizeof flt);
	flt.state = QUEUE_FAILED;
	flt.lane = r->lane;
	if (queue_list(q, &flt, &jobs, &n) == QUEUE_OK && n == 1 &&
	    queue_history(q, jobs[0].id, &ev, &ne) == QUEUE_OK) {
		for (i = 0; i < ne; i++) {
			if (ev[i].to == QUEUE_FAILED && ev[i].note != NULL)
				note = strdup(ev[i].note);
		}
	}
	queue_events_free(ev, ne);
	queue_jobs_free(jobs, n);
	queue_close(q);
	return note;
}

/* The NCS answers every mosObj with a plain ACK again. */
static void
answer_plainly(struct gwrig *r)
{
	struct ncspeer_policy	pol;

	memset(&pol, 0, sizeof pol);
	ncspeer_set_policy(r->ncs, &pol);
}

/*
 * With the answers of pol, put obj_id: *first gets its first mosObj; the
 * mosObj for it sent after that is returned (NULL if none in time).
 */
static const struct ncspeer_frame *
sent_again(struct gwrig *r, const struct ncspeer_policy *pol,
    const char *obj_id, const char *slug, const struct ncspeer_frame **first)
{
	struct ncspeer_match	mt = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };

	mt.obj_id = obj_id;
	ncspeer_set_policy(r->ncs, pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, obj_id, slug) == 0);
	*first = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, *first != NULL);
	mt.from = (*first)->seq + 1;
	return ncspeer_wait(r->ncs, &mt, WAIT_MS);
}

/* Back to plain answers: the one waiting job ends DONE. */
static void
done_once_answered(struct gwrig *r)
{
	answer_plainly(r);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
}

/*
 * What pol answers is not the answer: the mosObj is sent again with the
 * same messageID, and the job is DONE only once answered plainly.
 */
static void
not_an_answer(struct gwrig *r, const struct ncspeer_policy *pol,
    const char *obj_id, const char *slug)
{
	const struct ncspeer_frame	*first, *again;

	again = sent_again(r, pol, obj_id, slug, &first);
	GWRIG_CHECK(r, again != NULL && again->message_id == first->message_id);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_DONE) == 0);
	done_once_answered(r);
}

/* put -> mosObj NEW -> ACK -> DONE; then UPDATED and DELETED. */
static void
test_publish_ack_done(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f[3];
	const struct mos_obj		*o;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-A1", "First story") == 0);
	f[0] = wait_obj(r, "IT-A1", 0, WAIT_MS);
	GWRIG_CHECK(r, obj_is(f[0], "NEW", 1));
	o = &f[0]->msg->u.mos_obj;
	GWRIG_CHECK(r, o->obj_slug != NULL &&
	    strcmp(o->obj_slug, "First story") == 0);
	GWRIG_CHECK(r, strcmp(f[0]->msg->mos_id, "mosgw.test") == 0);
	GWRIG_CHECK(r, strcmp(f[0]->msg->ncs_id, "NCSPEER") == 0);
	GWRIG_CHECK(r, f[0]->has_message_id && f[0]->message_id >= 1);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=publish.acked",
	    (char *)NULL) != -1);

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-A1", "First story, v2") == 0);
	f[1] = wait_obj(r, "IT-A1", f[0]->seq + 1, WAIT_MS);
	GWRIG_CHECK(r, obj_is(f[1], "UPDATED", 2));
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);

	GWRIG_CHECK(r, gwproc_asset_delete(r->gw, "IT-A1") == 0);
	f[2] = wait_obj(r, "IT-A1", f[1]->seq + 1, WAIT_MS);
	GWRIG_CHECK(r, obj_is(f[2], "DELETED", 3));
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 3,
	    WAIT_MS) == 3);
	/* Our messageIDs increase. */
	GWRIG_CHECK(r, f[1]->message_id > f[0]->message_id &&
	    f[2]->message_id > f[1]->message_id);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, NULL, QUEUE_FAILED) == 0);
}

/* NACK -> retried with backoff -> FAILED, the NACK text kept. */
static void
test_nack_retry_failed(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_policy	 pol;
	struct ncspeer_match	 mt = { .type = "mosObj", .obj_id = "IT-N1",
				    .side = NCSPEER_ACCEPTED };
	char			*note;

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_NACK;
	pol.nack_text = "Object IT-N1 refused by the rundown";
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-N1", "Refused") == 0);
	/* max_attempts = 3 in the rig's NCS section. */
	GWRIG_CHECK(r, ncspeer_wait_count(r->ncs, &mt, 3, RETRY_MS) == 3);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_FAILED, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_DONE) == 0);
	note = failed_note(r);
	GWRIG_CHECK(r, note != NULL &&
	    strstr(note, "refused by the rundown") != NULL);
	free(note);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=publish.failed",
	    (char *)NULL) != -1);
	/* No fourth attempt. */
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 3);
	/* The link is fine: the next asset goes through. */
	answer_plainly(r);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-N2", "Accepted") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
}

/* No answer: the same mosObj again with the same messageID. */
static void
test_ack_timeout_resend(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	const struct ncspeer_frame	*first, *again;

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_IGNORE;
	again = sent_again(r, &pol, "IT-T1", "Slow NCS", &first);
	GWRIG_CHECK(r, again != NULL);
	GWRIG_CHECK(r, again->message_id == first->message_id);
	/* ack_timeout 0.3 s: not resent at once. */
	GWRIG_CHECK(r, again->t_ms - first->t_ms >= 200);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=ack.timeout",
	    (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_DONE) == 0);
	done_once_answered(r);
}

/* An ACK with another messageID is not the answer. */
static void
test_wrong_message_id(void **state)
{
	struct ncspeer_policy	pol;

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_WRONG_ID;
	not_an_answer(*state, &pol, "IT-W1", "Confused NCS");
}

/* Lenient: an ACK without messageID, or with an empty mosID, still counts. */
static void
test_ack_quirks_lenient(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_policy	 pol;
	struct ncspeer_match	 mt = { .type = "mosObj",
				    .side = NCSPEER_ACCEPTED };

	memset(&pol, 0, sizeof pol);
	pol.ack_no_message_id = true;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-Q1", "iNEWS-style ack") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	pol.ack_no_message_id = false;
	pol.ack_empty_mos_id = true;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-Q2", "ENPS-style ack") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	/* Each taken at the first send: no resend was needed. */
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 2);
}

/* Strict: an ACK without messageID is not an answer; the send is retried. */
static void
test_ack_no_id_strict(void **state)
{
	struct ncspeer_policy	pol;

	memset(&pol, 0, sizeof pol);
	pol.ack_no_message_id = true;
	not_an_answer(*state, &pol, "IT-S1", "Strict link");
}

/* An ACK that comes late but within ack_timeout: one send, DONE. */
static void
test_delayed_ack(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_policy	 pol;
	struct ncspeer_match	 mt = { .type = "mosObj", .obj_id = "IT-D1",
				    .side = NCSPEER_ACCEPTED };

	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 400;		/* ack_timeout is 1 s in the rig */
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-D1", "Thinking NCS") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 1);
}

/* The NCS goes away; changes made meanwhile wait and all arrive after. */
static void
test_ncs_restart(void **state)
{
	struct gwrig	*r = *state;
	char		 id[32];
	size_t		 mark;
	int		 i;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-R0", "Before") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	ncspeer_down(r->ncs, false);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=link.down",
	    (char *)NULL) != -1);
	for (i = 1; i <= 5; i++) {
		snprintf(id, sizeof id, "IT-R%d", i);
		GWRIG_CHECK(r, gwproc_asset_put(r->gw, id, "While down") == 0);
	}
	/* Nothing is dropped or failed while the NCS is away. */
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2, 1000) == 1);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_FAILED) == 0);
	mark = ncspeer_nframes(r->ncs);
	GWRIG_CHECK(r, ncspeer_up(r->ncs) == 0);
	GWRIG_CHECK(r, ncspeer_wait_open(r->ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED,
	    1, WAIT_MS) == 0);
	for (i = 1; i <= 5; i++) {
		snprintf(id, sizeof id, "IT-R%d", i);
		GWRIG_CHECK(r, obj_is(wait_obj(r, id, mark, WAIT_MS), "NEW", 1));
	}
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 6,
	    WAIT_MS) == 6);
}

/* Edits while the NCS is busy collapse; never a stale objRev after a newer. */
static void
test_coalesce_newest(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt = { .type = "mosObj", .obj_id = "IT-C1",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*f;
	uint32_t			 last = 0;
	size_t				 i;
	char				 slug[32];
	bool				 seen[6];
	int				 k, revs;

	/* the first mosObj's answer is held until every edit is stored */
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = -1;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-C1", "Edit 1") == 0);
	GWRIG_CHECK(r, ncspeer_wait(r->ncs, &mt, WAIT_MS) != NULL);
	for (k = 2; k <= 5; k++) {
		snprintf(slug, sizeof slug, "Edit %d", k);
		GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-C1", slug) == 0);
	}
	answer_plainly(r);
	/* The newest revision arrives ... */
	for (i = 0; ; i = f->seq + 1) {
		mt.from = i;
		f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
		GWRIG_CHECK(r, f != NULL && f->msg != NULL);
		/* ... and revisions never go backwards (resends may repeat). */
		GWRIG_CHECK(r, f->msg->u.mos_obj.obj_rev >= last);
		last = f->msg->u.mos_obj.obj_rev;
		if (last == 5)
			break;
	}
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_obj.obj_slug, "Edit 5") == 0);
	/*
	 * Five edits, fewer revisions delivered: the queued ones were
	 * coalesced (a resend of one in flight repeats its revision).
	 */
	memset(seen, 0, sizeof seen);
	for (mt.from = 0; (f = ncspeer_find(r->ncs, &mt)) != NULL;
	    mt.from = f->seq + 1)
		if (f->msg != NULL && f->msg->u.mos_obj.obj_rev < 6)
			seen[f->msg->u.mos_obj.obj_rev] = true;
	for (k = 1, revs = 0; k <= 5; k++)
		revs += seen[k];
	GWRIG_CHECK(r, seen[5] && revs < 5);
	GWRIG_CHECK(r, gwproc_wait_idle(r->gw, r->lane, WAIT_MS) == 0);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, r->lane, QUEUE_FAILED) == 0);
}

/* mosReqObj: the object, or a NACK naming the unknown objID. */
static void
test_req_obj(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	int				 c;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-Q1", "Asked for") == 0);
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ);
	m->u.mos_req_obj.obj_id = "IT-Q1";
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_OBJ);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_obj.obj_id, "IT-Q1") == 0);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_obj.obj_slug, "Asked for") == 0);

	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ);
	m->u.mos_req_obj.obj_id = "IT-NOPE";
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_ACK);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.status, "NACK") == 0);
	GWRIG_CHECK(r, f->msg->u.mos_ack.status_description != NULL &&
	    strstr(f->msg->u.mos_ack.status_description, "IT-NOPE") != NULL);
}

/* Send mosReqAll with a pause; expect the mosAck ACK on our connection. */
static void
req_all(struct gwrig *r, uint32_t pause)
{
	const struct ncspeer_frame	*f;
	struct mos_msg			*m;
	int				 c;

	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_ALL);
	m->u.mos_req_all.pause = pause;
	m->u.mos_req_all.has_pause = true;
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_ACK);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_ack.status, "ACK") == 0);
}

/* mosReqAll pause 0: ACK, then one mosListAll on the gateway's lower link. */
static void
test_req_all_list(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 mt = { .type = "mosListAll",
					    .side = NCSPEER_ACCEPTED,
					    .port = NCSPEER_LOWER };
	const struct ncspeer_frame	*f;
	const struct mos_list_all	*la;
	size_t				 i;
	int				 seen = 0;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-L1", "One") == 0);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-L2", "Two") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	req_all(r, 0);
	f = ncspeer_wait(r->ncs, &mt, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL);
	la = &f->msg->u.mos_list_all;
	for (i = 0; i < la->mos_obj.n; i++) {
		if (strcmp(la->mos_obj.v[i].obj_id, "IT-L1") == 0 ||
		    strcmp(la->mos_obj.v[i].obj_id, "IT-L2") == 0)
			seen++;
	}
	GWRIG_CHECK(r, seen == 2);
}

/* mosReqAll pause 1: ACK, then one mosObj per second. */
static void
test_req_all_paced(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*a, *b;
	size_t				 mark;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-P1", "One") == 0);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-P2", "Two") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 2,
	    WAIT_MS) == 2);
	mark = ncspeer_nframes(r->ncs);
	req_all(r, 1);
	a = wait_obj(r, "IT-P1", mark, WAIT_MS);
	b = wait_obj(r, "IT-P2", mark, WAIT_MS);
	GWRIG_CHECK(r, a != NULL && b != NULL);
	GWRIG_CHECK(r, llabs((long long)(b->t_ms - a->t_ms)) >= 700);
}

/* The same publish path for an NCS that speaks UTF-8. */
static void
test_utf8_publish(void **state)
{
	struct gwrig			*r = *state;
	const struct ncspeer_frame	*f;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-U1",
	    "Caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x8e\xac") == 0);
	f = wait_obj(r, "IT-U1", 0, WAIT_MS);
	GWRIG_CHECK(r, obj_is(f, "NEW", 1) && f->enc == MOS_ENC_UTF8);
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_obj.obj_slug,
	    "Caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x8e\xac") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
}

/* What went over the wire is in the history and exports as a capture. */
static void
test_history_capture(void **state)
{
	struct gwrig	*r = *state;
	char		*out = NULL;
	int		 st;

	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-H1", "Remembered") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	/* History writes are batched: stop the gateway so that all is flushed. */
	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	st = gwproc_mosctl(r->gw, &out, "history", "export", (char *)NULL);
	GWRIG_CHECK(r, st == 0 && out != NULL);
	GWRIG_CHECK(r, strstr(out, "\"dir\":\"out\"") != NULL);
	GWRIG_CHECK(r, strstr(out, "\"dir\":\"in\"") != NULL);
	GWRIG_CHECK(r, strstr(out, "IT-H1") != NULL);
	GWRIG_CHECK(r, strstr(out, "mosObj") != NULL);
	GWRIG_CHECK(r, strstr(out, "mosAck") != NULL);
	free(out);
	GWRIG_CHECK(r, gwproc_start(r->gw) == 0);
}

/*
 * An NCS that never answers a mosObj: after `retries` resends the link
 * reconnects and the attempt counts, the next attempt with a new
 * messageID; at max_attempts the job is FAILED ("no acknowledgement after
 * 3 attempts") and the next job goes through.
 */
static void
test_unacked_fails(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_policy		 pol;
	struct ncspeer_match		 mt = { .type = "mosObj",
					    .obj_id = "IT-U1",
					    .side = NCSPEER_ACCEPTED };
	const struct ncspeer_frame	*f;
	int32_t				 ids[3];
	size_t				 i, nids = 0, k;
	char				*note;

	memset(&pol, 0, sizeof pol);
	pol.obj = NCSPEER_OBJ_IGNORE;
	ncspeer_set_policy(r->ncs, &pol);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-U1", "Never answered") ==
	    0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_FAILED, 1,
	    2 * RETRY_MS) == 1);
	note = failed_note(r);
	GWRIG_CHECK(r, note != NULL &&
	    strstr(note, "no acknowledgement after 3 attempts") != NULL);
	free(note);
	/* 3 attempts of 1 + 2 resends, each attempt its own messageID */
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &mt) == 9);
	for (i = 0; (f = ncspeer_frame_at(r->ncs, i)) != NULL; i++) {
		if (f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ)
			continue;
		for (k = 0; k < nids && ids[k] != f->message_id; k++)
			;
		if (k == nids) {
			GWRIG_CHECK(r, nids < 3);
			ids[nids++] = f->message_id;
		}
	}
	GWRIG_CHECK(r, nids == 3);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=publish.unacked",
	    (char *)NULL) == 3);
	/* logged on the loop once FAILED is stored: it may come just after */
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, RETRY_MS,
	    "event=publish.failed", "obj=IT-U1", (char *)NULL) >= 0);
	GWRIG_CHECK(r, gwproc_log_count(r->gw, 0, "event=publish.failed",
	    "obj=IT-U1", (char *)NULL) == 1);
	answer_plainly(r);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-U2", "Answered") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    RETRY_MS) == 1);
}

#define EVIL_ABSTRACT	"</mosAbstract><objID>EVIL2</objID><mosAbstract>"

/*
 * mosctl asset put --abstract-xml with a fragment that closes mosAbstract
 * is refused before anything is stored; the NCS sees only the honest
 * asset put after it, with its one objID.
 */
static void
test_injected_abstract_refused(void **state)
{
	struct gwrig			*r = *state;
	struct ncspeer_match		 evil = { .type = "mosObj",
					    .obj_id = "EVIL2" };
	struct ncspeer_match		 any = { .type = "mosObj" };
	const struct ncspeer_frame	*f;
	char				*out = NULL;

	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "IT-X1",
	    "--slug", "Spoofer", "--abstract-xml", EVIL_ABSTRACT,
	    (char *)NULL) == 64);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "IT-X1",
	    "--slug", "Spoofer", "--meta-schema", "s", "--meta-payload",
	    "</mosPayload></mosExternalMetadata><objID>EVIL2</objID>"
	    "<mosExternalMetadata><mosPayload>", (char *)NULL) == 64);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, &out, "asset", "show", "IT-X1",
	    (char *)NULL) == 1);
	free(out);
	GWRIG_CHECK(r, gwproc_job_count(r->gw, NULL, -1) == 0);
	GWRIG_CHECK(r, gwproc_mosctl(r->gw, NULL, "asset", "put", "IT-X2",
	    "--slug", "Honest", "--abstract-xml",
	    "<b>ok</b><![CDATA[</mosAbstract><objID>EVIL2</objID>]]>",
	    (char *)NULL) == 0);
	f = wait_obj(r, "IT-X2", 0, WAIT_MS);
	GWRIG_CHECK(r, obj_is(f, "NEW", 1));
	GWRIG_CHECK(r, strcmp(f->msg->u.mos_obj.mos_abstract, "<b>ok</b>"
	    "<![CDATA[</mosAbstract><objID>EVIL2</objID>]]>") == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &evil) == 0);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &any) == 1);
}

/*
 * A row stored before fragments were checked on entry (written here
 * straight into the table) fails its job with the reason; the NCS never
 * gets it, neither as a delivery nor as an answer to mosReqObj (a NACK
 * saying why) or mosReqAll (left out), and the next asset goes through.
 */
static void
test_injected_row_fails(void **state)
{
	struct gwrig		*r = *state;
	struct ncspeer_match	 evil = { .type = "mosObj", .obj_id = "EVIL2" };
	struct ncspeer_match	 old = { .type = "mosObj", .obj_id = "IT-OLD" };
	struct ncspeer_match	 list = { .type = "mosListAll",
				    .side = NCSPEER_ACCEPTED,
				    .port = NCSPEER_LOWER };
	const struct ncspeer_frame *f;
	struct mos_msg		*m;
	struct gwdb_opts	 o;
	struct gwdb		*g;
	struct catalog_asset	 a;
	char			 id[] = "IT-OLD", slug[] = "Stored long ago";
	char			 type[] = "VIDEO", tb[] = "50", air[] = "READY";
	char			 desc[] = "", by[] = "old";
	char			*err = NULL, *note;
	int			 c;

	GWRIG_CHECK(r, gwproc_stop(r->gw) == 0);
	gwproc_db_opts(r->gw, &o);
	o.busy_ms = 0;
	GWRIG_CHECK(r, gwdb_open(&g, &o, &err) == QUEUE_OK);
	memset(&a, 0, sizeof a);
	a.obj_id = id;
	a.slug = slug;
	a.type = type;
	a.tb = tb;
	a.air = air;
	a.description = desc;
	a.changed_by = by;
	GWRIG_CHECK(r, catalog_put(g, &a, NULL, NULL, &err) == QUEUE_OK);
	GWRIG_CHECK(r, store_exec(g->db, "UPDATE assets SET abstract = '"
	    EVIL_ABSTRACT "' WHERE obj_id = 'IT-OLD'") ==
	    STORE_OK);
	gwdb_close(g);
	GWRIG_CHECK(r, gwproc_start(r->gw) == 0);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_FAILED, 1,
	    WAIT_MS) == 1);
	note = failed_note(r);
	GWRIG_CHECK(r, note != NULL && strstr(note, "catalog row refused: "
	    "mosAbstract: closes its element at offset 0") != NULL);
	free(note);
	GWRIG_CHECK(r, gwproc_log_wait(r->gw, 0, WAIT_MS, "event=publish.failed",
	    "obj=IT-OLD", (char *)NULL) != -1);
	GWRIG_CHECK(r, gwproc_asset_put(r->gw, "IT-NEW", "Fresh") == 0);
	GWRIG_CHECK(r, wait_obj(r, "IT-NEW", 0, WAIT_MS) != NULL);
	GWRIG_CHECK(r, gwproc_wait_jobs(r->gw, r->lane, QUEUE_DONE, 1,
	    WAIT_MS) == 1);
	/* asked for it: a NACK with the reason */
	c = gwrig_dial(r, NCSPEER_LOWER);
	GWRIG_CHECK(r, c > 0);
	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_OBJ);
	m->u.mos_req_obj.obj_id = "IT-OLD";
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_ACK &&
	    strcmp(f->msg->u.mos_ack.status, "NACK") == 0 &&
	    strstr(f->msg->u.mos_ack.status_description, "closes its element")
	    != NULL);
	/* all objects: the honest one only */
	m = ncspeer_msg(r->ncs, MOS_T_MOS_REQ_ALL);
	m->u.mos_req_all.has_pause = true;
	f = ncspeer_request(r->ncs, c, m, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->type == MOS_T_MOS_ACK);
	f = ncspeer_wait(r->ncs, &list, WAIT_MS);
	GWRIG_CHECK(r, f != NULL && f->msg != NULL &&
	    f->msg->u.mos_list_all.mos_obj.n == 1 &&
	    strcmp(f->msg->u.mos_list_all.mos_obj.v[0].obj_id, "IT-NEW") == 0);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &evil) == 0);
	GWRIG_CHECK(r, ncspeer_count(r->ncs, &old) == 0);
}

/* The it_publish suite. */
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_publish_ack_done, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_nack_retry_failed, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ack_timeout_resend,
		    setup_short_ack, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_wrong_message_id,
		    setup_short_ack, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_unacked_fails,
		    setup_short_ack, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ack_quirks_lenient, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ack_no_id_strict,
		    setup_strict, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_delayed_ack, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_ncs_restart, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_coalesce_newest, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_req_obj, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_req_all_list, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_req_all_paced, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_utf8_publish, setup_utf8,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_history_capture, setup,
		    itutil_teardown),
		cmocka_unit_test_setup_teardown(test_injected_abstract_refused,
		    setup, itutil_teardown),
		cmocka_unit_test_setup_teardown(test_injected_row_fails, setup,
		    itutil_teardown),
	};

	return cmocka_run_group_tests_name("it_publish", tests, NULL, NULL);
}
