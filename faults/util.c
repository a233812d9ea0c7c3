/*
 * What the rows share: the row record, the chaos proxy as a child, a rig
 * with proxied links, the faultvfs environment and its power loss, procfs
 * figures, and the delivery ledger.
 */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "store/store.h"
#include "faults/faults.h"
#include "tools/faultvfs.h"

/* Append formatted text to a row field, "; " between notes. */
static void
row_vadd(char *dst, size_t size, const char *fmt, va_list ap)
{
	size_t	len = strlen(dst);

	if (len > 0 && len + 2 < size) {
		memcpy(dst + len, "; ", 3);
		len += 2;
	}
	if (len < size)
		vsnprintf(dst + len, size - len, fmt, ap);
}

/* Something observed. */
void
row_note(struct row *r, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	row_vadd(r->observed, sizeof r->observed, fmt, ap);
	va_end(ap);
}

/* A figure. */
void
row_fig(struct row *r, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	row_vadd(r->figures, sizeof r->figures, fmt, ap);
	va_end(ap);
}

/* The row failed (the first reason is kept first). */
void
row_fail(struct row *r, const char *fmt, ...)
{
	va_list	ap;

	r->result = ROW_FAIL;
	va_start(ap, fmt);
	row_vadd(r->observed, sizeof r->observed, fmt, ap);
	va_end(ap);
}

/* The row cannot run here. */
void
row_skip(struct row *r, const char *fmt, ...)
{
	va_list	ap;

	r->result = ROW_SKIP;
	va_start(ap, fmt);
	row_vadd(r->observed, sizeof r->observed, fmt, ap);
	va_end(ap);
}

/* The directory of this program (the test programs are built there). */
static const char *
self_dir(void)
{
	static char	dir[PATH_MAX];
	ssize_t		n;
	char		*slash;

	if (dir[0] != '\0')
		return dir;
	if ((n = readlink("/proc/self/exe", dir, sizeof dir - 1)) <= 0)
		n = 0;
	dir[n] = '\0';
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	return dir;
}

/* Start mosproxy towards 127.0.0.1:target and connect to its control port. */
int
proxy_start(struct proxy *p, uint16_t target, unsigned seed)
{
	struct sockaddr_in	 sin;
	char			 path[PATH_MAX], tgt[32], sd[16];
	char			 opt_t[] = "-t", opt_s[] = "-s";
	char			*argv[] = { path, opt_t, tgt, opt_s, sd, NULL };
	const char		*line;
	int			 lp, cp;

	memset(p, 0, sizeof *p);
	p->ctl = -1;
	snprintf(path, sizeof path, "%s/mosproxy", self_dir());
	snprintf(tgt, sizeof tgt, "127.0.0.1:%u", (unsigned)target);
	snprintf(sd, sizeof sd, "%u", seed);
	snprintf(p->errlog, sizeof p->errlog, "%s/mosproxy.%d.err",
	    getenv("MOSGW_TMP") != NULL ? getenv("MOSGW_TMP") : "/tmp",
	    (int)getpid());
	if (gwchild_start(&p->ch, NULL, argv, p->errlog) != 0)
		return -1;
	if ((line = gwchild_line(&p->ch, "mosproxy listen=", F_WAIT_MS)) ==
	    NULL || sscanf(line, "mosproxy listen=%d control=%d", &lp,
	    &cp) != 2) {
		fprintf(stderr, "mosproxy did not start\n");
		gwchild_clear(&p->ch);
		return -1;
	}
	p->port = (uint16_t)lp;
	p->ctl_port = (uint16_t)cp;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(p->ctl_port);
	if ((p->ctl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(p->ctl, (struct sockaddr *)&sin, sizeof sin) == -1) {
		proxy_stop(p);
		return -1;
	}
	return 0;
}

/* Send one command and read its one-line answer. */
int
proxy_cmd(struct proxy *p, const char *fmt, ...)
{
	char		 cmd[256];
	struct pollfd	 pfd;
	size_t		 len = 0;
	ssize_t		 n;
	int64_t		 deadline = ncspeer_now_ms() + F_WAIT_MS;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd - 1, fmt, ap);
	va_end(ap);
	strcat(cmd, "\n");
	p->reply[0] = '\0';
	if (p->ctl == -1 || write(p->ctl, cmd, strlen(cmd)) !=
	    (ssize_t)strlen(cmd))
		return -1;
	while (len < sizeof p->reply - 1 && ncspeer_now_ms() < deadline) {
		pfd.fd = p->ctl;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if ((n = read(p->ctl, p->reply + len, 1)) <= 0)
			return -1;
		if (p->reply[len] == '\n') {
			p->reply[len] = '\0';
			return strncmp(p->reply, "ok", 2) == 0 ? 0 : -1;
		}
		len++;
	}
	p->reply[len] = '\0';
	return -1;
}

