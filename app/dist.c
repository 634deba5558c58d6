/*
** dist.c: the MPI layer of mtpe (dist.h).  The only file that includes
** mpi.h; compiled with MT_HAVE_MPI when CMake found MPI (MT_MPI), else the
** one-process fallbacks at the end.
*/
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* Set by mpirun (Open MPI), by srun/Hydra (PMI) or PMIx launchers. */
static bool launched_by_mpi(int *size) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    *size = 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0]) {
            *size = atoi(v);
            return true;
        }
    }
    return getenv("PMIX_RANK") != NULL;
}

static char mode_name[48] = "flat";
static int64_t mode_chunk; /* floats per chunk; 0 = one call; -1 = per tensor */

static void read_mode(void) {
    static bool done;
    if (done) return;
    done = true;
    const char *m = getenv("MTPE_ALLREDUCE");
    if (m == NULL || !strcmp(m, "") || !strcmp(m, "flat")) return;
    if (!strcmp(m, "tensor")) {
        mode_chunk = -1;
    } else if (!strncmp(m, "chunk:", 6) && atoll(m + 6) > 0) {
        mode_chunk = atoll(m + 6);
    } else {
        fprintf(stderr, "mtpe: MTPE_ALLREDUCE=%s: flat, tensor or chunk:N; using flat\n", m);
        return;
    }
    snprintf(mode_name, sizeof mode_name, "%s", m);
}

const char *app_dist_allreduce_mode(void) {
    read_mode();
    return mode_name;
}

#ifdef MT_HAVE_MPI
#include <mpi.h>

/* The flat buffer's parts: the trainable gradients in parameter order. */
static int64_t grads_numel(mt_params *p) {
    int64_t n = 0;
    for (int i = 0; i < mt_params_count(p); i++) {
        mt_tensor *g = mt_params_grad_at(p, i);
        if (g) n += mt_tensor_numel(g);
    }
    return n;
}

static bool started;
static int rank_, size_ = 1;
static char cmd_name[32] = "mtpe";
static const char *current_op = "MPI";

static void on_mpi_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(*code, text, &len);
    text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
    for (char *c = text; *c; c++)
        if (*c == '\n') *c = ' ';
    fprintf(stderr,
            "mtpe %s: rank %d of %d: MPI error in %s: %s (a process of the job ended or the "
            "network failed); ending the job, the last checkpoint is kept\n",
            cmd_name, rank_, size_, current_op, text);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

