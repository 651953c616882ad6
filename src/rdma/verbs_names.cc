// Names of the verbs enums (for logs and test messages).
#include <gdrpipe/rdma/gpudirect.hpp>
#include <gdrpipe/rdma/verbs.hpp>

namespace gdrpipe::rdma {

const char *to_string(WcStatus s) noexcept {
    switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "local length error";
    case WcStatus::loc_qp_op_err: return "local QP operation error";
    case WcStatus::loc_prot_err: return "local protection error";
    case WcStatus::wr_flush_err: return "work request flushed";
    case WcStatus::loc_access_err: return "local access error";
    case WcStatus::rem_inv_req_err: return "remote invalid request";
    case WcStatus::rem_access_err: return "remote access error";
    case WcStatus::rem_op_err: return "remote operation error";
    case WcStatus::retry_exc_err: return "transport retry counter exceeded";
    case WcStatus::rnr_retry_exc_err: return "RNR retry counter exceeded";
    case WcStatus::fatal_err: return "fatal error";
    case WcStatus::general_err: return "general error";
    }
    return "unknown completion status";
}

const char *to_string(WcOpcode o) noexcept {
    switch (o) {
    case WcOpcode::send: return "send";
    case WcOpcode::rdma_write: return "rdma_write";
    case WcOpcode::rdma_read: return "rdma_read";
    case WcOpcode::recv: return "recv";
    case WcOpcode::recv_rdma_with_imm: return "recv_rdma_with_imm";
    }
    return "?";
}

const char *to_string(QpState s) noexcept {
    switch (s) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
    case QpState::error: return "ERR";
    }
    return "?";
}

const char *to_string(GpuDirect g) noexcept {
    switch (g) {
    case GpuDirect::none: return "none";
    case GpuDirect::peermem: return "nvidia-peermem";
    case GpuDirect::dmabuf: return "dma-buf";
    }
    return "?";
}

} // namespace gdrpipe::rdma
