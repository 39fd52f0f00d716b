/*
 * remat/ad.h — reverse mode, checkpoint regions, save policies, residual report.
 *
 * Reverse mode is a source-to-source transform: remat_vjp / remat_grad /
 * remat_value_and_grad take a function and return a new one (the old one is
 * untouched) that computes the forward and the backward in one graph. The
 * forward values its backward reads are the residuals; they are computed, not
 * guessed, and listed by remat_saved_residuals() like JAX's
 * print_saved_residuals.
 *
 * Checkpoint regions: remat_checkpoint(fn, policy) returns a function that,
 * when differentiated (directly or called from another function), keeps only
 * the residuals the policy permits AND the backward reads; the backward
 * recomputes the others from the region's inputs and the saved values
 * (partial evaluation, as jax.checkpoint). Regions nest.
 *
 *   remat_fn *blk = remat_checkpoint(block, remat_dots_with_no_batch_dims_saveable);
 *   ... remat_call1(net, blk, 2, (remat_val[]){x, w}) ...
 *   remat_fn *g;
 *   remat_grad(net, 1, (int[]){1}, &g);              // d net / d w
 *   remat_residual_list *r;
 *   remat_saved_residuals(net, 0, NULL, &r);
 *   remat_residual_list_print(r, stdout);
 *
 * A policy is a predicate over one op's primitive, dtypes, shapes and
 * parameters — never its data. It grants permission to save; it never forces
 * a value to be kept that the backward does not read.
 */
#ifndef REMAT_AD_H
#define REMAT_AD_H

#include "export.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a policy sees of one op. */
typedef struct {
    remat_op op;
    remat_dtype dtype;       /* output dtype */
    const remat_shape *shape; /* output shape */
    int n_inputs;
    const remat_dtype *in_dtypes;
    const remat_shape *in_shapes;
    const remat_dot_dims *dot; /* REMAT_OP_DOT_GENERAL, else NULL */
    const char *name;          /* REMAT_OP_NAME: the checkpoint_name, else NULL */
} remat_op_info;

typedef bool (*remat_policy_fn)(const remat_op_info *op, void *ctx);

/* A user policy. `label` is shown in reports; free_ctx (may be NULL) is called
 * on ctx when the last reference goes. */
REMAT_API remat_policy *remat_policy_new(const char *label, remat_policy_fn fn, void *ctx, void (*free_ctx)(void *));
/* Policies are reference counted; the built-ins are immortal. _free(NULL) ok. */
REMAT_API remat_policy *remat_policy_ref(const remat_policy *p);
REMAT_API void remat_policy_free(remat_policy *p);
REMAT_API const char *remat_policy_label(const remat_policy *p);
REMAT_API bool remat_policy_allows(const remat_policy *p, const remat_op_info *op);

/* jax.checkpoint_policies, with their exact semantics. */
extern REMAT_API const remat_policy *const remat_nothing_saveable;  /* default */
extern REMAT_API const remat_policy *const remat_everything_saveable;
extern REMAT_API const remat_policy *const remat_dots_saveable;      /* any dot_general */
/* dot_general with no batch dimensions on either operand: (N,d)@(d,d) yes,
 * (B,N,d)@(B,d,F) with paired B no. */
extern REMAT_API const remat_policy *const remat_dots_with_no_batch_dims_saveable;
REMAT_API remat_policy *remat_policy_save_only_these_names(int n, const char *const *names);
REMAT_API remat_policy *remat_policy_save_any_names_but_these(int n, const char *const *names);
/* Any op's value except a checkpoint_name'd one among names, as the
 * docstring of jax.checkpoint_policies.save_anything_except_these_names
 * says ("save any values (not just named ones) excluding the names given").
 * JAX 0.10's body ignores the names (it is everything_saveable, marked
 * TODO there); the two give the same gradient, and keep the same bytes
 * whenever the op under an excluded name may be saved itself: the report
 * then lists that op's output where JAX lists the name. */
REMAT_API remat_policy *remat_policy_save_anything_except_these_names(int n, const char *const *names);
/* permits what either permits */
REMAT_API remat_policy *remat_policy_save_from_both(const remat_policy *a, const remat_policy *b);

