/* The short call path's hot loop in C (fixed_call.py has the whole path in Python, which
 * runs where this module was not built).
 *
 * A Caller belongs to one model object (runner) and its FixedFrame: the frame's ctypes
 * arrays hold each input's and output's sizes, strides and dtype code for the shapes the
 * frame was last filled with. A call checks that the arguments are exactly the tensors the
 * model takes with exactly those input shapes (all numpy arrays or all torch tensors:
 * contiguous, on the cpu, of the compiled dtypes), writes their data pointers into the
 * frame, allocates the outputs, runs the model with the interpreter lock released and
 * returns the list of outputs. Arguments it does not take return None before anything is
 * written, and the caller goes on with the Python path, which converts, checks, reports
 * errors and fills the frame for new shapes; a failing run returns the library's status
 * as an int, which the caller turns into the typed error.
 *
 * Only the CPython API is used (no numpy or torch headers): numpy arrays are read through
 * the buffer protocol, torch tensors through their Python methods. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "aotc/aotc_abi.h"

typedef int (*run_fn)(void *, const aotc_tensor *, int64_t, aotc_tensor *, int64_t);

typedef struct {
  PyObject_HEAD
  run_fn run;
  void *model;
  aotc_tensor *ins, *outs;
  Py_ssize_t n_in, n_out;
  PyObject *frame;        /* owns the memory ins and outs point into */
  PyObject *out_shapes;   /* tuple of the outputs' shape tuples for the frame's shapes */
  /* numpy: the array type, numpy.empty, the input and output dtypes (np_in is None where
     numpy arrays take the general path) */
  PyObject *np_array, *np_empty, *np_in, *np_out;
  /* torch, set on the first call with torch tensors: torch.Tensor, torch.empty, dtypes */
  PyObject *torch_tensor, *torch_empty, *torch_in, *torch_out;
} Caller;

static PyObject *s_dtype, *s_is_cpu, *s_is_contiguous, *s_shape, *s_data_ptr, *k_dtype;

/* 1 when `shape` (a tuple of ints) is the frame's sizes of `t`, 0 when not, -1 on error */
static int same_shape(PyObject *shape, const aotc_tensor *t) {
  if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != t->ndim) return 0;
  for (Py_ssize_t d = 0; d < t->ndim; d++) {
    long long n = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n != t->sizes[d]) return 0;
  }
  return 1;
}

/* 1 when a has the dtype `want`, 0 when not, -1 on error */
static int has_dtype(PyObject *a, PyObject *want) {
  PyObject *dt = PyObject_GetAttr(a, s_dtype);
  if (!dt) return -1;
  int same = dt == want ? 1 : PyObject_RichCompareBool(dt, want, Py_EQ);
  Py_DECREF(dt);
  return same;
}

/* A numpy input: its data address in *data; 1 taken, 0 not, -1 error */
static int numpy_input(Caller *c, PyObject *x, PyObject *dtype, const aotc_tensor *t,
                       void **data) {
  if (Py_TYPE(x) != (PyTypeObject *)c->np_array) return 0;
  int ok = has_dtype(x, dtype);
  if (ok <= 0) return ok;
  Py_buffer view;
  if (PyObject_GetBuffer(x, &view, PyBUF_C_CONTIGUOUS) < 0) {
    PyErr_Clear(); /* not C-contiguous: the general path copies it */
    return 0;
  }
  ok = view.ndim == t->ndim;
  for (int d = 0; ok && d < view.ndim; d++) ok = view.shape[d] == t->sizes[d];
  *data = view.buf;
  PyBuffer_Release(&view); /* the array (held by the call's arguments) keeps its memory */
  return ok;
}

/* A torch input: its data address in *data; 1 taken, 0 not, -1 error */
static int torch_input(Caller *c, PyObject *x, PyObject *dtype, const aotc_tensor *t,
                       void **data) {
  if (Py_TYPE(x) != (PyTypeObject *)c->torch_tensor) return 0;
  PyObject *dt = PyObject_GetAttr(x, s_dtype);
  if (!dt) return -1;
  Py_DECREF(dt);
  if (dt != dtype) return 0; /* torch dtypes are singletons */
  PyObject *v = PyObject_GetAttr(x, s_is_cpu);
  if (!v) return -1;
  int ok = v == Py_True;
  Py_DECREF(v);
  if (!ok) return 0;
  v = PyObject_CallMethodNoArgs(x, s_is_contiguous);
  if (!v) return -1;
  ok = v == Py_True;
  Py_DECREF(v);
  if (!ok) return 0;
  v = PyObject_GetAttr(x, s_shape);
  if (!v) return -1;
  ok = same_shape(v, t);
  Py_DECREF(v);
  if (ok <= 0) return ok;
  v = PyObject_CallMethodNoArgs(x, s_data_ptr);
  if (!v) return -1;
  *data = PyLong_AsVoidPtr(v);
  Py_DECREF(v);
  return PyErr_Occurred() ? -1 : 1;
}

