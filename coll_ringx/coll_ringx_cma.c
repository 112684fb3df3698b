/*
 * coll_ringx_cma.c - single-copy reads between processes of one node
 * through UCX's cma transport (see coll_ringx_cma.h).
 *
 * cma reads with the kernel's cross-memory attach (process_vm_readv), so a
 * read is one copy, done by the reader alone, and complete when the call
 * returns; the peer takes no part.  The transport is opened once per
 * process: a component, its memory domain, a worker and an interface.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#include "ompi/constants.h"
#include "opal/util/output.h"

#include "coll_ringx_cma.h"

static struct {
    int open;
    int output;
    uct_component_h *components;
    uct_component_h component;
    uct_md_h md;
    size_t key_bytes;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h iface;
    size_t max_get;                 /* largest single read */
    pthread_mutex_t lock;           /* the interface's reads: one thread at a time */
    char *address;                  /* device address length, then the addresses */
    size_t address_len;
} cma = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int fail(const char *what, ucs_status_t status)
{
    opal_output_verbose(1, cma.output, "coll:ringx: no single-copy reads (%s: %s); direct "
                        "reads go through UCP", what, ucs_status_string(status));
    ringx_cma_close();
    return OMPI_ERR_NOT_AVAILABLE;
}

static ucs_status_t find_component(void)
{
    unsigned n = 0;
    ucs_status_t status = uct_query_components(&cma.components, &n);

    for (unsigned i = 0; status == UCS_OK && i < n; i++) {
        uct_component_attr_t attr = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        if (uct_component_query(cma.components[i], &attr) == UCS_OK &&
            strcmp(attr.name, "cma") == 0) {
            cma.component = cma.components[i];
            return UCS_OK;
        }
    }
    return status == UCS_OK ? UCS_ERR_NO_DEVICE : status;
}

static ucs_status_t open_md(void)
{
    uct_md_config_t *config;
    uct_md_attr_t attr;
    ucs_status_t status = uct_md_config_read(cma.component, NULL, NULL, &config);

    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_open(cma.component, "cma", config, &cma.md);
    uct_config_release(config);
    if (status == UCS_OK && (status = uct_md_query(cma.md, &attr)) == UCS_OK) {
        cma.key_bytes = attr.rkey_packed_size;
    }
    return status;
}

static ucs_status_t open_iface(void)
{
    uct_iface_config_t *config;
    uct_iface_params_t params = {
        .field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE,
        .open_mode = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device = { .tl_name = "cma", .dev_name = "memory" },
    };
    uct_iface_attr_t attr;
    ucs_status_t status = uct_md_iface_config_read(cma.md, "cma", NULL, NULL, &config);

    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_open(cma.md, cma.worker, &params, config, &cma.iface);
    uct_config_release(config);
    if (status == UCS_OK && (status = uct_iface_query(cma.iface, &attr)) == UCS_OK) {
        if (!(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) || attr.cap.get.max_zcopy == 0) {
            return UCS_ERR_UNSUPPORTED;
        }
        cma.max_get = attr.cap.get.max_zcopy;
        cma.address_len = 2 * sizeof(uint16_t) + attr.device_addr_len + attr.iface_addr_len;
        cma.address = calloc(1, cma.address_len);
        if (cma.address == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        uint16_t lens[2] = { (uint16_t)attr.device_addr_len, (uint16_t)attr.iface_addr_len };
        char *dev = cma.address + sizeof(lens);
        memcpy(cma.address, lens, sizeof(lens));
        status = uct_iface_get_device_address(cma.iface, (uct_device_addr_t *)dev);
        if (status == UCS_OK) {
            status = uct_iface_get_address(cma.iface, (uct_iface_addr_t *)(dev + lens[0]));
        }
    }
    return status;
}

int ringx_cma_open(int output)
{
    ucs_status_t status;

    cma.output = output;
    if ((status = find_component()) != UCS_OK) {
        return fail("no cma component", status);
    }
    if ((status = open_md()) != UCS_OK) {
        return fail("uct_md_open", status);
    }
    status = ucs_async_context_create(UCS_ASYNC_MODE_POLL, &cma.async);
    if (status == UCS_OK) {
        status = uct_worker_create(cma.async, UCS_THREAD_MODE_MULTI, &cma.worker);
    }
    if (status != UCS_OK) {
        return fail("uct_worker_create", status);
    }
    if ((status = open_iface()) != UCS_OK) {
        return fail("uct_iface_open", status);
    }
    cma.open = 1;
    return OMPI_SUCCESS;
}

void ringx_cma_close(void)
{
    if (cma.iface != NULL) {
        uct_iface_close(cma.iface);
    }
    if (cma.worker != NULL) {
        uct_worker_destroy(cma.worker);
    }
    if (cma.async != NULL) {
        ucs_async_context_destroy(cma.async);
    }
    if (cma.md != NULL) {
        uct_md_close(cma.md);
    }
    if (cma.components != NULL) {
        uct_release_component_list(cma.components);
    }
    free(cma.address);
    memset(&cma, 0, sizeof(cma));
}

const void *ringx_cma_address(size_t *len)
{
    *len = cma.open ? cma.address_len : 0;
    return cma.open ? cma.address : NULL;
}

void *ringx_cma_connect(const void *address, size_t len)
{
    uint16_t lens[2];
    uct_ep_h ep = NULL;

    if (!cma.open || len < sizeof(lens)) {
        return NULL;
    }
    memcpy(lens, address, sizeof(lens));
    if (len != sizeof(lens) + (size_t)lens[0] + lens[1]) {
        return NULL;
    }
    const char *dev = (const char *)address + sizeof(lens);
    uct_ep_params_t params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface = cma.iface,
        .dev_addr = (const uct_device_addr_t *)dev,
        .iface_addr = (const uct_iface_addr_t *)(dev + lens[0]),
    };
    /* Only a process on this node: the device address names the node. */
    if (!uct_iface_is_reachable(cma.iface, params.dev_addr, params.iface_addr) ||
        uct_ep_create(&params, &ep) != UCS_OK) {
        return NULL;
    }
    return ep;
}

