/* The registry of problem modules. */
#include <string.h>

#include "tuner/problem.h"

extern const struct problem problem_attention;

static const struct problem *const problems[] = {
    &problem_attention,
};

const struct problem *problem_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(problems) / sizeof(problems[0]); i++)
		if (!strcmp(problems[i]->name, name))
			return problems[i];
	return NULL;
}

const char *problem_known_names(void)
{
	return "attention";
}
