/* Framed key=value messages over a socket: what tuner's child processes and tuner speak. */
#ifndef TUNER_WIRE_H
#define TUNER_WIRE_H

#include <stddef.h>

#include "tuner/common.h"

/*
 * A message is a header line "<tag>/<version> LLLLLLLL\n" (24 bytes: the
 * body's length in 8 hex digits) and a body of "key=value\n" lines, the first
 * "type=...". Values escape '\' and newline as \\ and \n.
 */
#define WIRE_HDR_LEN  24
#define WIRE_MAX_BODY (64u << 20)

/* Send one message; -1 with errno set when the peer is gone. */
int wire_send(int fd, const char *tag, int version, const struct strbuf *body);
/*
 * One message into body before deadline (monotonic seconds, 0: none): 1, 0
 * when the peer is gone, -1 on a protocol error (after error()), -2 past the
 * deadline.
 */
int wire_recv(int fd, const char *tag, int version, struct strbuf *body, double deadline);

/* key=value with '\' and newline escaped; a NULL value is left out. */
void wire_kv_str(struct strbuf *sb, const char *key, const char *val);

struct wire_iter {
	char *p, *end;
};
/* Start reading a body in place; its first line must be type=...: 0, or -1 after error(). */
int wire_begin(char *msg, size_t len, struct wire_iter *it, const char **type);
/* The next "key=value" line, unescaped in place: 1, 0 at the end, -1 on a malformed line. */
int wire_next(struct wire_iter *it, char **key, char **val);
/* Whether a message is of a type, without touching it. */
int wire_is(const struct strbuf *m, const char *type);

/* Parsers for values, each an error() naming the key on bad input. */
int wire_parse_ll(const char *key, const char *s, long long *out);
int wire_parse_int(const char *key, const char *s, int *out);
int wire_parse_ull(const char *key, const char *s, unsigned long long *out);
int wire_parse_dbl(const char *key, const char *s, double *out);
/* Exactly n space-separated unsigned integers. */
int wire_parse_uints(const char *key, const char *s, unsigned *out, size_t n);

#endif
