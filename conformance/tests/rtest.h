/*
 * rtest: what the conformance tests share, on top of the gateway's test rig
 * (gateway/tests/gwproc.h): a mosgw with the scenarios' identities and the
 * object they use, and mosreplay run as a child with its output kept.
 */
#ifndef RTEST_H
#define RTEST_H

#include <stdio.h>

#include "gateway/tests/gwproc.h"

#define RTEST_MOS_ID	"mosgw.conformance"
#define RTEST_NCS_ID	"NCS.CONFORMANCE"
#define RTEST_RUN_MS	300000	/* one mosreplay run, at most */

/* $MOSGW_TOP, else ".". */
const char	*rtest_top(void);
/*
 * A started mosgw holding object CONF-1, with one NCS section
 * "conformance" whose ports (gp->opts.ncs[0].lower_port, upper_port) are
 * free for mosreplay --listen; gateway_extra adds [gateway] lines. NULL on
 * failure (printed).
 */
struct gwproc	*rtest_gateway(const char *gateway_extra);
/*
 * Run $MOSGW_BIN/mosreplay with the arguments (NULL-terminated) and wait:
 * its exit status, -1 on timeout; ch keeps its output (gwchild_clear it).
 */
int		 rtest_mosreplay(struct gwchild *, ...)
		    __attribute__((sentinel));

/* The same in the background (0 or -1), and the wait for it. */
int		 rtest_mosreplay_start(struct gwchild *, ...)
		    __attribute__((sentinel));
int		 rtest_mosreplay_wait(struct gwchild *);
/* A file under $MOSGW_TMP named for this process; its path in buf. */
void		 rtest_write_file(char *buf, size_t len, const char *name,
		    const char *text);

/* A child's output, each line indented, under a title. */
void		 rtest_print(FILE *, const char *title, const char *text);

#endif /* RTEST_H */
