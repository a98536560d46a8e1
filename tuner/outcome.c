/* Outcome names, as stored in the database and printed. */
#include <string.h>

#include "tuner/outcome.h"

static const char *const names[OUTCOME_COUNT] = {
    [VARIANT_OK] = "ok",
    [REJECT_CONSTRAINT] = "constraint",
    [REJECT_SMEM] = "smem",
    [REJECT_ALIGN] = "align",
    [REJECT_COMPILE] = "compile",
    [REJECT_RESOURCES] = "resources",
    [REJECT_RUNTIME_FAULT] = "runtime fault",
    [REJECT_TIMEOUT] = "timeout",
    [REJECT_WRONG] = "wrong",
    [REJECT_RACE] = "race",
    [REJECT_UNMEASURED] = "unmeasured",
    [REJECT_SLOWER] = "slower",
};

const char *outcome_name(enum outcome o)
{
	if ((unsigned)o >= OUTCOME_COUNT)
		return "?";
	return names[o];
}

int outcome_parse(const char *name)
{
	int i;

	for (i = 0; i < OUTCOME_COUNT; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}
