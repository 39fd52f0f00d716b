/*
 * test_hostile_null.c — NULL handed to every public function (the headers
 * of include/remat): each answers with the value its header documents and a
 * remat_last_error() that names what was NULL (status.h's rule; a _free(NULL)
 * and a NULL that means something, like a NULL group of one rank, are
 * silent).
 *
 * The table below must name every declared function: tests/check_null_sweep.sh
 * (test null_sweep_complete) fails naming any function of the headers that
 * neither null_table nor null_exempt lists. Each row runs in a child
 * process, so a crash is reported as that row's failure, not the file's.
 */
#include "test_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "remat/remat.h"

/* One call with NULL: its result as text (so one table holds every return
 * type), compared with the documented answer; remat_last_error() must name
 * what was NULL. */
typedef struct {
    const char *call; /* the function declared in include/remat (the macro's _at) */
    const char *want; /* the documented value, printed */
    void (*run)(char *got, size_t len);
    int silent;       /* _free(NULL) and the like: a no-op, no message */
} null_row;

static remat_fn *F0;                 /* NULL, typed */
static const remat_mechanism *M0;    /* NULL, typed */
static const remat_dataset *D0;      /* NULL, typed */
static int64_t d4[1] = {4};

#define INT_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%lld", (long long)(expr)); }
#define DBL_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%g", (double)(expr)); }
#define PTR_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%s", (expr) ? "ptr" : "NULL"); }
#define VOID_CASE(name, stmt)                                                                                   \
    static void name(char *got, size_t len) { stmt; snprintf(got, len, "-"); }

/* v built on a live function f (a NULL array, not a NULL function); the
 * function's message is the one remat_last_error() holds */
static remat_fn *live_fn(void)
{
    remat_fn *f = remat_fn_new("live");
    if (!f)
        abort();
    return f;
}
#define with_fn(expr) __extension__({ remat_fn *f = live_fn(); remat_val v_ = (expr); remat_fn_free(f); v_; })
#define with_fn_st(expr) __extension__({ remat_fn *f = live_fn(); remat_status s_ = (expr); remat_fn_free(f); s_; })

/* graph.h */
INT_CASE(g_arg, remat_arg(F0, "x", REMAT_F64, 1, d4))
INT_CASE(g_fill, remat_const_fill(F0, REMAT_F64, 1, d4, 1.0))
INT_CASE(g_data, remat_const_data(F0, REMAT_F64, 1, d4, d4))
INT_CASE(g_unary, remat_exp(F0, 0))
INT_CASE(g_binary, remat_add(F0, 0, 0))
INT_CASE(g_bscalar, remat_add_scalar(F0, 0, 1.0))
INT_CASE(g_ipow, remat_integer_pow(F0, 0, 2))
INT_CASE(g_pow, remat_pow(F0, 0, 2.0))
INT_CASE(g_select, remat_select(F0, 0, 0, 0))
INT_CASE(g_convert, remat_convert(F0, 0, REMAT_F32))
INT_CASE(g_sum, remat_sum_all(F0, 0))
INT_CASE(g_rmax, remat_max_all(F0, 0))
INT_CASE(g_bid, remat_broadcast_in_dim(F0, 0, 1, d4, (const int[]){0}))
INT_CASE(g_bto, remat_broadcast_to(F0, 0, 1, d4))
INT_CASE(g_reshape, remat_reshape(F0, 0, 1, d4))
INT_CASE(g_transpose, remat_transpose(F0, 0, (const int[]){0}))
INT_CASE(g_slice, remat_slice(F0, 0, d4, d4, NULL))
INT_CASE(g_index, remat_index(F0, 0, 0))
INT_CASE(g_pad, remat_pad(F0, 0, d4, d4, NULL))
INT_CASE(g_concat, remat_concatenate(F0, 1, (const remat_val[]){0}, 0))
INT_CASE(g_dot, remat_dot_general(F0, 0, 0, &(remat_dot_dims){0}))
INT_CASE(g_matmul, remat_matmul(F0, 0, 0))
INT_CASE(g_name, remat_name(F0, 0, "n"))
INT_CASE(g_stop, remat_stop_gradient(F0, 0))
INT_CASE(g_call, remat_call(F0, NULL, 0, NULL, NULL))
INT_CASE(g_call1, remat_call1(F0, NULL, 0, NULL))
INT_CASE(g_custom, remat_custom(F0, NULL, 0, NULL, REMAT_F64, 0, NULL))
INT_CASE(g_output, remat_fn_output(F0, 0))
INT_CASE(g_status, remat_fn_status(F0))
PTR_CASE(g_fn_name, remat_fn_name(F0))
PTR_CASE(g_error, remat_fn_error(F0))
INT_CASE(g_nargs, remat_fn_num_args(F0))
INT_CASE(g_nouts, remat_fn_num_outputs(F0))
INT_CASE(g_nnodes, remat_fn_num_nodes(F0))
INT_CASE(g_fnarg, remat_fn_arg(F0, 0))
INT_CASE(g_fnout, remat_fn_out(F0, 0))
PTR_CASE(g_argname, remat_fn_arg_name(F0, 0))
INT_CASE(g_vdtype, remat_val_dtype(F0, 0))
INT_CASE(g_vshape, remat_val_shape(F0, 0).rank)
INT_CASE(g_vop, remat_val_op(F0, 0) == REMAT_OP_COUNT)
VOID_CASE(g_free, remat_fn_free(F0))
PTR_CASE(g_ref, remat_fn_ref(F0))
VOID_CASE(g_clear, remat_fn_clear_error(F0))
VOID_CASE(g_print, remat_fn_print(F0, stdout))
/* ad.h */
static remat_fn *out_fn;
INT_CASE(a_vjp, remat_vjp(F0, 0, NULL, &out_fn))
INT_CASE(a_grad, remat_grad(F0, 0, NULL, &out_fn))
INT_CASE(a_vgrad, remat_value_and_grad(F0, 0, NULL, &out_fn))
PTR_CASE(a_checkpoint, remat_checkpoint(F0, NULL))
INT_CASE(a_residuals, remat_fn_residuals(F0, &(remat_residual_list *){0}))
INT_CASE(a_saved, remat_saved_residuals(F0, 0, NULL, &(remat_residual_list *){0}))
INT_CASE(a_rcount, remat_residual_list_count(NULL))
PTR_CASE(a_rget, remat_residual_list_get(NULL, 0))
INT_CASE(a_rbytes, remat_residual_list_bytes(NULL))
VOID_CASE(a_rfree, remat_residual_list_free(NULL))
VOID_CASE(a_pfree, remat_policy_free(NULL))
PTR_CASE(a_plabel, remat_policy_label(NULL))
PTR_CASE(a_pref, remat_policy_ref(NULL))
/* mechanism.h */
INT_CASE(m_parse_s, remat_mechanism_parse_string(NULL, NULL, &(remat_mechanism *){0}))
INT_CASE(m_parse_f, remat_mechanism_parse_file(NULL, &(remat_mechanism *){0}))
INT_CASE(m_parse_out, remat_mechanism_parse_string("species A\n", NULL, NULL))
VOID_CASE(m_free, remat_mechanism_free(NULL))
/* gas.h */
INT_CASE(g_read, remat_gas_read(NULL, NULL, &(remat_mechanism *){0}))
INT_CASE(g_read_out, remat_gas_read("x.yaml", NULL, NULL))
INT_CASE(g_sniff, remat_gas_sniff(NULL))
INT_CASE(g_sniff_file, remat_gas_sniff_file(NULL))
INT_CASE(g_count, remat_gas_species_count(M0))
INT_CASE(g_state, remat_gas_state(M0, 1000, "H2=1", (double[2]){0}))
INT_CASE(g_jac, remat_gas_jacobian(F0, M0, 0, 0, &(remat_val){0}, &(remat_val){0}))
PTR_CASE(m_source, remat_mechanism_source(M0))
PTR_CASE(m_indep, remat_mechanism_indep_name(M0))
INT_CASE(m_nspecies, remat_mechanism_species_count(M0))
PTR_CASE(m_sname, remat_mechanism_species_name(M0, 0))
INT_CASE(m_sfind, remat_mechanism_species_find(M0, "A"))
INT_CASE(m_nparams, remat_mechanism_param_count(M0))
PTR_CASE(m_pname, remat_mechanism_param_name(M0, 0))
DBL_CASE(m_pvalue, remat_mechanism_param_value(M0, 0))
DBL_CASE(m_plo, remat_mechanism_param_lo(M0, 0))
DBL_CASE(m_phi, remat_mechanism_param_hi(M0, 0))
INT_CASE(m_pfind, remat_mechanism_param_find(M0, "k"))
VOID_CASE(m_pvalues, remat_mechanism_param_values(M0, (double[4]){0}))
INT_CASE(m_nconsts, remat_mechanism_const_count(M0))
INT_CASE(m_nconds, remat_mechanism_cond_count(M0))
INT_CASE(m_nnets, remat_mechanism_net_count(M0))
PTR_CASE(m_netname, remat_mechanism_net_name(M0, 0))
INT_CASE(m_paramnet, remat_mechanism_param_net(M0, 0))
INT_CASE(m_nwarn, remat_mechanism_warning_count(M0))
PTR_CASE(m_warn, remat_mechanism_warning(M0, 0))
PTR_CASE(m_condname, remat_mechanism_cond_name(M0, 0))
DBL_CASE(m_condvalue, remat_mechanism_cond_value(M0, 0))
INT_CASE(m_condfind, remat_mechanism_cond_find(M0, "T"))
INT_CASE(m_ninputs, remat_mechanism_input_count(M0))
PTR_CASE(m_cname, remat_mechanism_const_name(M0, 0))
DBL_CASE(m_cvalue, remat_mechanism_const_value(M0, 0))
INT_CASE(m_nlets, remat_mechanism_let_count(M0))
PTR_CASE(m_lname, remat_mechanism_let_name(M0, 0))
PTR_CASE(m_lexpr, remat_mechanism_let_expr(M0, 0))
PTR_CASE(m_rhs, remat_mechanism_rhs(M0, 0))
INT_CASE(m_nreact, remat_mechanism_reaction_count(M0))
PTR_CASE(m_rate, remat_mechanism_reaction_rate(M0, 0))
DBL_CASE(m_stoich, remat_mechanism_reaction_stoich(M0, 0, 0))
INT_CASE(m_rline, remat_mechanism_reaction_line(M0, 0))
INT_CASE(m_knots, remat_mechanism_control_knots(M0, NULL, 0))
INT_CASE(m_eval, remat_mechanism_eval_rhs(M0, 0.0, (double[1]){0}, NULL, (double[1]){0}))
/* dataset.h */
INT_CASE(d_read, remat_dataset_read(NULL, NULL, &(remat_dataset *){0}))
VOID_CASE(d_free, remat_dataset_free(NULL))
INT_CASE(d_read_all, remat_dataset_read_all(NULL, NULL, &(remat_dataset **){0}, &(int){0}))
VOID_CASE(d_free_all, remat_dataset_free_all(NULL, 3))
DBL_CASE(d_delay_sigma, remat_dataset_delay_sigma(D0))
PTR_CASE(d_path, remat_dataset_path(D0))
PTR_CASE(d_indep, remat_dataset_indep_name(D0))
INT_CASE(d_rows, remat_dataset_rows(D0))
INT_CASE(d_line, remat_dataset_line(D0, 0))
INT_CASE(d_colno, remat_dataset_column(D0, 0, 0))
INT_CASE(d_nspecies, remat_dataset_species_count(D0))
PTR_CASE(d_times, remat_dataset_times(D0))
PTR_CASE(d_row, remat_dataset_row(D0, 0))
DBL_CASE(d_value, remat_dataset_value(D0, 0, 0))
INT_CASE(d_measured, remat_dataset_is_measured(D0, 0, 0))
INT_CASE(d_column, remat_dataset_has_column(D0, 0))
INT_CASE(d_initial, remat_dataset_initial_complete(D0))
DBL_CASE(d_cond, remat_dataset_cond(D0, 0))
DBL_CASE(d_pressure, remat_dataset_pressure(D0))
DBL_CASE(d_init_value, remat_dataset_initial(D0, 0))
INT_CASE(d_setting_line, remat_dataset_setting_line(D0, 0, 0))
/* tensor.h */
INT_CASE(t_numel, remat_shape_numel(NULL))
INT_CASE(t_equal, remat_shape_equal(NULL, NULL))
INT_CASE(t_bytes, remat_tensor_bytes(NULL))
PTR_CASE(t_format, strcmp(remat_shape_format(REMAT_F32, NULL, (char[16]){0}, 16), "f32[?]") == 0 ? "" : NULL)

