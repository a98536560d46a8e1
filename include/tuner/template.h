/* Variant sources: the #define preamble plus the template, and the variant's identity hash. */
#ifndef TUNER_TEMPLATE_H
#define TUNER_TEMPLATE_H

#include "tuner/config.h"
#include "tuner/space.h"

/*
 * The compile options: those that shape code generation (arch, standard,
 * flags, sidecar options, -DTUNER_SANITIZE), then -I<kernels/include> (the
 * sidecar's ../include) when it exists. NULL-terminated; free with
 * template_options_free. The include path is not part of the variant hash.
 */
char **template_options(const struct config *cfg, int sanitize, size_t *n);
void template_options_free(char **opts, size_t n);
/*
 * The options as a variant records them: joined by spaces, the include path
 * left out (it is where this checkout lives). A run and an import store the
 * same text, so either may write a variant the other has. Free it.
 */
char *template_options_text(char **opts, size_t n);

/*
 * The full source of one compile unit: a preamble defining each param
 * (#define TILE 32), each specialised dim (#define SHAPE_N 128),
 * TUNER_SMEM_BYTES (the sidecar's smem_bytes for that spec), TUNER_SANITIZE
 * when asked, then a #line 1 "<template file>" and the template text. Caller frees.
 */
char *template_render(const struct config *cfg, const struct variant *va, const struct spec *sp,
                      int sanitize);

/* One #define of the preamble: "#define <prefix><name> <value>". */
enum template_define_kind { TEMPLATE_PARAM, TEMPLATE_SHAPE, TEMPLATE_SMEM, TEMPLATE_SANITIZE };
struct template_define {
	enum template_define_kind kind;
	const char *prefix; /* "SHAPE_" for a specialised dim, else "" */
	const char *name;   /* the family's own string, or a literal */
	long long value;
};
#define TEMPLATE_MAX_DEFINES (TUNER_MAX_PARAMS + TUNER_MAX_DIMS + 2)

/*
 * The preamble template_render() writes, as data, in its order: every param,
 * every specialised dim, TUNER_SMEM_BYTES (smem_bytes on the spec's first
 * shape), TUNER_SANITIZE when asked. out holds TEMPLATE_MAX_DEFINES; the
 * count, or -1 after error() (smem_bytes cannot be evaluated).
 */
int template_defines(const struct config *cfg, const struct variant *va, const struct spec *sp,
                     int sanitize, struct template_define *out);

/*
 * Identity of a variant: hash of (template source, the family's deps_hash,
 * params, arch, compile options, NVRTC version).
 */
void template_variant_hash(const struct config *cfg, const struct variant *va,
                           char out[HASH_HEX_LEN]);
/* Key of one compile unit: variant hash + spec + sanitize flag + NVRTC version. */
void template_build_key(const char *variant_hash, const struct spec *sp, int sanitize,
                        char out[HASH_HEX_LEN]);

/*
 * What else a variant's code and verdicts depend on: the sidecar's text, the
 * problem's text, the reference's source, and every file of the include
 * directory the compile reads (kernels/include). Editing a header makes new
 * variants: nothing stale is reused.
 */
void template_deps_hash(const struct family *fam, char out[HASH_HEX_LEN]);
/* kernels/include beside the sidecar's directory, absolute; NULL when there is none. */
char *template_include_dir(const struct family *fam);

#endif
