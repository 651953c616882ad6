// Interfaces configured with different element sizes (UCX_GDRPIPE_SEG_SIZE)
// or FIFO depths (UCX_GDRPIPE_FIFO_SIZE). A sender's messages are bounded by
// its own interface's payload size, so connecting to a peer whose elements
// are smaller must fail at once, with an error that names the setting and
// both sizes; everything else must work.
#include "gdrpipe/wire/shm_iface.hpp"

#include "gp_catch.hpp"

#include <cstring>
#include <string>
#include <vector>

using namespace gdrpipe::wire;

namespace {

// `n` messages of `len` bytes from `tx` (connected to rx's owner) into `rx`,
// drained as they go; true when every byte arrived in order.
bool exchange(ShmPeer *tx, Fifo &rx, uint32_t n, uint32_t len) {
    std::vector<uint8_t> msg(len);
    uint32_t sent = 0, got = 0;
    while (got < n) {
        if (sent < n) {
            uint64_t idx;
            if (void *p = tx->fifo().reserve(&idx)) {
                for (uint32_t i = 0; i < len; ++i) msg[i] = uint8_t(sent * 31 + i);
                std::memcpy(p, msg.data(), len);
                tx->fifo().commit(idx, 3, len);
                ++sent;
                continue;
            }
        }
        Fifo::Message m{};
        if (!rx.peek(&m)) continue;
        if (m.corrupt || m.am_id != 3 || m.length != len) return false;
        for (uint32_t i = 0; i < len; ++i) {
            if (static_cast<uint8_t *>(m.data)[i] != uint8_t(got * 31 + i)) return false;
        }
        rx.release();
        ++got;
    }
    return true;
}

} // namespace

TEST_CASE("different element sizes: refused at connect, with both sizes named",
          "[wire][security]") {
    std::string err;
    auto small = ShmIface::open(ShmConfig{16, 64}, &err);
    auto big = ShmIface::open(ShmConfig{16, 8192}, &err);
    REQUIRE(small);
    REQUIRE(big);
    REQUIRE(small->max_payload() < big->max_payload());

    // big would send up to its own payload size into small's elements
    ShmAddress sa = small->address();
    err.clear();
    ShmPeer *bad = big->connect(&sa, sizeof(sa), &err);
    CHECK(bad == nullptr);
    if (bad != nullptr) big->release(bad);
    INFO(err);
    CHECK(err.find("UCX_GDRPIPE_SEG_SIZE") != std::string::npos);
    CHECK(err.find(std::to_string(small->max_payload())) != std::string::npos);
    CHECK(err.find(std::to_string(big->max_payload())) != std::string::npos);

    // the other way round every message of small fits
    ShmAddress ba = big->address();
    ShmPeer *ok = small->connect(&ba, sizeof(ba), &err);
    REQUIRE(ok != nullptr);
    CHECK(ok->fifo().max_payload() >= small->max_payload());
    CHECK(exchange(ok, big->rx(), 100, small->max_payload()));
    small->release(ok);
}

TEST_CASE("different FIFO depths: both directions work", "[wire]") {
    std::string err;
    auto shallow = ShmIface::open(ShmConfig{2, 256}, &err);
    auto deep = ShmIface::open(ShmConfig{512, 256}, &err);
    REQUIRE(shallow);
    REQUIRE(deep);
    ShmAddress sa = shallow->address(), da = deep->address();
    ShmPeer *to_shallow = deep->connect(&sa, sizeof(sa), &err);
    ShmPeer *to_deep = shallow->connect(&da, sizeof(da), &err);
    REQUIRE(to_shallow != nullptr);
    REQUIRE(to_deep != nullptr);
    CHECK(exchange(to_shallow, shallow->rx(), 1000, deep->max_payload()));
    CHECK(exchange(to_deep, deep->rx(), 1000, shallow->max_payload()));
    deep->release(to_shallow);
    shallow->release(to_deep);
}
