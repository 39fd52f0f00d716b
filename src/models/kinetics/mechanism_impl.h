/*
 * mechanism_impl.h (internal) — the mechanism struct and the parser's parts.
 *
 * Parsing runs in two passes over the text so that a param may be used before
 * its declaration and species are numbered by first appearance:
 *
 *   pass 1 (parser.c, with lexer.c): every line becomes a mech_stmt holding
 *          raw trees whose names are still MECH_EXPR_NAME; declarations and
 *          species go into the name table (names.c);
 *   finish (resolve.c): default independent variable, species numbering,
 *          reaction/ODE conflicts;
 *   pass 2 (resolve.c): statements in file order: names become SPECIES /
 *          PARAM / CONST / LET / INDEP nodes, consts and param values are
 *          evaluated, tables are filled;
 *   rhs.c: mass-action rates and dy/dt sums.
 *
 * Everything a mechanism keeps lives in its arena: one free releases it.
 */
#ifndef REMAT_MODELS_KINETICS_MECHANISM_IMPL_H
#define REMAT_MODELS_KINETICS_MECHANISM_IMPL_H

#include <stddef.h>

#include "core/arena.h"
#include "remat/graph.h"
#include "remat/mechanism.h"
#include "remat/nn.h"

#define MECH_MAX_LINE 65536 /* bytes per line, newline excluded */
#define MECH_MAX_NEST 256   /* recursion of parentheses, unary signs, '^', calls */
#define MECH_MAX_DEPTH 2000 /* operations on the longest path of one expression */
#define MECH_MAX_COEF 1000  /* largest stoichiometric coefficient */
#define MECH_MAX_NAME 64    /* bytes in a name, so messages stay readable */

/* A name not yet resolved; exists only between pass 1 and pass 2. */
#define MECH_EXPR_NAME ((remat_expr_kind)REMAT_EXPR_COUNT)

/* The mechanism's nodes, names and lists live in one arena (core/arena.h),
 * freed with the mechanism. */

/* ---- name table (names.c) ---- */

typedef enum {
    NAME_SPECIES, NAME_PARAM, NAME_CONST, NAME_LET, NAME_INDEP, NAME_COND, NAME_NET,
    NAME_CONTROL, /* a control profile (control.c): read as a let, its values are parameters */
    NAME_KIND_COUNT
} mech_name_kind;

typedef struct {
    const char *name;      /* arena copy */
    mech_name_kind kind;
    int index;             /* in the table of its kind (species: set by mech_finish) */
    int line, col;         /* declaration, or a species' first appearance */
    int decl_order;        /* species: position in 'species' lines, -1 if absent */
    int decl_line;         /* species: line of its 'species' entry */
    int rx_line, rx_col;   /* species: first place on a reaction side (0: none) */
    int ode_line, ode_col; /* species: its ODE (0: none) */
} mech_name;

typedef struct {
    mech_name *v; /* insertion order */
    int n, cap;
    int *slot;    /* open addressing: index into v, -1 empty */
    size_t nslot;
} mech_names;

int mech_names_find(const mech_names *t, const char *s, size_t len); /* -1 if absent */
/* Appends a fresh entry (not checked for presence); -1 when out of memory. */
int mech_names_add(mech_names *t, remat_arena *a, const char *s, size_t len);
void mech_names_release(mech_names *t);

/* "species", "parameter", "const", "let", "independent variable"; with
 * article: "a species", ..., "the independent variable". */
const char *mech_name_kind_text(mech_name_kind k, int article);

/* ---- tokens (lexer.c) ---- */

typedef enum {
    TOK_EOL, TOK_EOF, TOK_NAME, TOK_NUM,
    TOK_PLUS, TOK_MINUS, TOK_STAR, TOK_SLASH, TOK_CARET,
    TOK_LPAREN, TOK_RPAREN, TOK_COMMA, TOK_COLON, TOK_EQ, TOK_PRIME,
    TOK_LBRACK, TOK_RBRACK, TOK_ARROW, TOK_REVERSIBLE
} mech_tok_kind;

