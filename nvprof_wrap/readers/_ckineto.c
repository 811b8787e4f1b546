/* The per-event loop of the Kineto / Chrome trace reader (readers/_kineto_rows.Rows.add_all), compiled for the
 * events that make up nearly all of a torch.profiler trace: CPU op and annotation ranges, CUDA runtime and driver
 * calls, kernels and flow arrows, each in its usual form (numbers in range, the keys present, text where text
 * belongs). Every other event — copies, sets, begin/end pairs, metadata, a number given as text, a missing key, the
 * first host event (the host's pid), a call name not seen yet (its kind) — is handed to the Python loop
 * (Rows._add_python) as it comes, so the rows keep the file's order and every rule stays in one place: this file
 * only takes the short way the Python loop takes for the same event, with the same values
 * (tests/readers/test_kineto_native.py compares both on every real trace of the fixtures and on hostile events).
 *
 * Why: the Python loop cost ~3 us an event on this project's 2-core machine, as much as parsing the event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* the category codes Rows passes in (cats: a dict of category name -> code) */
enum { OTHER = 0, RANGE_HOST = 1, RANGE = 2, RUNTIME = 3, KERNEL = 4, FLOW = 5, PYTHON = 6 };

static PyObject *s_ph, *s_ts, *s_dur, *s_pid, *s_tid, *s_name, *s_args, *s_cat, *s_device, *s_correlation,
    *s_host_pid, *one;

/* A number the Python loop takes the short way: an int or a float (never a bool, never a subclass), as a double
 * (for the bounds) and, for an int, exactly. 0: not such a number; -1: an int past 64 bits. */
static int number(PyObject *v, double *as_double, long long *as_int, int *is_int) {
    if (v == NULL)
        return 0;
    if (PyFloat_CheckExact(v)) {
        *as_double = PyFloat_AS_DOUBLE(v);
        *is_int = 0;
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return -1;
        if (x == -1 && PyErr_Occurred())
            return -1;
        *as_int = x;
        *as_double = (double)x; /* exact below 2^53; past it every bound below is decided the same */
        *is_int = 1;
        return 1;
    }
    return 0;
}

/* int(x * 1000) of a number already checked to lie within +-2^62/1000 */
static long long times_1000(double d, long long i, int is_int) {
    return is_int ? i * 1000 : (long long)(d * 1000.0);
}

static PyObject *get(PyObject *d, PyObject *key) { /* borrowed; NULL when absent (no error: keys are str) */
    return PyDict_GetItemWithError(d, key);
}

/* an id of ids (a dict), made by the Python side (Rows._id) where the value has none yet; new reference */
static PyObject *id_of(PyObject *rows, PyObject *ids, PyObject *value) {
    PyObject *i = PyDict_GetItemWithError(ids, value);
    if (i != NULL) {
        Py_INCREF(i);
        return i;
    }
    if (PyErr_Occurred())
        return NULL;
    return PyObject_CallMethod(rows, "_id", "OO", ids, value);
}

/* the id of the thread (pid, tid), a missing one None as the Python loop's ev.get gives it; new reference */
static PyObject *thread_id(PyObject *rows, PyObject *threads, PyObject *pid, PyObject *tid) {
    PyObject *thread = PyTuple_Pack(2, pid ? pid : Py_None, tid ? tid : Py_None);
    if (thread == NULL)
        return NULL;
    PyObject *i = id_of(rows, threads, thread);
    Py_DECREF(thread);
    return i;
}

