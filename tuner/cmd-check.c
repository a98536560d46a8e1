/* tuner check (being written). */
#include "tuner/cmd.h"
#include "tuner/common.h"

int cmd_check(int argc, char **argv, const struct globals *g)
{
	(void)argc;
	(void)argv;
	(void)g;
	error("'check' is not written yet");
	return EX_SOFTWARE;
}
