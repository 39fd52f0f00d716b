/*
 * remat/mechanism.h — reaction mechanisms read from a small text format.
 *
 * A mechanism is a list of species y (the state), parameters p (the numbers a
 * fit adjusts), named constants, and for every species an expression tree
 * dy_i/dt = f_i(t, y, p). The trees are plain read-only structs so that a
 * graph lowering can walk them; remat_mechanism_eval_rhs() is a double
 * evaluator of the same trees (the reference the lowering is tested against).
 *
 *   # A -> B -> C, first order (the PFR seed problem)
 *   param k1 = 1.0 in [0, 100]   # value, optional bounds (inf allowed)
 *   param k2 = 0.5
 *   A -> B : k1                  # mass action: rate k1*A
 *   B -> C : k2
 *
 *   remat_mechanism *m;
 *   if (remat_mechanism_parse_file("abc.mech", &m) != REMAT_OK) {
 *       fprintf(stderr, "%s\n", remat_last_error()); // abc.mech:4:10: unknown name 'k3'
 *       return 1;
 *   }
 *   double p[2], y[3] = {1, 0, 0}, dydt[3];
 *   remat_mechanism_param_values(m, p);          // the declared values
 *   remat_mechanism_eval_rhs(m, 0.0, y, p, dydt); // {-1, 1, 0}
 *   remat_mechanism_free(m);
 *
 * ## The format
 *
 * One statement per line; '#' starts a comment; blank lines are ignored.
 *
 *   statement = param | cond | const | let | species | indep | net | ode | reaction | control
 *   param     = "param" NAME "=" cexpr [ "in" "[" cexpr "," cexpr "]" ]
 *   cond      = "cond" NAME "=" cexpr                  cond T = 298.15
 *   const     = "const" NAME "=" cexpr
 *   let       = "let" NAME "=" expr
 *   species   = "species" NAME { [","] NAME }
 *   indep     = "indep" NAME
 *   net       = "net" NAME "=" "mlp" "(" option { "," option } ")"   (see Networks)
 *   option    = ("inputs" | "width" | "depth" | "outputs" | "seed") ":" INTEGER
 *             | "activation" ":" (relu | gelu | gelu_erf | tanh | silu | identity)
 *   ode       = NAME "'" "=" expr                      y1' = -(t1 + t3) * y1^2
 *   control   = "control" NAME "(" NAME ")" "piecewise" [ "constant" | "linear" ] INTEGER
 *               "over" "[" cexpr "," cexpr "]" "in" "[" cexpr "," cexpr "]" [ "start" cexpr ]
 *   reaction  = side ("->" | "<=>") side ":" rate [ "," rate ]
 *   rate      = "k" "=" expr | "rate" "=" expr | expr   (see Reactions)
 *   side      = [ term { "+" term } ]                  2 A + B
 *   term      = [ INTEGER ] NAME                       coefficient 1..1000
 *   expr      = product { ("+" | "-") product }
 *   product   = unary { ("*" | "/") unary }
 *   unary     = ("-" | "+") unary | power
 *   power     = primary [ "^" unary ]                  right-associative; -a^2 = -(a^2)
 *   primary   = NUMBER | NAME | FUNC "(" expr { "," expr } ")" | "(" expr ")"
 *             | NET [ "[" INTEGER "]" ] "(" expr { "," expr } ")"    a network declared above
 *   FUNC      = exp | log | sqrt | log10 | log1p | expm1 | tanh | sin | cos
 *             | logistic | sigmoid | erf | abs (one argument)
 *             | min | max | pow (two arguments)
 *             | arrhenius (two or three) | arrhenius_ref (three): see Arrhenius
 *   NUMBER    = 1 | 1.5 | .5 | 1. | 1e-3 | 2.5E+4     (a coefficient needs a space: "2 A")
 *   NAME      = [A-Za-z_][A-Za-z0-9_]*, case-sensitive
 *
 * cexpr is an expr that may use only numbers, earlier consts and functions
 * (and, in bounds, the word inf); it is evaluated while parsing.
 *
 * Functions. exp, log, sqrt, min and max are reserved words; the others are
 * calls only where '(' follows their name (a species may be named 'abs').
 * pow(a, b) is a^b; sigmoid is logistic, 1 / (1 + exp(-x)); log10(x) is
 * log(x) / log(10); log1p(x) = log(1 + x) and expm1(x) = exp(x) - 1 keep
 * their accuracy for tiny x; sin and cos take radians; abs's derivative is
 * sign(x), +1 at 0. Each lowers to the graph's op (tanh, erf, ...: remat/
 * graph.h), so rates using them are differentiated by its VJP and JVP rules
 * in every mode; remat_mechanism_eval_rhs evaluates them with libm (the
 * two agree to a few ulp, not bitwise). A saturating uptake and a smooth
 * switch, for example:
 *
 *   A -> B : rate = vmax * tanh(A / Ks)
 *   B -> C : rate = k2 * logistic((T - T50) / w) * B^n
 *   C -> : rate = k3 * log1p(C / C0)
 *
 * Reactions. The rate after ':' is read one of two ways, which a file can
 * say explicitly:
 *
 *   A -> B : k = k0 * 2        a rate constant: mass action applies, rate k0*2*A
 *   A -> B : rate = k1 * A^2   the whole rate, as written: k1*A^2
 *   2 A + B -> C : k = kf      rate kf*A^2*B
 *   A <=> B : k = kf, k = kr   net rate kf*A - kr*B (each direction its own reading)
 *
 * ("k" and "rate" are keywords only there, before '='.) The older spelling
 * without them stays: a single name of a param, cond, const or let, or a
 * single number, is a rate constant (mass action), and any other expression
 * is the whole rate:
 *
 *   A -> B : k1               rate k1*A           2 A + B -> C : k   rate k*A^2*B
 *   A -> : k                  rate k*A (no products)      -> A : k0  rate k0 (source)
 *   y1 -> y2 : t1 * y1^2      rate t1*y1^2 (explicit)
 *
 * Two readings of that spelling are rarely what was meant, so parsing them
 * records a warning (remat_mechanism_warning: "file:line:col: warning: ...",
 * quoting the rate as written and naming the reading taken; the remat tool
 * prints them on stderr):
 *   - an expression taken as the whole rate that reads none of the
 *     reaction's reactants: "A -> B : k1 * 2" is the rate 2*k1, not 2*k1*A,
 *     and "A -> B : A0*exp(-Ea/(R*T))" has no factor A. Write
 *     "A -> B : k = k1 * 2" (or ": rate = k1 * 2" when a rate independent of
 *     A is meant; a source "-> A : expr" is never warned about);
 *   - a rate constant that reads a reactant itself, directly or through a
 *     let: "let r = k*A" then "A -> B : r" is the rate k*A^2 (mass action
 *     applied twice). Write "A -> B : rate = r".
 *
 * Arrhenius. Rate constants of a temperature T, which must be a condition
 * ("cond T = 350", one value per experiment) or a species named T (else an
 * error naming the call); T in K, activation energies Ea in J/mol, R =
 * 8.314462618 J/(mol K); A, b, Ea, k_ref, T_ref any expressions:
 *
 *   arrhenius(A, Ea)              A exp(-Ea / (R T))
 *   arrhenius(A, b, Ea)           A T^b exp(-Ea / (R T))          (modified)
 *   arrhenius_ref(k_ref, Ea, T_ref)  k_ref exp(-Ea/R (1/T - 1/T_ref))
 *
 * A rate that is one such call alone is a rate constant (mass action
 * applies): "A -> B : arrhenius(A0, Ea)" is the rate A0 exp(-Ea/(R T)) A.
 * For fitting prefer arrhenius_ref with T_ref inside the data's
 * temperatures: k_ref (the rate constant at T_ref) and Ea are then nearly
 * uncorrelated, where A and Ea of arrhenius are correlated to 1 - 1e-6.
 * The calls are written out into the tree (exp, products, T^b), so they are
 * differentiated like any other rate.
 *
 * A rate that is a single species name or the independent variable is an
 * error (a rate constant is required there). Species named twice on one side
 * add up ("A + A" is "2 A"). A reaction contributes coefficient(product) -
 * coefficient(reactant) times its net rate to each species' dy/dt.
 *
 * Networks. "net f = mlp(inputs: 2, width: 16, depth: 2, activation: tanh)"
 * declares a network of `inputs` numbers: `depth` (1..64) Dense(`width`)
 * layers (width 1..4096), each followed by the activation (jax.nn's
 * formulas, remat/nn.h; default tanh), then Dense(`outputs`) (default 1).
 * It is built from remat/nn.h with Flax linen's names (Dense_0 ..
 * Dense_depth) and initial weights: lecun_normal kernels and zero biases
 * exactly as Flax's `Net().init(jax.random.PRNGKey(seed), x)` draws them in
 * float32 (seed 0..2^32-1, default 0), widened to double. A rate, let or ODE
 * on a later line calls it with one expression per input: "f(A, B)"; a
 * network of several outputs is called one output at a time, "f[1](A, B)".
 * A call is a REMAT_EXPR_NET node; the lowering applies the network to its
 * inputs side by side (one remat_nn_apply per call; with a parameter set
 * per batch entry, remat_kinetics_rhs's (..., P), each Dense as a batched
 * product).
 *
 * The weights are parameters: after the declared ones, network by network,
 * each layer's kernel (in, out) row-major then its bias, named
 * "f.Dense_0.kernel[i][j]" and "f.Dense_0.bias[j]", with no bounds. They
 * are fitted, differentiated and set (remat_mechanism_param_find) like rate
 * constants; a fit keeps them on the linear scale (remat/fit.h), and the
 * tool's --free/--fix take a network's name or a prefix ("f", "f.Dense_1")
 * for all its weights. A mechanism holds at most 1,000,000 weights.
 * Errors name the file:line:column of the option or call: a missing
 * inputs/width/depth, a value out of range, an unknown option or activation,
 * a call with the wrong number of arguments or a bad output index, a call
 * before the 'net' line or in a param value, and the network's name used as
 * a species, parameter or any other name.
 *
 *   net g = mlp(inputs: 1, width: 8, depth: 2, outputs: 2, activation: silu, seed: 3)
 *   let r = exp(g[0](T / 300)) * k
 *   A -> B : rate = r * A + g[1](T / 300)^2
 *
 * Conditions. "cond T = 298.15" declares a condition: a number that is
 * constant within one experiment (a temperature, a pressure, a feed ratio)
 * and may differ between experiments, with a default. A rate, let or ODE
 * reads it like a parameter, but it is never fitted and never a residual:
 * each experiment gives its own value (a data file's "# T = 350" comment or
 * a column named T, remat/dataset.h; the tool's --cond T=350), else the
 * default. The rate functions below (remat_mechanism_eval_rhs,
 * remat_kinetics_rhs, remat/ode.h) read the conditions after the
 * parameters: their params vector holds remat_mechanism_input_count() =
 * param_count + cond_count values, the parameters then the conditions in
 * declaration order (a mechanism without conditions: just the parameters).
 *
 * Control profiles. "control T(z) piecewise N over [z0, z1] in [lo, hi]"
 * declares T, a function of the independent variable (named in the
 * parentheses; it must be the file's, 't' or the 'indep' one) on N equal
 * intervals of [z0, z1], whose values are parameters that a fit or an
 * optimisation adjusts like any other:
 *
 *   indep z
 *   control T(z) piecewise 10 over [0, 10] in [300, 420] start 350
 *   A -> B : arrhenius_ref(1.0, 50e3, 350)     # T is read like a cond or a let
 *
 *   piecewise N (or piecewise constant N): N values T[0]..T[N-1]; T(z) is
 *       T[i] on [z_i, z_{i+1}), z_i = z0 + i (z1 - z0)/N (at a knot, the
 *       value to its right), T[0] before z0 and T[N-1] from z1 on;
 *   piecewise linear N: N + 1 values T[0]..T[N] at the knots z_0..z_N,
 *       joined linearly, constant outside [z0, z1].
 *
 * The values are parameters named "T[0]", "T[1]", ... (so --fix/--free of
 * the tool name them so), after the file's declared parameters in the
 * parameter vector, each bounded by [lo, hi] (finite, lo < hi) and starting
 * at "start v" (default (lo + hi) / 2). N is 1 to 1000; z0 < z1 and the
 * bounds and start are cexprs. T may be read anywhere a let may, before its
 * line too, and is the temperature arrhenius reads when it is named T. Its
 * derivative with respect to each value is the value's weight (0 or 1 for
 * piecewise constant; the hat function for linear), so gradients flow to
 * the values; there is none with respect to z across a jump. The jumps
 * (and kinks of linear profiles) are listed by
 * remat_mechanism_control_knots: adaptive reactors (remat/pfr.h) end a step
 * at each one instead of stepping across it. A fixed step whose end is a
 * knot evaluates its last stage there with the next interval's value (RK4's
 * fourth, Tsit5's sixth stage): the outlet then has an O(h) error per jump,
 * not the method's order, and the gradient is still exact for the steps
 * taken; choose a step count that is a multiple of N (knots on step
 * boundaries) and check it against an adaptive run. 'control' is no reserved
 * word: only a line "control NAME ..." declares a profile.
 *
 * Names. Every name has one meaning for the whole file: species, param,
 * cond, const, let, net, control profile or the independent variable. param, cond and species are
 * declarations visible everywhere (a param may be used before its 'param'
 * line); const and
 * let are definitions read in order and may only be used on later lines.
 * A name used in an expression that is none of these is an error ("unknown
 * name 'k3'"): rate names do not declare parameters implicitly. The
 * independent variable is 't' unless the file says "indep z"; it may appear
 * in any expr. Reserved (not usable as names): exp log sqrt min max param
 * cond const let species indep inf arrhenius arrhenius_ref ("net" starts a
 * network only when a name follows it: a species may still be called net).
 *
 * Species are numbered in order of first appearance on a reaction side or
 * an ODE's left-hand side, unless the file has 'species' lines: then those
 * fix the order, and every species must be listed there. A species gets its
 * dy/dt from reactions or from one ODE line, not both: a species with an ODE
 * may not stand on either side of a reaction (even as a catalyst), though any
 * rate or ODE may read it. So a file may mix reaction species and ODE
 * species. A listed species in no reaction and no ODE has dy/dt = 0. A file
 * needs at least one reaction or ODE.
 *
 * Errors return REMAT_ERR_PARSE (REMAT_ERR_IO for an unreadable file) with a
 * message "file:line:column: what, naming 'the token'"; columns count bytes
 * from 1. Limits: lines of at most 65536 bytes, names of at most 64, 256
 * levels of nesting and expressions at most 2000 operations deep; the text
 * must be UTF-8 (non-ASCII only in comments) without NUL bytes, its lines
 * ended by LF or CR LF (a file of lines ended by CR alone is refused).
 */
