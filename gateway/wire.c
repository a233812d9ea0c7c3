/*
 * A message encoded ahead of its sending, with its messageID left open: the
 * bookkeeping thread encodes the next mosObj messages while the loop thread
 * is busy with the links, and the loop thread only splices the messageID in
 * when the link is free (the messageID is taken at that moment, so ids on
 * the wire keep increasing, heartbeats included).
 *
 * The frame is written with the largest messageID as a placeholder; its
 * first <messageID> element is the envelope's (mosID, ncsID and messageID
 * come before the body, and text inside them is escaped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

#define WIRE_TAG	"<messageID>"

/* Encode m with a placeholder messageID and find where it sits. */
int
wire_encode(struct wire *w, struct mos_msg *m, enum mos_enc enc, char *err,
    size_t errlen)
{
	struct mos_buf	 b = { NULL, 0, 0 };
	char		 pat[64];
	size_t		 unit = enc == MOS_ENC_UTF16BE ? 2 : 1;
	ssize_t		 at;

	memset(w, 0, sizeof *w);
	m->has_message_id = true;
	m->message_id = MSGID_MAX;
	snprintf(pat, sizeof pat, WIRE_TAG "%d</messageID>", MSGID_MAX);
	if (mos_write(m, enc, &b, err, errlen) != 0) {
		mos_buf_free(&b);
		return -1;
	}
	if ((at = util_find_enc(b.data, b.len, pat, enc, false)) < 0) {
		snprintf(err, errlen, "no messageID in the encoded frame");
		mos_buf_free(&b);
		return -1;
	}
	w->data = b.data;
	w->len = b.len;
	w->id_off = (size_t)at + strlen(WIRE_TAG) * unit;
	w->id_len = (strlen(pat) - strlen(WIRE_TAG) -
	    strlen("</messageID>")) * unit;
	w->enc = enc;
	return 0;
}

/* The frame with the real messageID, in sb. */
void
wire_splice(const struct wire *w, int32_t message_id, struct sbuf *sb)
{
	char	digits[16], wide[32];
	int	n, i;

	n = snprintf(digits, sizeof digits, "%d", (int)message_id);
	sb->len = 0;
	sbuf_add(sb, (const char *)w->data, w->id_off);
	if (w->enc == MOS_ENC_UTF16BE) {
		for (i = 0; i < n; i++) {
			wide[2 * i] = '\0';
			wide[2 * i + 1] = digits[i];
		}
		sbuf_add(sb, wide, (size_t)n * 2);
	} else
		sbuf_add(sb, digits, (size_t)n);
	sbuf_add(sb, (const char *)w->data + w->id_off + w->id_len,
	    w->len - w->id_off - w->id_len);
}

/* Forget the encoded frame. */
void
wire_clear(struct wire *w)
{
	free(w->data);
	memset(w, 0, sizeof *w);
}
