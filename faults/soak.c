/*
 * The soak run (make soak DURATION=S): mixed traffic through the chaos
 * proxy with random faults and kill -9s of mosgw, then the checks: every
 * acknowledged change delivered at its newest revision, nothing sent that
 * was not stored, no descriptor or memory growth (procfs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults/faults.h"

#define SOAK_ASSETS	100

struct soak {
	struct frig	*f;
	struct ledger	 l;
	unsigned	 seed;
	long		 acked, refused, kills, faults, requests, answered;
	int		 conn;
};

static unsigned
soak_rand(struct soak *s, unsigned n)
{
	s->seed = s->seed * 1103515245u + 12345u;
	return (s->seed >> 16) % n;
}

/* One random fault on one of the two links' proxies. */
static void
soak_fault(struct soak *s)
{
	struct proxy	*p = &s->f->px[soak_rand(s, 2)];

	s->faults++;
	(void)proxy_cmd(p, "reset");
	switch (soak_rand(s, 7)) {
	case 0:
		(void)proxy_cmd(p, "chunk 1");
		break;
	case 1:
		(void)proxy_cmd(p, "chunk random 1 %u", 2 + soak_rand(s, 500));
		break;
	case 2:
		(void)proxy_cmd(p, "delay %u", soak_rand(s, 80));
		break;
	case 3:
		(void)proxy_cmd(p, "stall");
		usleep(200000 + soak_rand(s, 1500) * 1000);
		(void)proxy_cmd(p, "resume");
		break;
	case 4:
		(void)proxy_cmd(p, "cut %s %u", soak_rand(s, 2) ? "rst" : "fin",
		    soak_rand(s, 3000));
		break;
	case 5:
		(void)proxy_cmd(p, "blackhole on");
		usleep(500000 + soak_rand(s, 2500) * 1000);
		(void)proxy_cmd(p, "blackhole off");
		(void)proxy_cmd(p, "drop");
		break;
	default:
		(void)proxy_cmd(p, "drop");
		break;
	}
}

/* A request from the NCS on its dialed connection. */
static void
soak_request(struct soak *s)
{
	const struct ncspeer_frame	*f;

	if (s->conn <= 0 || !ncspeer_conn_open(s->f->r->ncs, s->conn))
		s->conn = gwrig_dial(s->f->r, NCSPEER_LOWER);
	if (s->conn <= 0)
		return;
	s->requests++;
	f = gwrig_request(s->f->r, s->conn, soak_rand(s, 2) ?
	    MOS_T_HEARTBEAT : MOS_T_REQ_MACH_INFO, F_WAIT_MS);
	if (f != NULL)
		s->answered++;
}

