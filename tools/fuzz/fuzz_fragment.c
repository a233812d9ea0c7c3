/*
 * fuzz_fragment: the check of verbatim-XML fragments (mos_fragment_check).
 * Whatever it accepts for an element must stay inside that element: a
 * mosObj with the fragment in its mosAbstract, description or mosPayload,
 * written and parsed back (strict), is the same message, with exactly one
 * objID (the strict parser refuses a second one), every other field as
 * written, and the element's content equal to the check's normal form of
 * the fragment (the fragment itself when it is already in that form). What
 * it refuses it must refuse with a message naming the element.
 *
 * Input: one selector byte, then the fragment.
 *   bits 0-1  element: 0 mosAbstract, 1 description, 2 and 3 mosPayload
 *   bit  2    the message is written as UTF-16BE (else UTF-8)
 */
#include "tools/fuzz/fuzz.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FF_OBJID	"RIGHT-ID"

/* A complete strict mosObj with text in the field of element elem. */
static struct mos_msg *
ff_obj(const char *elem, const char *text)
{
	struct mos_msg	*m;
	struct mos_obj	*o;

	if ((m = mos_msg_new(MOS_T_MOS_OBJ)) == NULL)
		abort();
	m->mos_id = "mam.fuzz";
	m->ncs_id = "ncs.fuzz";
	m->has_message_id = true;
	m->message_id = 7;
	o = &m->u.mos_obj;
	o->obj_id = FF_OBJID;
	o->obj_slug = "slug";
	o->obj_type = "VIDEO";
	o->obj_tb.v = 50;
	o->obj_tb.set = true;
	o->obj_rev = 3;
	o->has_obj_rev = true;
	o->obj_dur = 1500;
	o->has_obj_dur = true;
	o->status = "UPDATED";
	o->obj_air = "READY";
	o->created_by = "fuzz";
	o->changed_by = "fuzz";
	mos_time_now(&o->created);
	o->changed = o->created;
	o->description = "";
	if (strcmp(elem, "mosAbstract") == 0)
		o->mos_abstract = text;
	else if (strcmp(elem, "description") == 0)
		o->description = text;
	else {
		if ((o->ext_meta.v = mos_msg_alloc(m,
		    sizeof *o->ext_meta.v)) == NULL)
			abort();
		o->ext_meta.n = 1;
		o->ext_meta.v[0].mos_schema = "http://fuzz/schema";
		o->ext_meta.v[0].mos_payload = text;
	}
	return m;
}

/* The field of element elem in a parsed mosObj. */
static const char *
ff_field(const struct mos_msg *m, const char *elem)
{
	const struct mos_obj	*o = &m->u.mos_obj;

	if (strcmp(elem, "mosAbstract") == 0)
		return o->mos_abstract;
	if (strcmp(elem, "description") == 0)
		return o->description;
	return o->ext_meta.n == 1 ? o->ext_meta.v[0].mos_payload : NULL;
}

/* An accepted fragment inside a whole message, written and read back. */
static void
ff_round_trip(const char *elem, const char *frag, const char *canon,
    enum mos_enc enc)
{
	static struct mos_buf	 out;
	struct mos_msg		*m, *want, *back = NULL;
	struct mos_error	 err;
	const char		*got;
	char			 ebuf[256];

	m = ff_obj(elem, frag);
	want = ff_obj(elem, canon);
	want->u.mos_obj.created = m->u.mos_obj.created;
	want->u.mos_obj.changed = m->u.mos_obj.changed;
	out.len = 0;
	if (mos_write(m, enc, &out, ebuf, sizeof ebuf) != 0) {
		FUZZ_FAIL("fuzz_fragment: %s accepted but not written: %s\n",
		    elem, ebuf);
		goto done;
	}
	memset(&err, 0, sizeof err);
	if (mos_parse(out.data, out.len, enc, MOS_STRICT, &back, &err) !=
	    MOS_OK) {
		FUZZ_FAIL("fuzz_fragment: %s accepted but its mosObj does not "
		    "parse: %s: %s\n", elem, mos_err_name(err.code), err.msg);
		goto done;
	}
	got = back->type == MOS_T_MOS_OBJ ? ff_field(back, elem) : NULL;
	if (back->type != MOS_T_MOS_OBJ ||
	    strcmp(back->u.mos_obj.obj_id, FF_OBJID) != 0)
		FUZZ_FAIL("fuzz_fragment: %s changed the message or its "
		    "objID\n", elem);
	else if (got == NULL || strcmp(got, canon) != 0)
		FUZZ_FAIL("fuzz_fragment: %s reads back as \"%.200s\", not "
		    "\"%.200s\"\n", elem, got != NULL ? got : "(none)", canon);
	else if (!mos_msg_equal(back, want))
		FUZZ_FAIL("fuzz_fragment: %s changed another field of the "
		    "mosObj\n", elem);
done:
	mos_msg_free(back);
	mos_msg_free(want);
	mos_msg_free(m);
}

/* One input: selector byte, then the fragment. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const elems[] = { "mosAbstract", "description",
	    "mosPayload", "mosPayload" };
	static struct mos_buf	 canon, again, loose;
	static char		*frag;
	static size_t		 fcap;
	static bool		 init;
	const char		*elem;
	enum mos_enc		 enc;
	char			 msg[256], msg2[256];
	size_t			 n;
	int			 rc;

	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	if (!init) {
		mos_init();
		init = true;
	}
	elem = elems[data[0] & 3];
	enc = (data[0] & 4) != 0 ? MOS_ENC_UTF16BE : MOS_ENC_UTF8;
	n = size - 1;
	canon.len = again.len = loose.len = 0;
	if (n + 1 > fcap) {
		free(frag);
		if ((frag = malloc(fcap = n + 1)) == NULL)
			abort();
	}
	memcpy(frag, data + 1, n);
	frag[n] = '\0';
	msg[0] = '\0';
	rc = mos_fragment_check(elem, frag, n, MOS_STRICT, &canon, msg,
	    sizeof msg);
	/* without a normal form wanted (plain text skips the parser) alike */
	if (mos_fragment_check(elem, frag, n, MOS_STRICT, NULL, msg2,
	    sizeof msg2) != rc)
		FUZZ_FAIL("fuzz_fragment: %s judged differently when only "
		    "checked\n", elem);
	if (rc != 0) {
		if (strncmp(msg, elem, strlen(elem)) != 0 ||
		    msg[strlen(elem)] != ':')
			FUZZ_FAIL("fuzz_fragment: refused without naming %s: "
			    "\"%s\"\n", elem, msg);
		return 0;
	}
	if (memchr(frag, '\0', n) != NULL) {
		FUZZ_FAIL("fuzz_fragment: %s with a NUL accepted\n", elem);
		return 0;
	}
	/* The normal form is a fixed point, and lenient accepts it alike. */
	if (mos_fragment_check(elem, (const char *)canon.data, canon.len,
	    MOS_STRICT, &again, msg, sizeof msg) != 0 ||
	    again.len != canon.len || memcmp(again.data, canon.data,
	    canon.len) != 0)
		FUZZ_FAIL("fuzz_fragment: %s normal form is not stable\n",
		    elem);
	if (mos_fragment_check(elem, frag, n, MOS_LENIENT,
	    &loose, msg, sizeof msg) != 0 || loose.len != canon.len ||
	    memcmp(loose.data, canon.data, canon.len) != 0)
		FUZZ_FAIL("fuzz_fragment: %s accepted strict but not lenient "
		    "alike\n", elem);
	ff_round_trip(elem, frag, (const char *)canon.data, enc);
	return 0;
}
