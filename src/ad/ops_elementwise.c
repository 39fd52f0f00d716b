/* ops_elementwise.c — constructors (with shape rules) of leaves and elementwise ops. */
#include <math.h>
#include <string.h>

#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "core/shape.h"
#include "core/assert.h"

remat_node rmi_proto(remat_op op, remat_dtype dt, const remat_shape *s, remat_loc loc)
{
    remat_node n;
    memset(&n, 0, sizeof n);
    n.op = (uint16_t)op;
    n.dtype = (uint8_t)dt;
    n.shape = *s;
    n.loc = loc;
    return n;
}

int rmi_check_dims(remat_fn *f, const char *op, remat_dtype dt, int rank, const int64_t *dims, remat_loc loc)
{
    if (rank < 0 || rank > REMAT_MAX_RANK) {
        rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "%s: rank %d out of range [0, %d]", op, rank, REMAT_MAX_RANK);
        return 0;
    }
    if (rank > 0 && !dims) {
        rmi_fn_fail(f, REMAT_ERR_NULL, loc, "%s: dims is NULL for rank %d", op, rank);
        return 0;
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) {
            rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "%s: dimension %d is negative (%lld)", op, i,
                        (long long)dims[i]);
            return 0;
        }
    if (!rmi_dims_fit(rank, dims, remat_dtype_size(dt))) {
        char sb[160];
        remat_shape s = remat_shape_make(rank, dims);
        rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "%s: shape %s is too large: its byte size overflows int64/size_t", op,
                    remat_shape_format(dt, &s, sb, sizeof sb));
        return 0;
    }
    return 1;
}

static int check_dtype(remat_fn *f, const char *op, remat_dtype dt, remat_loc loc)
{
    if ((unsigned)dt >= REMAT_DTYPE_COUNT) {
        rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "%s: unknown dtype %d", op, (int)dt);
        return 0;
    }
    return 1;
}

remat_val remat_arg_at(remat_fn *f, const char *name, remat_dtype dt, int rank, const int64_t *dims,
                       remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!check_dtype(f, "argument", dt, loc) || !rmi_check_dims(f, "argument", dt, rank, dims, loc))
        return REMAT_NONE;
    remat_shape s = remat_shape_make(rank, dims);
    remat_node n = rmi_proto(REMAT_OP_ARG, dt, &s, loc);
    char auto_name[32];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "arg%d", f->n_args);
        name = auto_name;
    }
    if (!(n.name = rmi_fn_strdup(f, name)))
        return REMAT_NONE;
    return rmi_fn_add_node(f, &n, 0, NULL);
}

remat_val remat_const_fill_at(remat_fn *f, remat_dtype dt, int rank, const int64_t *dims, double value,
                              remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!check_dtype(f, "constant", dt, loc) || !rmi_check_dims(f, "constant", dt, rank, dims, loc))
        return REMAT_NONE;
    remat_shape s = remat_shape_make(rank, dims);
    remat_node n = rmi_proto(REMAT_OP_CONSTANT, dt, &s, loc);
    n.p.fill = dt == REMAT_F32 ? (double)(float)value : value;
    return rmi_fn_add_node(f, &n, 0, NULL);
}

remat_val remat_const_data_at(remat_fn *f, remat_dtype dt, int rank, const int64_t *dims, const void *data,
                              remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!check_dtype(f, "constant", dt, loc) || !rmi_check_dims(f, "constant", dt, rank, dims, loc))
        return REMAT_NONE;
    if (!data)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "constant: data is NULL");
    remat_shape s = remat_shape_make(rank, dims);
    remat_node n = rmi_proto(REMAT_OP_CONSTANT, dt, &s, loc);
    size_t bytes = (size_t)remat_shape_numel(&s) * remat_dtype_size(dt);
    void *d = rmi_fn_alloc(f, bytes ? bytes : 1);
    if (!d)
        return REMAT_NONE;
    memcpy(d, data, bytes);
    n.data = d;
    return rmi_fn_add_node(f, &n, 0, NULL);
}

/* the unary ops without a parameter (integer_pow and pow have constructors of their own) */
static int is_unary(remat_op op)
{
    return remat_op_category_of(op) == REMAT_OPCAT_UNARY && remat_op_param_of(op) == REMAT_OPP_NONE;
}

remat_val remat_unary_at(remat_fn *f, remat_op op, remat_val a, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    if (!is_unary(op))
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "unary op: '%s' is not a unary elementwise op",
                           remat_op_name(op));
    const remat_node *na = rmi_fn_node(f, a);
    remat_node n = rmi_proto(op, (remat_dtype)na->dtype, &na->shape, loc);
    return rmi_fn_add_node(f, &n, 1, &a);
}

/* NumPy broadcasting of two shapes; 0 if incompatible. */
static int broadcast_shapes(const remat_shape *a, const remat_shape *b, remat_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        out->dims[i] = da == 1 ? db : da;
    }
    return 1;
}