/* A built-in policy by its jax.checkpoint_policies name, JAX's aliases
 * included: nothing_saveable, everything_saveable, dots_saveable (alias
 * checkpoint_dots), dots_with_no_batch_dims_saveable (alias
 * checkpoint_dots_with_no_batch_dims). The alias is the same policy (its
 * label is the first name), as in JAX. The policies with arguments are
 * written as calls, arguments bare or quoted, lists in brackets, JAX's
 * keywords optional:
 *   save_only_these_names(a, b)   save_any_names_but_these(a)
 *   save_anything_except_these_names(a)
 *   offload_dot_with_no_batch_dims(device, pinned_host)
 *   save_and_offload_only_these_names(names_which_can_be_saved=[a],
 *       names_which_can_be_offloaded=[b, c], offload_src=device,
 *       offload_dst=pinned_host)
 * Such a policy is made once per distinct text and lives as long as the
 * process, like the built-ins (remat_policy_free ignores it). NULL with
 * remat_last_error() naming the input for any other name or a bad
 * argument (REMAT_ERR_ARG) or NULL (REMAT_ERR_NULL). */
REMAT_API const remat_policy *remat_policy_named(const char *name);

/* ---- offload policies (JAX's Offloadable) ----
 * A policy's answer for one op is one of three kinds, as JAX's policies
 * return Saveable, Recompute or Offloadable(src, dst): an offloaded value
 * is kept, but not in the backend's memory: reverse mode writes it to the
 * slow tier right after the forward computes it and reads it back right
 * before the backward first reads it (a file under
 * remat_compile_options.tier_dir on the CPU; host memory on a device
 * backend, pinned on CUDA). The gradient
 * is the one of the same policy saving those values, bit for bit (the
 * same kernels in the same order; a copy through the tier is exact).
 * Memory kinds as JAX names them: src "device", dst "pinned_host" or
 * "unpinned_host" (both the slow tier here). */
typedef enum {
    REMAT_POLICY_RECOMPUTE = 0, /* JAX's Recompute (a policy returning false) */
    REMAT_POLICY_SAVE,          /* Saveable (true) */
    REMAT_POLICY_OFFLOAD,       /* Offloadable(src, dst) */
} remat_policy_result;

/* The kind p gives op (NULL p: nothing_saveable; NULL op: RECOMPUTE with
 * remat_last_error() set). remat_policy_allows is this != RECOMPUTE. */
REMAT_API remat_policy_result remat_policy_decide(const remat_policy *p, const remat_op_info *op);
/* jax.checkpoint_policies.save_and_offload_only_these_names: a name op
 * whose name is among `save` is saved, among `offload` offloaded, any
 * other op recomputed. NULL with REMAT_ERR_ARG when a name is in both
 * lists (JAX's ValueError) or src/dst is not a memory kind above. */
REMAT_API remat_policy *remat_policy_save_and_offload_only_these_names(int n_save, const char *const *save,
                                                                       int n_offload, const char *const *offload,
                                                                       const char *offload_src,
                                                                       const char *offload_dst);
/* jax.checkpoint_policies.offload_dot_with_no_batch_dims: the
 * dot_generals dots_with_no_batch_dims_saveable saves are offloaded. */
REMAT_API remat_policy *remat_policy_offload_dot_with_no_batch_dims(const char *offload_src,
                                                                    const char *offload_dst);

/* jax.checkpoint(fn, policy=...): a new function (a region around fn).
 * policy NULL means nothing_saveable. NULL when fn is NULL, has a build
 * error or no outputs, or memory ran out; remat_last_error() says which.
 * The policy constructors above return NULL on bad arguments or, with
 * that message, when out of memory. */
REMAT_API remat_fn *remat_checkpoint(remat_fn *fn, const remat_policy *policy);

/* ---- reverse mode ----
 * argnums: indices of the arguments to differentiate (n_argnums = 0: all).
 *
 * remat_vjp: the new function takes (f's args..., one cotangent per output of
 * f) and returns (f's outputs..., the cotangent of each argnum).
 * remat_grad: f must have one scalar output; returns (d out / d argnum ...).
 * remat_value_and_grad: returns (out, d out / d argnum ...). */
REMAT_API remat_status remat_vjp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);
REMAT_API remat_status remat_grad(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);
REMAT_API remat_status remat_value_and_grad(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);

