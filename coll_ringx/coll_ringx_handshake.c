/*
 * coll_ringx_handshake.c - the end-of-call handshake of the message-based
 * engines (see coll_ringx_sched.h for why it exists).
 *
 *   posted   fins sent to every rank received from, fin receives posted
 *            for every rank sent to;
 *   waiting  (only if some send of the engine is still pending) every fin
 *            received: the receivers have everything, the sends may go;
 *   closing  the fins this rank sent have left.
 */
#include "coll_ringx.h"

enum { HS_NEW, HS_WAITING, HS_CLOSING, HS_DONE };

void ringx_handshake_add(ringx_handshake_t *h, int to, int rank)
{
    int *peers = to ? h->to : h->from;
    int *n = to ? &h->nto : &h->nfrom;

    if (rank < 0) {
        return;
    }
    for (int i = 0; i < *n; i++) {
        if (peers[i] == rank) {
            return;
        }
    }
    if (*n < RINGX_HANDSHAKE_MAX_PEERS) {
        peers[(*n)++] = rank;
    }
}

static int post(ringx_handshake_t *h, mca_coll_ringx_module_t *m, uint32_t seq)
{
    uint64_t fin = ringx_tag_fin(m->comm_id, seq);
    int rc = OMPI_SUCCESS;

    for (int i = 0; rc == OMPI_SUCCESS && i < h->nfrom; i++) {
        rc = ringx_ucx_isend(m->peers[h->from[i]], NULL, 0, fin, &h->fin_send[i].req);
    }
    for (int i = 0; rc == OMPI_SUCCESS && i < h->nto; i++) {
        rc = ringx_ucx_irecv(NULL, 0, fin, &h->fin_recv[i].req);
    }
    return rc;
}

/* 1 when every transfer of xs[0..n) has completed, 0 if some is pending,
 * or the first error. */
static int all_complete(ringx_mem_t *mem, ringx_xfer_t *xs, int n)
{
    int all = 1;
    for (int i = 0; i < n; i++) {
        int rc = ringx_xfer_test(mem, &xs[i]);
        if (rc < 0) {
            return rc;
        }
        all &= rc;
    }
    return all;
}

static void park_fin_recvs(ringx_handshake_t *h, mca_coll_ringx_module_t *m)
{
    for (int i = 0; i < h->nto; i++) {
        ringx_module_park(m, &h->fin_recv[i].req);
    }
}

int ringx_handshake_progress(ringx_handshake_t *h, mca_coll_ringx_module_t *m,
                             ringx_mem_t *mem, uint32_t seq,
                             const ringx_handshake_sends_t *sends)
{
    int rc;

    switch (h->phase) {
    case HS_NEW:
        if ((rc = post(h, m, seq)) != OMPI_SUCCESS) {
            return rc;
        }
        if ((rc = sends->complete(sends->engine)) < 0) {
            return rc;
        }
        if (rc == 1) {
            park_fin_recvs(h, m);
            h->phase = HS_CLOSING;
        } else {
            h->phase = HS_WAITING;
        }
        return ringx_handshake_progress(h, m, mem, seq, sends);
    case HS_WAITING:
        if ((rc = all_complete(mem, h->fin_recv, h->nto)) != 1) {
            return rc;
        }
        sends->release(sends->engine);
        h->phase = HS_CLOSING;
        /* fall through */
    case HS_CLOSING:
        if ((rc = all_complete(mem, h->fin_send, h->nfrom)) != 1) {
            return rc;
        }
        h->phase = HS_DONE;
        /* fall through */
    default:
        return RINGX_DONE;
    }
}

void ringx_handshake_abandon(ringx_handshake_t *h)
{
    for (int i = 0; i < h->nto; i++) {
        ringx_ucx_abandon(&h->fin_recv[i].req);
    }
    for (int i = 0; i < h->nfrom; i++) {
        ringx_ucx_abandon(&h->fin_send[i].req);
    }
}