/* A new output of `shape` and `dtype` (numpy or torch), its address in *data */
#define MAX_SPREAD 8
static PyObject *new_output(Caller *c, int torch, PyObject *shape, PyObject *dtype,
                            void **data) {
  PyObject *o;
  if (torch) {
    /* torch.empty(8, 1, dtype=...): sizes as separate ints parse faster than a tuple */
    PyObject *args[MAX_SPREAD + 1];
    Py_ssize_t nd = PyTuple_GET_SIZE(shape), n = 1;
    args[0] = shape;
    if (nd > 0 && nd <= MAX_SPREAD) {
      for (n = 0; n < nd; n++) args[n] = PyTuple_GET_ITEM(shape, n);
    }
    args[n] = dtype;
    o = PyObject_Vectorcall(c->torch_empty, args, n, k_dtype);
    if (!o) return NULL;
    PyObject *p = PyObject_CallMethodNoArgs(o, s_data_ptr);
    if (!p) goto fail;
    *data = PyLong_AsVoidPtr(p);
    Py_DECREF(p);
    if (PyErr_Occurred()) goto fail;
    return o;
  }
  PyObject *args[2] = {shape, dtype};
  o = PyObject_Vectorcall(c->np_empty, args, 2, NULL);
  if (!o) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(o, &view, PyBUF_WRITABLE) < 0) goto fail;
  *data = view.buf;
  PyBuffer_Release(&view);
  return o;
fail:
  Py_DECREF(o);
  return NULL;
}

static PyObject *Caller_call(Caller *c, PyObject *args, PyObject *kwargs) {
  (void)kwargs;
  PyObject *xs;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &xs)) return NULL;
  if (PyTuple_GET_SIZE(xs) != c->n_in || c->n_in == 0 || !c->out_shapes) Py_RETURN_NONE;
  PyObject *first = PyTuple_GET_ITEM(xs, 0);
  int torch;
  if (Py_TYPE(first) == (PyTypeObject *)c->np_array && c->np_in != Py_None) {
    torch = 0;
  } else if (c->torch_tensor && Py_TYPE(first) == (PyTypeObject *)c->torch_tensor) {
    torch = 1;
  } else {
    Py_RETURN_NONE;
  }
  PyObject *in_dtypes = torch ? c->torch_in : c->np_in;
  PyObject *out_dtypes = torch ? c->torch_out : c->np_out;
  /* every check before any write: a call not taken leaves the frame as it was */
  void *data[64];
  void **ptrs = c->n_in <= 64 ? data : PyMem_Malloc(sizeof(void *) * c->n_in);
  if (!ptrs) return PyErr_NoMemory();
  int ok = 1;
  for (Py_ssize_t k = 0; ok == 1 && k < c->n_in; k++) {
    PyObject *x = PyTuple_GET_ITEM(xs, k), *dt = PyTuple_GET_ITEM(in_dtypes, k);
    ok = torch ? torch_input(c, x, dt, &c->ins[k], &ptrs[k])
               : numpy_input(c, x, dt, &c->ins[k], &ptrs[k]);
  }
  if (ok == 1)
    for (Py_ssize_t k = 0; k < c->n_in; k++) c->ins[k].data = ptrs[k];
  if (ptrs != data) PyMem_Free(ptrs);
  if (ok < 0) return NULL;
  if (ok == 0) Py_RETURN_NONE;
  PyObject *outs = PyList_New(c->n_out);
  if (!outs) return NULL;
  for (Py_ssize_t j = 0; j < c->n_out; j++) {
    void *p = NULL;
    PyObject *o = new_output(c, torch, PyTuple_GET_ITEM(c->out_shapes, j),
                             PyTuple_GET_ITEM(out_dtypes, j), &p);
    if (!o) {
      Py_DECREF(outs);
      return NULL;
    }
    PyList_SET_ITEM(outs, j, o);
    c->outs[j].data = p;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = c->run(c->model, c->ins, c->n_in, c->outs, c->n_out);
  Py_END_ALLOW_THREADS
  if (rc) {
    Py_DECREF(outs);
    return PyLong_FromLong(rc);
  }
  return outs;
}

static void *as_address(PyObject *v) {
  return v == Py_None ? NULL : PyLong_AsVoidPtr(v);
}

static int Caller_init(Caller *c, PyObject *args, PyObject *kwargs) {
  (void)kwargs;
  PyObject *run, *model, *ins, *outs, *frame, *np_array, *np_empty, *np_in, *np_out;
  if (!PyArg_ParseTuple(args, "OOOnOnOOOOO", &run, &model, &ins, &c->n_in, &outs, &c->n_out,
                        &frame, &np_array, &np_empty, &np_in, &np_out))
    return -1;
  if (!PyType_Check(np_array) || (np_in != Py_None && !PyTuple_Check(np_in)) ||
      !PyTuple_Check(np_out) || PyTuple_GET_SIZE(np_out) != c->n_out ||
      (np_in != Py_None && PyTuple_GET_SIZE(np_in) != c->n_in)) {
    PyErr_SetString(PyExc_TypeError, "Caller: inconsistent arguments");
    return -1;
  }
  c->run = (run_fn)as_address(run);
  c->model = as_address(model);
  c->ins = as_address(ins);
  c->outs = as_address(outs);
  if (PyErr_Occurred()) return -1;
  if (!c->run || !c->ins || !c->outs) {
    PyErr_SetString(PyExc_ValueError, "Caller: a null address");
    return -1;
  }
  PyObject *held[] = {frame, np_array, np_empty, np_in, np_out};
  PyObject **slots[] = {&c->frame, &c->np_array, &c->np_empty, &c->np_in, &c->np_out};
  for (int k = 0; k < 5; k++) {
    Py_INCREF(held[k]);
    Py_XSETREF(*slots[k], held[k]);
  }
  return 0;
}