#ifndef REMAT_MECHANISM_H
#define REMAT_MECHANISM_H

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- expression trees ----
 *
 * Nodes are owned by the mechanism and live until remat_mechanism_free.
 * Trees may share nodes: a reaction's net rate node appears in the dy/dt of
 * every species the reaction changes, so the right-hand sides form a DAG; a
 * walker that memoizes by node address evaluates each rate once.
 *
 * LET nodes are references, not inlined: LET(i) stands for the value of
 * remat_mechanism_let_expr(m, i). A let's tree only refers to lets with a
 * smaller index, so computing lets 0, 1, ... in order and then the
 * right-hand sides is always valid. CONST nodes carry their value folded in
 * (value), so a walker never needs the const table; a minus sign written
 * directly before a number is folded into a NUM node with a negative value. */
typedef enum {
    REMAT_EXPR_NUM = 0, /* value */
    REMAT_EXPR_SPECIES, /* y[index] */
    REMAT_EXPR_PARAM,   /* p[index] */
    REMAT_EXPR_CONST,   /* value (const number index) */
    REMAT_EXPR_INDEP,   /* t, the independent variable */
    REMAT_EXPR_LET,     /* the value of let number index */
    REMAT_EXPR_NEG,     /* -args[0] */
    REMAT_EXPR_ADD,     /* args[0] + args[1] */
    REMAT_EXPR_SUB,     /* args[0] - args[1] */
    REMAT_EXPR_MUL,     /* args[0] * args[1] */
    REMAT_EXPR_DIV,     /* args[0] / args[1] */
    REMAT_EXPR_POW,     /* pow(args[0], args[1]) */
    REMAT_EXPR_CALL,    /* fn(args[0]) or fn(args[0], args[1]) */
    REMAT_EXPR_COND,    /* condition number index: params[param_count + index] */
    REMAT_EXPR_NET,     /* output `output` of network number index at its nargs inputs[] */
    REMAT_EXPR_COUNT
} remat_expr_kind;

