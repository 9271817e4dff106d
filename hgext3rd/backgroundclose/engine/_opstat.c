/* _opstat.c - the timing report's counters, in C
 *
 * Copyright 2026 hg-backgroundclose contributors
 *
 * This software may be used and distributed according to the terms of the
 * GNU General Public License version 2 or any later version.
 *
 * A timing report (report.py) times every open, write and close of a stream
 * apply.  In Python each of those costs the writing thread two clock reads
 * and a call of OpStat.add(), together more than the system call they time
 * on a fast file system.  Here ``since(start)`` reads the clock and adds
 * the duration in one C call; ``now()`` is the clock it reads, which the
 * caller must use for ``start``.  closer.OpStat is this type where the
 * module is built, and closer.PythonOpStat elsewhere: the same attributes,
 * methods and arguments (positional; counts and bytes whole numbers), and
 * on a wrong argument the same TypeError with nothing changed
 * (tests/test_opstat.py).
 *
 * No lock: each thread updates its own OpStat (closer.StatsBook), or holds
 * the caller's lock (directories.py).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <time.h>

typedef struct {
	PyObject_HEAD
	long long count;
	double seconds;
	double max;
	long long bytes;
} OpStat;

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void record(OpStat *self, long long count, double seconds,
                   double longest, long long nbytes)
{
	self->count += count;
	self->seconds += seconds;
	self->bytes += nbytes;
	if (longest > self->max)
		self->max = longest;
}

/* args[at] as a double (an int or a float), or -1 with an exception set */
static int double_arg(PyObject *const *args, Py_ssize_t at, double *value)
{
	*value = PyFloat_AsDouble(args[at]);
	return (*value == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* args[at] as a long long: a whole number (Python 3.9 would take a float
 * here, with a DeprecationWarning), or -1 with an exception set */
static int longlong_arg(PyObject *const *args, Py_ssize_t at,
                        long long *value)
{
	if (!PyIndex_Check(args[at])) {
		PyErr_Format(PyExc_TypeError,
		             "an integer is required (got type %.200s)",
		             Py_TYPE(args[at])->tp_name);
		return -1;
	}
	*value = PyLong_AsLongLong(args[at]);
	return (*value == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int check_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t least,
                       Py_ssize_t most)
{
	if (nargs >= least && nargs <= most)
		return 0;
	PyErr_Format(PyExc_TypeError,
	             "%s() takes from %zd to %zd arguments (%zd given)", name,
	             least, most, nargs);
	return -1;
}

PyDoc_STRVAR(add_doc, "add(duration, nbytes=0): one operation that took "
                      "``duration`` seconds and moved ``nbytes``");

static PyObject *OpStat_add(OpStat *self, PyObject *const *args,
                            Py_ssize_t nargs)
{
	double duration;
	long long nbytes = 0;
	if (check_nargs("add", nargs, 1, 2) < 0 ||
	    double_arg(args, 0, &duration) < 0 ||
	    (nargs > 1 && longlong_arg(args, 1, &nbytes) < 0))
		return NULL;
	record(self, 1, duration, duration, nbytes);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(since_doc,
             "since(start, nbytes=0): one operation that began at "
             "``start`` (a time of now())\nand ends now, having moved "
             "``nbytes``");

static PyObject *OpStat_since(OpStat *self, PyObject *const *args,
                              Py_ssize_t nargs)
{
	double start, duration;
	long long nbytes = 0;
	if (check_nargs("since", nargs, 1, 2) < 0 ||
	    double_arg(args, 0, &start) < 0 ||
	    (nargs > 1 && longlong_arg(args, 1, &nbytes) < 0))
		return NULL;
	duration = now_seconds() - start;
	record(self, 1, duration, duration, nbytes);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(add_many_doc,
             "add_many(count, seconds, longest=0.0, nbytes=0): ``count`` "
             "operations that\ntook ``seconds`` in all, the longest "
             "``longest``, and moved ``nbytes``");

static PyObject *OpStat_add_many(OpStat *self, PyObject *const *args,
                                 Py_ssize_t nargs)
{
	long long count, nbytes = 0;
	double seconds, longest = 0.0;
	if (check_nargs("add_many", nargs, 2, 4) < 0 ||
	    longlong_arg(args, 0, &count) < 0 ||
	    double_arg(args, 1, &seconds) < 0 ||
	    (nargs > 2 && double_arg(args, 2, &longest) < 0) ||
	    (nargs > 3 && longlong_arg(args, 3, &nbytes) < 0))
		return NULL;
	record(self, count, seconds, longest, nbytes);
	Py_RETURN_NONE;
}

static PyTypeObject OpStatType;

/* the figures of ``other``, an OpStat of either kind (closer.PythonOpStat
 * has the same attributes): 0, or -1 with an exception set */
static int figures_of(PyObject *other, PyObject *values[4])
{
	static const char *names[4] = {"count", "seconds", "max", "bytes"};
	int i;
	for (i = 0; i < 4; i++) {
		values[i] = PyObject_GetAttrString(other, names[i]);
		if (values[i] == NULL) {
			while (i-- > 0)
				Py_CLEAR(values[i]);
			return -1;
		}
	}
	return 0;
}

PyDoc_STRVAR(merge_doc,
             "merge(other): add the figures of another OpStat, of either "
             "kind");

static PyObject *OpStat_merge(OpStat *self, PyObject *other)
{
	PyObject *values[4];
	long long count, nbytes;
	double seconds, longest;
	int failed;
	if (PyObject_TypeCheck(other, &OpStatType)) {
		OpStat *from = (OpStat *)other;
		record(self, from->count, from->seconds, from->max,
		       from->bytes);
		Py_RETURN_NONE;
	}
	if (figures_of(other, values) < 0)
		return NULL;
	failed = longlong_arg(values, 0, &count) < 0 ||
	         double_arg(values, 1, &seconds) < 0 ||
	         double_arg(values, 2, &longest) < 0 ||
	         longlong_arg(values, 3, &nbytes) < 0;
	Py_DECREF(values[0]);
	Py_DECREF(values[1]);
	Py_DECREF(values[2]);
	Py_DECREF(values[3]);
	if (failed)
		return NULL;
	record(self, count, seconds, longest, nbytes);
	Py_RETURN_NONE;
}

static PyObject *OpStat_mean(OpStat *self, void *Py_UNUSED(closure))
{
	return PyFloat_FromDouble(self->count ? self->seconds / self->count
	                                      : 0.0);
}

static PyMemberDef OpStat_members[] = {
    {"count", T_LONGLONG, offsetof(OpStat, count), 0, "operations"},
    {"seconds", T_DOUBLE, offsetof(OpStat, seconds), 0, "their total time"},
    {"max", T_DOUBLE, offsetof(OpStat, max), 0, "the longest one"},
    {"bytes", T_LONGLONG, offsetof(OpStat, bytes), 0, "bytes moved"},
    {NULL},
};

static PyGetSetDef OpStat_getset[] = {
    {"mean", (getter)OpStat_mean, NULL, "seconds per operation, or 0.0",
     NULL},
    {NULL},
};

static PyMethodDef OpStat_methods[] = {
    {"add", (PyCFunction)(void (*)(void))OpStat_add, METH_FASTCALL,
     add_doc},
    {"since", (PyCFunction)(void (*)(void))OpStat_since, METH_FASTCALL,
     since_doc},
    {"add_many", (PyCFunction)(void (*)(void))OpStat_add_many,
     METH_FASTCALL, add_many_doc},
    {"merge", (PyCFunction)OpStat_merge, METH_O, merge_doc},
    {NULL},
};

PyDoc_STRVAR(OpStat_doc,
             "OpStat(): count, total and longest duration of one kind of "
             "operation, and the\nbytes it moved");

static PyTypeObject OpStatType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name =
        "hgext3rd.backgroundclose.engine._opstat.OpStat",
    .tp_basicsize = sizeof(OpStat),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = OpStat_doc,
    .tp_methods = OpStat_methods,
    .tp_members = OpStat_members,
    .tp_getset = OpStat_getset,
    .tp_new = PyType_GenericNew,
};

PyDoc_STRVAR(now_doc, "now() -> float: the clock since() reads, in seconds");

static PyObject *now(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args))
{
	return PyFloat_FromDouble(now_seconds());
}

static PyMethodDef module_methods[] = {
    {"now", now, METH_NOARGS, now_doc},
    {NULL},
};

static struct PyModuleDef opstat_module = {
    PyModuleDef_HEAD_INIT,
    "_opstat",
    "The timing report's counters, in C.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* Free-threaded builds (3.13t): refused, as _closelane.c is, so that the
 * import does not turn the GIL back on for the whole process (single-phase
 * init has no Py_mod_gil slot); engine/stats.py then counts in Python. */
PyMODINIT_FUNC PyInit__opstat(void)
{
	PyObject *module;
#ifdef Py_GIL_DISABLED
	PyErr_SetString(PyExc_ImportError,
	                "_opstat is not built for a Python without the GIL");
	return NULL;
#endif
	if (PyType_Ready(&OpStatType) < 0)
		return NULL;
	module = PyModule_Create(&opstat_module);
	if (module == NULL)
		return NULL;
	Py_INCREF(&OpStatType);
	if (PyModule_AddObject(module, "OpStat", (PyObject *)&OpStatType) < 0) {
		Py_DECREF(&OpStatType);
		Py_DECREF(module);
		return NULL;
	}
	return module;
}