int
soak_run(int seconds, unsigned seed)
{
	struct soak		 s;
	struct ncspeer_policy	 pol;
	int64_t			 end, next_kill;
	long			 lost, dups, back, unrep;
	long			 rss0 = -1, rss1 = -1, fds0 = -1, fds1 = -1;
	bool			 ok = true, integ;
	int			 i, k;

	memset(&s, 0, sizeof s);
	s.seed = seed;
	printf("soak: %d s, seed %u\n", seconds, seed);
	ledger_init(&s.l, SOAK_ASSETS, "SOAK");
	if ((s.f = frig_new(true, NULL, "backoff_base = 0.1\n"
	    "backoff_max = 0.5\nlease = 2\n", "max_attempts = 1000\n"
	    "ack_timeout = 1\nretries = 1\nreconnect_min = 0.1\n"
	    "reconnect_max = 1\nheartbeat_interval = 1\n")) == NULL ||
	    frig_start(s.f, NULL) != 0) {
		printf("soak: the rig did not start\n0 passed, 1 failed\n");
		frig_free(s.f);
		return -1;
	}
	memset(&pol, 0, sizeof pol);
	pol.ack_delay_ms = 2;
	ncspeer_set_policy(s.f->r->ncs, &pol);
	end = ncspeer_now_ms() + (int64_t)seconds * 1000;
	next_kill = ncspeer_now_ms() + 5000 + soak_rand(&s, 10000);
	while (ncspeer_now_ms() < end) {
		k = (int)soak_rand(&s, SOAK_ASSETS);
		for (i = 0; i < 3; i++, k = (k + 7) % SOAK_ASSETS) {
			if (s.l.rev[k] > 0 && !s.l.deleted[k] &&
			    soak_rand(&s, 6) == 0 ? ledger_del(&s.l,
			    s.f->r->gw, k) : ledger_put(&s.l, s.f->r->gw, k))
				s.acked++;
			else
				s.refused++;
		}
		soak_request(&s);
		if (soak_rand(&s, 3) == 0)
			soak_fault(&s);
		/* kill -9 now and then, but not in the last quarter */
		if (ncspeer_now_ms() >= next_kill &&
		    end - ncspeer_now_ms() > seconds * 250) {
			gwproc_kill(s.f->r->gw);
			s.kills++;
			(void)ledger_put(&s.l, s.f->r->gw,
			    (int)soak_rand(&s, SOAK_ASSETS));
			if (frig_start(s.f, NULL) != 0) {
				printf("soak: restart failed\n");
				ok = false;
				break;
			}
			s.conn = 0;
			rss0 = fds0 = -1;
			next_kill = ncspeer_now_ms() + 5000 +
			    soak_rand(&s, 10000);
		}
		/* the last process: note its figures once it is warm */
		if (rss0 == -1 && end - ncspeer_now_ms() < seconds * 700) {
			rss0 = proc_kb(s.f->r->gw->pid, "VmRSS");
			fds0 = proc_fds(s.f->r->gw->pid);
		}
		usleep(20000);
	}
	(void)proxy_cmd(&s.f->px[0], "reset");
	(void)proxy_cmd(&s.f->px[1], "reset");
	(void)proxy_cmd(&s.f->px[0], "drop");
	(void)proxy_cmd(&s.f->px[1], "drop");
	if (ok && gwproc_wait_idle(s.f->r->gw, s.f->r->lane, F_DRAIN_MS) != 0) {
		printf("soak: did not drain\n");
		ok = false;
	}
	(void)frig_links(s.f, F_WAIT_MS);
	usleep(500000);
	rss1 = proc_kb(s.f->r->gw->pid, "VmRSS");
	fds1 = proc_fds(s.f->r->gw->pid);
	ledger_check(&s.l, s.f->r->ncs, &lost, &dups, &back);
	unrep = ledger_unreported(&s.l, s.f->r->ncs);
	if (gwproc_stop(s.f->r->gw) != 0)
		ok = false;
	integ = db_integrity_ok(s.f->r->gw);
	printf("soak: %ld changes acknowledged (%ld refused), %ld faults, "
	    "%ld kill -9, %ld/%ld NCS requests answered\n", s.acked,
	    s.refused, s.faults, s.kills, s.answered, s.requests);
	printf("soak: lost %ld, sent-but-never-stored %ld, duplicate mosObj "
	    "%ld, revisions backwards %ld, integrity %s\n", lost, unrep, dups,
	    back, integ ? "ok" : "BAD");
	printf("soak: last process RSS %ld -> %ld kB, fds %ld -> %ld\n", rss0,
	    rss1, fds0, fds1);
	if (lost != 0 || unrep != 0 || back != 0 || !integ)
		ok = false;
	if (rss_meaningful() && rss0 > 0 && rss1 - rss0 > 16 * 1024) {
		printf("soak: RSS grew by %ld kB\n", rss1 - rss0);
		ok = false;
	}
	if (fds0 > 0 && fds1 > fds0 + 2) {
		printf("soak: descriptors grew %ld -> %ld\n", fds0, fds1);
		ok = false;
	}
	printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
	frig_free(s.f);
	ledger_free(&s.l);
	return ok ? 0 : -1;
}
