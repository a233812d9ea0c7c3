/* The messages the gateway builds: acks, NACKs, heartbeats, listMachInfo. */
#include <string.h>

#include "gateway/gateway.h"

#define REPLY_TEXT_MAX	128	/* characters: statusDescription, roStatus */

/* The length of the UTF-8 sequence at s that XML 1.0 can carry, 0 if none. */
static size_t
reply_seq(const unsigned char *s)
{
	return mos_utf8_seq((const char *)s, strnlen((const char *)s, 4));
}

/*
 * Copy text that may come from a broken frame so that it can be written:
 * bytes that are not UTF-8 become U+FFFD, C0 controls a space (with ids,
 * all but HT, LF and CR become U+FFFD). At most max characters, the last
 * three "..." when cut. dst has room for max * 4 + 1 bytes.
 */
static void
reply_clean(char *dst, const char *text, size_t max, bool id)
{
	const unsigned char	*s = (const unsigned char *)(text != NULL ?
	    text : "");
	size_t			 chars = 0, o = 0, n, total = 0, i;

	for (i = 0; s[i] != '\0'; i += n, total++)
		n = reply_seq(s + i) != 0 ? reply_seq(s + i) : 1;
	while (*s != '\0') {
		if (total > max && chars == max - 3) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		n = reply_seq(s);
		if (n == 0 || (id && *s < 0x20 && *s != '\t' && *s != '\n' &&
		    *s != '\r')) {
			memcpy(dst + o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			n = 1;
		} else if (*s < 0x20 && !id)
			dst[o++] = ' ';
		else {
			memcpy(dst + o, s, n);
			o += n;
		}
		s += n;
		chars++;
	}
	dst[o] = '\0';
}

/*
 * A new message with our envelope; messageID 0 means none. The ids are
 * echoed from the request, maybe from a frame that did not parse.
 */
struct mos_msg *
reply_new(enum mos_type type, const char *mos_id, const char *ncs_id,
    int32_t message_id)
{
	struct mos_msg	*m;
	char		 buf[REPLY_TEXT_MAX * 4 + 1];

	if ((m = mos_msg_new(type)) == NULL)
		fatalx("out of memory");
	reply_clean(buf, mos_id, REPLY_TEXT_MAX, true);
	m->mos_id = mos_msg_strdup(m, buf);
	reply_clean(buf, ncs_id, REPLY_TEXT_MAX, true);
	m->ncs_id = mos_msg_strdup(m, buf);
	if (message_id > 0) {
		m->has_message_id = true;
		m->message_id = message_id;
	}
	return m;
}

/*
 * Copy text cut to 128 characters (not bytes), with "..." when cut; bytes
 * that are not UTF-8 become U+FFFD, control characters spaces.
 */
void
reply_bound(char *dst, size_t len, const char *text)
{
	char	buf[REPLY_TEXT_MAX * 4 + 1];

	reply_clean(buf, text, REPLY_TEXT_MAX, false);
	util_strlcpy(dst, buf, len);
}

/* mosAck with a bounded description. */
struct mos_msg *
reply_mos_ack(const char *mos_id, const char *ncs_id, int32_t message_id,
    const char *obj_id, bool ack, const char *text)
{
	struct mos_msg	*m;
	char		 buf[REPLY_TEXT_MAX * 4 + 8];

	m = reply_new(MOS_T_MOS_ACK, mos_id, ncs_id, message_id);
	reply_bound(buf, sizeof buf, text);
	m->u.mos_ack.obj_id = mos_msg_strdup(m, obj_id != NULL ? obj_id : "0");
	m->u.mos_ack.obj_rev = 0;
	m->u.mos_ack.has_obj_rev = true;
	m->u.mos_ack.status = ack ? "ACK" : "NACK";
	m->u.mos_ack.status_description = mos_msg_strdup(m, buf);
	return m;
}

/* roAck whose roStatus carries the text. */
struct mos_msg *
reply_ro_ack(const char *mos_id, const char *ncs_id, int32_t message_id,
    const char *ro_id, const char *text)
{
	struct mos_msg	*m;
	char		 buf[REPLY_TEXT_MAX * 4 + 8];

	m = reply_new(MOS_T_RO_ACK, mos_id, ncs_id, message_id);
	reply_bound(buf, sizeof buf, text);
	m->u.ro_ack.ro_id = mos_msg_strdup(m, ro_id != NULL ? ro_id : "");
	m->u.ro_ack.ro_status = mos_msg_strdup(m, buf);
	return m;
}

/* The negative answer of a port: roAck on upper, mosAck NACK elsewhere. */
struct mos_msg *
reply_nack(enum gw_port port, const char *mos_id, const char *ncs_id,
    int32_t message_id, const char *text)
{
	if (port == GW_PORT_UPPER)
		return reply_ro_ack(mos_id, ncs_id, message_id, NULL, text);
	return reply_mos_ack(mos_id, ncs_id, message_id, NULL, false, text);
}

/* A heartbeat with the current time (UTC). */
struct mos_msg *
reply_heartbeat(const char *mos_id, const char *ncs_id, int32_t message_id)
{
	struct mos_msg	*m;

	m = reply_new(MOS_T_HEARTBEAT, mos_id, ncs_id, message_id);
	mos_time_now(&m->u.heartbeat.time);
	return m;
}

/* listMachInfo: who we are, and the profiles that are really implemented. */
struct mos_msg *
reply_list_mach_info(const struct gw_config *cfg, const char *ncs_id,
    int32_t message_id, int64_t started_ms)
{
	struct mos_msg			*m;
	struct mos_list_mach_info	*l;
	int				 i;

	m = reply_new(MOS_T_LIST_MACH_INFO, cfg->mos_id, ncs_id, message_id);
	l = &m->u.list_mach_info;
	l->manufacturer = mos_msg_strdup(m, cfg->manufacturer);
	l->model = mos_msg_strdup(m, cfg->model);
	l->hw_rev = mos_msg_strdup(m, cfg->hw_rev);
	l->sw_rev = mos_msg_strdup(m, cfg->sw_rev);
	l->dom = mos_msg_strdup(m, cfg->dom);
	l->sn = mos_msg_strdup(m, *cfg->sn != '\0' ? cfg->sn : cfg->mos_id);
	l->id = mos_msg_strdup(m, *cfg->id != '\0' ? cfg->id : cfg->mos_id);
	mos_time_now(&l->time);
	l->op_time.sec = started_ms / 1000;
	l->op_time.ms = (int32_t)(started_ms % 1000);
	l->op_time.flags = MOS_TIME_SET | MOS_TIME_FRAC | MOS_TIME_ZONE;
	l->mos_rev = MOSGW_MOS_REV;
	for (i = 0; i < 8; i++)
		l->profiles[i] = i <= 4 ? 1 : 0;
	l->device_type = "MOS";
	return m;
}

/* Types that answer something: a broken one is dropped, never NACKed. */
bool
reply_is_answer_type(const char *type_name)
{
	static const char *const answers[] = {
		"mosAck", "roAck", "listMachInfo", "keepAlive",
		"mosListAll", "roListAll", "roList", "mosObjList",
		"mosListSearchableSchema",
	};
	size_t	i;

	if (type_name == NULL || *type_name == '\0')
		return false;	/* unknown: the envelope decides (a NACK) */
	for (i = 0; i < nitems(answers); i++) {
		if (strcmp(type_name, answers[i]) == 0)
			return true;
	}
	return false;
}
