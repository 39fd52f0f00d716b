/* op_table.c — the columns of REMAT_OP_LIST as arrays, and what derives from them. */
#include "core/exhaustive.h"
#include "remat/op.h"

#define ROW_NAME_(id, name, nin, cat, param, deriv) [id] = name,
#define ROW_NIN_(id, name, nin, cat, param, deriv) [id] = nin,
#define ROW_CAT_(id, name, nin, cat, param, deriv) [id] = REMAT_OPCAT_##cat,
#define ROW_PARAM_(id, name, nin, cat, param, deriv) [id] = REMAT_OPP_##param,
#define ROW_DERIV_(id, name, nin, cat, param, deriv) [id] = REMAT_OPD_##deriv,

static const char *const op_names[] = {REMAT_OP_LIST(ROW_NAME_)};
static const signed char op_nin[] = {REMAT_OP_LIST(ROW_NIN_)};
static const unsigned char op_cat[] = {REMAT_OP_LIST(ROW_CAT_)};
static const unsigned char op_param[] = {REMAT_OP_LIST(ROW_PARAM_)};
static const unsigned char op_deriv[] = {REMAT_OP_LIST(ROW_DERIV_)};

#define COUNT_OF_(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(COUNT_OF_(op_names) == REMAT_OP_COUNT, "op name column out of step with remat_op");
_Static_assert(COUNT_OF_(op_nin) == REMAT_OP_COUNT, "op arity column out of step with remat_op");
_Static_assert(COUNT_OF_(op_cat) == REMAT_OP_COUNT, "op category column out of step with remat_op");
_Static_assert(COUNT_OF_(op_param) == REMAT_OP_COUNT, "op parameter column out of step with remat_op");
_Static_assert(COUNT_OF_(op_deriv) == REMAT_OP_COUNT, "op derivative column out of step with remat_op");

static const char *const cat_names[] = {
    [REMAT_OPCAT_LEAF] = "leaf",       [REMAT_OPCAT_UNARY] = "unary",
    [REMAT_OPCAT_BINARY] = "binary",   [REMAT_OPCAT_COMPARE] = "compare",
    [REMAT_OPCAT_SELECT] = "select",   [REMAT_OPCAT_CONVERT] = "convert",
    [REMAT_OPCAT_REDUCE] = "reduce",   [REMAT_OPCAT_STRUCTURAL] = "structural",
    [REMAT_OPCAT_DOT] = "dot",         [REMAT_OPCAT_LINALG] = "linalg",
    [REMAT_OPCAT_IDENTITY] = "identity",
    [REMAT_OPCAT_CUSTOM] = "custom",   [REMAT_OPCAT_CONTROL] = "control",
};
_Static_assert(COUNT_OF_(cat_names) == REMAT_OPCAT_COUNT, "category name table out of step");

static int known(remat_op op) { return (unsigned)op < REMAT_OP_COUNT; }

const char *remat_op_name(remat_op op) { return known(op) ? op_names[op] : "?"; }
int remat_op_arity(remat_op op) { return known(op) ? op_nin[op] : -2; }
remat_op_category remat_op_category_of(remat_op op)
{
    return known(op) ? (remat_op_category)op_cat[op] : REMAT_OPCAT_COUNT;
}
remat_op_param remat_op_param_of(remat_op op) { return known(op) ? (remat_op_param)op_param[op] : REMAT_OPP_COUNT; }
remat_op_deriv remat_op_deriv_of(remat_op op) { return known(op) ? (remat_op_deriv)op_deriv[op] : REMAT_OPD_COUNT; }

const char *remat_op_category_name(remat_op_category c)
{
    return (unsigned)c < REMAT_OPCAT_COUNT ? cat_names[c] : "?";
}

REMAT_EXHAUSTIVE_BEGIN
int remat_op_is_elementwise(remat_op op)
{
    switch (remat_op_category_of(op)) {
    case REMAT_OPCAT_UNARY:
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE:
    case REMAT_OPCAT_SELECT:
        return 1;
    case REMAT_OPCAT_LEAF:
    case REMAT_OPCAT_CONVERT:
    case REMAT_OPCAT_REDUCE:
    case REMAT_OPCAT_STRUCTURAL:
    case REMAT_OPCAT_DOT:
    case REMAT_OPCAT_LINALG:
    case REMAT_OPCAT_IDENTITY:
    case REMAT_OPCAT_CUSTOM:
    case REMAT_OPCAT_CONTROL:
    case REMAT_OPCAT_COUNT:
        return 0;
    }
    return 0;
}

int remat_op_is_binary(remat_op op)
{
    remat_op_category c = remat_op_category_of(op);
    return c == REMAT_OPCAT_BINARY || c == REMAT_OPCAT_COMPARE;
}
REMAT_EXHAUSTIVE_END
