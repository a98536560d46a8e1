/*
 * The YAML layer of the loaders (tuner/yaml-src.c), which tuner/config.c (tuning jobs) and
 * tuner/family.c (sidecars and their problems) read through: a file's one document, messages at
 * FILE:LINE:COL, node access, "did you mean" hints and the typed getters. Not an API: the rest of
 * tuner uses tuner/config.h.
 */
#ifndef TUNER_YAML_SRC_H
#define TUNER_YAML_SRC_H

#include <stddef.h>

#include <yaml.h>

#include "tuner/common.h"
#include "tuner/config.h"

/* One YAML file being read: its text (for positions) and its document tree. */
struct ysrc {
	const char *path; /* as named in messages */
	const char *text;
	size_t len;
	size_t bom;      /* 3 after a UTF-8 byte order mark, else 0 */
	size_t *char_at; /* byte offset of every MARK_STEP-th character; NULL: all ASCII */
	size_t nchar_at;
	yaml_document_t doc;
	int loaded;
};

/*
 * Parse the one document of s->text, after bounding its nesting, anchors and aliases, and rejoin
 * the expressions YAML split at commas: 0, or -1 after error(). The caller sets path, text and
 * len; ysrc_release() frees what was loaded, either way.
 */
int ysrc_load(struct ysrc *s);
void ysrc_release(struct ysrc *s);

/* "PATH:LINE:COL: message" through error(), at a position or at the start of a node: -1. */
int err_pos(const struct ysrc *s, int line, int col, const char *fmt, ...) TUNER_PRINTF(4, 5);
int err_node(const struct ysrc *s, const yaml_node_t *n, const char *fmt, ...) TUNER_PRINTF(3, 4);

/* Position in the file of column ecol (1-based) of a scalar's value. */
void value_pos(const struct ysrc *s, const yaml_node_t *n, int ecol, int *line, int *col);

/* Nodes: a scalar's value, what a node is ("mapping", "list", "null", "scalar"), the entries. */
const char *sval(const yaml_node_t *n);
int is_scalar(const yaml_node_t *n);
int is_null(const yaml_node_t *n);
const char *ykind(const yaml_node_t *n);
size_t seq_len(const yaml_node_t *n);
yaml_node_t *seq_at(struct ysrc *s, const yaml_node_t *n, size_t i);
size_t map_len(const yaml_node_t *n);
yaml_node_t *map_key(struct ysrc *s, const yaml_node_t *n, size_t i);
yaml_node_t *map_val(struct ysrc *s, const yaml_node_t *n, size_t i);

/* The closest of names to word, or NULL; " (did you mean 'X'?)" or " (known_label: a, b, c)". */
const char *yclosest(const char *word, const char *const *names, size_t n);
void yhint(char *out, size_t len, const char *word, const char *const *names, size_t n,
           const char *known_label);

/*
 * n is a mapping with scalar, unique keys (each one of names, if given: its value and key go to
 * vals[i] and keys[i]); an unknown key is an unknown noun. yneed(): val is there, or "missing key".
 */
int map_fields_noun(struct ysrc *s, const yaml_node_t *n, const char *where, const char *noun,
                    const char *const *names, size_t nnames, yaml_node_t **vals,
                    yaml_node_t **keys);
int map_fields(struct ysrc *s, const yaml_node_t *n, const char *where, const char *const *names,
               size_t nnames, yaml_node_t **vals, yaml_node_t **keys);
int yneed(struct ysrc *s, const yaml_node_t *parent, const char *where, const char *key,
          const yaml_node_t *val);

/* 1 for a C identifier, else 0. */
int yis_ident(const char *v);

/* The typed getters: 0, or -1 after an error at n that names key. A null list has no entries. */
int get_string(struct ysrc *s, const yaml_node_t *n, const char *key, char **out);
int get_ident(struct ysrc *s, const yaml_node_t *n, const char *key, char **out);
int get_ll(struct ysrc *s, const yaml_node_t *n, const char *key, long long min, long long max,
           long long *out);
int get_int(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int *out);
int get_int_max(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int max, int *out);
int get_double(struct ysrc *s, const yaml_node_t *n, const char *key, int positive, double *out);
int get_double_signed(struct ysrc *s, const yaml_node_t *n, const char *key, double *out);
int get_enum(struct ysrc *s, const yaml_node_t *n, const char *key, const char *const *names,
             size_t nnames, int *out);
int get_list(struct ysrc *s, const yaml_node_t *n, const char *key);
size_t list_len(const yaml_node_t *n);

/* Parse text as the sidecar at path (tuner/family.c): what config_load() reads 'template' with. */
int family_load_text(const char *path, const char *text, size_t len, struct family *fam);

#endif