typedef enum {
    REMAT_FN_EXP = 0, /* exp(x) */
    REMAT_FN_LOG,     /* natural log(x) */
    REMAT_FN_SQRT,    /* sqrt(x) */
    REMAT_FN_MIN,     /* min(a, b), as fmin */
    REMAT_FN_MAX,     /* max(a, b), as fmax */
    REMAT_FN_STEP,    /* step(x): 1 for x >= 0, else 0 (its derivative 0); made by control
                         profiles, not written in files */
    REMAT_FN_TANH,     /* tanh(x) */
    REMAT_FN_SIN,      /* sin(x), x in radians */
    REMAT_FN_COS,      /* cos(x) */
    REMAT_FN_LOG1P,    /* log1p(x) = log(1 + x), accurate for tiny x */
    REMAT_FN_EXPM1,    /* expm1(x) = exp(x) - 1, accurate for tiny x */
    REMAT_FN_LOGISTIC, /* logistic(x) = 1 / (1 + exp(-x)); also spelled sigmoid(x) */
    REMAT_FN_ERF,      /* erf(x) */
    REMAT_FN_ABS,      /* abs(x), as fabs; its derivative sign(x), +1 at 0 */
    REMAT_FN_LOG10,    /* log10(x) = log(x) / log(10) */
    REMAT_FN_COUNT
} remat_expr_fn;