/* One counter of the proxy's stats. */
long long
proxy_stat(struct proxy *p, const char *key)
{
	char		 k[32];
	const char	*s;

	if (proxy_cmd(p, "stats") != 0)
		return -1;
	snprintf(k, sizeof k, " %s=", key);
	if ((s = strstr(p->reply, k)) == NULL)
		return -1;
	return strtoll(s + strlen(k), NULL, 10);
}

/* Stop the proxy. */
void
proxy_stop(struct proxy *p)
{
	struct stat	st;

	if (p->ctl != -1) {
		(void)proxy_cmd(p, "quit");
		close(p->ctl);
		p->ctl = -1;
	}
	if (p->ch.pid > 0)
		(void)gwchild_wait(&p->ch, 2000);
	gwchild_clear(&p->ch);
	if (p->errlog[0] != '\0' && stat(p->errlog, &st) == 0 &&
	    st.st_size == 0)
		unlink(p->errlog);
}

/* A rig whose links may go through proxies; not started yet. */
struct frig *
frig_new(bool proxied, const char *gateway_extra, const char *database_extra,
    const char *ncs_extra)
{
	return frig_new_api(proxied, gateway_extra, database_extra, ncs_extra,
	    NULL, NULL);
}

/* The same with the HTTP API on when api_tokens is not NULL. */
struct frig *
frig_new_api(bool proxied, const char *gateway_extra,
    const char *database_extra, const char *ncs_extra, const char *api_tokens,
    const char *api_extra)
{
	struct frig		*f;
	struct ncspeer_opts	 po;
	struct gwproc_opts	*o;
	int			 i;

	if ((f = calloc(1, sizeof *f)) == NULL ||
	    (f->r = calloc(1, sizeof *f->r)) == NULL)
		abort();
	f->px[0].ctl = f->px[1].ctl = -1;
	f->px[0].ch.pid = f->px[1].ch.pid = -1;
	f->proxied = proxied;
	o = &f->r->opts;
	o->log_level = "debug";
	o->gateway_extra = gateway_extra;
	o->database_extra = database_extra;
	o->api_tokens = api_tokens;
	o->api_extra = api_extra;
	o->nncs = 1;
	o->ncs[0].extra = ncs_extra;
	snprintf(f->r->lane, sizeof f->r->lane, "ncs:n1");
	memset(&po, 0, sizeof po);
	po.mos_id = "mosgw.test";
	po.ncs_id = "NCSPEER";
	po.enc = MOS_ENC_UTF16BE;
	if ((f->r->ncs = ncspeer_new(&po)) == NULL)
		goto fail;
	o->ncs[0].lower_port = ncspeer_port(f->r->ncs, NCSPEER_LOWER);
	o->ncs[0].upper_port = ncspeer_port(f->r->ncs, NCSPEER_UPPER);
	if (proxied) {
		for (i = 0; i < 2; i++)
			if (proxy_start(&f->px[i], i == 0 ?
			    o->ncs[0].lower_port : o->ncs[0].upper_port,
			    (unsigned)(i + 1)) != 0)
				goto fail;
		o->ncs[0].lower_port = f->px[0].port;
		o->ncs[0].upper_port = f->px[1].port;
	}
	if ((f->r->gw = gwproc_new(o)) == NULL)
		goto fail;
	return f;
fail:
	frig_free(f);
	return NULL;
}

