/*
 * remat/export.h — REMAT_API, the mark of the public API.
 *
 * The library is built with -fvisibility=hidden: a function or variable of
 * libremat.so is visible to a program only when its declaration in
 * include/remat/ carries REMAT_API. Everything else (src/, kernels/) is
 * internal, named rmi_*, and can change without notice.
 */
#ifndef REMAT_EXPORT_H
#define REMAT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define REMAT_API __attribute__((visibility("default")))
#else
#define REMAT_API
#endif

#endif /* REMAT_EXPORT_H */
