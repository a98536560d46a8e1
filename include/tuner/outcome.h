/* The outcome stored with every variant result. */
#ifndef TUNER_OUTCOME_H
#define TUNER_OUTCOME_H

enum outcome {
	VARIANT_OK = 0,
	REJECT_CONSTRAINT,
	REJECT_SMEM,
	REJECT_ALIGN,
	REJECT_COMPILE,
	REJECT_RESOURCES,
	REJECT_RUNTIME_FAULT,
	REJECT_TIMEOUT,
	REJECT_WRONG,
	REJECT_RACE,
	REJECT_UNMEASURED, /* replay: not in the recording */
	REJECT_SLOWER,     /* correct, and raced out: its timings so far show it cannot win */
	OUTCOME_COUNT
};

/* "ok", "constraint", "smem", "align", "compile", "resources", "runtime fault", "timeout", "wrong",
 * "race", "unmeasured", "slower" */
const char *outcome_name(enum outcome o);
/* -1 if unknown. */
int outcome_parse(const char *name);

#endif
