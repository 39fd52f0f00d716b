/* graph.c — the graph part of remat._remat (graph.h): the types Fn
 * (graph_fn.c, graph_scan.c) and Program (graph_program.c) and the module
 * functions of graph_transforms.c and graph_program.c. */
#include "graph.h"

int rp_graph_init(PyObject *module)
{
    if (rp_graph_args_init() < 0 || PyType_Ready(&rp_fn_type) < 0 || PyType_Ready(&rp_program_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Fn", (PyObject *)&rp_fn_type) < 0 ||
        PyModule_AddObjectRef(module, "Program", (PyObject *)&rp_program_type) < 0)
        return -1;
    if (PyModule_AddFunctions(module, rp_graph_transform_functions) < 0 ||
        PyModule_AddFunctions(module, rp_graph_program_functions) < 0)
        return -1;
    return 0;
}