typedef struct remat_expr {
    remat_expr_kind kind;
    int nargs;                        /* children: NEG 1; binary 2; CALL 1 or 2; NET its
                                         inputs (in inputs[], not args); leaves 0 */
    const struct remat_expr *args[2];
    double value;                     /* NUM: the number; CONST: the const's value;
                                         NET: the network's number of outputs */
    int index;                        /* SPECIES, PARAM, COND, CONST, LET: table index; else -1 */
    remat_expr_fn fn;                 /* CALL only */
    const char *name;                 /* SPECIES, PARAM, COND, CONST, LET, INDEP: the name;
                                         CALL: the function's name; else NULL */
    int line, col;                    /* source position (1-based): the token of a leaf,
                                         the operator of an operation; nodes made from a
                                         reaction carry the reaction's line and column */
    const struct remat_expr *const *inputs; /* NET: its nargs inputs; else NULL */
    int output;                       /* NET: which of the network's outputs; else 0 */
} remat_expr;

/* "num", "species", ..., "call"; "?" out of range. */
REMAT_API const char *remat_expr_kind_name(remat_expr_kind kind);
/* "exp", "log", "sqrt", "min", "max", "step", "tanh", ..., "log10"; "?" out of range. */
REMAT_API const char *remat_expr_fn_name(remat_expr_fn fn);
/* Writes e as text in the mechanism syntax, with the fewest parentheses that
 * keep its tree ("k1 * A - k2 * B"); LET and CONST print their names. Like
 * snprintf: returns the length the full text needs, writes at most len bytes
 * (NUL included). Subtrees more than 4096 levels down (a dy/dt summing
 * thousands of reactions) print as "...". A NULL e (or buf with len > 0): -1. */