INT_CASE(g_new, remat_fn_new(NULL) != NULL)
INT_CASE(g_solve, remat_linear_solve(F0, 0, 0))
INT_CASE(g_sum_axes, remat_sum(F0, 0, 1, NULL))
/* the operand arrays NULL on a live function */
INT_CASE(g_concat_vals, with_fn(remat_concatenate(f, 1, NULL, 0)))
INT_CASE(g_arg_dims, with_fn(remat_arg(f, "x", REMAT_F64, 1, NULL)))
/* ad.h */
INT_CASE(a_jvp, remat_jvp(F0, 0, NULL, &out_fn))
INT_CASE(a_jacfwd, remat_jacfwd(F0, 0, NULL, &out_fn))
INT_CASE(a_hvp, remat_hvp(F0, 0, NULL, &out_fn))
INT_CASE(a_grad_out, with_fn_st(remat_grad(f, 0, NULL, NULL)))
PTR_CASE(a_pnew, remat_policy_new("p", NULL, NULL, NULL))
PTR_CASE(a_ponly, remat_policy_save_only_these_names(1, NULL))
PTR_CASE(a_pbut, remat_policy_save_any_names_but_these(1, NULL))
PTR_CASE(a_pexcept, remat_policy_save_anything_except_these_names(1, NULL))
PTR_CASE(a_pnamed, remat_policy_named(NULL))
PTR_CASE(a_pboth, remat_policy_save_from_both(NULL, NULL))
INT_CASE(a_pallows, remat_policy_allows(remat_everything_saveable, NULL))
INT_CASE(a_pdecide, remat_policy_decide(remat_everything_saveable, NULL))
PTR_CASE(a_poffnames, remat_policy_save_and_offload_only_these_names(0, NULL, 1, NULL, "device", "pinned_host"))
PTR_CASE(a_poffdots, remat_policy_offload_dot_with_no_batch_dims(NULL, "pinned_host"))
PTR_CASE(a_rformat, remat_residual_format(NULL, (char[64]){0}, 64))
VOID_CASE(a_rprint, remat_residual_list_print(NULL, stdout))
/* exec.h */
static remat_backend *BE0;
static remat_program *P0;
static remat_program *out_prog;
PTR_CASE(e_bname_null, remat_backend_from_name(NULL))
INT_CASE(e_benv, remat_backend_from_env(NULL))
PTR_CASE(e_bname, remat_backend_name(BE0))
PTR_CASE(e_balloc, remat_backend_alloc(BE0, 8))
VOID_CASE(e_bfree, remat_backend_free(BE0, NULL))
INT_CASE(e_bup, remat_backend_upload(BE0, (char[8]){0}, (char[8]){0}, 8))
INT_CASE(e_bdown, remat_backend_download(BE0, (char[8]){0}, (char[8]){0}, 8))
INT_CASE(e_compile, remat_compile(F0, remat_backend_cpu(), &out_prog))
INT_CASE(e_compile_env, remat_compile_env(F0, &out_prog))
INT_CASE(e_compile_opts, remat_compile_opts(F0, remat_backend_cpu(), NULL, &out_prog))
INT_CASE(e_copts_env, remat_compile_options_from_env(NULL))
VOID_CASE(e_pfree, remat_program_free(P0))
INT_CASE(e_pnin, remat_program_num_inputs(P0))
INT_CASE(e_pnout, remat_program_num_outputs(P0))
INT_CASE(e_pin, remat_program_input_desc(P0, 0).shape.rank)
INT_CASE(e_pout, remat_program_output_desc(P0, 0).shape.rank)
VOID_CASE(e_pplan, remat_program_plan(P0, &(remat_memory_plan){0}))
INT_CASE(e_run, remat_run(P0, 0, NULL, 0, NULL, NULL))
INT_CASE(e_run_device, remat_run_device(P0, 0, NULL, 0, NULL, NULL))
/* schedule.h */
static remat_schedule *S0;
static remat_schedule_spec spec_store_all = {.kind = REMAT_SCHED_STORE_ALL};
INT_CASE(s_parse, remat_schedule_parse(NULL, &(remat_schedule_spec){0}))
INT_CASE(s_parse_out, remat_schedule_parse("store-all", NULL))
VOID_CASE(s_format, remat_schedule_format(NULL, (char[32]){0}, 32))
INT_CASE(s_new, remat_schedule_new(NULL, 4, &(remat_schedule *){0}))
INT_CASE(s_new_out, remat_schedule_new(&spec_store_all, 4, NULL))
VOID_CASE(s_setlen, remat_schedule_set_length(S0, 4))
static remat_action act;
static remat_action_run run;
INT_CASE(s_next, (remat_schedule_next(S0, &act), act.kind))
INT_CASE(s_next_run, (remat_schedule_next_run(S0, &run), run.n == 1 ? (int)run.pat[0].kind : -1))
INT_CASE(s_run_at, remat_action_run_at(NULL, 0, 0).kind)
INT_CASE(s_maxslots, remat_schedule_max_slots(S0))
VOID_CASE(s_free, remat_schedule_free(S0))
INT_CASE(s_predict, remat_schedule_predict(NULL, 4, &(remat_schedule_cost){0}))
INT_CASE(s_budget, remat_schedule_for_budget(1000, 4, 8, 8, NULL))
INT_CASE(s_tiers, remat_schedule_for_tiers(1000, 1000, 4, 8, 8, 1, 1, NULL))
/* scan.h, loop.h */
INT_CASE(l_scan, remat_scan(F0, NULL, 4, 0, NULL, 0, NULL, 0, NULL, NULL, NULL, NULL))
INT_CASE(l_while, remat_while(F0, NULL, NULL, 0, 0, NULL, 0, NULL, NULL, NULL, NULL))
/* problems.h */
static remat_problem *PR0;
INT_CASE(p_new, remat_problem_new(NULL, 4, &(remat_problem *){0}))
INT_CASE(p_from_mech, remat_problem_from_mechanism(M0, NULL, NULL, &(remat_problem *){0}))
VOID_CASE(p_free, remat_problem_free(PR0))
PTR_CASE(p_name, remat_problem_name(PR0))
PTR_CASE(p_desc, remat_problem_description(PR0))
INT_CASE(p_steps, remat_problem_steps(PR0))
INT_CASE(p_build, remat_problem_build(PR0, NULL, &out_fn))
INT_CASE(p_ninputs, remat_problem_num_inputs(PR0))
PTR_CASE(p_inputs, remat_problem_inputs(PR0))
INT_CASE(p_ngrads, remat_problem_num_grads(PR0))
PTR_CASE(p_gname, remat_problem_grad_name(PR0, 0))
/* kinetics.h */
INT_CASE(k_rhs, remat_kinetics_rhs(F0, M0, 0, 0, 0, &(remat_val){0}))
PTR_CASE(k_rhs_fn, remat_kinetics_rhs_fn(M0, REMAT_F64))
INT_CASE(k_uses_indep, remat_kinetics_uses_indep(M0))
/* ode.h */
static const remat_ode_options ode_opt = {.method = REMAT_ODE_EULER, .n_times = 1, .times = (const double[]){1}, .steps = 4};
INT_CASE(o_count, remat_ode_count_steps(NULL, NULL, &(int64_t){0}))
INT_CASE(o_integrate, remat_ode_integrate(F0, M0, &ode_opt, 0, 0, &(remat_val){0}))
INT_CASE(o_integrate_stats, remat_ode_integrate_stats(F0, M0, &ode_opt, 0, 0, &(remat_val){0}, NULL))
INT_CASE(o_integrate_times, remat_ode_integrate_times(F0, M0, &ode_opt, 0, 0, 0, &(remat_val){0}, NULL))
INT_CASE(o_integrate_rows, remat_ode_integrate_rows(F0, M0, &ode_opt, 0, 0, 0, 0, &(remat_val){0}))
INT_CASE(o_step, remat_ode_step(F0, M0, REMAT_ODE_EULER, 0, 0, 0, 0, &(remat_val){0}))
PTR_CASE(o_step_body, remat_ode_step_body(M0, REMAT_ODE_EULER, REMAT_F64))
INT_CASE(o_parse, remat_ode_method_parse(NULL, &(remat_ode_method){0}))
INT_CASE(o_adjoint_parse, remat_ode_adjoint_parse(NULL, &(remat_ode_adjoint){0}))
INT_CASE(o_stats_check, remat_ode_stats_check(NULL, (double[REMAT_ODE_STATS]){0}))
INT_CASE(o_run_once, remat_ode_run_once(M0, &ode_opt, NULL, NULL, NULL, NULL, NULL, NULL))
INT_CASE(o_bdf_run, remat_ode_bdf_run(M0, &ode_opt, NULL, NULL, NULL, NULL))
/* optim.h */
static remat_adam *AD0;
static remat_sgd *SG0;
INT_CASE(op_adam_new, remat_adam_new(2, NULL, NULL))
VOID_CASE(op_adam_free, remat_adam_free(AD0))
INT_CASE(op_adam_count, remat_adam_count(AD0))
PTR_CASE(op_adam_mu, remat_adam_mu(AD0))
PTR_CASE(op_adam_nu, remat_adam_nu(AD0))
VOID_CASE(op_adam_reset, remat_adam_reset(AD0))
INT_CASE(op_adam_lr, remat_adam_set_lr(AD0, 0.1))
INT_CASE(op_adam_update, remat_adam_update(AD0, (double[2]){0}, (double[2]){0}))
INT_CASE(op_adam_update32, remat_adam_update_f32(AD0, (float[2]){0}, (float[2]){0}))
INT_CASE(op_sgd_new, remat_sgd_new(2, NULL, NULL))
VOID_CASE(op_sgd_free, remat_sgd_free(SG0))
INT_CASE(op_sgd_count, remat_sgd_count(SG0))
PTR_CASE(op_sgd_trace, remat_sgd_trace(SG0))
VOID_CASE(op_sgd_reset, remat_sgd_reset(SG0))
INT_CASE(op_sgd_update, remat_sgd_update(SG0, (double[2]){0}, (double[2]){0}))
INT_CASE(op_sgd_update32, remat_sgd_update_f32(SG0, (float[2]){0}, (float[2]){0}))
/* nn_data.h */
static remat_labeled *LB0;
static remat_batcher *BT0;
INT_CASE(nd_load, remat_labeled_load(NULL, NULL, &(remat_labeled *){0}))
VOID_CASE(nd_free, remat_labeled_free(LB0))
INT_CASE(nd_rows, remat_labeled_rows(LB0))
INT_CASE(nd_features, remat_labeled_features(LB0))
INT_CASE(nd_classes, remat_labeled_classes(LB0))
PTR_CASE(nd_x, remat_labeled_x(LB0))
PTR_CASE(nd_y, remat_labeled_y(LB0))
PTR_CASE(nd_origin, remat_labeled_origin(LB0))
PTR_CASE(nd_fname, remat_labeled_feature_name(LB0, 0))
PTR_CASE(nd_lname, remat_labeled_label_name(LB0))
INT_CASE(nd_scale, remat_labeled_scale(LB0, 2.0))
INT_CASE(nd_standardize, remat_labeled_standardize(LB0, NULL, NULL, NULL))
INT_CASE(nd_split, remat_labeled_split(LB0, 0.5, 1, &(remat_labeled *){0}, &(remat_labeled *){0}))
INT_CASE(nd_bnew, remat_batcher_new(LB0, NULL, &(remat_batcher *){0}))
VOID_CASE(nd_bfree, remat_batcher_free(BT0))
INT_CASE(nd_batches, remat_batcher_batches(BT0))
PTR_CASE(nd_order, remat_batcher_order(BT0, 0))
INT_CASE(nd_fill, remat_batcher_fill(BT0, 0, 0, NULL, NULL, NULL, &(int64_t){0}))
INT_CASE(nd_sm_next, remat_splitmix64_next(NULL))
INT_CASE(nd_sm_below, remat_splitmix64_below(NULL, 4))
VOID_CASE(nd_sm_shuffle, remat_splitmix64_shuffle(NULL, 4, (int64_t[4]){0}))
/* nn.h */
static remat_nn_module *NM0;
static remat_nn_params *NP0;
INT_CASE(n_activation_parse, remat_nn_activation_parse(NULL, &(remat_nn_activation){0}))
PTR_CASE(n_sequential, remat_nn_sequential(1, NULL))
PTR_CASE(n_block, remat_nn_block("B", NM0))
PTR_CASE(n_residual, remat_nn_residual(NM0))
PTR_CASE(n_remat, remat_nn_remat(NM0, NULL))
PTR_CASE(n_scan, remat_nn_scan(NM0, 2, NULL))
PTR_CASE(n_mref, remat_nn_module_ref(NM0))
VOID_CASE(n_mfree, remat_nn_module_free(NM0))
PTR_CASE(n_mclass, remat_nn_module_class(NM0))
INT_CASE(n_init, remat_nn_init(NM0, remat_prng_key_from_seed(0), REMAT_F32, 1, d4, &(remat_nn_params *){0}))
INT_CASE(n_apply, remat_nn_apply(NM0, F0, 0, NULL, &(remat_val){0}))
INT_CASE(n_pargs, remat_nn_params_args(F0, NP0, (remat_val[4]){0}))
INT_CASE(n_pcopy, remat_nn_params_copy(NP0, &(remat_nn_params *){0}))
VOID_CASE(n_pfree, remat_nn_params_free(NP0))
INT_CASE(n_pcount, remat_nn_params_count(NP0))
PTR_CASE(n_pname, remat_nn_params_name(NP0, 0))
INT_CASE(n_pfind, remat_nn_params_find(NP0, "x"))
INT_CASE(n_ptensor, remat_nn_params_tensor(NP0, 0).shape.rank)
INT_CASE(n_pnumel, remat_nn_params_numel(NP0))
INT_CASE(n_pbytes, remat_nn_params_bytes(NP0))
INT_CASE(n_pshape, remat_nn_params_out_shape(NP0).rank)
INT_CASE(n_mse, remat_nn_mse(F0, 0, 0))
INT_CASE(n_sce, remat_nn_softmax_cross_entropy(F0, 0, 0))
/* nn_train.h */
static remat_nn_trainer *NT0;
INT_CASE(nt_loss_fn, remat_nn_loss_fn(NM0, NP0, REMAT_NN_LOSS_MSE, 1, 1, 1, &out_fn))
INT_CASE(nt_new, remat_nn_trainer_new(NM0, NP0, 1, 1, NULL, &(remat_nn_trainer *){0}))
VOID_CASE(nt_free, remat_nn_trainer_free(NT0))
INT_CASE(nt_step, remat_nn_trainer_step(NT0, 1, (float[1]){0}, (float[1]){0}, NULL))
INT_CASE(nt_predict, remat_nn_trainer_predict(NT0, 1, (float[1]){0}, (float[1]){0}))
PTR_CASE(nt_stats, remat_nn_trainer_last_stats(NT0))
VOID_CASE(nt_plan, remat_nn_trainer_plan(NT0, &(remat_memory_plan){0}))
INT_CASE(np_save, remat_nn_params_save(NULL, NULL))
INT_CASE(np_load, remat_nn_params_load(NULL, NULL))
INT_CASE(nt_budget, remat_nn_budget_choose(1, NULL, NULL, 1, 1, NULL, 1, NULL, NULL, NULL))
/* fit.h */
static remat_fit *FT0;
INT_CASE(f_new, remat_fit_new(M0, 0, NULL, NULL, &(remat_fit *){0}))
INT_CASE(f_run_once, remat_fit_run_once(M0, 0, NULL, NULL, &(remat_fit_result){0}))
VOID_CASE(f_free, remat_fit_free(FT0))
INT_CASE(f_run, remat_fit_run(FT0, &(remat_fit_result){0}))
VOID_CASE(f_result_clear, remat_fit_result_clear(NULL))
INT_CASE(f_objective, remat_fit_objective(FT0, NULL, &(double){0}))
INT_CASE(f_rcount, remat_fit_residual_count(FT0))
INT_CASE(f_delay, remat_fit_delay(FT0, 0, NULL, &(double){0}))
INT_CASE(f_delays, remat_fit_delays(FT0, NULL, NULL))
DBL_CASE(f_pstep, remat_fit_predict_step(FT0))
INT_CASE(f_pbuilds, remat_fit_predict_builds(FT0))
INT_CASE(f_residuals, remat_fit_residuals(FT0, NULL, NULL))
INT_CASE(f_jacobian, remat_fit_jacobian_at(FT0, NULL, NULL))
INT_CASE(f_jmode, remat_fit_jacobian_mode(FT0))
INT_CASE(f_jparse, remat_fit_jacobian_parse(NULL, &(remat_fit_jacobian){0}))
INT_CASE(f_oparse, remat_fit_optimizer_parse(NULL, &(remat_fit_optimizer){0}))
PTR_CASE(f_initial, remat_fit_initial_state(FT0, 0))
INT_CASE(f_predict, remat_fit_predict(FT0, 0, NULL, 0, NULL, NULL))
INT_CASE(f_istats, remat_fit_integration_stats(FT0, NULL, (double[REMAT_ODE_STATS]){0}))
VOID_CASE(f_schedule, remat_fit_schedule(FT0, &(remat_schedule_spec){0}))
INT_CASE(f_statistics, remat_fit_statistics(FT0, NULL, &(remat_fit_stats){0}))
VOID_CASE(f_stats_clear, remat_fit_stats_clear(NULL))
/* pfr.h */
static remat_pfr *PF0;
static remat_pfr_ensemble *EN0;
INT_CASE(r_new, remat_pfr_new(M0, NULL, &(remat_pfr *){0}))
VOID_CASE(r_free, remat_pfr_free(PF0))
PTR_CASE(r_mech, remat_pfr_mechanism(PF0))
INT_CASE(r_steps, remat_pfr_steps(PF0))
DBL_CASE(r_step_size, remat_pfr_step_size(PF0))
INT_CASE(r_outlet, remat_pfr_outlet(PF0, NULL, (double[4]){0}))
INT_CASE(r_objective, remat_pfr_objective(PF0, NULL, &(double){0}, NULL))
INT_CASE(r_profile, remat_pfr_profile(PF0, NULL, NULL, NULL))
INT_CASE(r_istats, remat_pfr_integration_stats(PF0, NULL, (double[REMAT_ODE_STATS]){0}))
INT_CASE(r_adam, remat_pfr_adam(PF0, NULL, 1, NULL, NULL, NULL, NULL))
INT_CASE(r_minimize, remat_pfr_minimize(PF0, NULL, NULL, NULL))
INT_CASE(r_fixed_steps, remat_pfr_fixed_steps(M0, NULL, NULL, NULL, NULL))
PTR_CASE(r_role, remat_pfr_species_role(M0, 0))
INT_CASE(r_enew, remat_pfr_ensemble_new(M0, NULL, 1, 0, NULL, NULL, &(remat_pfr_ensemble *){0}))
VOID_CASE(r_efree, remat_pfr_ensemble_free(EN0))
INT_CASE(r_elanes, remat_pfr_ensemble_lanes(EN0))
INT_CASE(r_eneg, remat_pfr_ensemble_negative(EN0, 1, (double[4]){0}, &(int64_t){0}, &(int){0}))
INT_CASE(r_neg, remat_pfr_negative(PF0, 1, (double[4]){0}, &(int64_t){0}, &(int){0}))
INT_CASE(r_negs, remat_pfr_negative_states(M0, (double[4]){0}, 0, 0, 1, (double[4]){0}, &(int64_t){0}, &(int){0}))
INT_CASE(r_erun, remat_pfr_ensemble_run(EN0, 1, (double[4]){0}, (double[4]){0}, NULL))
/* random.h */
#define KEY remat_prng_key_from_seed(0)
INT_CASE(x_split, remat_prng_split(KEY, 2, NULL))
INT_CASE(x_split_mode, remat_prng_split_mode(KEY, 2, REMAT_THREEFRY_PARTITIONABLE, NULL))
INT_CASE(x_bits, remat_prng_bits32(KEY, 1, d4, NULL))
INT_CASE(x_bits_mode, remat_prng_bits32_mode(KEY, REMAT_THREEFRY_PARTITIONABLE, 1, d4, NULL))
INT_CASE(x_uniform, remat_prng_uniform_f32(KEY, 1, d4, 0, 1, NULL))
INT_CASE(x_normal, remat_prng_normal_f32(KEY, 1, d4, NULL))
INT_CASE(x_tnormal, remat_prng_truncated_normal_f32(KEY, -2, 2, 1, d4, NULL))
INT_CASE(x_threefry, (remat_threefry2x32(KEY, NULL, (uint32_t[2]){0}), 0))
INT_CASE(x_make_rng, remat_flax_make_rng(KEY, 1, NULL, 0, &(remat_prng_key){0}))
INT_CASE(x_lecun, remat_flax_lecun_normal_f32(KEY, 1, d4, NULL))
INT_CASE(x_fnormal, remat_flax_normal_f32(KEY, 1.0f, 1, d4, NULL))
INT_CASE(x_ones, remat_flax_ones_f32(KEY, 1, d4, NULL))
INT_CASE(x_zeros, remat_flax_zeros_f32(KEY, 1, d4, NULL))
/* dist.h, dist_device.h: a NULL group is a group of one rank */
static remat_dist_device *DD0;
INT_CASE(dd_init, remat_dist_init(NULL, NULL, NULL))
VOID_CASE(dd_finalize, remat_dist_finalize(NULL))
INT_CASE(dd_rank, remat_dist_rank(NULL))
INT_CASE(dd_size, remat_dist_size(NULL))
INT_CASE(dd_is_root, remat_dist_is_root(NULL))
PTR_CASE(dd_kind, remat_dist_kind(NULL))
INT_CASE(dd_split, remat_dist_split(NULL, 2, NULL, NULL))
INT_CASE(dd_gather, remat_dist_gather(NULL, 1, (int[1]){0}, (int64_t[1]){1}, (double[1]){0}, NULL))
INT_CASE(dd_gather_to, remat_dist_gather_to(NULL, 0, 1, (int[1]){0}, (int64_t[1]){1}, (double[1]){0}, NULL))
INT_CASE(dd_sum, remat_dist_sum(NULL, 1, (int[1]){0}, 1, (double[1]){0}, NULL))
INT_CASE(dd_bcast, remat_dist_bcast(NULL, 0, NULL, 8))
INT_CASE(dd_agree, remat_dist_agree(NULL, REMAT_OK))
INT_CASE(dd_agree_msg, remat_dist_agree_msg(NULL, REMAT_OK, NULL, 0))
INT_CASE(dd_dnew, remat_dist_device_new(NULL, BE0, &(remat_dist_device *){0}))
VOID_CASE(dd_dfree, remat_dist_device_free(DD0))
INT_CASE(dd_dsum, remat_dist_device_sum(DD0, 1, (int[1]){0}, 1, (double[1]){0}, (double[1]){0}))
/* mechanism.h, dataset.h, tensor.h */
INT_CASE(m_eformat, remat_expr_format(NULL, (char[16]){0}, 16))
INT_CASE(m_check_rates, remat_mechanism_check_rates(M0, 0.0, (double[1]){0}, NULL))
DBL_CASE(d_sigma, remat_dataset_sigma(D0, 0, 0))
INT_CASE(t_make, remat_shape_make(1, NULL).rank)
INT_CASE(t_f32, remat_tensor_f32(NULL, 1, d4).shape.rank)
INT_CASE(t_f64, remat_tensor_f64(NULL, 1, d4).shape.rank)