/* Start the gateway, with the shim's mode if one is given. */
int
frig_start(struct frig *f, const char *vfs_mode)
{
	int	rc;

	if (vfs_mode != NULL)
		fault_vfs_env(vfs_mode, NULL, NULL);
	rc = gwproc_start(f->r->gw);
	if (vfs_mode != NULL)
		fault_vfs_env(NULL, NULL, NULL);
	return rc;
}

/* Both outbound links of the gateway are open at the NCS. */
int
frig_links(struct frig *f, int timeout_ms)
{
	if (ncspeer_wait_open(f->r->ncs, NCSPEER_LOWER, NCSPEER_ACCEPTED, 1,
	    timeout_ms) != 0 ||
	    ncspeer_wait_open(f->r->ncs, NCSPEER_UPPER, NCSPEER_ACCEPTED, 1,
	    timeout_ms) != 0)
		return -1;
	return 0;
}

/* A started rig with both links up; NULL (and the row failed) on error. */
struct frig *
frig_up(struct row *row, bool proxied, const char *gateway_extra,
    const char *database_extra, const char *ncs_extra)
{
	struct frig	*f;

	if ((f = frig_new(proxied, gateway_extra, database_extra,
	    ncs_extra)) == NULL || frig_start(f, NULL) != 0 ||
	    frig_links(f, F_WAIT_MS) != 0) {
		row_fail(row, "the rig did not start");
		frig_free(f);
		return NULL;
	}
	return f;
}

/* Stop everything. */
void
frig_free(struct frig *f)
{
	int	i;

	if (f == NULL)
		return;
	gwrig_free(f->r);
	for (i = 0; i < 2; i++)
		if (f->px[i].ch.pid > 0 || f->px[i].ctl != -1)
			proxy_stop(&f->px[i]);
	free(f);
}

