/* Framed key=value messages over a socket: what tuner's child processes and tuner speak. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tuner/wire.h"

/* ---------------------------------------------------------------- values */

void wire_kv_str(struct strbuf *sb, const char *key, const char *val)
{
	size_t n;

	if (!val)
		return;
	sb_adds(sb, key);
	sb_add(sb, "=", 1);
	while (*val) {
		n = strcspn(val, "\\\n");
		sb_add(sb, val, n);
		val += n;
		if (*val == '\\')
			sb_add(sb, "\\\\", 2);
		else if (*val == '\n')
			sb_add(sb, "\\n", 2);
		if (*val)
			val++;
	}
	sb_add(sb, "\n", 1);
}

int wire_next(struct wire_iter *it, char **key, char **val)
{
	char *nl, *eq, *r, *w;

	if (it->p >= it->end)
		return 0;
	nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
	if (!nl)
		return error("wire protocol: unterminated line");
	*nl = '\0';
	eq = strchr(it->p, '=');
	if (!eq)
		return error("wire protocol: no '=' in '%.80s'", it->p);
	*eq = '\0';
	*key = it->p;
	*val = eq + 1;
	for (r = w = eq + 1; *r; r++) {
		if (*r == '\\' && r[1]) {
			r++;
			*w++ = *r == 'n' ? '\n' : *r;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	it->p = nl + 1;
	return 1;
}

int wire_begin(char *msg, size_t len, struct wire_iter *it, const char **type)
{
	char *key, *val;

	it->p = msg;
	it->end = msg + len;
	if (wire_next(it, &key, &val) != 1 || strcmp(key, "type"))
		return error("wire protocol: message without a type");
	*type = val;
	return 0;
}

int wire_is(const struct strbuf *m, const char *type)
{
	size_t n = strlen(type);

	return m->len > 5 + n && !memcmp(m->buf, "type=", 5) && !memcmp(m->buf + 5, type, n) &&
	       m->buf[5 + n] == '\n';
}

int wire_parse_ll(const char *key, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return error("wire protocol: bad integer '%.80s' for '%s'", s, key);
	return 0;
}

int wire_parse_int(const char *key, const char *s, int *out)
{
	long long v;

	if (wire_parse_ll(key, s, &v) < 0)
		return -1;
	if (v < INT_MIN || v > INT_MAX)
		return error("wire protocol: '%s' out of range: %.80s", key, s);
	*out = (int)v;
	return 0;
}

int wire_parse_ull(const char *key, const char *s, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return error("wire protocol: bad integer '%.80s' for '%s'", s, key);
	return 0;
}

int wire_parse_dbl(const char *key, const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (end == s || *end)
		return error("wire protocol: bad number '%.80s' for '%s'", s, key);
	return 0;
}

int wire_parse_uints(const char *key, const char *s, unsigned *out, size_t n)
{
	char *end;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned long v;

		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || end == s || v > UINT_MAX || *s == '-')
			return error("wire protocol: bad list '%.80s' for '%s'", s, key);
		out[i] = (unsigned)v;
		s = end;
	}
	if (*s)
		return error("wire protocol: trailing '%.80s' in '%s'", s, key);
	return 0;
}

/* --------------------------------------------------------------- framing */

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int wire_send(int fd, const char *tag, int version, const struct strbuf *body)
{
	char hdr[WIRE_HDR_LEN + 1];
	int n = snprintf(hdr, sizeof(hdr), "%s/%d %08zx\n", tag, version, body->len);

	if (n != WIRE_HDR_LEN)
		BUG("wire header '%s/%d' is not %d bytes", tag, version, WIRE_HDR_LEN);
	if (send_all(fd, hdr, WIRE_HDR_LEN) < 0)
		return -1;
	return send_all(fd, body->buf ? body->buf : "", body->len);
}

/* n bytes before deadline (monotonic seconds, 0: none): 1, 0 on end of file, -1 error, -2 late. */
static int read_full(int fd, char *buf, size_t n, double deadline)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r;

		if (deadline > 0) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			double left = deadline - now_seconds();
			int pr;

			if (left <= 0)
				return -2;
			pr = poll(&pfd, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
			if (pr < 0 && errno != EINTR)
				return -1;
			if (pr <= 0)
				continue;
		}
		r = read(fd, buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? 0 : -1;
		}
		if (r == 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

int wire_recv(int fd, const char *tag, int version, struct strbuf *body, double deadline)
{
	char hdr[WIRE_HDR_LEN + 1], *end;
	size_t tlen = strlen(tag);
	unsigned long len;
	long v;
	int r;

	r = read_full(fd, hdr, WIRE_HDR_LEN, deadline);
	if (r != 1)
		return r;
	hdr[WIRE_HDR_LEN] = '\0';
	if (memcmp(hdr, tag, tlen) || hdr[tlen] != '/' || hdr[WIRE_HDR_LEN - 1] != '\n')
		return error("%s protocol: bad header", tag);
	v = strtol(hdr + tlen + 1, &end, 10);
	if (*end != ' ' || v != version)
		return error("%s protocol: version %.*s, expected %d", tag,
		             (int)strcspn(hdr + tlen + 1, " \n"), hdr + tlen + 1, version);
	len = strtoul(end + 1, &end, 16);
	if (end != hdr + WIRE_HDR_LEN - 1 || len > WIRE_MAX_BODY)
		return error("%s protocol: bad length in header", tag);
	sb_reset(body);
	sb_grow(body, len);
	r = read_full(fd, body->buf, len, deadline);
	if (r != 1)
		return r;
	body->len = len;
	body->buf[len] = '\0';
	return 1;
}
