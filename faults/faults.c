/*
 * faults: run the reliability matrix and print its table.
 *
 *   faults             the quick subset (make check): a few seconds a row
 *   faults --all       every row at full size (make faults)
 *   faults --row N     one row (with --all: at full size)
 *   faults --soak S    the soak run of S seconds (make soak)
 *   faults --md FILE   also write the table as Markdown to FILE
 *
 * Ends with "N passed, N failed, N skipped" (not applicable rows count as
 * skipped, with their reason).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faults/faults.h"

struct entry {
	int		 num;
	row_fn		 fn;
	bool		 quick;		/* in the make check subset */
	const char	*fault;
	const char	*expected;
};

static const struct entry rows[] = {
	{ 1, row01_split, true, "every frame split at every byte (1-byte "
	    "writes, random sizes, both directions)",
	    "same answers as one-shot delivery, no error" },
	{ 2, row02_coalesced, true, "several messages in one segment",
	    "all answered in order, each once" },
	{ 3, row03_inner_mos, true, "inner <mos> in a payload, </mos> in "
	    "CDATA and a comment", "framed as one message" },
	{ 4, row04_truncated, true, "odd trailing byte then FIN; stream ends "
	    "mid-frame", "partial frame dropped, framing error logged, "
	    "nothing answered" },
	{ 5, row05_bad_chars, true, "lone surrogates, U+0000, U+FFFE in text",
	    "that message NACKed, connection stays, next message OK" },
	{ 6, row06_bom_decl, true, "BOM at stream start; declaration with "
	    "encoding=ISO-8859-1", "BOM skipped, declaration ignored, "
	    "parsed as UTF-16BE" },
	{ 7, row07_junk, true, "junk before <mos> (CRLF, spaces, 1 MiB)",
	    "up to max_junk skipped with a warning; beyond: close" },
	{ 8, row08_big, true, "10 MB frame; frame of max_frame + 1 byte",
	    "10 MB answered, RSS bounded; over the cap: error, close, "
	    "no answer" },
	{ 9, row09_slowloris, true, "a frame that never ends (1 byte every "
	    "200 ms)", "frame_deadline closes it; other links unaffected" },
	{ 10, row10_doctype, true, "DOCTYPE: billion laughs, quadratic, "
	    "file://, external DTD on loopback", "rejected before expansion; "
	    "no connection made; memory flat" },
	{ 11, row11_depth, true, "nesting depth 10,000",
	    "rejected, no crash, next message OK" },
	{ 12, row12_names, true, "1,000,000 distinct element names over "
	    "10,000 messages", "RSS bounded; later messages still parse" },
	{ 13, row13_never_acks, true, "the NCS never acks our mosObj",
	    "resent, reconnected; after max_attempts the job is FAILED; "
	    "nothing lost or duplicated" },
	{ 14, row14_wrong_id, true, "the NCS acks with the wrong messageID",
	    "not taken as the ack; timed out and resent; delivered once "
	    "the NCS answers right" },
	{ 15, row15_quirk_acks, true, "acks without messageID / with an "
	    "empty mosID", "lenient: accepted (one in flight); strict: "
	    "not taken; no crash" },
	{ 16, row16_dup_inbound, true, "the same inbound messageID twice, "
	    "and again after a reconnect (mosReqObj, roCreate)", "answered "
	    "each time with that messageID; stored once" },
	{ 17, row17_early, true, "the NCS connects and sends while mosgw "
	    "starts", "not listening yet, or answered correctly; nothing "
	    "answered before the database is open" },
	{ 18, row18_blackhole, true, "the NCS stays connected but silent "
	    "(blackhole)", "detected within 2.5 x heartbeat; reconnect with "
	    "backoff; pending jobs kept and delivered after" },
	{ 19, row19_refused, true, "the NCS refuses connections (RST) for a "
	    "while", "backoff to reconnect_max with jitter; few log lines; "
	    "CPU near idle; descriptors stable" },
	{ 20, row20_conn_flood, true, "a burst of connections, then many "
	    "held idle", "limits enforced, excess closed; links and "
	    "heartbeats unaffected; no spin" },
	{ 21, row21_rst_mid_frame, true, "RST in the middle of a frame "
	    "(inbound; and on the outbound link via the proxy)",
	    "partial frame dropped; reconnect; delivery completes" },
	{ 22, row22_kill9, true, "kill -9 mid-publish, repeatedly",
	    "every acknowledged change delivered at its newest revision; "
	    "integrity ok" },
	{ 23, row23_power_loss, true, "power loss (writes since the last "
	    "fsync dropped)", "synchronous=full: nothing acknowledged lost" },
	{ 24, row24_disk_full, true, "disk full (SQLITE_FULL)",
	    "nothing acknowledged that was not stored; clear error; resumes "
	    "without restart; no corruption" },
	{ 25, row25_busy, true, "another process holds the write lock",
	    "writes fail fast and are retried; heartbeats keep flowing; "
	    "nothing acked early" },
	{ 26, row26_io_error, true, "I/O error on write and on fsync",
	    "as disk full: not stored = not acknowledged; recovers" },
	{ 27, row27_rest, false, "REST abuse: huge header/body, slow client, "
	    "1,000 connections", "431/413/408/503 within limits; MOS links "
	    "unaffected" },
	{ 28, row28_tls_certs, false, "TLS with bad certificates",
	    "handshake refused, reason logged, no plaintext fallback" },
	{ 29, row29_tls_stall, false, "stalled TLS handshake; plaintext to "
	    "TLS; TLS to plaintext; renegotiation", "deadline closes; "
	    "garbage rejected; renegotiation refused" },
	{ 30, row30_sigterm, true, "SIGTERM under load",
	    "exit 0 after in-flight work; restart loses nothing" },
};