REMAT_API int remat_expr_format(const remat_expr *e, char *buf, int len);

/* ---- mechanisms ---- */

typedef struct remat_mechanism remat_mechanism;

/* Reads and parses a file. Errors name path:line:column. */
REMAT_API remat_status remat_mechanism_parse_file(const char *path, remat_mechanism **out);
/* Parses NUL-terminated text; name_for_errors (NULL: "<string>") prefixes messages. */
REMAT_API remat_status remat_mechanism_parse_string(const char *text, const char *name_for_errors,
                                                    remat_mechanism **out);
REMAT_API void remat_mechanism_free(remat_mechanism *m); /* NULL is a no-op */

/* Every accessor below answers a NULL mechanism with remat_last_error() set
 * (REMAT_ERR_NULL) and a value no mechanism gives: NULL for pointers, 0 for
 * counts, -1 for find and reaction_line, NaN for doubles (param_values
 * writes nothing). */
/* The path or name given at parse time. */
REMAT_API const char *remat_mechanism_source(const remat_mechanism *m);
/* Name of the independent variable ("t" unless the file says "indep NAME"). */
REMAT_API const char *remat_mechanism_indep_name(const remat_mechanism *m);

/* Indices below are 0 <= i < count; out of range aborts (a programmer error). */
REMAT_API int remat_mechanism_species_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_species_name(const remat_mechanism *m, int i);
/* Index of a species by name, -1 if there is none. */
REMAT_API int remat_mechanism_species_find(const remat_mechanism *m, const char *name);

REMAT_API int remat_mechanism_param_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_param_name(const remat_mechanism *m, int i);
REMAT_API double remat_mechanism_param_value(const remat_mechanism *m, int i);
REMAT_API double remat_mechanism_param_lo(const remat_mechanism *m, int i); /* -INFINITY if no bound */
REMAT_API double remat_mechanism_param_hi(const remat_mechanism *m, int i); /* +INFINITY if no bound */
REMAT_API int remat_mechanism_param_find(const remat_mechanism *m, const char *name);
/* values[i] = declared value of param i, for i < param_count. */
REMAT_API void remat_mechanism_param_values(const remat_mechanism *m, double values[]);