/* ---- forward mode ----
 * A source-to-source transform too (as jax.jvp): the new function computes
 * f and its directional derivative in one pass, keeping no residuals.
 * argnums: the arguments given a tangent (n_argnums = 0: all; each at most
 * once); the others are held constant.
 *
 * remat_jvp: the new function takes (f's args..., one tangent per argnum, in
 * argnums order, named "t_<arg name>") and returns (f's outputs..., the
 * tangent of each output, J v). The outputs are bitwise f's. Tangents
 * through compares, stop_gradient and constants are symbolic zeros (nothing
 * is computed for them); an output that depends on no argnum gets a zero
 * tangent. Checkpoint regions become regions over the JVP of their body
 * (same policy), and a scan carries its tangents along in the carry.
 * Custom ops have no forward mode (REMAT_ERR_UNSUPPORTED naming the op).
 *
 * remat_jacfwd: the Jacobians of every output w.r.t. every argnum by forward
 * mode, one JVP per basis direction of the argnums (numel(argnum) inlined
 * JVPs; the cheaper mode when the arguments have fewer elements than the
 * outputs). The new function takes f's args and returns, output-major,
 * d out_k / d arg_j for each output k and argnum j, of shape
 * out_k.shape ++ arg_j.shape (as jax.jacfwd).
 *
 * remat_hvp: forward-over-reverse Hessian-vector products of f with one
 * scalar output: jvp(grad(f)). The new function takes (f's args..., one
 * vector per argnum, shaped like it) and returns H v restricted to the
 * argnums: for argnum i, sum_j d^2 f / (d arg_i d arg_j) v_j. Checkpoint
 * regions of f keep their policies in the reverse pass. Where f's reverse
 * form has no forward mode (a scan: its taping forward and its backward
 * loop), it is reverse over forward instead, grad_x (J_f(x) v) — the same
 * value to rounding (not bitwise), the scan's reverse pass then running
 * over the JVP loop with the scan's schedule; a custom op has neither. */
REMAT_API remat_status remat_jvp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);
REMAT_API remat_status remat_jacfwd(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);
REMAT_API remat_status remat_hvp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out);

/* ---- residual report ---- */
typedef enum {
    REMAT_RESIDUAL_ARGUMENT, /* "from the argument 'w1'" */
    REMAT_RESIDUAL_OUTPUT,   /* "output of dot_general at file:line" */
    REMAT_RESIDUAL_NAMED,    /* "named 'hidden' at file:line" */
    REMAT_RESIDUAL_SNAPSHOT  /* "f64[3] scan carry snapshots ×10 (binomial:10)" */
} remat_residual_kind;

typedef struct {
    remat_residual_kind kind;
    remat_dtype dtype;
    remat_shape shape;
    remat_op op;       /* producing primitive (ARGUMENT: REMAT_OP_ARG) */
    const char *name;  /* argument name or checkpoint_name, else NULL */
    remat_loc loc;     /* where the user built it */
    int64_t count;     /* SNAPSHOT: number of slots; else 1 */
    const char *detail; /* SNAPSHOT: schedule, e.g. "binomial:10"; an OUTPUT of a
                           higher-order op: what it is, e.g. "scan (ys 0)"; else NULL */
    size_t bytes;      /* total bytes (count x one value) */
    const char *offload_dst; /* an offloaded residual (REMAT_POLICY_OFFLOAD): the memory
                                kind it lives in ("pinned_host"), else NULL */
} remat_residual;

typedef struct remat_residual_list remat_residual_list;

/* Residuals of the VJP of f w.r.t. argnums: one entry per value the backward
 * actually reads, in forward order. */
REMAT_API remat_status remat_saved_residuals(const remat_fn *f, int n_argnums, const int *argnums,
                                             remat_residual_list **out);
/* The residuals of a function already made by remat_vjp/_grad/_value_and_grad. */
REMAT_API remat_status remat_fn_residuals(const remat_fn *vjp_fn, remat_residual_list **out);
REMAT_API int remat_residual_list_count(const remat_residual_list *r);
REMAT_API const remat_residual *remat_residual_list_get(const remat_residual_list *r, int i);
REMAT_API size_t remat_residual_list_bytes(const remat_residual_list *r);
/* One line, e.g. "f32[256,512] output of dot_general at examples/mlp/train_digits.c:42".
 * A NULL e writes "?"; a NULL buf returns NULL. The list accessors answer a
 * NULL list with 0 or NULL; all with remat_last_error() set. */
REMAT_API char *remat_residual_format(const remat_residual *e, char *buf, size_t len);
REMAT_API void remat_residual_list_print(const remat_residual_list *r, FILE *out);
REMAT_API void remat_residual_list_free(remat_residual_list *r);

#ifdef __cplusplus
}
#endif
#endif