static int append_new(PyObject *list, PyObject *item) { /* steals item */
    if (item == NULL)
        return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* add_all(rows, events, cats, kl, rt, rng, threads, names, range_names, api, call_kinds, gpu_pids, flop_ops,
 *         max_ts_us, max_dur_us) -> (ranges, on_gpu) counted here; the events it does not take go to
 *         rows._add_python([event]) in turn */
static PyObject *py_add_all(PyObject *self, PyObject *a) {
    PyObject *rows, *events, *cats, *kl, *rt, *rng, *threads, *names, *range_names, *api, *call_kinds, *gpu_pids,
        *flop_ops;
    double max_ts, max_dur;
    if (!PyArg_ParseTuple(a, "OO!O!O!O!O!O!O!O!O!O!OOdd", &rows, &PyList_Type, &events, &PyDict_Type, &cats,
                          &PyList_Type, &kl, &PyList_Type, &rt, &PyList_Type, &rng, &PyDict_Type, &threads,
                          &PyDict_Type, &names, &PyDict_Type, &range_names, &PyDict_Type, &api, &PyDict_Type,
                          &call_kinds, &gpu_pids, &flop_ops, &max_ts, &max_dur))
        return NULL;
    if (!PyAnySet_Check(gpu_pids) || !PyAnySet_Check(flop_ops)) {
        PyErr_SetString(PyExc_TypeError, "gpu_pids and flop_ops are sets");
        return NULL;
    }
    long long ranges = 0, on_gpu = 0;
    int host_known = -1; /* rows.host_pid is not None; -1: not read yet */
    Py_ssize_t n = PyList_GET_SIZE(events);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *ev = PyList_GET_ITEM(events, k);
        if (!PyDict_CheckExact(ev))
            continue; /* as the Python loop: not an event */
        PyObject *cat = get(ev, s_cat);
        long code = PYTHON; /* no category, or not text: the Python loop */
        if (cat != NULL && PyUnicode_CheckExact(cat)) {
            PyObject *c = PyDict_GetItemWithError(cats, cat);
            code = c != NULL ? PyLong_AsLong(c) : OTHER; /* copies and sets are PYTHON in cats */
        }
        if (PyErr_Occurred())
            return NULL;
        if (code == RANGE_HOST || code == RUNTIME) { /* a host category: the first such event names the host */
            if (host_known < 0) {
                PyObject *h = PyObject_GetAttr(rows, s_host_pid);
                if (h == NULL)
                    return NULL;
                host_known = h != Py_None;
                Py_DECREF(h);
            }
            if (!host_known)
                code = PYTHON;
        }
        if (code == RANGE_HOST || code == RANGE) {
            PyObject *ph = get(ev, s_ph), *t = get(ev, s_ts), *d = get(ev, s_dur), *pid = get(ev, s_pid),
                     *tid = get(ev, s_tid), *name = get(ev, s_name);
            if (ph == NULL || t == NULL || d == NULL || pid == NULL || tid == NULL || name == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                goto python; /* a key missing: the general way */
            }
            if (!PyUnicode_CheckExact(ph) || PyUnicode_CompareWithASCIIString(ph, "X") != 0) {
                if (PyUnicode_CheckExact(ph)) { /* text other than "X": counted, nothing read */
                    ranges++;
                    continue;
                }
                goto python;
            }
            double td, dd;
            long long ti = 0, di = 0;
            int t_int = 0, d_int = 0;
            if (number(t, &td, &ti, &t_int) != 1 || number(d, &dd, &di, &d_int) != 1 || !(-max_ts < td && td < max_ts)
                || !(0 <= dd && dd <= max_dur)) {
                PyErr_Clear();
                goto python; /* checked on the Python side */
            }
            if (!PyUnicode_CheckExact(name))
                goto python;
            PyObject *tid_id = thread_id(rows, threads, pid, tid);
            if (tid_id == NULL)
                return NULL;
            PyObject *nid = id_of(rows, range_names, name);
            if (nid == NULL) {
                Py_DECREF(tid_id);
                return NULL;
            }
            long long s = times_1000(td, ti, t_int);
            long long e = s + times_1000(dd, di, d_int);
            PyObject *row = Py_BuildValue("(OLLO)", tid_id, s, e, nid);
            ranges++;
            if (append_new(rng, row) < 0) {
                Py_DECREF(tid_id);
                Py_DECREF(nid);
                return NULL;
            }
            int flop = PySet_Contains(flop_ops, name);
            if (flop > 0) {
                PyObject *r = PyObject_CallMethod(rows, "_flops", "OOLLOO", ev, tid_id, s, e, nid, name);
                Py_XDECREF(r);
                if (r == NULL)
                    flop = -1;
            }
            Py_DECREF(tid_id);
            Py_DECREF(nid);
            if (flop < 0)
                return NULL;
            continue;
        }
        if (code == FLOW) {
            PyObject *pid = get(ev, s_pid);
            if (pid == NULL && PyErr_Occurred())
                return NULL;
            int on = PySet_Contains(gpu_pids, pid ? pid : Py_None);
            if (on < 0) {
                PyErr_Clear();
                goto python; /* an unhashable pid: the Python loop says what it says */
            }
            on_gpu += on;
            continue;
        }
        if (code == RUNTIME) {
            PyObject *name = get(ev, s_name), *t = get(ev, s_ts);
            if (PyErr_Occurred())
                return NULL;
            if (name == NULL || !PyUnicode_CheckExact(name))
                goto python;
            PyObject *kind = PyDict_GetItemWithError(call_kinds, name);
            if (kind == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                goto python; /* a call not seen yet: its kind is looked up there */
            }
            double td, dd;
            long long ti = 0, di = 0;
            int t_int = 0, d_int = 0;
            if (number(t, &td, &ti, &t_int) != 1 || !(-max_ts < td && td < max_ts)) {
                PyErr_Clear();
                goto python;
            }
            PyObject *d = get(ev, s_dur), *args = get(ev, s_args), *pid = get(ev, s_pid), *tid = get(ev, s_tid);
            if (PyErr_Occurred())
                return NULL;
            int dn = number(d, &dd, &di, &d_int);
            PyErr_Clear();
            PyObject *corr = Py_None;
            if (args != NULL && PyDict_CheckExact(args)) {
                corr = PyDict_GetItemWithError(args, s_correlation);
                if (corr == NULL) {
                    if (PyErr_Occurred())
                        return NULL;
                    corr = Py_None;
                }
            }
            PyObject *tid_id = thread_id(rows, threads, pid, tid);
            if (tid_id == NULL)
                return NULL;
            PyObject *count = PyDict_GetItemWithError(api, name);
            PyObject *more = count ? PyNumber_Add(count, one) : PyLong_FromLong(1);
            if (more == NULL || PyDict_SetItem(api, name, more) < 0) {
                Py_XDECREF(more);
                Py_DECREF(tid_id);
                return NULL;
            }
            Py_DECREF(more);
            long long began = times_1000(td, ti, t_int);
            PyObject *ends;
            if (dn == 1 && 0 <= dd && dd <= max_dur)
                ends = PyLong_FromLongLong(began + times_1000(dd, di, d_int));
            else
                ends = Py_NewRef(Py_None);
            if (ends == NULL) {
                Py_DECREF(tid_id);
                return NULL;
            }
            PyObject *row = Py_BuildValue("(OOLOO)", corr, tid_id, began, ends, kind);
            Py_DECREF(tid_id);
            Py_DECREF(ends);
            if (append_new(rt, row) < 0)
                return NULL;
            continue;
        }
        if (code == OTHER) { /* Rows._other: a process's name (metadata) there; else an event on a GPU's process? */
            PyObject *ph = get(ev, s_ph), *pid = get(ev, s_pid);
            if (PyErr_Occurred())
                return NULL;
            if (ph != NULL && (!PyUnicode_CheckExact(ph) || PyUnicode_CompareWithASCIIString(ph, "M") == 0))
                goto python;
            int on = PySet_Contains(gpu_pids, pid ? pid : Py_None);
            if (on < 0) {
                PyErr_Clear();
                goto python;
            }
            on_gpu += on;
            continue;
        }
        if (code == KERNEL) {
            PyObject *args = get(ev, s_args), *name = get(ev, s_name), *t = get(ev, s_ts), *d = get(ev, s_dur);
            if (PyErr_Occurred())
                return NULL;
            PyObject *dev = args != NULL && PyDict_CheckExact(args) ? get(args, s_device) : NULL;
            if (PyErr_Occurred())
                return NULL;
            double td, dd;
            long long ti = 0, di = 0;
            int t_int = 0, d_int = 0;
            if (dev == NULL || !PyLong_CheckExact(dev) || name == NULL || !PyUnicode_CheckExact(name)
                || number(t, &td, &ti, &t_int) != 1 || number(d, &dd, &di, &d_int) != 1
                || !(0 < td && td < max_ts) || !(0 <= dd && dd <= max_dur)) {
                PyErr_Clear();
                goto python; /* at 0 or before, a device not an int, …: Rows._kernel says */
            }
            PyObject *corr = PyDict_GetItemWithError(args, s_correlation);
            if (corr == NULL) {
                if (PyErr_Occurred())
                    return NULL;
                corr = Py_None;
            }
            PyObject *nid = id_of(rows, names, name);
            if (nid == NULL)
                return NULL;
            long long s = times_1000(td, ti, t_int), du = times_1000(dd, di, d_int);
            PyObject *row = Py_BuildValue("(OOOLLL)", corr, dev, nid, s, s + du, du);
            Py_DECREF(nid);
            if (append_new(kl, row) < 0)
                return NULL;
            continue;
        }
    python: {
        PyObject *one = PyList_New(1);
        if (one == NULL)
            return NULL;
        Py_INCREF(ev);
        PyList_SET_ITEM(one, 0, ev);
        PyObject *r = PyObject_CallMethod(rows, "_add_python", "O", one);
        Py_DECREF(one);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
        host_known = -1; /* the Python loop may have named the host */
    }
    }
    return Py_BuildValue("(LL)", ranges, on_gpu);
}

static PyMethodDef methods[] = {
    {"add_all", py_add_all, METH_VARARGS,
     "add_all(rows, events, cats, kl, rt, rng, threads, names, range_names, api, call_kinds, gpu_pids, flop_ops, "
     "max_ts_us, max_dur_us) -> (ranges, on_gpu) counted here: the usual ranges, runtime calls, kernels and flows "
     "appended as rows; every other event handed to rows._add_python([event]) in turn"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ckineto",
                                    "The Kineto reader's per-event loop, compiled (readers/_kineto_rows.py)", -1,
                                    methods};

PyMODINIT_FUNC PyInit__ckineto(void) {
#define INTERN(var, text)                                                                                              \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                                              \
        return NULL;
    INTERN(s_ph, "ph") INTERN(s_ts, "ts") INTERN(s_dur, "dur") INTERN(s_pid, "pid") INTERN(s_tid, "tid")
    INTERN(s_name, "name") INTERN(s_args, "args") INTERN(s_cat, "cat") INTERN(s_device, "device")
    INTERN(s_correlation, "correlation") INTERN(s_host_pid, "host_pid")
    if ((one = PyLong_FromLong(1)) == NULL)
        return NULL;
#undef INTERN
    return PyModule_Create(&module);
}
