/* tuner cache: what the cubin cache holds, and clearing or pruning it to its limit. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tuner/cache.h"
#include "tuner/cmd.h"
#include "tuner/common.h"

const struct cmd cmd_cache_entry = {
    .name = "cache",
    .fn = cmd_cache,
    .flags = NEED_CACHE,
    .summary = "show the cubin cache, prune it to its limit, or clear it",
    .usage = "usage: tuner cache [show | prune [--max-size SIZE] | clear]\n"
	     "\n"
	     "The compiled cubins, kept so that no variant is compiled twice. 'run'\n"
	     "and 'sweep' keep the cache within its limit, at start and at end,\n"
	     "evicting the least recently used entries first (an entry is every\n"
	     "file of one build); the builds a run used count as used when it ends.\n"
	     "The limit is $TUNER_CACHE_MAX (bytes, or with K, M, G or T), 2G by\n"
	     "default. Files in the cache directory that are not cache entries are\n"
	     "never removed.\n"
	     "\n"
	     "  show              where the cache is, its entries, size and limit\n"
	     "                    (the default)\n"
	     "  prune             evict down to the limit, or to --max-size SIZE\n"
	     "  clear             remove every entry\n"
	     "  -h, --help        print this help\n",
};

static void print_time(const char *label, double t)
{
	char buf[32];
	time_t s = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, sizeof(buf), "?");
	printf("%-12s%s\n", label, buf);
}

static int show(const struct globals *g, long long limit)
{
	struct cache_stats st;
	char size[32], lim[32];

	if (cache_stat(g->cache_dir, &st) < 0)
		return EX_IOERR;
	cache_format_size(size, sizeof(size), st.bytes);
	cache_format_size(lim, sizeof(lim), limit);
	printf("cache       %s\n", g->cache_dir);
	printf("entries     %lld (%lld files), %s of a %s limit\n", st.entries, st.files, size,
	       lim);
	if (st.entries) {
		print_time("oldest use", st.oldest);
		print_time("newest use", st.newest);
	}
	if (st.others)
		printf("other files %lld, not the cache's: never removed\n", st.others);
	return 0;
}

static void said(const struct globals *g, const char *what, const struct cache_stats *st)
{
	char size[32];

	cache_format_size(size, sizeof(size), st->bytes);
	if (g->verbosity >= 0)
		printf("%s %lld entr%s (%lld files, %s) from %s\n", what, st->entries,
		       st->entries == 1 ? "y" : "ies", st->files, size, g->cache_dir);
}

int cmd_cache(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"max-size", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *action = "show";
	struct cache_stats st;
	long long limit, max = -1;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cache_parse_size(optarg, &max) < 0)
				return cmd_usage(g, EX_USAGE);
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind < argc)
		action = argv[optind++];
	if (optind < argc)
		return cmd_extra_arg(g, argv[optind]);
	if (strcmp(action, "show") && strcmp(action, "prune") && strcmp(action, "clear")) {
		error("unknown cache action '%s' (show, prune, clear)", action);
		return cmd_usage(g, EX_USAGE);
	}
	if (max >= 0 && strcmp(action, "prune")) {
		error("--max-size applies to 'prune' only");
		return cmd_usage(g, EX_USAGE);
	}
	if (cache_limit(&limit) < 0)
		return EX_USAGE;
	if (!strcmp(action, "show"))
		return show(g, limit);
	if (!strcmp(action, "clear")) {
		if (cache_clear(g->cache_dir, &st) < 0)
			return EX_IOERR;
		said(g, "removed", &st);
		return 0;
	}
	if (cache_prune(g->cache_dir, max >= 0 ? max : limit, &st) < 0)
		return EX_IOERR;
	said(g, "evicted", &st);
	return 0;
}