remat_val remat_binary_at(remat_fn *f, remat_op op, remat_val a, remat_val b, remat_loc loc)
{
    remat_val ab[2] = {a, b};
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 2, ab))
        return REMAT_NONE;
    const char *name = remat_op_name(op);
    if (!remat_op_is_binary(op))
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "binary op: '%s' is not a binary elementwise op", name);
    char sa[96], sb[96];
    const remat_node *na = rmi_fn_node(f, a), *nb = rmi_fn_node(f, b);
    if (na->dtype != nb->dtype)
        return rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "%s: dtypes differ: %s and %s", name,
                           rmi_fn_fmt_val(f, a, sa, sizeof sa), rmi_fn_fmt_val(f, b, sb, sizeof sb));
    remat_shape s;
    if (!broadcast_shapes(&na->shape, &nb->shape, &s))
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "%s: shapes %s and %s do not broadcast", name,
                           rmi_fn_fmt_val(f, a, sa, sizeof sa), rmi_fn_fmt_val(f, b, sb, sizeof sb));
    remat_dtype dt = (remat_dtype)na->dtype;
    /* read both shapes before adding nodes: adding may move the node array */
    int widen_a = !remat_shape_equal(&na->shape, &s), widen_b = !remat_shape_equal(&nb->shape, &s);
    if (widen_a)
        a = remat_broadcast_to_at(f, a, s.rank, s.dims, loc);
    if (widen_b)
        b = remat_broadcast_to_at(f, b, s.rank, s.dims, loc);
    remat_node n = rmi_proto(op, dt, &s, loc);
    ab[0] = a;
    ab[1] = b;
    return rmi_fn_add_node(f, &n, 2, ab);
}

remat_val remat_binary_scalar_at(remat_fn *f, remat_op op, remat_val a, double s, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    remat_val c = remat_const_fill_at(f, (remat_dtype)rmi_fn_node(f, a)->dtype, 0, NULL, s, loc);
    return remat_binary_at(f, op, a, c, loc);
}

remat_val remat_integer_pow_at(remat_fn *f, remat_val a, int k, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    remat_node n = rmi_proto(REMAT_OP_INTEGER_POW, (remat_dtype)na->dtype, &na->shape, loc);
    n.p.int_exponent = k;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_pow_at(remat_fn *f, remat_val a, double p, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    if (!isfinite(p))
        return rmi_fn_fail(f, REMAT_ERR_VALUE, loc, "pow: exponent %g is not finite", p);
    const remat_node *na = rmi_fn_node(f, a);
    remat_node n = rmi_proto(REMAT_OP_POW, (remat_dtype)na->dtype, &na->shape, loc);
    n.p.exponent = p;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_select_at(remat_fn *f, remat_val pred, remat_val on_true, remat_val on_false, remat_loc loc)
{
    remat_val v[3] = {pred, on_true, on_false};
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 3, v))
        return REMAT_NONE;
    char s0[96], s1[96], s2[96];
    const remat_node *n0 = rmi_fn_node(f, pred), *n1 = rmi_fn_node(f, on_true),
                     *n2 = rmi_fn_node(f, on_false);
    if (n0->dtype != n1->dtype || n1->dtype != n2->dtype)
        return rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "select: dtypes differ: %s, %s, %s",
                           rmi_fn_fmt_val(f, pred, s0, sizeof s0), rmi_fn_fmt_val(f, on_true, s1, sizeof s1),
                           rmi_fn_fmt_val(f, on_false, s2, sizeof s2));
    remat_shape s, s12;
    if (!broadcast_shapes(&n1->shape, &n2->shape, &s12) || !broadcast_shapes(&n0->shape, &s12, &s))
        return rmi_fn_fail(f, REMAT_ERR_SHAPE, loc, "select: shapes %s, %s, %s do not broadcast",
                           rmi_fn_fmt_val(f, pred, s0, sizeof s0), rmi_fn_fmt_val(f, on_true, s1, sizeof s1),
                           rmi_fn_fmt_val(f, on_false, s2, sizeof s2));
    remat_dtype dt = (remat_dtype)n0->dtype;
    for (int i = 0; i < 3; i++)
        if (!remat_shape_equal(&rmi_fn_node(f, v[i])->shape, &s))
            v[i] = remat_broadcast_to_at(f, v[i], s.rank, s.dims, loc);
    remat_node n = rmi_proto(REMAT_OP_SELECT, dt, &s, loc);
    return rmi_fn_add_node(f, &n, 3, v);
}

remat_val remat_convert_at(remat_fn *f, remat_val a, remat_dtype dt, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    if (!check_dtype(f, "convert_element_type", dt, loc))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    if (na->dtype == dt)
        return a;
    remat_node n = rmi_proto(REMAT_OP_CONVERT, dt, &na->shape, loc);
    return rmi_fn_add_node(f, &n, 1, &a);
}
