// The dumbbell of benchmarks/peers/run.py in htsim (csg-htsim, built from its public
// source by run.py; none of htsim's code is in this repository): FLOWS bulk TCP flows over
// one bottleneck of RATE_MBPS with a DropTail queue of QUEUE_PKTS full packets, DELAY_US of
// propagation each way, an ACK path of the same rate, for DURATION_S simulated seconds.
// Prints the payload bytes the sinks acknowledged cumulatively and the events processed.
//
// htsim's TcpSrc is its own NewReno-style sender (no SACK, no delayed ACKs), so the
// comparison is of simulator speed on the same path, not of the same TCP.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "config.h"
#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "route.h"
#include "tcp.h"

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: " << argv[0]
                  << " FLOWS RATE_MBPS DELAY_US QUEUE_PKTS DURATION_S PACKET_BYTES\n";
        return 2;
    }
    const int flows = std::atoi(argv[1]);
    const double rate_mbps = std::atof(argv[2]);
    const double delay_us = std::atof(argv[3]);
    const double queue_pkts = std::atof(argv[4]);
    const double duration_s = std::atof(argv[5]);
    const int packet_bytes = std::atoi(argv[6]);

    EventList events;
    events.setEndtime(timeFromSec(duration_s));
    Packet::set_packet_size(packet_bytes);

    // data: bottleneck queue, then the propagation delay; ACKs: their own queue and delay
    Queue data_queue(speedFromMbps(rate_mbps), memFromPkt(queue_pkts), events, nullptr);
    Pipe data_pipe(timeFromUs(delay_us), events);
    Queue ack_queue(speedFromMbps(rate_mbps), memFromPkt(queue_pkts), events, nullptr);
    Pipe ack_pipe(timeFromUs(delay_us), events);
    // htsim's retransmission timers are scanned by one object every 10 ms
    TcpRtxTimerScanner timers(timeFromMs(10), events);

    std::vector<TcpSink*> sinks;
    for (int i = 0; i < flows; i++) {
        auto* src = new TcpSrc(nullptr, nullptr, events);
        auto* sink = new TcpSink();
        timers.registerTcp(*src);
        auto* out = new Route();
        out->push_back(&data_queue);
        out->push_back(&data_pipe);
        out->push_back(sink);
        auto* back = new Route();
        back->push_back(&ack_queue);
        back->push_back(&ack_pipe);
        back->push_back(src);
        // starts 1 us apart, as tcplab's flows all start at 0 (ties broken by order)
        src->connect(*out, *back, *sink, timeFromUs(static_cast<uint32_t>(i)));
        sinks.push_back(sink);
    }
    uint64_t processed = 0;
    while (EventList::doNextEvent()) {
        processed++;
    }
    uint64_t delivered = 0;
    for (auto* s : sinks) {
        delivered += s->_cumulative_ack;
    }
    std::cout << "delivered_bytes " << delivered << "\nevents " << processed << "\n";
    return 0;
}
