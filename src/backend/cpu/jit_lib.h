/*
 * jit_lib.h (internal) — libgccjit, opened when the first lane program has
 * to be compiled (dlopen of "libgccjit.so.0", Debian's libgccjit0) instead
 * of at process start: relocating it and its dependencies took most of a
 * short process's time, and a process whose loops are interpreted, or
 * loaded from the disk cache (jit_disk.h), never needs it.
 *
 * The header's declarations give the types; every function jit.c and
 * jit_gen.c call is listed in REMAT_GCCJIT_FUNCS and, after this header,
 * names the pointer in rmi_gccjit (a function missing from the list is a
 * link error, since nothing links libgccjit). rmi_gccjit_open() fills the
 * table once per process; until it returned true the pointers are NULL.
 */
#ifndef REMAT_CPU_JIT_LIB_H
#define REMAT_CPU_JIT_LIB_H

#include <libgccjit.h>
#include <stdbool.h>

#define REMAT_GCCJIT_FUNCS(X)                                                                                   \
    X(gcc_jit_block_add_assignment) X(gcc_jit_block_add_assignment_op) X(gcc_jit_block_end_with_conditional)    \
    X(gcc_jit_block_end_with_jump) X(gcc_jit_block_end_with_void_return) X(gcc_jit_context_acquire)             \
    X(gcc_jit_context_add_command_line_option) X(gcc_jit_context_compile) X(gcc_jit_context_compile_to_file)    \
    X(gcc_jit_context_get_first_error) X(gcc_jit_context_get_type) X(gcc_jit_context_new_array_access)          \
    X(gcc_jit_context_new_binary_op) X(gcc_jit_context_new_call) X(gcc_jit_context_new_cast)                    \
    X(gcc_jit_context_new_comparison) X(gcc_jit_context_new_function) X(gcc_jit_context_new_param)              \
    X(gcc_jit_context_new_rvalue_from_double) X(gcc_jit_context_new_rvalue_from_long)                           \
    X(gcc_jit_context_new_unary_op) X(gcc_jit_context_release) X(gcc_jit_context_set_bool_print_errors_to_stderr) \
    X(gcc_jit_context_set_bool_use_external_driver)                                                           \
    X(gcc_jit_context_set_int_option) X(gcc_jit_function_new_block) X(gcc_jit_function_new_local)               \
    X(gcc_jit_lvalue_as_rvalue) X(gcc_jit_lvalue_get_address) X(gcc_jit_param_as_rvalue)                       \
    X(gcc_jit_result_get_code) X(gcc_jit_result_release) X(gcc_jit_type_get_pointer)                          \
    X(gcc_jit_context_new_global) X(gcc_jit_context_new_function_ptr_type) X(gcc_jit_context_new_call_through_ptr) \
    X(gcc_jit_context_new_array_type) X(gcc_jit_block_add_eval) X(gcc_jit_result_get_global)

#define REMAT_GCCJIT_PTR(f) __typeof__(f) *f;
typedef struct {
    REMAT_GCCJIT_FUNCS(REMAT_GCCJIT_PTR)
} remat_gccjit_api;
#undef REMAT_GCCJIT_PTR

extern remat_gccjit_api rmi_gccjit;

/* Opens libgccjit (once; later calls return the first answer). false, with
 * REMAT_ERR_BACKEND and a message naming the library and dlerror() in
 * remat_last_error(), when it cannot be loaded or lacks a function. The
 * library's name is "libgccjit.so.0", or REMAT_GCCJIT_LIB from the
 * environment (read at the first call; tests point it at a missing file). */
bool rmi_gccjit_open(void);

#ifndef REMAT_GCCJIT_LIB_IMPL
#define gcc_jit_block_add_assignment rmi_gccjit.gcc_jit_block_add_assignment
#define gcc_jit_block_add_assignment_op rmi_gccjit.gcc_jit_block_add_assignment_op
#define gcc_jit_block_end_with_conditional rmi_gccjit.gcc_jit_block_end_with_conditional
#define gcc_jit_block_end_with_jump rmi_gccjit.gcc_jit_block_end_with_jump
#define gcc_jit_block_end_with_void_return rmi_gccjit.gcc_jit_block_end_with_void_return
#define gcc_jit_context_acquire rmi_gccjit.gcc_jit_context_acquire
#define gcc_jit_context_add_command_line_option rmi_gccjit.gcc_jit_context_add_command_line_option
#define gcc_jit_context_compile rmi_gccjit.gcc_jit_context_compile
#define gcc_jit_context_compile_to_file rmi_gccjit.gcc_jit_context_compile_to_file
#define gcc_jit_context_get_first_error rmi_gccjit.gcc_jit_context_get_first_error
#define gcc_jit_context_get_type rmi_gccjit.gcc_jit_context_get_type
#define gcc_jit_context_new_array_access rmi_gccjit.gcc_jit_context_new_array_access
#define gcc_jit_context_new_binary_op rmi_gccjit.gcc_jit_context_new_binary_op
#define gcc_jit_context_new_call rmi_gccjit.gcc_jit_context_new_call
#define gcc_jit_context_new_cast rmi_gccjit.gcc_jit_context_new_cast
#define gcc_jit_context_new_comparison rmi_gccjit.gcc_jit_context_new_comparison
#define gcc_jit_context_new_function rmi_gccjit.gcc_jit_context_new_function
#define gcc_jit_context_new_param rmi_gccjit.gcc_jit_context_new_param
#define gcc_jit_context_new_rvalue_from_double rmi_gccjit.gcc_jit_context_new_rvalue_from_double
#define gcc_jit_context_new_rvalue_from_long rmi_gccjit.gcc_jit_context_new_rvalue_from_long
#define gcc_jit_context_new_unary_op rmi_gccjit.gcc_jit_context_new_unary_op
#define gcc_jit_context_release rmi_gccjit.gcc_jit_context_release
#define gcc_jit_context_set_bool_print_errors_to_stderr rmi_gccjit.gcc_jit_context_set_bool_print_errors_to_stderr
#define gcc_jit_context_set_bool_use_external_driver rmi_gccjit.gcc_jit_context_set_bool_use_external_driver
#define gcc_jit_context_set_int_option rmi_gccjit.gcc_jit_context_set_int_option
#define gcc_jit_function_new_block rmi_gccjit.gcc_jit_function_new_block
#define gcc_jit_function_new_local rmi_gccjit.gcc_jit_function_new_local
#define gcc_jit_lvalue_as_rvalue rmi_gccjit.gcc_jit_lvalue_as_rvalue
#define gcc_jit_lvalue_get_address rmi_gccjit.gcc_jit_lvalue_get_address
#define gcc_jit_param_as_rvalue rmi_gccjit.gcc_jit_param_as_rvalue
#define gcc_jit_result_get_code rmi_gccjit.gcc_jit_result_get_code
#define gcc_jit_result_release rmi_gccjit.gcc_jit_result_release
#define gcc_jit_type_get_pointer rmi_gccjit.gcc_jit_type_get_pointer
#define gcc_jit_context_new_global rmi_gccjit.gcc_jit_context_new_global
#define gcc_jit_context_new_function_ptr_type rmi_gccjit.gcc_jit_context_new_function_ptr_type
#define gcc_jit_context_new_call_through_ptr rmi_gccjit.gcc_jit_context_new_call_through_ptr
#define gcc_jit_context_new_array_type rmi_gccjit.gcc_jit_context_new_array_type
#define gcc_jit_block_add_eval rmi_gccjit.gcc_jit_block_add_eval
#define gcc_jit_result_get_global rmi_gccjit.gcc_jit_result_get_global
#endif

#endif