typedef struct {
    mech_tok_kind kind;
    const char *text; /* into the source */
    int len;
    int line, col;
    double num;       /* TOK_NUM */
} mech_token;

typedef struct {
    const char *file;
    const char *src;
    size_t n, pos;
    size_t line_start;
    int line;
} mech_lexer;

/* Rejects NUL bytes, invalid UTF-8 and over-long lines before any lexing. */
remat_status mech_check_text(const char *file, const char *src, size_t n);
void mech_lex_init(mech_lexer *lx, const char *file, const char *src, size_t n);
remat_status mech_lex_next(mech_lexer *lx, mech_token *tok);
/* "'text'" (cut at 40 bytes), "end of line" or "end of file". */
const char *mech_tok_show(const mech_token *t, char *buf, size_t len);
/* REMAT_ERR_PARSE with "file:line:col: message". */
remat_status mech_error_at(const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- statements (parser.c) ---- */

typedef struct {
    int name; /* index into the name table */
    int coef;
    int line, col;
} mech_term;

typedef enum { STMT_PARAM, STMT_CONST, STMT_LET, STMT_ODE, STMT_REACTION, STMT_COND, STMT_CONTROL } mech_stmt_kind;

struct mech_control; /* control.c */

/* How a reaction's rate is read (remat/mechanism.h, "Reactions") */
typedef enum {
    RATE_OLD = 0, /* ": expr": a single name or number is a rate constant, anything else the whole rate */
    RATE_CONST,   /* ": k = expr", or an arrhenius call alone: a rate constant, mass action applies */
    RATE_WHOLE    /* ": rate = expr": the whole rate */
} mech_rate_kind;

/* The name node an arrhenius call reads its temperature from carries this
 * index until resolved (resolve.c names the call when there is no T). */
#define MECH_ARRHENIUS_T (-2)

typedef struct mech_stmt {
    mech_stmt_kind kind;
    int line, col;             /* first token */
    int name;                  /* PARAM, CONST, LET, ODE: name table index */
    remat_expr *value;         /* PARAM, CONST, LET: the value; ODE: the right-hand side */
    int value_line, value_col; /* first token of value / of rate[0] */
    remat_expr *bound[2];      /* PARAM: lo, hi, or NULL */
    int bound_line, bound_col; /* PARAM: the '[' */
    mech_term *side[2];        /* REACTION: reactants, products */
    int nside[2];
    int reversible;
    int arrow_line, arrow_col;
    remat_expr *rate[2];       /* REACTION: forward, reverse (NULL unless reversible) */
    int rate_line[2], rate_col[2];
    const char *rate_src[2];   /* REACTION: each rate as written (the source), for warnings */
    int rate_len[2];
    int rate_kind[2];          /* REACTION: mech_rate_kind of each direction */
    struct mech_control *control; /* CONTROL: the profile (control.c) */
    struct mech_stmt *next;
} mech_stmt;

/* ---- networks (net.c) ---- */

#define MECH_NET_MAX_IN 64      /* inputs of one network */
#define MECH_NET_MAX_WIDTH 4096 /* units of a hidden layer, outputs */
#define MECH_NET_MAX_DEPTH 64   /* hidden layers */

/* "net f = mlp(inputs: 2, width: 16, depth: 2, activation: tanh)": depth
 * Dense(width) layers each followed by the activation, then Dense(outputs),
 * Flax's names (Dense_0 .. Dense_depth) and init from PRNGKey(seed). Its
 * weights are the mechanism's parameters first_param .. first_param +
 * nweights - 1, each layer's kernel (in, out) then its bias, row-major. */
typedef struct {
    const char *name;
    int line, col;
    int nin, width, depth, nout;
    remat_nn_activation act;
    unsigned long long seed;
    remat_nn_module *mod;   /* released by remat_mechanism_free */
    remat_nn_module *act_mod; /* the activation alone (a parameter set per batch entry) */
    int first_param, nweights;
    int *kernel_off, *bias_off; /* [depth + 1] offsets from first_param */
    int ntensors;           /* remat_nn_params order: offsets from first_param, shapes */
    int *t_off;
    remat_shape *t_shape;
    double *init;           /* [nweights] Flax's initial values */
    const char **wnames;    /* [nweights] "f.Dense_0.kernel[0][3]" */
} mech_net;

/* The statement "net NAME = mlp(...)" (p->tok is 'net'), kept on p->m->nets. */
struct mech_parser;
remat_status mech_parse_net(struct mech_parser *p);
/* parser.c's declaration of a name and end-of-statement check, for net.c */
remat_status mech_declare(struct mech_parser *p, mech_name_kind kind, const mech_token *t);
remat_status mech_expect_end(struct mech_parser *p, const char *after);
/* Network n's output o at in[nin] with the mechanism's parameters. */
double mech_net_eval(const mech_net *n, int o, const double *in, const double *params);
/* Network n applied to x (..., nin) in f with params (P,) or (..., P), a set
 * per batch entry: (..., nout). */
remat_status mech_net_lower(remat_fn *f, const mech_net *n, remat_val x, remat_val params, remat_val *y);
void mech_nets_release(remat_mechanism *m);

/* A node's child i: args[i], or for a NET node inputs[i]. */
static inline const remat_expr *mech_child(const remat_expr *e, int i)
{
    return e->kind == REMAT_EXPR_NET ? e->inputs[i] : e->args[i];
}

/* ---- the mechanism ---- */

typedef struct {
    const char *name;
    double value, lo, hi;
    int line;
} mech_param;

typedef struct {
    int species;
    double nu; /* products - reactants, never 0 */
} mech_stoich;

typedef struct {
    const remat_expr *rate; /* net rate */
    mech_stoich *stoich;    /* [nstoich] the species it changes, in order of first appearance */
    int nstoich;
    int line, col;
} mech_reaction;

struct remat_mechanism {
    remat_arena arena;
    const char *source;
    const char *indep;
    int nspecies;
    const char **species;
    const remat_expr **rhs;
    int nparams;
    mech_param *params;
    int nconds;
    const char **cond_names;
    double *cond_values; /* the defaults */
    int nconsts;
    const char **const_names;
    double *const_values;
    int nlets;
    const char **let_names;
    const remat_expr **lets;
    int nreactions;
    mech_reaction *reactions;
    int nwarnings, capwarnings;
    const char **warnings; /* "file:line:col: warning: ..." (malloc'd list of arena strings) */
    int ngas; /* gas mechanisms (gas_build.c): the gas species, the state's first ngas; else 0 */
    const struct gas_plan *gas_plan; /* gas mechanisms: the vectorised lowering's data (gas_lower.c) */
    int nnets;
    mech_net *nets;  /* networks; their weights are params[ndeclared_params ..] */
    int ndeclared_params; /* 'param' lines, then the control profiles' values; the rest are weights */
    int nknots, capknots;
    double *knots; /* control profiles' jumps and kinks, increasing, no repeats (control.c; arena) */
};

typedef struct mech_parser {
    remat_mechanism *m;
    const char *file;
    mech_lexer lx;
    mech_token tok;              /* current token */
    mech_names names;
    mech_stmt *first, *last;
    int count[NAME_KIND_COUNT];  /* entries per kind */
    int nreactions, nodes;       /* reaction and ODE statements */
    int ndeclared;               /* names in 'species' lines */
    int species_line;            /* first 'species' line, 0 if none */
    int indep_line;              /* 'indep' line, 0 if none */
    int eof_line, eof_col;
    mech_term *terms;            /* scratch for one reaction side */
    int nterms, capterms;
    const remat_expr **ode;      /* [nspecies] pass 2: ODE right-hand sides */
    const remat_expr *arrhenius_top; /* the last arrhenius call's tree (a rate that is one is a constant) */
    const char *prev_end;        /* the end of the token before tok in the source (mech_advance) */
    int capnets, nweights;       /* m->nets' room; their weights so far */
    int control_params;          /* values of all control profiles: parameters after the declared ones */
} mech_parser;

/* resolve.c: a warning kept on the mechanism (remat_mechanism_warning) */
remat_status mech_warn(mech_parser *p, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

remat_expr *mech_node(remat_arena *a, remat_expr_kind kind, int line, int col);

/* expr.c: an expression at p->tok; also the parsers' small shared helpers */
remat_status mech_parse_expr(mech_parser *p, remat_expr **out);
remat_status mech_advance(mech_parser *p);
int mech_tok_is(const mech_token *t, const char *word);
remat_status mech_nomem(const mech_parser *p);
/* Return a non-OK status from the enclosing function. */
#define MECH_TRY(x)                \
    do {                           \
        remat_status st_ = (x);    \
        if (st_ != REMAT_OK)       \
            return st_;            \
    } while (0)
/* REMAT_ERR_PARSE at line:col of the file being parsed (mech_error_at). */
#define mech_fail(p, line, col, ...) mech_error_at((p)->file, (line), (col), __VA_ARGS__)

remat_status mech_parse_lines(mech_parser *p);     /* pass 1; p->lx set up by the caller */
remat_status mech_finish_names(mech_parser *p);    /* between the passes */
remat_status mech_resolve(mech_parser *p);         /* pass 2 */
remat_status mech_build_rhs(mech_parser *p);

/* control.c: "control NAME(AXIS) piecewise [constant|linear] N over [z0, z1]
 * in [lo, hi] [start v]" (remat/mechanism.h, "Control profiles"). The
 * profile is let number NAME's index (control lets come before the file's
 * lets); its values are parameters "NAME[0]".. after the declared ones. */
#define MECH_MAX_CONTROL 1000 /* intervals of one profile */
remat_status mech_parse_control(mech_parser *p); /* pass 1; p->tok is 'control' */
/* parser.c, for control.c: a declaration, a new statement, the end of a line */
remat_status mech_declare(mech_parser *p, mech_name_kind kind, const mech_token *t);
mech_stmt *mech_new_stmt(mech_parser *p, mech_stmt_kind kind, const mech_token *first);
remat_status mech_expect_end(mech_parser *p, const char *after);
remat_status mech_resolve_control(mech_parser *p, const mech_stmt *s); /* pass 2 */
/* resolve.c: e resolved as a const expression (bounds: inf allowed) and its value */
remat_status mech_const_value(mech_parser *p, remat_expr *e, int bound, double *v);

/* Evaluation (eval.c). y, params, lets may be NULL if e refers to none.
 * With spine set, chains of arithmetic down left operands (a dy/dt over
 * thousands of reactions) are walked in a loop on it, not recursed into;
 * spine->oom is set (and NaN returned) when it cannot grow. Without, the
 * recursion is as deep as the tree: for the parser's trees only (at most
 * MECH_MAX_DEPTH). */
typedef struct {
    const remat_expr **v;
    size_t n, cap;
    int oom;
} mech_spine;
/* The first node, in evaluation order, whose value is not finite although
 * its operands are: where the rates break. */
typedef struct {
    const remat_expr *e;
    double a, b, v; /* its operands (b: 0 for one) and its value */
} mech_culprit;
typedef struct {
    double t;
    const double *y, *params, *lets;
    const double *conds; /* params + param_count (NULL when none are read) */
    const mech_net *nets; /* the mechanism's networks (NULL when none are called) */
    mech_spine *spine;
    mech_culprit *bad; /* NULL: not looked for */
} mech_env;
double mech_eval(const remat_expr *e, const mech_env *env);
/* The double value of a one-argument function (libm; the reference the
 * graph lowering is tested against). */
double mech_fn_value(remat_expr_fn fn, double a);
/* 2 for min and max, else 1. */
int mech_fn_arity(remat_expr_fn fn);

/* reach.c: used[nlets] (zeroed by the caller) marks the lets the rates read,
 * through other lets; *reads_t whether they read the independent variable.
 * 0 when out of memory. */
int mech_reach(const remat_mechanism *m, unsigned char *used, int *reads_t);

#endif