mt_status app_dist_init(const char *cmd) {
    int n = 1;
    snprintf(cmd_name, sizeof cmd_name, "%s", cmd);
    if (started || !launched_by_mpi(&n)) return MT_OK;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return mt_seterr(MT_ERR_IO, "MPI_Init failed");
    started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(on_mpi_error, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    if (provided < MPI_THREAD_SERIALIZED && size_ > 1) {
        fprintf(stderr,
                "mtpe %s: this MPI gives thread level %d, mtpe needs "
                "MPI_THREAD_SERIALIZED\n",
                cmd, provided);
        app_dist_abort(1);
    }
    return MT_OK;
}

void app_dist_finalize(void) {
    if (!started) return;
    MPI_Finalize();
    started = false;
    rank_ = 0;
    size_ = 1;
}

int app_dist_rank(void) { return rank_; }
int app_dist_size(void) { return size_; }
bool app_dist_built(void) { return true; }

_Noreturn void app_dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (started && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

/* Waits for a request without spinning: Open MPI's blocking calls poll
** at full speed, which on a machine with fewer free cores than processes
** takes the core from the process being waited for (measured: 2-rank
** translation at half the speed of 1 process on 2 busy cores).  Tests
** every 50 us at first, backing off to 1 ms. */
static void wait_idle(MPI_Request *req) {
    int done = 0;
    long ns = 50000;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}

void app_dist_barrier(void) {
    if (size_ < 2) return;
    current_op = "MPI_Ibarrier";
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_idle(&req);
}

int app_dist_first_failed(bool failed) {
    if (size_ < 2) return failed ? 0 : -1;
    current_op = "MPI_Allreduce (status)";
    int first = failed ? rank_ : size_;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return first < size_ ? first : -1;
}

void app_dist_sum_f64(double *v, int n) {
    if (size_ < 2) return;
    current_op = "MPI_Allreduce (costs and counts)";
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void app_dist_sum_f32(float *v, int64_t n) {
    if (size_ < 2) return;
    current_op = "MPI_Allreduce (gradients)";
    for (int64_t at = 0; at < n; at += INT_MAX / 2) {
        int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        MPI_Allreduce(MPI_IN_PLACE, v + at, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

void app_dist_bcast(void *buf, size_t bytes, int root) {
    if (size_ < 2) return;
    current_op = "MPI_Bcast";
    char *b = buf;
    for (size_t at = 0; at < bytes; at += (size_t)INT_MAX / 2) {
        size_t k = bytes - at < (size_t)INT_MAX / 2 ? bytes - at : (size_t)INT_MAX / 2;
        MPI_Bcast(b + at, (int)k, MPI_BYTE, root, MPI_COMM_WORLD);
    }
}

void app_dist_bcast_alloc(char **buf, size_t *len, int root) {
    if (size_ < 2) return;
    uint64_t n = rank_ == root ? (uint64_t)*len : 0;
    app_dist_bcast(&n, sizeof n, root);
    if (rank_ != root) {
        *buf = mt_xmalloc((size_t)n + 1);
        (*buf)[n] = '\0';
        *len = (size_t)n;
    }
    app_dist_bcast(*buf, (size_t)n, root);
}

#define MSG_TAG 37

void app_dist_send(int to, const void *buf, size_t len) {
    current_op = "MPI_Isend";
    if (len > (size_t)INT_MAX) {
        fprintf(stderr, "mtpe %s: rank %d: a message of %zu bytes is too long\n", cmd_name, rank_,
                len);
        app_dist_abort(1);
    }
    MPI_Request req;
    MPI_Isend(buf, (int)len, MPI_BYTE, to, MSG_TAG, MPI_COMM_WORLD, &req);
    wait_idle(&req);
}

void app_dist_recv(int from, char **buf, size_t *len) {
    current_op = "MPI_Iprobe";
    MPI_Status st;
    int here = 0;
    long ns = 50000;
    for (;;) { /* as wait_idle: no spinning while the line is translated */
        MPI_Iprobe(from, MSG_TAG, MPI_COMM_WORLD, &here, &st);
        if (here) break;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
    current_op = "MPI_Recv";
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    *buf = mt_xmalloc((size_t)n + 1);
    MPI_Recv(*buf, n, MPI_BYTE, from, MSG_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    (*buf)[n] = '\0';
    *len = (size_t)n;
}

mt_status app_dist_sum_grads(mt_params *p, double *wait, double *seconds) {
    read_mode();
    if (wait) *wait = 0;
    if (seconds) *seconds = 0;
    if (size_ < 2) return MT_OK;
    double t0 = app_now();
    app_dist_barrier(); /* the wait for the slowest process, timed apart */
    double t1 = app_now();
    if (wait) *wait = t1 - t0;
    t0 = t1;
    mt_status rc = MT_OK;
    int n = mt_params_count(p);
    if (mode_chunk < 0) { /* per tensor: in place on the CPU, else through a copy */
        for (int i = 0; i < n && rc == MT_OK; i++) {
            mt_tensor *g = mt_params_grad_at(p, i);
            if (g == NULL) continue;
            int64_t k = mt_tensor_numel(g);
            if (g->dev == NULL || g->dev == mt_device_cpu()) {
                app_dist_sum_f32(g->data, k);
                continue;
            }
            float *h = mt_try_malloc((size_t)k * sizeof(float));
            if (h == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory for the all-reduce");
            rc = mt_tensor_get(g, h, (size_t)k * sizeof(float));
            if (rc == MT_OK) app_dist_sum_f32(h, k);
            if (rc == MT_OK) rc = mt_tensor_set(g, h, (size_t)k * sizeof(float));
            mt_free(h);
        }
    } else {
        /* one buffer for the run: allocated at the first call */
        static float *flat;
        static int64_t flat_n = -1;
        int64_t total = grads_numel(p);
        if (flat_n != total) {
            mt_free(flat);
            flat = mt_try_malloc((size_t)(total > 0 ? total : 1) * sizeof(float));
            flat_n = flat ? total : -1;
            if (flat == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory for the all-reduce");
        }
        float *at = flat;
        for (int i = 0; i < n && rc == MT_OK; i++) {
            mt_tensor *g = mt_params_grad_at(p, i);
            if (g == NULL) continue;
            rc = mt_tensor_get(g, at, mt_tensor_bytes(g));
            at += mt_tensor_numel(g);
        }
        if (rc == MT_OK) {
            int64_t step = mode_chunk > 0 ? mode_chunk : total;
            for (int64_t o = 0; o < total; o += step)
                app_dist_sum_f32(flat + o, total - o < step ? total - o : step);
        }
        at = flat;
        for (int i = 0; i < n && rc == MT_OK; i++) {
            mt_tensor *g = mt_params_grad_at(p, i);
            if (g == NULL) continue;
            rc = mt_tensor_set(g, at, mt_tensor_bytes(g));
            at += mt_tensor_numel(g);
        }
    }
    if (seconds) *seconds = app_now() - t0;
    return rc;
}

#else /* no MPI: one process */

mt_status app_dist_init(const char *cmd) {
    int n = 1;
    if (launched_by_mpi(&n) && n > 1)
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "started by mpirun with %d processes, but this mtpe was built without "
                         "MPI (install libopenmpi-dev and rebuild, or run one process)",
                         n);
    (void)cmd;
    return MT_OK;
}
void app_dist_finalize(void) {}
int app_dist_rank(void) { return 0; }
int app_dist_size(void) { return 1; }
bool app_dist_built(void) { return false; }
_Noreturn void app_dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    exit(code);
}
void app_dist_barrier(void) {}
int app_dist_first_failed(bool failed) { return failed ? 0 : -1; }
void app_dist_sum_f64(double *v, int n) { (void)v, (void)n; }
void app_dist_sum_f32(float *v, int64_t n) { (void)v, (void)n; }
void app_dist_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
void app_dist_bcast_alloc(char **buf, size_t *len, int root) { (void)buf, (void)len, (void)root; }
void app_dist_send(int to, const void *buf, size_t len) {
    (void)to, (void)buf, (void)len;
    MT_ASSERT(!"app_dist_send without MPI");
}
void app_dist_recv(int from, char **buf, size_t *len) {
    (void)from, (void)buf, (void)len;
    MT_ASSERT(!"app_dist_recv without MPI");
}
mt_status app_dist_sum_grads(mt_params *p, double *wait, double *seconds) {
    (void)p;
    read_mode();
    if (wait) *wait = 0;
    if (seconds) *seconds = 0;
    return MT_OK;
}
#endif
