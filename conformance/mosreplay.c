/*
 * mosreplay: record, import and replay MOS traffic as conformance tests.
 *
 *   mosreplay play CAPTURE... --device HOST:LOWER:UPPER[:QUERY]
 *   mosreplay play CAPTURE... --ncs LOWER:UPPER[:QUERY]
 *   mosreplay record --listen LOWER:UPPER[:QUERY]
 *       --forward HOST:LOWER:UPPER[:QUERY] -o CAPTURE
 *   mosreplay import FILE.pcap|FILE.pcapng -o CAPTURE [--ports L,U,Q]
 *
 * See conformance/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/replay.h"

#define EXIT_USAGE	64

/* Usage on f. */
static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: mosreplay play CAPTURE|FOLDER... "
	    "--device HOST:LOWER:UPPER[:QUERY]\n"
	    "           [--listen LOWER:UPPER[:QUERY]] [--fast] [--utf8] "
	    "[--timeout MS]\n"
	    "           [--mos-id ID] [--ncs-id ID]\n"
	    "       mosreplay play CAPTURE|FOLDER... --ncs LOWER:UPPER[:QUERY] "
	    "[same options]\n"
	    "       mosreplay record --listen [HOST:]LOWER:UPPER[:QUERY]\n"
	    "           --forward HOST:LOWER:UPPER[:QUERY] -o CAPTURE\n"
	    "           [--forward-to device|ncs] [--max-conns N]\n"
	    "       mosreplay import FILE.pcap|FILE.pcapng -o CAPTURE "
	    "[--ports LOWER,UPPER,QUERY]\n");
}

/* A positive number option, or -1. */
static long
opt_number(const char *name, const char *s, long max)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > max) {
		fprintf(stderr, "mosreplay: %s: '%s' is not a number from 1 "
		    "to %ld\n", name, s, max);
		return -1;
	}
	return v;
}

/* mosreplay play. */
static int
cmd_play(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "ncs", required_argument, NULL, 'n' },
		{ "fast", no_argument, NULL, 'f' },
		{ "utf8", no_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "mos-id", required_argument, NULL, 'M' },
		{ "ncs-id", required_argument, NULL, 'N' },
		{ "listen", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct play_opts	o;
	char			err[200];
	long			v;
	int			c, given = 0;
	bool			listen = false;

	memset(&o, 0, sizeof o);
	o.enc = MOS_ENC_UTF16BE;
	o.timeout_ms = 10000;
	o.out = stdout;
	util_strlcpy(o.host, "127.0.0.1", sizeof o.host);
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
		case 'n':
			o.device = c == 'd';
			given++;
			if (net_parse_ports(optarg, o.device, o.host,
			    sizeof o.host, o.ports, err, sizeof err) != 0) {
				fprintf(stderr, "mosreplay: --%s: %s\n",
				    o.device ? "device" : "ncs", err);
				return EXIT_USAGE;
			}
			break;
		case 'f':
			o.fast = true;
			break;
		case 'u':
			o.enc = MOS_ENC_UTF8;
			break;
		case 't':
			if ((v = opt_number("--timeout", optarg, 600000)) < 0)
				return EXIT_USAGE;
			o.timeout_ms = (int)v;
			break;
		case 'M':
			o.mos_id = optarg;
			break;
		case 'N':
			o.ncs_id = optarg;
			break;
		case 'l':
			listen = true;
			if (net_parse_ports(optarg, false, NULL, 0, o.listen,
			    err, sizeof err) != 0) {
				fprintf(stderr, "mosreplay: --listen: %s\n",
				    err);
				return EXIT_USAGE;
			}
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (listen && !o.device) {
		fprintf(stderr, "mosreplay play: --listen goes with --device\n");
		return EXIT_USAGE;
	}
	if (given != 1 || optind >= argc) {
		fprintf(stderr, "mosreplay play: give captures and exactly one "
		    "of --device or --ncs\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return play_run(&o, argv + optind, argc - optind);
}

/* mosreplay record. */
static int
cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "forward", required_argument, NULL, 'f' },
		{ "forward-to", required_argument, NULL, 't' },
		{ "output", required_argument, NULL, 'o' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct record_opts	o;
	char			err[200];
	long			v;
	int			c;
	bool			listen = false, forward = false;

	memset(&o, 0, sizeof o);
	o.out = stdout;
	util_strlcpy(o.listen_host, "127.0.0.1", sizeof o.listen_host);
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			/* HOST: is optional here */
			if (net_parse_ports(optarg, false, NULL, 0, o.listen,
			    err, sizeof err) == 0)
				listen = true;
			else if (net_parse_ports(optarg, true, o.listen_host,
			    sizeof o.listen_host, o.listen, err,
			    sizeof err) == 0)
				listen = true;
			else {
				fprintf(stderr, "mosreplay: --listen: %s\n",
				    err);
				return EXIT_USAGE;
			}
			break;
		case 'f':
			if (net_parse_ports(optarg, true, o.host, sizeof o.host,
			    o.forward, err, sizeof err) != 0) {
				fprintf(stderr, "mosreplay: --forward: %s\n",
				    err);
				return EXIT_USAGE;
			}
			forward = true;
			break;
		case 't':
			if (strcmp(optarg, "device") != 0 &&
			    strcmp(optarg, "ncs") != 0) {
				fprintf(stderr, "mosreplay: --forward-to: "
				    "device or ncs\n");
				return EXIT_USAGE;
			}
			o.forward_ncs = strcmp(optarg, "ncs") == 0;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'm':
			if ((v = opt_number("--max-conns", optarg, 1000000)) <
			    0)
				return EXIT_USAGE;
			o.max_conns = (int)v;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!listen || !forward || o.output == NULL || optind != argc) {
		fprintf(stderr, "mosreplay record: needs --listen, --forward "
		    "and -o\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return record_run(&o);
}

/* "L,U[,Q]" into ports. 0 or -1. */
static int
opt_ports(const char *s, int ports[GW_NPORTS])
{
	char	*copy = xstrdup(s), *p, *f;
	int	 n = 0;
	long	 v;

	for (p = copy; (f = strsep(&p, ",")) != NULL; ) {
		if (n == GW_NPORTS || (v = opt_number("--ports", f,
		    65535)) < 0) {
			free(copy);
			return -1;
		}
		ports[n++] = (int)v;
	}
	free(copy);
	if (n < 2) {
		fprintf(stderr, "mosreplay: --ports: LOWER,UPPER[,QUERY]\n");
		return -1;
	}
	for (; n < GW_NPORTS; n++)
		ports[n] = 0;
	return 0;
}

/* mosreplay import. */
static int
cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "ports", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	int		 ports[GW_NPORTS] = { 10540, 10541, 10542 };
	const char	*out = NULL;
	int		 c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			if (opt_ports(optarg, ports) != 0)
				return EXIT_USAGE;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (out == NULL || optind != argc - 1) {
		fprintf(stderr, "mosreplay import: needs one FILE and -o "
		    "CAPTURE\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	return import_run(argv[optind], out, ports, stdout);
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mos_init();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "play") == 0)
		return cmd_play(argc - 1, argv + 1);
	if (strcmp(argv[1], "import") == 0)
		return cmd_import(argc - 1, argv + 1);
	if (strcmp(argv[1], "record") == 0)
		return cmd_record(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "mosreplay: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