/* Networks ("net f = mlp(...)", see "Networks" above), in declaration
 * order. Their weights are parameters after the declared ones:
 * remat_mechanism_param_net(m, i) is the network parameter i belongs to,
 * -1 for a declared parameter (a fit puts weights on the linear scale). */
REMAT_API int remat_mechanism_net_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_net_name(const remat_mechanism *m, int i);
REMAT_API int remat_mechanism_param_net(const remat_mechanism *m, int i);

/* Warnings recorded while parsing ("file:line:col: warning: ...": a rate
 * read in a way that is rarely meant, see Reactions), in file order. */
REMAT_API int remat_mechanism_warning_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_warning(const remat_mechanism *m, int i);

/* Conditions ("cond NAME = default"), in declaration order. */
REMAT_API int remat_mechanism_cond_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_cond_name(const remat_mechanism *m, int i);
REMAT_API double remat_mechanism_cond_value(const remat_mechanism *m, int i); /* the default */
REMAT_API int remat_mechanism_cond_find(const remat_mechanism *m, const char *name); /* -1: none */
/* param_count + cond_count: the length of the params vector the rate
 * functions read (the parameters, then the conditions). */
REMAT_API int remat_mechanism_input_count(const remat_mechanism *m);

REMAT_API int remat_mechanism_const_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_const_name(const remat_mechanism *m, int i);
REMAT_API double remat_mechanism_const_value(const remat_mechanism *m, int i);

REMAT_API int remat_mechanism_let_count(const remat_mechanism *m);
REMAT_API const char *remat_mechanism_let_name(const remat_mechanism *m, int i);
REMAT_API const remat_expr *remat_mechanism_let_expr(const remat_mechanism *m, int i);

/* dy_i/dt for species i: from its ODE line, or the sum over reactions of
 * stoich * net rate; a species in neither is the number 0. */
REMAT_API const remat_expr *remat_mechanism_rhs(const remat_mechanism *m, int species);

/* Reactions, in file order (ODE lines are not reactions). */
REMAT_API int remat_mechanism_reaction_count(const remat_mechanism *m);
/* Net rate: forward rate, or forward - reverse for "<=>". */
REMAT_API const remat_expr *remat_mechanism_reaction_rate(const remat_mechanism *m, int r);
/* Net stoichiometric coefficient of species s in reaction r (products - reactants). */
REMAT_API double remat_mechanism_reaction_stoich(const remat_mechanism *m, int r, int s);
REMAT_API int remat_mechanism_reaction_line(const remat_mechanism *m, int r);
/* The points of the independent variable where a control profile's value
 * jumps (piecewise constant: its inner knots) or its slope does (piecewise
 * linear: all its knots), over all profiles, increasing and without
 * repeats: writes the first min(count, cap) into z (NULL when cap is 0) and
 * returns the count (0 without profiles). Adaptive integrators stop there
 * (remat/pfr.h) rather than step across them. */
REMAT_API int remat_mechanism_control_knots(const remat_mechanism *m, double z[], int cap);

/* dydt[i] = f_i(t, y, params) for every species, lets computed in order.
 * y has species_count entries, params input_count: the parameters, then the
 * conditions (NULL allowed when 0).
 * Plain IEEE arithmetic: non-finite results are returned, not reported.
 * Safe to call from several threads on one mechanism. */
REMAT_API remat_status remat_mechanism_eval_rhs(const remat_mechanism *m, double t, const double y[],
                                                const double params[], double dydt[]);
/* REMAT_OK when every dy/dt at (t, y, params) is finite. Otherwise
 * REMAT_ERR_NUMERIC, and the message names the first operation, in
 * evaluation order, that made a non-finite value from finite operands:
 * "file:line:col: the rate expression 'k / (a - b)' is inf at t = 0:
 * division by zero" (or overflow, log of 0, ...). Integrators call it when
 * a result is not finite, so that a rate that cannot be computed is not
 * reported as a step size that is too large. */
REMAT_API remat_status remat_mechanism_check_rates(const remat_mechanism *m, double t, const double y[],
                                                   const double params[]);

#ifdef __cplusplus
}
#endif
#endif