_Static_assert(REMAT_ERR_NULL == 1, "null_table spells REMAT_ERR_NULL as 1");
static const null_row null_table[] = {
    {"remat_arg_at", "-1", g_arg, 0},
    {"remat_const_fill_at", "-1", g_fill, 0},
    {"remat_const_data_at", "-1", g_data, 0},
    {"remat_unary_at", "-1", g_unary, 0},
    {"remat_binary_at", "-1", g_binary, 0},
    {"remat_binary_scalar_at", "-1", g_bscalar, 0},
    {"remat_integer_pow_at", "-1", g_ipow, 0},
    {"remat_pow_at", "-1", g_pow, 0},
    {"remat_select_at", "-1", g_select, 0},
    {"remat_convert_at", "-1", g_convert, 0},
    {"remat_sum_at", "-1", g_sum, 0},
    {"remat_reduce_max_at", "-1", g_rmax, 0},
    {"remat_broadcast_in_dim_at", "-1", g_bid, 0},
    {"remat_broadcast_to_at", "-1", g_bto, 0},
    {"remat_reshape_at", "-1", g_reshape, 0},
    {"remat_transpose_at", "-1", g_transpose, 0},
    {"remat_slice_at", "-1", g_slice, 0},
    {"remat_index_at", "-1", g_index, 0},
    {"remat_pad_at", "-1", g_pad, 0},
    {"remat_concatenate_at", "-1", g_concat, 0},
    {"remat_dot_general_at", "-1", g_dot, 0},
    {"remat_matmul_at", "-1", g_matmul, 0},
    {"remat_name_at", "-1", g_name, 0},
    {"remat_stop_gradient_at", "-1", g_stop, 0},
    {"remat_call_at", "1", g_call, 0}, /* statuses: REMAT_ERR_NULL = 1 */
    {"remat_call1_at", "-1", g_call1, 0},
    {"remat_custom_at", "-1", g_custom, 0},
    {"remat_fn_output_at", "-1", g_output, 0},
    {"remat_fn_status", "1", g_status, 1},
    {"remat_fn_name", "ptr", g_fn_name, 0},
    {"remat_fn_error", "ptr", g_error, 1},
    {"remat_fn_num_args", "0", g_nargs, 0},
    {"remat_fn_num_outputs", "0", g_nouts, 0},
    {"remat_fn_num_nodes", "0", g_nnodes, 0},
    {"remat_fn_arg", "-1", g_fnarg, 0},
    {"remat_fn_out", "-1", g_fnout, 0},
    {"remat_fn_arg_name", "NULL", g_argname, 0},
    {"remat_val_dtype", "2", g_vdtype, 0},
    {"remat_val_shape", "-1", g_vshape, 0},
    {"remat_val_op", "1", g_vop, 0},
    {"remat_fn_free", "-", g_free, 1},
    {"remat_fn_ref", "NULL", g_ref, 1},
    {"remat_fn_clear_error", "-", g_clear, 1},
    {"remat_fn_print", "-", g_print, 0},
    {"remat_vjp", "1", a_vjp, 0},
    {"remat_grad", "1", a_grad, 0},
    {"remat_value_and_grad", "1", a_vgrad, 0},
    {"remat_checkpoint", "NULL", a_checkpoint, 0},
    {"remat_fn_residuals", "1", a_residuals, 0},
    {"remat_saved_residuals", "1", a_saved, 0},
    {"remat_residual_list_count", "0", a_rcount, 0},
    {"remat_residual_list_get", "NULL", a_rget, 0},
    {"remat_residual_list_bytes", "0", a_rbytes, 0},
    {"remat_residual_list_free", "-", a_rfree, 1},
    {"remat_policy_free", "-", a_pfree, 1},
    {"remat_policy_label", "ptr", a_plabel, 1},
    {"remat_policy_ref", "NULL", a_pref, 1},
    {"remat_mechanism_parse_string", "1", m_parse_s, 0},
    {"remat_mechanism_parse_file", "1", m_parse_f, 0},
    {"remat_mechanism_parse_string", "1", m_parse_out, 0},
    {"remat_mechanism_free", "-", m_free, 1},
    {"remat_gas_read", "1", g_read, 0},
    {"remat_gas_read", "1", g_read_out, 0},
    {"remat_gas_sniff", "0", g_sniff, 1},
    {"remat_gas_sniff_file", "0", g_sniff_file, 1},
    {"remat_gas_species_count", "0", g_count, 0},
    {"remat_gas_state", "1", g_state, 0},
    {"remat_gas_jacobian", "1", g_jac, 0},
    {"remat_mechanism_source", "NULL", m_source, 0},
    {"remat_mechanism_indep_name", "NULL", m_indep, 0},
    {"remat_mechanism_species_count", "0", m_nspecies, 0},
    {"remat_mechanism_species_name", "NULL", m_sname, 0},
    {"remat_mechanism_species_find", "-1", m_sfind, 0},
    {"remat_mechanism_param_count", "0", m_nparams, 0},
    {"remat_mechanism_param_name", "NULL", m_pname, 0},
    {"remat_mechanism_param_value", "nan", m_pvalue, 0},
    {"remat_mechanism_param_lo", "nan", m_plo, 0},
    {"remat_mechanism_param_hi", "nan", m_phi, 0},
    {"remat_mechanism_param_find", "-1", m_pfind, 0},
    {"remat_mechanism_param_values", "-", m_pvalues, 0},
    {"remat_mechanism_const_count", "0", m_nconsts, 0},
    {"remat_mechanism_cond_count", "0", m_nconds, 0},
    {"remat_mechanism_net_count", "0", m_nnets, 0},
    {"remat_mechanism_net_name", "NULL", m_netname, 0},
    {"remat_mechanism_param_net", "-1", m_paramnet, 0},
    {"remat_mechanism_warning_count", "0", m_nwarn, 0},
    {"remat_mechanism_warning", "NULL", m_warn, 0},
    {"remat_mechanism_cond_name", "NULL", m_condname, 0},
    {"remat_mechanism_cond_value", "nan", m_condvalue, 0},
    {"remat_mechanism_cond_find", "-1", m_condfind, 0},
    {"remat_mechanism_input_count", "0", m_ninputs, 0},
    {"remat_mechanism_const_name", "NULL", m_cname, 0},
    {"remat_mechanism_const_value", "nan", m_cvalue, 0},
    {"remat_mechanism_let_count", "0", m_nlets, 0},
    {"remat_mechanism_let_name", "NULL", m_lname, 0},
    {"remat_mechanism_let_expr", "NULL", m_lexpr, 0},
    {"remat_mechanism_rhs", "NULL", m_rhs, 0},
    {"remat_mechanism_reaction_count", "0", m_nreact, 0},
    {"remat_mechanism_reaction_rate", "NULL", m_rate, 0},
    {"remat_mechanism_reaction_stoich", "nan", m_stoich, 0},
    {"remat_mechanism_reaction_line", "-1", m_rline, 0},
    {"remat_mechanism_control_knots", "0", m_knots, 0},
    {"remat_mechanism_eval_rhs", "1", m_eval, 0},
    {"remat_dataset_read", "1", d_read, 0},
    {"remat_dataset_free", "-", d_free, 1},
    {"remat_dataset_read_all", "1", d_read_all, 0},
    {"remat_dataset_free_all", "-", d_free_all, 1},
    {"remat_dataset_delay_sigma", "nan", d_delay_sigma, 0},
    {"remat_dataset_path", "NULL", d_path, 0},
    {"remat_dataset_indep_name", "NULL", d_indep, 0},
    {"remat_dataset_rows", "0", d_rows, 0},
    {"remat_dataset_line", "0", d_line, 0},
    {"remat_dataset_column", "0", d_colno, 0},
    {"remat_dataset_species_count", "0", d_nspecies, 0},
    {"remat_dataset_times", "NULL", d_times, 0},
    {"remat_dataset_row", "NULL", d_row, 0},
    {"remat_dataset_value", "nan", d_value, 0},
    {"remat_dataset_is_measured", "0", d_measured, 0},
    {"remat_dataset_has_column", "0", d_column, 0},
    {"remat_dataset_initial_complete", "0", d_initial, 0},
    {"remat_dataset_cond", "nan", d_cond, 0},
    {"remat_dataset_pressure", "nan", d_pressure, 0},
    {"remat_dataset_initial", "nan", d_init_value, 0},
    {"remat_dataset_setting_line", "0", d_setting_line, 0},
    {"remat_shape_numel", "-1", t_numel, 1},
    {"remat_shape_equal", "0", t_equal, 1},
    {"remat_tensor_bytes", "0", t_bytes, 1},
    {"remat_shape_format", "ptr", t_format, 1},
    {"remat_fn_new", "1", g_new, 1}, /* NULL name: an unnamed function */
    {"remat_linear_solve_at", "-1", g_solve, 0},
    {"remat_sum_at", "-1", g_sum_axes, 0},
    {"remat_concatenate_at", "-1", g_concat_vals, 0},
    {"remat_arg_at", "-1", g_arg_dims, 0},
    {"remat_jvp", "1", a_jvp, 0},
    {"remat_jacfwd", "1", a_jacfwd, 0},
    {"remat_hvp", "1", a_hvp, 0},
    {"remat_grad", "1", a_grad_out, 0},
    {"remat_policy_new", "NULL", a_pnew, 0},
    {"remat_policy_save_only_these_names", "NULL", a_ponly, 0},
    {"remat_policy_save_any_names_but_these", "NULL", a_pbut, 0},
    {"remat_policy_save_anything_except_these_names", "NULL", a_pexcept, 0},
    {"remat_policy_named", "NULL", a_pnamed, 0},
    {"remat_policy_save_from_both", "NULL", a_pboth, 0},
    {"remat_policy_allows", "0", a_pallows, 0},
    {"remat_policy_decide", "0", a_pdecide, 0},
    {"remat_policy_save_and_offload_only_these_names", "NULL", a_poffnames, 0},
    {"remat_policy_offload_dot_with_no_batch_dims", "NULL", a_poffdots, 0},
    {"remat_residual_format", "ptr", a_rformat, 0},
    {"remat_residual_list_print", "-", a_rprint, 0},
    {"remat_backend_from_name", "ptr", e_bname_null, 1}, /* NULL: the CPU */
    {"remat_backend_from_env", "1", e_benv, 0},
    {"remat_backend_name", "ptr", e_bname, 0}, /* "(null)" */
    {"remat_backend_alloc", "NULL", e_balloc, 0},
    {"remat_backend_free", "-", e_bfree, 1},
    {"remat_backend_upload", "1", e_bup, 0},
    {"remat_backend_download", "1", e_bdown, 0},
    {"remat_compile", "1", e_compile, 0},
    {"remat_compile_env", "1", e_compile_env, 0},
    {"remat_compile_opts", "1", e_compile_opts, 0},
    {"remat_compile_options_from_env", "1", e_copts_env, 0},
    {"remat_program_free", "-", e_pfree, 1},
    {"remat_program_num_inputs", "0", e_pnin, 0},
    {"remat_program_num_outputs", "0", e_pnout, 0},
    {"remat_program_input_desc", "-1", e_pin, 0},
    {"remat_program_output_desc", "-1", e_pout, 0},
    {"remat_program_plan", "-", e_pplan, 0},
    {"remat_run", "1", e_run, 0},
    {"remat_run_device", "1", e_run_device, 0},
    {"remat_schedule_parse", "1", s_parse, 0},
    {"remat_schedule_parse", "1", s_parse_out, 0},
    {"remat_schedule_format", "-", s_format, 0},
    {"remat_schedule_new", "1", s_new, 0},
    {"remat_schedule_new", "1", s_new_out, 0},
    {"remat_schedule_set_length", "-", s_setlen, 0},
    {"remat_schedule_next", "7", s_next, 0}, /* REMAT_ACT_DONE */
    {"remat_schedule_next_run", "7", s_next_run, 0},
    {"remat_action_run_at", "7", s_run_at, 1}, /* inline: answers DONE, cannot record a message */
    {"remat_schedule_max_slots", "-1", s_maxslots, 0},
    {"remat_schedule_free", "-", s_free, 1},
    {"remat_schedule_predict", "1", s_predict, 0},
    {"remat_schedule_for_budget", "1", s_budget, 0},
    {"remat_schedule_for_tiers", "1", s_tiers, 0},
    {"remat_scan_at", "1", l_scan, 0},
    {"remat_while_at", "1", l_while, 0},
    {"remat_problem_new", "1", p_new, 0},
    {"remat_problem_from_mechanism", "1", p_from_mech, 0},
    {"remat_problem_free", "-", p_free, 1},
    {"remat_problem_name", "NULL", p_name, 0},
    {"remat_problem_description", "NULL", p_desc, 0},
    {"remat_problem_steps", "-1", p_steps, 0},
    {"remat_problem_build", "1", p_build, 0},
    {"remat_problem_num_inputs", "0", p_ninputs, 0},
    {"remat_problem_inputs", "NULL", p_inputs, 0},
    {"remat_problem_num_grads", "0", p_ngrads, 0},
    {"remat_problem_grad_name", "NULL", p_gname, 0},
    {"remat_kinetics_rhs", "1", k_rhs, 0},
    {"remat_kinetics_rhs_fn", "NULL", k_rhs_fn, 0},
    {"remat_kinetics_uses_indep", "0", k_uses_indep, 0},
    {"remat_ode_count_steps", "1", o_count, 0},
    {"remat_ode_integrate", "1", o_integrate, 0},
    {"remat_ode_integrate_stats", "1", o_integrate_stats, 0},
    {"remat_ode_integrate_times", "1", o_integrate_times, 0},
    {"remat_ode_integrate_rows", "1", o_integrate_rows, 0},
    {"remat_ode_step", "1", o_step, 0},
    {"remat_ode_step_body", "NULL", o_step_body, 0},
    {"remat_ode_method_parse", "1", o_parse, 0},
    {"remat_ode_adjoint_parse", "1", o_adjoint_parse, 0},
    {"remat_ode_stats_check", "1", o_stats_check, 0},
    {"remat_ode_run_once", "1", o_run_once, 0},
    {"remat_ode_bdf_run", "1", o_bdf_run, 0},
    {"remat_adam_new", "1", op_adam_new, 0},
    {"remat_adam_free", "-", op_adam_free, 1},
    {"remat_adam_count", "0", op_adam_count, 0},
    {"remat_adam_mu", "NULL", op_adam_mu, 0},
    {"remat_adam_nu", "NULL", op_adam_nu, 0},
    {"remat_adam_reset", "-", op_adam_reset, 0},
    {"remat_adam_set_lr", "1", op_adam_lr, 0},
    {"remat_adam_update", "1", op_adam_update, 0},
    {"remat_adam_update_f32", "1", op_adam_update32, 0},
    {"remat_sgd_new", "1", op_sgd_new, 0},
    {"remat_sgd_free", "-", op_sgd_free, 1},
    {"remat_sgd_count", "0", op_sgd_count, 0},
    {"remat_sgd_trace", "NULL", op_sgd_trace, 0},
    {"remat_sgd_reset", "-", op_sgd_reset, 0},
    {"remat_sgd_update", "1", op_sgd_update, 0},
    {"remat_sgd_update_f32", "1", op_sgd_update32, 0},
    {"remat_labeled_load", "1", nd_load, 0},
    {"remat_labeled_free", "-", nd_free, 1},
    {"remat_labeled_rows", "0", nd_rows, 0},
    {"remat_labeled_features", "0", nd_features, 0},
    {"remat_labeled_classes", "0", nd_classes, 0},
    {"remat_labeled_x", "NULL", nd_x, 0},
    {"remat_labeled_y", "NULL", nd_y, 0},
    {"remat_labeled_origin", "NULL", nd_origin, 0},
    {"remat_labeled_feature_name", "NULL", nd_fname, 0},
    {"remat_labeled_label_name", "NULL", nd_lname, 0},
    {"remat_labeled_scale", "1", nd_scale, 0},
    {"remat_labeled_standardize", "1", nd_standardize, 0},
    {"remat_labeled_split", "1", nd_split, 0},
    {"remat_batcher_new", "1", nd_bnew, 0},
    {"remat_batcher_free", "-", nd_bfree, 1},
    {"remat_batcher_batches", "0", nd_batches, 0},
    {"remat_batcher_order", "NULL", nd_order, 0},
    {"remat_batcher_fill", "1", nd_fill, 0},
    {"remat_splitmix64_next", "0", nd_sm_next, 0},
    {"remat_splitmix64_below", "0", nd_sm_below, 0},
    {"remat_splitmix64_shuffle", "-", nd_sm_shuffle, 0},
    {"remat_nn_activation_parse", "1", n_activation_parse, 0},
    {"remat_nn_sequential", "NULL", n_sequential, 0},
    {"remat_nn_block", "NULL", n_block, 0},
    {"remat_nn_residual", "NULL", n_residual, 0},
    {"remat_nn_remat", "NULL", n_remat, 0},
    {"remat_nn_scan", "NULL", n_scan, 0},
    {"remat_nn_module_ref", "NULL", n_mref, 1},
    {"remat_nn_module_free", "-", n_mfree, 1},
    {"remat_nn_module_class", "NULL", n_mclass, 0},
    {"remat_nn_init", "1", n_init, 0},
    {"remat_nn_apply", "1", n_apply, 0},
    {"remat_nn_params_args", "1", n_pargs, 0},
    {"remat_nn_params_copy", "1", n_pcopy, 0},
    {"remat_nn_params_free", "-", n_pfree, 1},
    {"remat_nn_params_count", "0", n_pcount, 0},
    {"remat_nn_params_name", "NULL", n_pname, 0},
    {"remat_nn_params_find", "-1", n_pfind, 0},
    {"remat_nn_params_tensor", "-1", n_ptensor, 0},
    {"remat_nn_params_numel", "0", n_pnumel, 0},
    {"remat_nn_params_bytes", "0", n_pbytes, 0},
    {"remat_nn_params_out_shape", "-1", n_pshape, 0},
    {"remat_nn_mse", "-1", n_mse, 0},
    {"remat_nn_softmax_cross_entropy", "-1", n_sce, 0},
    {"remat_nn_loss_fn", "1", nt_loss_fn, 0},
    {"remat_nn_trainer_new", "1", nt_new, 0},
    {"remat_nn_trainer_free", "-", nt_free, 1},
    {"remat_nn_trainer_step", "1", nt_step, 0},
    {"remat_nn_trainer_predict", "1", nt_predict, 0},
    {"remat_nn_trainer_last_stats", "NULL", nt_stats, 0},
    {"remat_nn_trainer_plan", "-", nt_plan, 0},
    {"remat_nn_budget_choose", "1", nt_budget, 0},
    {"remat_nn_params_save", "1", np_save, 0},
    {"remat_nn_params_load", "1", np_load, 0},
    {"remat_fit_new", "1", f_new, 0},
    {"remat_fit_run_once", "1", f_run_once, 0},
    {"remat_fit_free", "-", f_free, 1},
    {"remat_fit_run", "1", f_run, 0},
    {"remat_fit_result_clear", "-", f_result_clear, 1},
    {"remat_fit_objective", "1", f_objective, 0},
    {"remat_fit_residual_count", "0", f_rcount, 0},
    {"remat_fit_delay", "1", f_delay, 0},
    {"remat_fit_delays", "1", f_delays, 0},
    {"remat_fit_predict_step", "0", f_pstep, 0},
    {"remat_fit_predict_builds", "0", f_pbuilds, 0},
    {"remat_fit_residuals", "1", f_residuals, 0},
    {"remat_fit_jacobian_at", "1", f_jacobian, 0},
    {"remat_fit_jacobian_mode", "0", f_jmode, 0}, /* REMAT_FIT_JACOBIAN_AUTO */
    {"remat_fit_jacobian_parse", "1", f_jparse, 0},
    {"remat_fit_optimizer_parse", "1", f_oparse, 0},
    {"remat_fit_initial_state", "NULL", f_initial, 0},
    {"remat_fit_predict", "1", f_predict, 0},
    {"remat_fit_integration_stats", "1", f_istats, 0},
    {"remat_fit_schedule", "-", f_schedule, 0},
    {"remat_fit_statistics", "1", f_statistics, 0},
    {"remat_fit_stats_clear", "-", f_stats_clear, 1},
    {"remat_pfr_new", "1", r_new, 0},
    {"remat_pfr_free", "-", r_free, 1},
    {"remat_pfr_mechanism", "NULL", r_mech, 0},
    {"remat_pfr_steps", "-1", r_steps, 0},
    {"remat_pfr_step_size", "nan", r_step_size, 0},
    {"remat_pfr_outlet", "1", r_outlet, 0},
    {"remat_pfr_objective", "1", r_objective, 0},
    {"remat_pfr_profile", "1", r_profile, 0},
    {"remat_pfr_integration_stats", "1", r_istats, 0},
    {"remat_pfr_adam", "1", r_adam, 0},
    {"remat_pfr_minimize", "1", r_minimize, 0},
    {"remat_pfr_fixed_steps", "1", r_fixed_steps, 0},
    {"remat_pfr_species_role", "NULL", r_role, 0},
    {"remat_pfr_ensemble_new", "1", r_enew, 0},
    {"remat_pfr_ensemble_free", "-", r_efree, 1},
    {"remat_pfr_ensemble_lanes", "0", r_elanes, 0},
    {"remat_pfr_ensemble_negative", "0", r_eneg, 0},
    {"remat_pfr_negative", "0", r_neg, 0},
    {"remat_pfr_negative_states", "0", r_negs, 0},
    {"remat_pfr_ensemble_run", "1", r_erun, 0},
    {"remat_prng_split", "1", x_split, 0},
    {"remat_prng_split_mode", "1", x_split_mode, 0},
    {"remat_prng_bits32", "1", x_bits, 0},
    {"remat_prng_bits32_mode", "1", x_bits_mode, 0},
    {"remat_prng_uniform_f32", "1", x_uniform, 0},
    {"remat_prng_normal_f32", "1", x_normal, 0},
    {"remat_prng_truncated_normal_f32", "1", x_tnormal, 0},
    {"remat_threefry2x32", "0", x_threefry, 0},
    {"remat_flax_make_rng", "1", x_make_rng, 0},
    {"remat_flax_lecun_normal_f32", "1", x_lecun, 0},
    {"remat_flax_normal_f32", "1", x_fnormal, 0},
    {"remat_flax_ones_f32", "1", x_ones, 0},
    {"remat_flax_zeros_f32", "1", x_zeros, 0},
    {"remat_dist_init", "1", dd_init, 0},
    {"remat_dist_finalize", "-", dd_finalize, 1},
    {"remat_dist_rank", "0", dd_rank, 1},
    {"remat_dist_size", "1", dd_size, 1},
    {"remat_dist_is_root", "1", dd_is_root, 1},
    {"remat_dist_kind", "ptr", dd_kind, 1},
    {"remat_dist_split", "1", dd_split, 0},
    {"remat_dist_gather", "1", dd_gather, 0},
    {"remat_dist_gather_to", "1", dd_gather_to, 0},
    {"remat_dist_sum", "1", dd_sum, 0},
    {"remat_dist_bcast", "1", dd_bcast, 0}, /* a group of one, but buf NULL */
    {"remat_dist_agree", "0", dd_agree, 1},
    {"remat_dist_agree_msg", "0", dd_agree_msg, 1},
    {"remat_dist_device_new", "1", dd_dnew, 0},
    {"remat_dist_device_free", "-", dd_dfree, 1},
    {"remat_dist_device_sum", "1", dd_dsum, 0},
    {"remat_expr_format", "-1", m_eformat, 0},
    {"remat_mechanism_check_rates", "1", m_check_rates, 0},
    {"remat_dataset_sigma", "nan", d_sigma, 0},
    {"remat_shape_make", "1", t_make, 1},
    {"remat_tensor_f32", "1", t_f32, 1}, /* a description: data NULL is allowed */
    {"remat_tensor_f64", "1", t_f64, 1},
};

