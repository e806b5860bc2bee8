/*
 * Optional helper of rt.jit (runetensor._backend._jitcall): calls a compiled kernel on arrays.
 *
 * The kernels rt.jit compiles (runetensor/_backend/fusion/_fuse.py) each come with an entry point
 * `kernel_v(const int64_t *A)` reading its arguments (loop sizes, strides, data pointers) from one
 * vector.  `call` copies a prepared vector, writes the data pointer (plus a byte offset) of each
 * operand at its position, and runs the kernel with the GIL released.  Through ctypes the same call
 * costs microseconds per operand (`ndarray.ctypes.data`, argument conversion); here it is a buffer
 * request per operand.  If this module is missing, runetensor/_backend/_jitrun.py calls the kernels
 * through ctypes (same results).
 *
 * Plain C99 against the CPython API only; operands are objects with the buffer protocol.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_ARGS 512

typedef void (*kernel_fn)(const int64_t *);

static PyObject *call(PyObject *self, PyObject *args)
{
    unsigned long long addr;
    Py_buffer tb;
    PyObject *pos, *arrs, *offs = Py_None;
    (void)self;
    if (!PyArg_ParseTuple(args, "Ky*O!O!|O", &addr, &tb, &PyTuple_Type, &pos, &PyTuple_Type, &arrs, &offs))
        return NULL;
    Py_ssize_t n = tb.len / 8, k = PyTuple_GET_SIZE(arrs);
    int64_t A[MAX_ARGS];
    if (addr == 0 || tb.len % 8 != 0 || n > MAX_ARGS || PyTuple_GET_SIZE(pos) != k ||
        (offs != Py_None && (!PyTuple_Check(offs) || PyTuple_GET_SIZE(offs) != k))) {
        PyBuffer_Release(&tb);
        PyErr_Format(PyExc_ValueError,
                     "_jitcall.call: expected a kernel address, a vector of at most %d int64 values and "
                     "as many positions (and offsets) as operands", MAX_ARGS);
        return NULL;
    }
    memcpy(A, tb.buf, (size_t)n * 8);
    PyBuffer_Release(&tb);
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(pos, i));
        if (p == -1 && PyErr_Occurred())
            return NULL;
        if (p < 0 || p >= n) {
            PyErr_Format(PyExc_ValueError, "_jitcall.call: operand position %zd outside the vector of %zd", p, n);
            return NULL;
        }
        long long off = 0;
        if (offs != Py_None) {
            off = PyLong_AsLongLong(PyTuple_GET_ITEM(offs, i));
            if (off == -1 && PyErr_Occurred())
                return NULL;
        }
        Py_buffer v;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(arrs, i), &v, PyBUF_STRIDES) < 0)
            return NULL;
        A[p] = (int64_t)(intptr_t)v.buf + (int64_t)off;
        /* the tuple keeps the operand (and so its memory) alive for the call */
        PyBuffer_Release(&v);
    }
    Py_BEGIN_ALLOW_THREADS
    ((kernel_fn)(uintptr_t)addr)(A);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call", call, METH_VARARGS,
     "call(addr, vector, positions, operands[, offsets]): run kernel_v at addr on the int64 vector with "
     "operand i's data pointer (+ offsets[i] bytes) at positions[i]; the GIL is released during the call"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_jitcall", "Calls rt.jit's compiled kernels on arrays (GIL released).", -1, methods
};

PyMODINIT_FUNC PyInit__jitcall(void)
{
    return PyModule_Create(&moddef);
}