/* The shared object, next to this program. */
const char *
fault_vfs_path(void)
{
	static char	path[PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/faultvfs.so", self_dir());
	return access(path, R_OK) == 0 ? path : NULL;
}

/* The environment the shim reads (children inherit it). */
void
fault_vfs_env(const char *mode, const char *clear, const char *arm)
{
	if (mode == NULL) {
		unsetenv("LD_PRELOAD");
		unsetenv("MOSGW_FAULTVFS");
		unsetenv("MOSGW_FAULTVFS_CLEAR");
		unsetenv("MOSGW_FAULTVFS_ARM");
		return;
	}
	if (fault_vfs_path() != NULL)
		setenv("LD_PRELOAD", fault_vfs_path(), 1);
#ifdef __SANITIZE_ADDRESS__
	/* the shim is not instrumented and comes first in LD_PRELOAD */
	setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
#endif
	setenv("MOSGW_FAULTVFS", mode, 1);
	if (clear != NULL)
		setenv("MOSGW_FAULTVFS_CLEAR", clear, 1);
	if (arm != NULL)
		setenv("MOSGW_FAULTVFS_ARM", arm, 1);
}

/* Undo one file's writes since its last sync. */
static long long
undo_file(const char *path)
{
	struct faultvfs_rec	 r, *recs = NULL;
	struct stat		 st;
	char			 upath[PATH_MAX + 16];
	uint8_t			*data = NULL, **bufs = NULL;
	size_t			 n = 0, cap = 0, i;
	long long		 undone = 0;
	int			 u, fd;

	if (snprintf(upath, sizeof upath, "%s%s", path,
	    FAULTVFS_UNDO_SUFFIX) >= (int)sizeof upath)
		return -1;
	if ((u = open(upath, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	while (read(u, &r, sizeof r) == (ssize_t)sizeof r &&
	    r.magic == FAULTVFS_MAGIC) {
		data = NULL;
		if (r.kind == 1 && r.len > 0) {
			if ((data = malloc(r.len)) == NULL ||
			    read(u, data, r.len) != (ssize_t)r.len) {
				free(data);
				break;
			}
		}
		if (n == cap) {
			cap = cap == 0 ? 64 : cap * 2;
			recs = realloc(recs, cap * sizeof *recs);
			bufs = realloc(bufs, cap * sizeof *bufs);
			if (recs == NULL || bufs == NULL)
				abort();
		}
		recs[n] = r;
		bufs[n++] = data;
	}
	close(u);
	if (n > 0 && (fd = open(path, O_WRONLY | O_CLOEXEC)) != -1) {
		for (i = n; i-- > 0;) {
			if (recs[i].kind == 1 && recs[i].len > 0 &&
			    pwrite(fd, bufs[i], recs[i].len,
			    (off_t)recs[i].off) == (ssize_t)recs[i].len)
				undone += (long long)recs[i].len;
			else if (recs[i].kind == 0) {
				/* appended bytes count as undone too */
				if (fstat(fd, &st) == 0 && st.st_size >
				    (off_t)recs[i].off)
					undone += (long long)(st.st_size -
					    (off_t)recs[i].off);
				(void)ftruncate(fd, (off_t)recs[i].off);
			}
		}
		fsync(fd);
		close(fd);
	}
	for (i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	free(recs);
	unlink(upath);
	return undone;
}

/* The power loss: undo what the page cache held, forget shared memory. */
long long
faultvfs_power_loss(const char *db)
{
	static const char	*suffix[] = { "", "-wal", "-journal" };
	char			 path[PATH_MAX];
	long long		 total = 0, n;
	size_t			 i;

	for (i = 0; i < 3; i++) {
		if (snprintf(path, sizeof path, "%s%s", db, suffix[i]) >=
		    (int)sizeof path || (n = undo_file(path)) < 0)
			return -1;
		total += n;
	}
	snprintf(path, sizeof path, "%s-shm", db);
	(void)unlink(path);
	return total;
}

/* A field of /proc/PID/status, in kB. */
long
proc_kb(pid_t pid, const char *field)
{
	char	 path[64], line[256];
	size_t	 flen = strlen(field);
	FILE	*f;
	long	 v = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* False under AddressSanitizer, whose allocator holds freed memory back. */
bool
rss_meaningful(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return false;
#else
	return true;
#endif
}

/* Entries of /proc/PID/fd. */
int
proc_fds(pid_t pid)
{
	char		 path[64];
	DIR		*d;
	struct dirent	*e;
	int		 n = 0;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/*
 * The gateway's descriptor count once it is at most want, or where it
 * stands after 10 s: the bound is a steady state (closes and evictions of
 * a burst take a moment on a busy machine), not a race against a sleep.
 */
int
fds_settle(struct gwproc *gw, int want)
{
	int	n = gwproc_fd_count(gw), i;

	for (i = 0; i < 100 && n > want; i++) {
		usleep(100000);
		n = gwproc_fd_count(gw);
	}
	return n;
}

/* A non-blocking connect to the port on loopback; the fd or -1. */
int
dial_raw(uint16_t port)
{
	struct sockaddr_in	sin;
	int			fd;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Our test envelope around a body. */
char *
frame_xml(int32_t message_id, const char *body)
{
	char	*s;

	if (asprintf(&s, "<mos><mosID>mosgw.test</mosID><ncsID>NCSPEER</ncsID>"
	    "<messageID>%d</messageID>%s</mos>", (int)message_id, body) == -1)
		abort();
	return s;
}

/* A reply with that messageID on conn. */
const struct ncspeer_frame *
reply_on(struct gwrig *r, int conn, int32_t id, int timeout_ms)
{
	struct ncspeer_match	mt;

	memset(&mt, 0, sizeof mt);
	mt.conn = conn;
	mt.message_id = id;
	return ncspeer_wait(r->ncs, &mt, timeout_ms);
}

/* A heartbeat answered on conn. */
bool
heartbeat_ok(struct gwrig *r, int conn)
{
	const struct ncspeer_frame	*f;

	f = gwrig_request(r, conn, MOS_T_HEARTBEAT, F_WAIT_MS);
	return f != NULL && strcmp(f->type_name, "heartbeat") == 0;
}

/* A ledger of n assets named PREFIX-NNNN. */
void
ledger_init(struct ledger *l, int n, const char *prefix)
{
	int	i;

	memset(l, 0, sizeof *l);
	l->n = n;
	if ((l->id = calloc((size_t)n, sizeof *l->id)) == NULL ||
	    (l->rev = calloc((size_t)n, sizeof *l->rev)) == NULL ||
	    (l->deleted = calloc((size_t)n, sizeof *l->deleted)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		snprintf(l->id[i], sizeof l->id[i], "%s-%04d", prefix, i);
}

void
ledger_free(struct ledger *l)
{
	free(l->id);
	free(l->rev);
	free(l->deleted);
	memset(l, 0, sizeof *l);
}

/* Read "rev N" from mosctl's answer. */
static bool
ledger_result(struct ledger *l, int i, int st, char *out, bool deleted)
{
	const char	*s;
	bool		 ok = false;

	if (st == 0 && out != NULL && (s = strstr(out, " rev ")) != NULL) {
		l->rev[i] = atoi(s + 5);
		l->deleted[i] = deleted;
		ok = true;
	}
	free(out);
	return ok;
}

/* mosctl asset put; stored only when mosctl said so. */
bool
ledger_put(struct ledger *l, struct gwproc *gw, int i)
{
	char	*out = NULL, slug[48];
	int	 st;

	snprintf(slug, sizeof slug, "Change %d of %s", l->rev[i] + 1,
	    l->id[i]);
	if (l->sync_normal)
		st = gwproc_mosctl(gw, &out, "--sync", "normal", "asset",
		    "put", l->id[i], "--slug", slug, (char *)NULL);
	else
		st = gwproc_mosctl(gw, &out, "asset", "put", l->id[i],
		    "--slug", slug, (char *)NULL);
	return ledger_result(l, i, st, out, false);
}

/* mosctl asset delete. */
bool
ledger_del(struct ledger *l, struct gwproc *gw, int i)
{
	char	*out = NULL;
	int	 st;

	if (l->sync_normal)
		st = gwproc_mosctl(gw, &out, "--sync", "normal", "asset",
		    "delete", l->id[i], (char *)NULL);
	else
		st = gwproc_mosctl(gw, &out, "asset", "delete", l->id[i],
		    (char *)NULL);
	return ledger_result(l, i, st, out, true);
}

/* Compare the ledger with what the NCS received. */
void
ledger_check(struct ledger *l, struct ncspeer *ncs, long *lost, long *dups,
    long *back)
{
	const struct ncspeer_frame	*f;
	const struct mos_obj		*o;
	uint32_t			*last, *seen;
	size_t				 i;
	long				 nobj = 0, distinct = 0;
	int				 k;

	*lost = *dups = *back = 0;
	last = calloc((size_t)l->n, sizeof *last);
	/* bit r of seen[k]: revisions 1..32 as a bitmap, beyond: counted */
	seen = calloc((size_t)l->n * 32, sizeof *seen);
	if (last == NULL || seen == NULL)
		abort();
	for (i = 0; (f = ncspeer_frame_at(ncs, i)) != NULL; i++) {
		if (f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ ||
		    f->side != NCSPEER_ACCEPTED)
			continue;
		o = &f->msg->u.mos_obj;
		for (k = 0; k < l->n; k++)
			if (o->obj_id != NULL && strcmp(o->obj_id, l->id[k]) == 0)
				break;
		if (k == l->n)
			continue;
		nobj++;
		if (o->obj_rev < last[k])
			(*back)++;
		last[k] = o->obj_rev;
		if (o->obj_rev < 1024) {
			if ((seen[k * 32 + o->obj_rev / 32] &
			    (1u << (o->obj_rev % 32))) == 0)
				distinct++;
			seen[k * 32 + o->obj_rev / 32] |=
			    1u << (o->obj_rev % 32);
		}
	}
	for (k = 0; k < l->n; k++) {
		if (l->rev[k] == 0)
			continue;	/* never reported stored */
		/* a deletion of an object the NCS never had may be skipped */
		if (l->deleted[k] && last[k] == 0)
			continue;
		if ((int)last[k] < l->rev[k])
			(*lost)++;
	}
	*dups = nobj - distinct;
	free(last);
	free(seen);
}

/* Rows reported stored that the database does not have at that revision. */
long
ledger_missing_in_db(struct ledger *l, struct gwproc *gw)
{
	struct store		*db;
	struct store_stmt	*st;
	long		 missing = 0;
	int		 k;

	if (store_open_file(&db, gw->db, STORE_OPEN_READONLY, NULL) !=
	    STORE_OK ||
	    store_prepare(db, "SELECT rev FROM assets WHERE obj_id = ?", 0,
	    &st) != STORE_OK) {
		store_close(db);
		return -1;
	}
	for (k = 0; k < l->n; k++) {
		if (l->rev[k] == 0)
			continue;
		store_reset(st);
		store_bind_text(st, 1, l->id[k], -1);
		if (store_step(st) != STORE_ROW ||
		    store_column_int(st, 0) < l->rev[k])
			missing++;
	}
	store_finalize(st);
	store_close(db);
	return missing;
}

/* PRAGMA integrity_check says "ok". */
bool
db_integrity_ok(struct gwproc *gw)
{
	struct store		*db;
	struct store_stmt	*st;
	bool		 ok = false;

	if (store_open_file(&db, gw->db, 0, NULL) ==
	    STORE_OK && store_prepare(db, "PRAGMA integrity_check", 0, &st) ==
	    STORE_OK) {
		ok = store_step(st) == STORE_ROW && strcmp(store_column_text(st,
		    0), "ok") == 0;
		store_finalize(st);
	}
	store_close(db);
	return ok;
}

/* The ledger index of an objID; -1. */
static int
ledger_find(struct ledger *l, const char *obj)
{
	int	k;

	for (k = 0; obj != NULL && k < l->n; k++)
		if (strcmp(obj, l->id[k]) == 0)
			return k;
	return -1;
}

/* mosObj frames newer than anything mosctl reported stored. */
long
ledger_unreported(struct ledger *l, struct ncspeer *ncs)
{
	const struct ncspeer_frame	*f;
	size_t				 i;
	long				 n = 0;
	int				 k;

	for (i = 0; (f = ncspeer_frame_at(ncs, i)) != NULL; i++) {
		if (f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ ||
		    f->side != NCSPEER_ACCEPTED)
			continue;
		k = ledger_find(l, f->msg->u.mos_obj.obj_id);
		if (k >= 0 && (int)f->msg->u.mos_obj.obj_rev > l->rev[k])
			n++;
	}
	return n;
}

/* messageIDs on lower links that carried two different changes. */
long
msgid_reused(struct ncspeer *ncs)
{
	const struct ncspeer_frame	*f, *g;
	size_t				 i, j;
	long				 n = 0;

	for (i = 0; (f = ncspeer_frame_at(ncs, i)) != NULL; i++) {
		if (f->msg == NULL || f->msg->type != MOS_T_MOS_OBJ ||
		    f->side != NCSPEER_ACCEPTED || f->port != NCSPEER_LOWER)
			continue;
		for (j = 0; j < i; j++) {
			g = ncspeer_frame_at(ncs, j);
			if (g->msg == NULL || g->msg->type != MOS_T_MOS_OBJ ||
			    g->side != NCSPEER_ACCEPTED ||
			    g->port != NCSPEER_LOWER ||
			    g->message_id != f->message_id)
				continue;
			if (strcmp(g->msg->u.mos_obj.obj_id,
			    f->msg->u.mos_obj.obj_id) != 0 ||
			    g->msg->u.mos_obj.obj_rev !=
			    f->msg->u.mos_obj.obj_rev) {
				n++;
				break;
			}
		}
	}
	return n;
}