/* Public functions that take no pointer, so have no NULL to answer; the
 * reason is the argument kind (tests/check_null_sweep.sh reads the names). */
static const char *const null_exempt[] = {
    /* (void) */
    "remat_last_error", "remat_clear_error", "remat_num_threads", "remat_backend_cpu", "remat_pfr_seed",
    "remat_fit_defaults", "remat_compile_options_default",
    /* enums and numbers only */
    "remat_status_name", "remat_dtype_name", "remat_dtype_size", "remat_op_name", "remat_op_arity",
    "remat_op_category_name", "remat_op_category_of", "remat_op_deriv_of", "remat_op_is_binary",
    "remat_op_is_elementwise", "remat_op_param_of", "remat_expr_fn_name", "remat_expr_kind_name",
    "remat_fit_jacobian_name", "remat_fit_optimizer_name", "remat_nn_activation_name", "remat_nn_act",
    "remat_nn_dense", "remat_nn_ffn", "remat_nn_layer_norm", "remat_nn_mlp", "remat_nn_mlp_block",
    "remat_set_num_threads", "remat_backend_cuda", "remat_ode_method_adaptive", "remat_ode_method_name",
    "remat_ode_adjoint_name",
    "remat_ode_method_order", "remat_ode_method_stages", "remat_ode_stability_bound", "remat_prng_fold_in", "remat_prng_key_from_seed",
    "remat_adam_optax", "remat_sgd_optax", "remat_binomial_optimum",
};