static const char *
result_name(enum row_result r)
{
	switch (r) {
	case ROW_PASS:
		return "pass";
	case ROW_FAIL:
		return "FAIL";
	case ROW_SKIP:
		return "skip";
	default:
		return "n/a";
	}
}

/* A cell for a Markdown table: pipes and angle brackets escaped. */
static void
md_cell(FILE *f, const char *s)
{
	fputs(" ", f);
	for (; *s != '\0'; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else
			fputc(*s, f);
	}
	fputs(" |", f);
}

static void
usage(void)
{
	fprintf(stderr, "usage: faults [--all] [--row N] [--md FILE] "
	    "| --soak SECONDS [--seed N]\n");
	exit(64);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "row", required_argument, NULL, 'r' },
		{ "md", required_argument, NULL, 'm' },
		{ "soak", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	struct row	 results[sizeof rows / sizeof rows[0]];
	struct timespec	 t0, t1;
	const char	*md = NULL;
	FILE		*mf;
	bool		 all = false;
	int		 ch, only = 0, soak = -1, pass = 0, fail = 0, skip = 0;
	unsigned	 seed = (unsigned)time(NULL);
	size_t		 i, n = 0;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			all = true;
			break;
		case 'r':
			only = atoi(optarg);
			break;
		case 'm':
			md = optarg;
			break;
		case 's':
			soak = atoi(optarg);
			break;
		case 'S':
			seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (soak >= 0)
		return soak_run(soak > 0 ? soak : 60, seed) == 0 ? 0 : 1;

	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct row	*r = &results[n];

		if (only != 0 ? rows[i].num != only : !all && !rows[i].quick)
			continue;
		memset(r, 0, sizeof *r);
		r->num = rows[i].num;
		r->fault = rows[i].fault;
		r->expected = rows[i].expected;
		r->full = all;
		r->result = ROW_PASS;
		fprintf(stderr, "== row %d: %s\n", r->num, r->fault);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rows[i].fn(r);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		r->secs = (double)(t1.tv_sec - t0.tv_sec) +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("row %2d %-4s %5.1fs  %s\n         expected: %s\n"
		    "         observed: %s\n         figures:  %s\n",
		    r->num, result_name(r->result), r->secs, r->fault,
		    r->expected, r->observed, r->figures[0] != '\0' ?
		    r->figures : "-");
		if (r->result == ROW_SKIP || r->result == ROW_NA)
			printf("SKIP: row %d: %s\n", r->num, r->observed);
		fflush(stdout);
		if (r->result == ROW_PASS)
			pass++;
		else if (r->result == ROW_FAIL)
			fail++;
		else
			skip++;
		n++;
	}
	if (md != NULL && (mf = fopen(md, "w")) != NULL) {
		fprintf(mf, "| row | fault | expected | observed | result | "
		    "figures |\n|---|---|---|---|---|---|\n");
		for (i = 0; i < n; i++) {
			fprintf(mf, "| %d |", results[i].num);
			md_cell(mf, results[i].fault);
			md_cell(mf, results[i].expected);
			md_cell(mf, results[i].observed);
			md_cell(mf, result_name(results[i].result));
			md_cell(mf, results[i].figures[0] != '\0' ?
			    results[i].figures : "-");
			fputc('\n', mf);
		}
		fclose(mf);
	}
	printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
	return fail == 0 ? 0 : 1;
}