static PyObject *Caller_set_torch(Caller *c, PyObject *args) {
  PyObject *tensor, *empty, *in, *out;
  if (!PyArg_ParseTuple(args, "O!OO!O!", &PyType_Type, &tensor, &empty, &PyTuple_Type, &in,
                        &PyTuple_Type, &out))
    return NULL;
  if (PyTuple_GET_SIZE(in) != c->n_in || PyTuple_GET_SIZE(out) != c->n_out) {
    PyErr_SetString(PyExc_TypeError, "set_torch: dtype counts differ from the model's");
    return NULL;
  }
  PyObject *held[] = {tensor, empty, in, out};
  PyObject **slots[] = {&c->torch_tensor, &c->torch_empty, &c->torch_in, &c->torch_out};
  for (int k = 0; k < 4; k++) {
    Py_INCREF(held[k]);
    Py_XSETREF(*slots[k], held[k]);
  }
  Py_RETURN_NONE;
}

static PyObject *Caller_set_outputs(Caller *c, PyObject *args) {
  PyObject *shapes;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &shapes)) return NULL;
  if (PyTuple_GET_SIZE(shapes) != c->n_out) {
    PyErr_SetString(PyExc_TypeError, "set_outputs: one shape per output");
    return NULL;
  }
  for (Py_ssize_t j = 0; j < c->n_out; j++)
    if (!PyTuple_Check(PyTuple_GET_ITEM(shapes, j))) {
      PyErr_SetString(PyExc_TypeError, "set_outputs: each shape is a tuple");
      return NULL;
    }
  Py_INCREF(shapes);
  Py_XSETREF(c->out_shapes, shapes);
  Py_RETURN_NONE;
}

static int Caller_traverse(Caller *c, visitproc visit, void *arg) {
  Py_VISIT(c->frame);
  Py_VISIT(c->out_shapes);
  Py_VISIT(c->np_array);
  Py_VISIT(c->np_empty);
  Py_VISIT(c->np_in);
  Py_VISIT(c->np_out);
  Py_VISIT(c->torch_tensor);
  Py_VISIT(c->torch_empty);
  Py_VISIT(c->torch_in);
  Py_VISIT(c->torch_out);
  return 0;
}

static int Caller_clear(Caller *c) {
  Py_CLEAR(c->frame);
  Py_CLEAR(c->out_shapes);
  Py_CLEAR(c->np_array);
  Py_CLEAR(c->np_empty);
  Py_CLEAR(c->np_in);
  Py_CLEAR(c->np_out);
  Py_CLEAR(c->torch_tensor);
  Py_CLEAR(c->torch_empty);
  Py_CLEAR(c->torch_in);
  Py_CLEAR(c->torch_out);
  return 0;
}

static void Caller_dealloc(Caller *c) {
  PyObject_GC_UnTrack(c);
  Caller_clear(c);
  Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef Caller_methods[] = {
    {"set_torch", (PyCFunction)Caller_set_torch, METH_VARARGS,
     "set_torch(torch.Tensor, torch.empty, input dtypes, output dtypes)"},
    {"set_outputs", (PyCFunction)Caller_set_outputs, METH_VARARGS,
     "set_outputs(output shapes): the outputs' shapes for the shapes the frame holds"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "aotc.runtime._fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Caller(run, model, inputs, n_in, outputs, n_out, frame, numpy.ndarray, "
              "numpy.empty, input dtypes or None, output dtypes)(args): the outputs, None "
              "(not taken) or the library's status",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Caller_init,
    .tp_call = (ternaryfunc)Caller_call,
    .tp_traverse = (traverseproc)Caller_traverse,
    .tp_clear = (inquiry)Caller_clear,
    .tp_dealloc = (destructor)Caller_dealloc,
    .tp_methods = Caller_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastcall",
                                    "aotc's short call path in C", -1, NULL};

PyMODINIT_FUNC PyInit__fastcall(void) {
  if (PyType_Ready(&CallerType) < 0) return NULL;
  s_dtype = PyUnicode_InternFromString("dtype");
  s_is_cpu = PyUnicode_InternFromString("is_cpu");
  s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
  s_shape = PyUnicode_InternFromString("shape");
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  k_dtype = Py_BuildValue("(s)", "dtype");
  if (!s_dtype || !s_is_cpu || !s_is_contiguous || !s_shape || !s_data_ptr || !k_dtype)
    return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  Py_INCREF(&CallerType);
  if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
    Py_DECREF(&CallerType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