/* Runs row r in a child (a crash or abort is the row's failure); prints why
 * and returns 1 when it is not answered as documented. */
static int check_row(const null_row *r)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        /* cmocka's handlers would carry on with its main in the child */
        const int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        char got[64];
        remat_clear_error();
        r->run(got, sizeof got);
        const char *msg = remat_last_error();
        int bad = 0;
        if (strcmp(got, r->want) != 0) {
            printf("%s(NULL): returned %s, documented %s\n", r->call, got, r->want);
            bad = 1;
        }
        if (!r->silent && !(msg && strstr(msg, "NULL"))) {
            printf("%s(NULL): message \"%s\" does not say what is NULL\n", r->call, msg ? msg : "(none)");
            bad = 1;
        }
        if (r->silent && msg && *msg) {
            printf("%s(NULL): documented as silent, says \"%s\"\n", r->call, msg);
            bad = 1;
        }
        fflush(stdout);
        _exit(bad);
    }
    int ws;
    if (waitpid(pid, &ws, 0) != pid)
        fail_msg("waitpid: %s", strerror(errno));
    if (WIFSIGNALED(ws)) {
        printf("%s(NULL): killed by signal %d\n", r->call, WTERMSIG(ws));
        return 1;
    }
    return WEXITSTATUS(ws) != 0;
}

static void test_hostile_null_to_every_public_function_is_answered(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof null_table / sizeof null_table[0]; i++)
        bad += check_row(&null_table[i]);
    assert_int_equal(bad, 0);
}

/* an exempt function must not also be in the table: one list says which */
static void test_hostile_null_exemptions_take_no_pointer(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof null_exempt / sizeof null_exempt[0]; i++)
        for (size_t j = 0; j < sizeof null_table / sizeof null_table[0]; j++)
            if (strcmp(null_exempt[i], null_table[j].call) == 0)
                fail_msg("%s is both exempt and in null_table", null_exempt[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_null_to_every_public_function_is_answered),
        cmocka_unit_test(test_hostile_null_exemptions_take_no_pointer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