void ringx_cma_disconnect(void *ep)
{
    if (ep != NULL) {
        uct_ep_destroy(ep);
    }
}

size_t ringx_cma_key_bytes(void)
{
    return cma.key_bytes;
}

int ringx_cma_register(const void *buf, size_t len, void **memh, void *key)
{
    ucs_status_t status = uct_md_mem_reg(cma.md, (void *)buf, len, UCT_MD_MEM_ACCESS_ALL,
                                         (uct_mem_h *)memh);
    if (status == UCS_OK && (status = uct_md_mkey_pack(cma.md, *memh, key)) != UCS_OK) {
        uct_md_mem_dereg(cma.md, *memh);
    }
    if (status != UCS_OK) {
        *memh = NULL;
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

void ringx_cma_deregister(void *memh)
{
    if (memh != NULL) {
        uct_md_mem_dereg(cma.md, memh);
    }
}

void *ringx_cma_key_unpack(const void *key)
{
    uct_rkey_bundle_t *bundle = malloc(sizeof(*bundle));
    if (bundle != NULL && uct_rkey_unpack(cma.component, key, bundle) != UCS_OK) {
        free(bundle);
        bundle = NULL;
    }
    return bundle;
}

void ringx_cma_key_release(void *unpacked)
{
    if (unpacked != NULL) {
        uct_rkey_release(cma.component, unpacked);
        free(unpacked);
    }
}

static void read_done(uct_completion_t *self)
{
    (void)self;
}

static int get_locked(void *ep, void *buf, size_t len, uint64_t remote, void *unpacked)
{
    const uct_rkey_bundle_t *bundle = unpacked;

    for (size_t off = 0; off < len;) {
        size_t chunk = len - off < cma.max_get ? len - off : cma.max_get;
        uct_iov_t iov = { .buffer = (char *)buf + off, .length = chunk, .count = 1 };
        uct_completion_t done = { .func = read_done, .count = 1 };
        ucs_status_t status = uct_ep_get_zcopy(ep, &iov, 1, remote + off, bundle->rkey, &done);

        /* the read completes in the worker's progress (the interface's queue) */
        while (status == UCS_INPROGRESS && done.count > 0) {
            uct_worker_progress(cma.worker);
        }
        if (status == UCS_INPROGRESS) {
            status = done.status;
        }
        if (status != UCS_OK) {
            opal_output_verbose(1, cma.output, "coll:ringx: cma read failed: %s",
                                ucs_status_string(status));
            return OMPI_ERROR;
        }
        off += chunk;
    }
    return OMPI_SUCCESS;
}

/* UCT interfaces are not thread safe: UCX 1.13's cma queues a read on the
 * interface's arbiter and completes it in the worker's progress, and two
 * threads reading at once (nonblocking calls on two communicators) tripped
 * the arbiter's assertion. */
int ringx_cma_get(void *ep, void *buf, size_t len, uint64_t remote, void *unpacked)
{
    int rc;

    pthread_mutex_lock(&cma.lock);
    rc = get_locked(ep, buf, len, remote, unpacked);
    pthread_mutex_unlock(&cma.lock);
    return rc;
}